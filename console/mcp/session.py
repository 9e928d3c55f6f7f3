"""One MCP client as one LedgerAgent session: the console's `LiveSession`, driven by the client's tool calls.

The session is the ordinary one (folder, database copy, ledger, gate, trace, supervisor, the desk's row and
inbox): only who proposes the calls differs. In the console a model proposes them; here the external agent
does, one MCP `tools/call` at a time. Each call is one step of the core agent loop (`core.agent.Agent.step`,
so `core.executor.CallExecutor` judges and runs it exactly as it does our own agent's calls): the step's
"model" is `ExternalAgent`, which hands the loop the call the client sent. The trace therefore reads like any
session's: an assistant turn with the call, the gate's verdict, the operator's decision if any, the outcome,
and the tool message our own agent would have been given is what the client gets back.

Calls of one session run one at a time, in the order they arrive (the ledger is a sequence: a write is judged
on the reads before it). The session ends when its client goes (`end`), and its trace then ends with
`session_ended`, as when the console stops a session; a call still in flight is stopped first (a write that
had started runs to its end and is recorded, see `CallExecutor._finish_write`).

A full disk stops the session as it stops a console's (`console.runtime.session_stop`): the call that could
not be recorded is answered with what happened (`DiskFullStop`: nothing was written, or a write ran that the
trace could not take), and nothing more is recorded, not even `session_ended`, so the trace ends with the last
event that was written whole and holds no gap. The database keeps every write that ran.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.runtime.live import LiveSession, Phase, SessionSpec
from core.disk_full import DiskFull
from core.events import MessageSent, ToolResultEvent
from core.executor import CallOutcome, sync_environment
from core.llm.base import AssistantTurn, Message, ModelError
from core.session import SessionResult
from core.tools import ToolCall, ToolError
from core.users import UserProxy, Utterance


@dataclass(frozen=True)
class McpSessionSpec(SessionSpec):
    """A console session spec for an MCP client: free chat (no scenario, no task), its customer whoever drives
    the client. `client` is how the client named itself (its `clientInfo`), shown as the session's label."""

    client: str = "client"
    seat: str = "customer"  # nobody at the console types for the customer; this only marks it not scripted

    @property
    def label(self) -> str:
        return f"mcp {self.client}"


class SessionGone(Exception):
    """The session ended (its client went, or the server stops) before or while a call was handled, or could
    not start; `disk` when its disk was full (a start that did not fit, or a session stopped by it)."""

    def __init__(self, reason: str, disk: DiskFull | None = None) -> None:
        if disk is not None:
            message = f"the session's disk is full: nothing was written ({disk}); connect again once there is room"
        else:
            message = f"this session has ended ({reason}); connect again for a new one"
        super().__init__(message)
        self.reason = reason
        self.disk = disk


class DiskFullStop(SessionGone):
    """A call the disk could not record: the session stopped on it. `ran`: the call was a write that ran (its
    database change is kept) though its result could not be recorded; else nothing was written."""

    def __init__(self, disk: DiskFull, ran: bool) -> None:
        super().__init__("disk_full", disk)
        self.ran = ran
        if ran:
            self.args = (f"the session's disk is full: the write ran, but its result could not be recorded ({disk}); "
                         "the session has stopped: connect again once there is room",)
        else:
            self.args = (f"the session's disk is full: nothing was written ({disk}); the session has stopped: "
                         "connect again once there is room",)


class ExternalAgent:
    """The `ChatModel` of an MCP session: each model call of the agent loop returns the client's next call.

    No text is generated and no tokens are spent here (usage 0): the external agent's own model is not ours
    to see. It reads no prompt either (`reads_prompt`), so the agent loop builds none for it."""

    reads_prompt = False

    def __init__(self, name: str) -> None:
        self.name = name
        self._next: ToolCall | None = None

    def propose(self, call: ToolCall) -> None:
        self._next = call

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        call, self._next = self._next, None
        if call is None:  # the loop asked without a call to hand it: a bug in the session, never a guess
            raise ModelError("no client call to hand to the agent loop", kind="script")
        return AssistantTurn(text=None, tool_calls=(call,), model=self.name)


class McpCustomer:
    """The customer of an MCP session is whoever drives the client: the session never asks them anything
    (their messages, when the client reports them, arrive through `McpLiveSession.note`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        raise RuntimeError("an MCP session has no customer turns to ask for")


@dataclass(frozen=True)
class CallResult:
    """A handled call: the executor's outcome, the tool message our own agent would have been given (with a
    supervisor's note when the arguments were edited), and the events the call recorded, in order."""

    outcome: CallOutcome
    content: str
    events: tuple[Any, ...]


class McpLiveSession(LiveSession):
    """A `LiveSession` whose calls come from an MCP client. Build it as the desk builds any session (the same
    keyword callbacks); `decision_timeout` bounds how long a call waits for an operator."""

    def __init__(self, spec: McpSessionSpec, *, decision_timeout: float | None = None, **kwargs: Any) -> None:
        self.agent_model = ExternalAgent(f"mcp:{spec.client}")
        kwargs["model_factory"] = lambda _spec: self.agent_model
        super().__init__(spec, **kwargs)
        self.supervisor.timeout = decision_timeout
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.opened.add_done_callback(_retrieved)  # a start nobody waits for any more is no "never retrieved" error
        self.disk_full: DiskFull | None = None  # what stopped the session, when its disk did
        self._ended: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        self._turn = asyncio.Lock()  # one call at a time: each is judged on the ones before it
        self._inflight: asyncio.Task[CallResult] | None = None

    def _user(self) -> UserProxy:
        return McpCustomer("mcp client")

    async def open(self) -> None:
        await super().open()
        assert self.session is not None
        self.session.greeting = ""  # nobody greeted anyone: the client's agent speaks for itself

    @property
    def ended(self) -> bool:
        return self._ended.done()

    # ------------------------------------------------------------------------------------------ lifecycle

    async def run(self) -> SessionResult:
        """Open, start, wait until `end`, finish: the session's whole life (the desk runs it as a task)."""
        try:
            if self.session is None:
                await self._open_shielded()
        except BaseException as exc:
            if not self.opened.done():
                self.opened.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
            raise
        session = self.session
        assert session is not None and self.backend is not None
        self.state.phase = Phase.RUNNING
        self.on_state()
        try:
            session.start()
            try:
                await sync_environment(self.backend, self.bus, session.steps)
            except ToolError as exc:  # the environment would not start: the session cannot serve
                reason, detail = "environment_error", f"environment sync failed: {exc.message}"
                self.opened.set_exception(SessionGone(reason))
            else:
                self.opened.set_result(None)
                reason, detail = await self._ended
            await self._stop_inflight()
            if self.disk_full is not None:  # nothing more is recorded (the module docstring)
                raise self.disk_full
            self.result = await session.finish(reason, detail)
        except DiskFull as full:  # the start did not fit, or a call stopped the session (the desk shows why)
            if not self.opened.done():
                self.opened.set_exception(full)
            raise
        except asyncio.CancelledError:  # the desk closed: the trace still ends with session_ended
            await self._stop_inflight()
            if self.disk_full is None:
                with contextlib.suppress(Exception):
                    self.result = await session.finish(self.cancel_reason)
            raise
        finally:
            if not self.opened.done():
                self.opened.set_exception(SessionGone(self.cancel_reason))
            await self.close()
        return self._show_end(self.result)

    def end(self, reason: str, detail: str = "") -> None:
        """End the session (its client went, the server stops): calls in flight stop, the trace ends."""
        if not self._ended.done():
            self._ended.set_result((reason, detail))

    async def _stop_inflight(self) -> None:
        task = self._inflight
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    # ------------------------------------------------------------------------------------------ calls

    async def call(self, name: str, arguments: Mapping[str, Any]) -> CallResult:
        """Handle one client call through the agent loop; SessionGone if the session ended meanwhile."""
        async with self._turn:
            if self.ended or self.session is None:
                raise self.gone("not started")
            start = len(self.bus.history)
            call_id = f"mcp_{self.session.steps + 1}"  # the id `_step` gives the call
            task = asyncio.create_task(self._step(name, dict(arguments)), name=call_id)
            self._inflight = task
            try:
                return await task
            except DiskFull as full:
                raise self._stopped_by(full, call_id, start) from None
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():  # the caller itself is being cancelled
                    raise
                raise self.gone("stopped") from None
            finally:
                self._inflight = None

    def gone(self, otherwise: str) -> SessionGone:
        """Why a call cannot be made on this session (it ended, or its disk stopped it)."""
        if self.disk_full is not None:
            return SessionGone("disk_full", self.disk_full)
        return SessionGone(self._ended.result()[0] if self.ended else otherwise)

    def _stopped_by(self, full: DiskFull, call_id: str, start: int) -> DiskFullStop:
        """Stop the session on a full disk (nothing more is recorded), and say what happened to the call."""
        ran = any(isinstance(e, ToolResultEvent) and e.call.id == call_id and e.kind == "write" and e.executed
                  and e.ok for e in self.bus.history[start:])
        self.disk_full = full
        self.end("disk_full", str(full))
        return DiskFullStop(full, ran)

    async def _step(self, name: str, arguments: dict[str, Any]) -> CallResult:
        session = self.session
        assert session is not None
        await self.pacer("model")
        session.steps += 1  # one step per client call (the customer has no turns here): it numbers the call too
        self.agent_model.propose(ToolCall(id=f"mcp_{session.steps}", name=name, arguments=arguments))
        start = len(self.bus.history)
        step = await self.agent.step(session.steps)
        self.state.steps = session.steps
        content = str(self.agent.history[-1]["content"])  # the tool message our own agent would have had
        return CallResult(step.outcomes[0], content, tuple(self.bus.history[start:]))

    def note(self, role: str, text: str) -> None:
        """A line of the conversation the client reported (the customer's words, or what its agent told them),
        on the transcript as a message of that side, and heard by the ledger as a live session's messages are:
        the customer's become conversation facts (the ids they stated, their explicit yes, their reason) that
        the gate judges the next writes with; the agent's is what a yes answers (core.conversation)."""
        session = self.session
        if self.ended or session is None:
            raise self.gone("not started")
        side = "user" if role == "customer" else "assistant"
        start = len(self.bus.history)
        session.conversation.append(Utterance(side, text))  # type: ignore[arg-type]
        try:
            self.bus.emit(MessageSent(step=session.steps, role=side, text=text))  # type: ignore[arg-type]
            self.agent.hear(side, text, session.steps)
        except DiskFull as full:
            raise self._stopped_by(full, "", start) from None


def _retrieved(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()
