"""A session: user ↔ agent ↔ tools, with a step guard and every event on disk as it happens.

Dual control. When the domain has user-side tools (`Domain.user_tools()`, e.g. telecom's phone), the
session gives the user proxy a `Phone` (`SessionPhone`): the proxy's phone actions run through their own
`CallExecutor` with requestor "user", ungated, on the same backend and into the same ledger as the agent's
calls (a phone reading lands under `device.*`; see `SessionPhone`). The backend's `sync()` hook, when it
has one, runs once at the start (tau2 syncs when it builds the environment) and after every executed call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.agent import Agent, AgentConfig
from core.domain import Domain
from core.events import EventBus, MessageSent, ModelFailed, SessionEnded, SessionStarted
from core.executor import CallExecutor, sync_environment, utc_now
from core.llm.base import ChatModel, ModelError, Usage
from core.supervisor import Supervisor
from core.tools import Requestor, ToolBackend, ToolCall, ToolError, ToolSpec
from core.trace import TraceWriter
from core.users import PhoneResult, PhoneUser, UserProxy, UserScriptDiverged, Utterance, stop_reason

GREETING = "Hi! How can I help you today?"

# Awaited before every model call ("model") and every customer turn ("user"): the console's pause / step.
Pacer = Callable[[str], Awaitable[None]]
# Asked when the model fails after its own retries: True = try the same model call again (the console lets
# the operator decide), False = end the session with `agent_error`.
ModelErrorHandler = Callable[[ModelError], Awaitable[bool]]


class SessionAborted(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class UserSideError(Exception):
    """The user proxy (e.g. an LLM user simulator) failed; the session ends with `user_error`."""

    def __init__(self, error: ModelError) -> None:
        super().__init__(error.message)
        self.error = error


class SessionPhone:
    """The customer's phone in one session: runs user-side tools for the user proxy.

    Every call gets requestor "user" and a session-unique id (`user_call_<n>`, in order), whatever the
    proxy sent, and goes through a `CallExecutor` of its own: validated and recorded as events like any
    call, never gated (the gate guards the agent's writes) and never sent to the supervisor.

    What reaches the agent. The executor shares the agent's ledger (when the agent keeps one), so a
    successful phone READ is absorbed by the domain's path map at the moment the user runs it, under the
    `device.*` namespace (telecom: `check_network_status` -> `device.network_status`); a phone WRITE marks
    the `device.*` readings its stale rule names stale, exactly as an agent write does for its records.
    Why at run time and not "when the user reports it": the agent's model only sees the ledger at its next
    model call, which always comes after the user's next message, so the two are the same moment for the
    agent; absorbing at run time just keeps the ledger's provenance pointing at the call that produced
    the reading. The agent thus sees exactly what the phone showed, not the user's paraphrase of it, and
    never the phone's hidden state (only readings the user chose to take). The function-calling baseline
    keeps no ledger and learns about the phone only from what the user says, as in tau2-bench.
    """

    def __init__(self, tools: Sequence[ToolSpec], executor: CallExecutor, step: Callable[[], int]) -> None:
        self._tools = tuple(tools)
        self.executor = executor
        self._step = step
        self.calls = 0

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self._tools

    async def run(self, call: ToolCall) -> PhoneResult:
        self.calls += 1
        stamped = replace(call, id=f"user_call_{self.calls}", requestor=Requestor.USER)
        outcome = await self.executor.execute(stamped, self._step())
        return PhoneResult(outcome.call, outcome.ok, outcome.content)


@dataclass(frozen=True)
class SessionResult:
    reason: str
    steps: int
    db_hash: str | None
    usage: Usage
    detail: str = ""


class Session:
    """Runs one conversation to its end. The step counter counts user messages and model calls."""

    def __init__(self, *, domain: Domain, backend: ToolBackend, model: ChatModel, user: UserProxy,
                 config: AgentConfig | None = None, supervisor: Supervisor | None = None,
                 trace_path: Path | None = None, bus: EventBus | None = None, max_steps: int = 100,
                 scenario: str | None = None, greeting: str = GREETING,
                 clock: Callable[[], str] = utc_now, pacer: Pacer | None = None,
                 on_model_error: ModelErrorHandler | None = None, rules_version: str | None = None) -> None:
        self.domain = domain
        self.rules_version = rules_version
        self.pacer = pacer
        self.on_model_error = on_model_error
        self.backend = backend
        self.user = user
        self.bus = bus or EventBus()
        self.trace: TraceWriter | None = TraceWriter(trace_path) if trace_path is not None else None
        if self.trace is not None:
            self.bus.subscribe(self.trace)
        self.agent = Agent(domain, model, backend, self.bus, config, supervisor, clock)
        user_tools = domain.user_tools()
        self.phone: SessionPhone | None = None
        if user_tools:
            # The agent's ledger (None for the function-calling baseline): phone readings land in it.
            phone_executor = CallExecutor(domain, backend, self.bus, ledger=self.agent.executor.ledger, gate=None,
                                          clock=clock)
            self.phone = SessionPhone(user_tools, phone_executor, lambda: self.steps)
        self.max_steps = max_steps
        self.scenario = scenario
        self.greeting = greeting
        self.conversation: list[Utterance] = []
        self.steps = 0
        self.result: SessionResult | None = None

    @property
    def ledger(self) -> Any:
        return self.agent.ledger

    def _say(self, role: str, text: str) -> None:
        self.conversation.append(Utterance(role, text))  # type: ignore[arg-type]
        if role == "user":
            self.agent.add_user_message(text)
        else:
            self.agent.add_assistant_message(text)
        self.bus.emit(MessageSent(step=self.steps, role=role, text=text))  # type: ignore[arg-type]
        self.agent.hear(role, text, self.steps)

    def start(self) -> None:
        config = self.agent.config
        self.bus.emit(SessionStarted(
            domain=self.domain.name, agent=config.label, model=self.agent.model.name, user=self.user.name,
            scenario=self.scenario,
            reference_time=None if self.domain.reference_time is None else self.domain.reference_time.isoformat(),
            predicates=[p.id for p in self.domain.predicates] if config.gate else [],
            disabled_predicates=sorted(config.disabled_predicates), rules_version=self.rules_version,
            evidence=config.evidence.value))
        if self.greeting:
            self._say("assistant", self.greeting)

    async def user_turn(self) -> str | None:
        """Ask the customer for a message. Returns a termination reason if the customer ended it."""
        if self.pacer is not None:
            await self.pacer("user")
        self.steps += 1
        try:
            if self.phone is not None and isinstance(self.user, PhoneUser):
                text = await self.user.respond_with_phone(self.conversation, self.phone)
            else:
                text = await self.user.respond(self.conversation)
        except ModelError as exc:
            raise UserSideError(exc) from exc
        self._say("user", text)
        return stop_reason(text)

    async def agent_turn(self) -> str | None:
        """Model calls until the agent speaks to the customer. Returns a termination reason or None."""
        while True:
            if self.steps >= self.max_steps:
                return "max_steps"
            if self.pacer is not None:
                await self.pacer("model")
            self.steps += 1
            try:
                step = await self.agent.step(self.steps)
            except ModelError as exc:
                if self.on_model_error is None:
                    raise
                self.bus.emit(ModelFailed(step=self.steps, kind=exc.kind, message=exc.message,
                                          attempts=exc.attempts, detail=exc.detail))
                if not await self.on_model_error(exc):
                    raise SessionAborted("agent_error", exc.message) from exc
                self.steps -= 1  # the failed call produced nothing; try the same step again
                continue
            if step.turn.text and step.ends_turn:
                self.conversation.append(Utterance("assistant", step.turn.text))
                return None
            if step.ends_turn:
                # An empty turn hands nothing to the customer; ask again rather than stall.
                continue

    async def run(self) -> SessionResult:
        self.start()
        reason: str | None = None
        detail = ""
        try:
            await sync_environment(self.backend, self.bus, self.steps)
            while reason is None:
                if self.steps >= self.max_steps:
                    reason = "max_steps"
                    break
                reason = await self.user_turn()
                if reason is not None:
                    break
                reason = await self.agent_turn()
        except ModelError as exc:
            self.bus.emit(ModelFailed(step=self.steps, kind=exc.kind, message=exc.message, attempts=exc.attempts,
                                      detail=exc.detail))
            reason, detail = ("script_diverged" if exc.kind == "script" else "agent_error"), exc.message
        except SessionAborted as exc:
            reason, detail = exc.reason, exc.detail
        except UserSideError as exc:
            error = exc.error
            self.bus.emit(ModelFailed(step=self.steps, kind=error.kind, message=f"user simulator: {error.message}",
                                      attempts=error.attempts, detail=error.detail))
            reason, detail = "user_error", f"user simulator: {error.message}"
        except UserScriptDiverged as exc:
            reason, detail = "script_diverged", str(exc)
        except ToolError as exc:  # only the environment's sync hook raises out of a step
            reason, detail = "environment_error", f"environment sync failed: {exc.message}"
        return await self.finish(reason, detail)

    async def finish(self, reason: str, detail: str = "") -> SessionResult:
        state_hash = getattr(self.backend, "state_hash", None)
        db_hash = await state_hash() if state_hash is not None else None
        usage = self.agent.usage
        self.bus.emit(SessionEnded(step=self.steps, reason=reason, steps=self.steps, db_hash=db_hash,
                                   prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                                   detail=detail))
        if self.trace is not None:
            self.trace.close()
            self.bus.unsubscribe(self.trace)
            self.trace = None
        self.result = SessionResult(reason, self.steps, db_hash, usage, detail)
        return self.result
