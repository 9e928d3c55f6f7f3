"""A live session as the console drives it: supervision modes, pause / step, human seats, retry on error.

Plain asyncio, no Textual: the app wires the callbacks to messages and screens, and tests drive this
directly. Everything the operator does still flows through core (`Supervisor`, `Session` pacer, the
executor's gate), so the trace records it exactly as it would for a headless run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.runtime.rules import LiveRules, shipped_rules
from console.runtime.storage import SessionFolder, new_session_folder
from core.agent import AGENTS
from core.domain import Domain
from core.events import EventBus
from core.evidence import EvidenceMode
from core.gate import GateDecision
from core.llm.base import AssistantTurn, ChatModel, Message, ModelError, Usage, estimate_tokens
from core.llm.offline_agent import OfflineAgent
from core.llm.openai_model import OpenAIChatModel
from core.scenario import Scenario, list_scenarios, load_scenario
from core.session import Session, SessionResult
from core.supervisor import Decision, Resolution, Undecided
from core.tools import ToolCall
from core.users import HumanUser, UserProxy
from domains.registry import load_domain, load_offline_reader
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import open_backend

if TYPE_CHECKING:  # the evaluation harness is imported only by task sessions (console cold start)
    from core.evaluation.tasks import Task


class SupervisionMode(StrEnum):
    AUTOPILOT = "autopilot"
    APPROVE_WRITES = "approve writes"
    APPROVE_NON_ALLOW = "approve non-ALLOW"
    STEP = "step"

    def next(self) -> SupervisionMode:
        modes = list(SupervisionMode)
        return modes[(modes.index(self) + 1) % len(modes)]


@dataclass(frozen=True)
class SessionSpec:
    """Everything the new-session dialog asks for."""

    domain: str = "retail"
    scenario: str | None = "refund-to-original-payment"  # None: free chat
    agent: str = "ledger"
    model: str = "scripted"  # "scripted" (the scenario's script), "operator" (you play the agent), or a model name
    base_url: str | None = None
    seat: str = "watch"  # "watch" or "customer" (you type the customer's messages)
    mode: SupervisionMode = SupervisionMode.AUTOPILOT
    max_steps: int = 100
    db: Path | None = None
    disabled_predicates: tuple[str, ...] = ()
    pace: float = 0.0  # seconds between steps, so an audience can follow a scripted demo
    # An evaluation task of `domain` (domains/<d>/tasks/tasks.json), run as `ledgeragent eval` runs a trial
    # (console/runtime/live_task.py): its starting database, its customer, and with model "scripted" the domain's
    # careful offline agent planned from it. Needs scenario=None.
    task: str | None = None
    user_model: str | None = None  # with a task: an LLM user simulator plays the customer (same endpoint)
    # with a task and the scripted agent: simulated errors (core.error_profile), the same draw `eval` makes for
    # trial 0; the agent's name then says so ("scripted-simulated-errors(realistic)") wherever it is shown
    error_profile: str | None = None
    # Who makes the reads a write lacks (core.evidence): "assist" (the gate) or "ask" (the model, told to);
    # None: the scenario's own mode if it names one, else assist.
    evidence: str | None = None

    @property
    def label(self) -> str | None:
        """What the session runs, as its trace's session_started names it: the scenario, `task <id>` (the
        name `eval` gives its trials), or None (free chat)."""
        return f"task {self.task}" if self.task is not None else self.scenario

    def problems(self) -> list[str]:
        found: list[str] = []
        if self.agent not in AGENTS:
            found.append(f"unknown agent {self.agent!r}")
        if self.task is not None:
            found += self._task_problems()
        elif self.user_model is not None:
            found.append("a user model plays an evaluation task's customer: it needs a task")
        if self.error_profile is not None:
            from core.error_profile import PROFILES

            if self.task is None or self.model != "scripted":
                found.append("simulated errors (error_profile) are for an evaluation task played by the scripted "
                             "agent (a scenario's baseline mistake is in the scenario itself)")
            elif self.error_profile not in PROFILES:
                found.append(f"unknown error profile {self.error_profile!r} (known: {', '.join(PROFILES)})")
        if self.model == "operator" and self.seat == "customer":
            found.append("you cannot play both the agent and the customer")
        free = self.scenario is None and self.task is None
        if self.model == "operator" and free:
            found.append("playing the agent needs a scenario for the customer's lines: ledgeragent console "
                         f"--domain {self.domain} --seat agent --scenario NAME (ledgeragent scenarios --domain "
                         f"{self.domain} lists them)")
        elif self.seat == "watch" and free:  # the offline agent chats with you; nobody chats with a watcher
            found.append("free chat needs you in the customer seat (watching needs a scenario, whose scripted "
                         f"customer speaks): ledgeragent console --domain {self.domain} --scenario chat --seat "
                         "customer")
        if self.model not in ("scripted", "operator") and not self.model.strip():
            found.append("model name is empty")
        return found

    def _task_problems(self) -> list[str]:
        assert self.task is not None
        from console.runtime.live_task import unknown_tasks  # the evaluation harness: only for task sessions

        found: list[str] = []
        if self.scenario is not None:
            found.append(f"a session runs a task or a scenario, not both (task {self.task!r}, scenario "
                         f"{self.scenario!r}: set scenario=None)")
        if self.seat == "customer":
            found.append(f"task {self.task!r} plays its own customer (scripted, or the user model): the customer "
                         "seat cannot be yours")
        if self.model == "operator":
            found.append(f"task {self.task!r} is played by the scripted agent or a model, not by you: you supervise "
                         "it")
        if self.user_model is not None and not self.user_model.strip():
            found.append("user model name is empty")
        if self.user_model in ("scripted", "operator"):
            found.append(f"user model {self.user_model!r}: give a model name, or none for the task's scripted "
                         "customer")
        problem = unknown_tasks(self.domain, [self.task])
        if problem is not None:
            found.append(problem)
        return found


@dataclass
class PendingReview:
    call: ToolCall
    decision: GateDecision | None
    future: asyncio.Future[Resolution]

    @property
    def open(self) -> bool:
        """Still waiting: neither decided nor given up on (a supervisor's timeout)."""
        return not self.future.done()

    def resolve(self, resolution: Resolution) -> None:
        if not self.future.done():
            self.future.set_result(resolution)


class OperatorSupervisor:
    """A core Supervisor that asks the operator according to the supervision mode.

    `timeout` (seconds, None: wait as long as it takes) is for callers that cannot wait forever, such as an
    external agent's MCP call: when no decision came by then, `review` raises `Undecided` and the call is not
    run. The timeout resolves the very future a decision would, so exactly one of the two takes effect."""

    def __init__(self, mode: SupervisionMode, who: str, ask: Callable[[PendingReview], object], *,
                 timeout: float | None = None) -> None:
        self.mode = mode
        self.who = who
        self.ask = ask
        self.timeout = timeout
        self.pending: PendingReview | None = None

    def needs_review(self, decision: GateDecision | None) -> bool:
        if decision is None:
            return self._asks(None, None)
        return self._asks(decision.verdict.value, None if decision.refusal is None else decision.refusal.value)

    def needs_review_of(self, event: Any) -> bool:
        """`needs_review` for a recorded GateDecided (what the desk counts, from the event)."""
        return self._asks(event.verdict, getattr(event, "refusal", None))

    def _asks(self, verdict: str | None, refusal: str | None) -> bool:
        """Whether the mode asks a human about a call with this verdict. A REVISE that only needs a read goes
        straight back to the model in every mode but "approve writes": the model can make the read, and a
        human asked to approve a refusal for a missing record would only be a stop."""
        if self.mode is SupervisionMode.AUTOPILOT:
            return False
        if self.mode is SupervisionMode.APPROVE_WRITES:
            return True
        return verdict is not None and verdict != "ALLOW" and refusal != "needs_read"

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        if not self.needs_review(decision):
            return Resolution(Decision.APPROVE)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Resolution] = loop.create_future()
        self.pending = PendingReview(call, decision, future)
        timer = None if self.timeout is None else loop.call_later(self.timeout, _give_up, future, self.timeout)
        self.ask(self.pending)
        try:
            return await future
        finally:
            self.pending = None
            if timer is not None:
                timer.cancel()


def _give_up(future: asyncio.Future[Resolution], seconds: float) -> None:
    if not future.done():
        future.set_exception(Undecided(f"no operator decided within {seconds:g} s; the call did not run and "
                                       "nothing changed (ask again, or tell the customer it is pending)"))


class Pacer:
    """Pause, resume and single-step: awaited by the session before each model call and customer turn."""

    def __init__(self, on_change: Callable[[], object] = lambda: None, delay: float = 0.0) -> None:
        self.delay = delay  # presentation pace: seconds before each model call / customer turn
        self._budget: int | None = None  # None: run freely; n: n more model calls, then wait
        self._wake = asyncio.Event()
        self.waiting: str | None = None
        self.on_change = on_change

    @property
    def paused(self) -> bool:
        return self._budget is not None and self._budget <= 0

    async def __call__(self, kind: str) -> None:
        while self._budget is not None and self._budget <= 0:
            self.waiting = kind
            self.on_change()
            self._wake.clear()
            await self._wake.wait()
        if self.waiting is not None:
            self.waiting = None
            self.on_change()
        if self._budget is not None and kind == "model":
            self._budget -= 1
        if self.delay > 0:
            await asyncio.sleep(self.delay)

    def pause(self) -> None:
        self._budget = 0
        self.on_change()

    def resume(self) -> None:
        self._budget = None
        self._wake.set()
        self.on_change()

    def step(self) -> None:
        """Allow exactly one more model call, then pause again."""
        self._budget = max(self._budget or 0, 0) + 1
        self._wake.set()
        self.on_change()


class OperatorAgent:
    """A ChatModel whose turns the operator composes: a message to the customer, or tool calls."""

    name = "operator"

    def __init__(self, on_turn_wanted: Callable[[], object] = lambda: None) -> None:
        self._turns: asyncio.Queue[AssistantTurn] = asyncio.Queue()
        self.waiting = False
        self.on_turn_wanted = on_turn_wanted
        self._count = 0

    def say(self, text: str) -> None:
        self._turns.put_nowait(AssistantTurn(text=text, usage=Usage(0, estimate_tokens(text), estimated=True),
                                             model=self.name))

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolCall:
        self._count += 1
        call = ToolCall(id=f"op_{self._count}", name=name, arguments=dict(arguments))
        self._turns.put_nowait(AssistantTurn(text=None, tool_calls=(call,), model=self.name))
        return call

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        self.waiting = True
        self.on_turn_wanted()
        try:
            return await self._turns.get()
        finally:
            self.waiting = False


class Phase(StrEnum):
    """What the session is doing, as the status bar says it (a StrEnum: compares equal to its words)."""

    READY = "ready"
    RUNNING = "running"
    PAUSED = "paused"
    WAITING = "waiting for operator"
    MODEL_ERROR = "model error"
    ENDED = "ended"
    YOUR_TURN = "your turn"


@dataclass
class LiveState:
    """What the status bar shows, updated in place by the session callbacks."""

    phase: Phase = Phase.READY
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    end_reason: str | None = None
    error: str | None = None
    thinking: bool = False  # a model call is in flight (the status bar shows a spinner)
    extra: dict[str, Any] = field(default_factory=dict)


class LiveSession:
    """Owns one console session: its folder, backend, model, users, supervisor and pacer."""

    def __init__(self, spec: SessionSpec, *, on_event: Callable[[Any], object] = lambda e: None,
                 on_review: Callable[[PendingReview], object] = lambda r: None,
                 on_state: Callable[[], object] = lambda: None, on_model_error: Callable[[ModelError], object]
                 = lambda e: None, operator: str = "operator", root: Path | None = None,
                 model_factory: Callable[[SessionSpec], ChatModel] | None = None,
                 rules: Mapping[str, LiveRules] | None = None) -> None:
        problems = spec.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.spec = spec
        self.domain: Domain = load_domain(spec.domain)
        reloaded = (rules or {}).get(spec.domain)
        if reloaded is not None:  # the workbench reloaded this domain's rules: later sessions run them too
            self.domain = replace(self.domain, predicates=reloaded.predicates)
        self.rules: LiveRules = reloaded or shipped_rules(self.domain)
        self.scenario: Scenario | None = None
        self.task: Task | None = None
        if spec.task is not None:
            from console.runtime.live_task import load_task

            self.task = load_task(spec.domain, spec.task)
        if spec.scenario is not None:
            available = list_scenarios(self.domain.scenarios_dir)
            if spec.scenario not in available:
                raise ValueError(f"unknown scenario {spec.scenario!r} for {spec.domain}")
            self.scenario = load_scenario(available[spec.scenario])
        self.on_event = on_event
        self.on_state = on_state
        self.on_model_error_cb = on_model_error
        self.state = LiveState()
        self.bus = EventBus()
        self.bus.subscribe(self._seen)
        self.pacer = Pacer(self._pacer_changed, delay=spec.pace)
        self.supervisor = OperatorSupervisor(spec.mode, operator, self._ask)
        self._on_review = on_review
        self.human = HumanUser() if spec.seat == "customer" else None
        self.operator_agent = OperatorAgent(self._changed) if spec.model == "operator" else None
        self._model_factory = model_factory
        self.model: ChatModel = self._make_model()
        self._customer_model: ChatModel | None = None  # a task's user simulator model, closed with the session
        self.root = root
        self.folder: Path | None = None
        self._claim: SessionFolder | None = None  # the folder's lock, held from open() until close()
        self.backend: SQLiteToolBackend | None = None
        self.session: Session | None = None
        self.result: SessionResult | None = None
        self._retry: asyncio.Future[bool] | None = None
        self.cancel_reason = "cancelled"  # the session_ended reason if the console stops the session
        if spec.mode is SupervisionMode.STEP:
            self.pacer.pause()

    # --------------------------------------------------------------------------------------- wiring

    def _make_model(self) -> ChatModel:
        if self.operator_agent is not None:
            return self.operator_agent
        if self.spec.model == "scripted" and self.task is not None:
            from console.runtime.live_task import task_agent

            return task_agent(self.domain, self.task, self.spec.agent, AGENTS[self.spec.agent],  # planned in open()
                              profile=self.spec.error_profile)
        if self.spec.model == "scripted":
            reader = load_offline_reader(self.spec.domain)
            if self.scenario is None:  # free chat: no plan, only the customer's words
                return OfflineAgent([], reader=reader, name="offline-agent")
            return self.scenario.build_model(reader)
        return self._real_model(self.spec.model)

    @property
    def offline_hint(self) -> str:
        """What the offline agent can work with (the domain reader's hint), or "" for any other agent."""
        return self.model.reader.hint if isinstance(self.model, OfflineAgent) and self.model.reader else ""

    def _real_model(self, name: str) -> ChatModel:
        """A model by name on the session's endpoint, with the console's model settings when it has them."""
        if self._model_factory is not None:
            return self._model_factory(replace(self.spec, model=name))
        return OpenAIChatModel(name, base_url=self.spec.base_url)

    def _user(self) -> UserProxy:
        if self.human is not None:
            return self.human
        if self.task is not None:
            from console.runtime.live_task import task_customer

            if self.spec.user_model is not None:
                self._customer_model = self._real_model(self.spec.user_model)
            return task_customer(self.task, self._customer_model)
        assert self.scenario is not None
        return self.scenario.build_user()

    def _seen(self, event: Any) -> None:
        if event.type == "supervisor_decision" and self.state.phase == Phase.WAITING:
            self.state.phase = Phase.RUNNING
        if event.type in ("assistant_turn", "model_error", "session_ended"):
            self.state.thinking = False
        if event.type == "assistant_turn":
            self.state.prompt_tokens += event.prompt_tokens
            self.state.completion_tokens += event.completion_tokens
        if self.session is not None:
            self.state.steps = self.session.steps
        self.on_event(event)

    def _changed(self) -> None:
        self.on_state()

    def _pacer_changed(self) -> None:
        if self.state.phase in (Phase.RUNNING, Phase.PAUSED):
            self.state.phase = Phase.PAUSED if self.pacer.waiting else Phase.RUNNING
        self.on_state()

    async def _pace(self, kind: str) -> None:
        await self.pacer(kind)
        if kind == "model" and self.operator_agent is None:
            self.state.thinking = True
            self.on_state()

    def _ask(self, review: PendingReview) -> None:
        self.state.phase = Phase.WAITING
        self.on_state()
        self._on_review(review)

    async def _model_failed(self, error: ModelError) -> bool:
        if error.kind == "script":
            return False  # a diverged script stays diverged: retrying cannot help, end the session
        self.state.phase = Phase.MODEL_ERROR
        self.state.error = f"{error.kind}: {error.message}"
        self.on_state()
        self._retry = asyncio.get_running_loop().create_future()
        self.on_model_error_cb(error)
        try:
            again = await self._retry
        finally:
            self._retry = None
        self.state.error = None
        self.state.phase = Phase.RUNNING
        self.on_state()
        return again

    # --------------------------------------------------------------------------------------- lifecycle

    async def open(self) -> None:
        """Claim a folder and fill it: the database, the trace. A start that fails on the way (a disk that
        cannot take the database, data that will not load) leaves no folder behind (`_discard_failed_start`)."""
        self._claim = new_session_folder(self.spec.domain, self.spec.label or "chat", self.root)
        self.folder = self._claim.path
        try:
            await self._fill_folder()
        except BaseException:
            await self._discard_failed_start()
            raise

    async def _discard_failed_start(self) -> None:
        """Close what was opened, remove the folder (all of it: this session made it) and release it."""
        backend, self.backend = self.backend, None
        claim, self._claim = self._claim, None
        if backend is not None:
            with contextlib.suppress(Exception):
                await backend.close()
        if claim is not None:
            try:
                claim.discard()
            finally:
                claim.release()

    async def _fill_folder(self) -> None:
        assert self.folder is not None
        self.backend = await self._open_database(self.folder / "db.sqlite")
        scripted = self.scenario.evidence if self.scenario is not None else None
        config = replace(AGENTS[self.spec.agent], evidence=EvidenceMode.choose(self.spec.evidence, scripted))
        if self.spec.disabled_predicates:
            config = replace(config, disabled_predicates=frozenset(self.spec.disabled_predicates))
        self.session = Session(
            domain=self.domain, backend=self.backend, model=self.model, user=self._user(), config=config,
            supervisor=self.supervisor, trace_path=self.folder / "trace.jsonl", bus=self.bus,
            max_steps=self.scenario.max_steps if self.scenario else self.spec.max_steps,
            scenario=self.spec.label, pacer=self._pace, on_model_error=self._model_failed,
            rules_version=self.rules.version)

    async def _open_database(self, path: Path) -> SQLiteToolBackend:
        """The session's own database: the given or shipped data, in a task's starting state for a task (and
        the task's offline agent planned over it). Raises TaskSetupError when a task's scene cannot be set."""
        if self.task is None:
            return await open_backend(self.spec.domain, path, self.spec.db)
        from console.runtime.live_task import TaskAgent, open_task_database

        planned = self.model if isinstance(self.model, TaskAgent) else None
        backend, data = await open_task_database(self.spec.domain, path, self.spec.db, self.task,
                                                 want_data=planned is not None)
        if planned is not None and data is not None:
            planned.plan(data)
        return backend

    async def _open_shielded(self) -> None:
        """Open, even when cancelled meanwhile: the database's connection thread is then let finish and the
        database closed, instead of being abandoned half-open (its thread would later call a closed loop)."""
        opening = asyncio.ensure_future(self.open())
        try:
            await asyncio.shield(opening)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await opening
            await self.close()
            raise

    async def close(self) -> None:
        """Release the database, then the folder. Safe to call twice, and while the session task is being
        cancelled."""
        backend, self.backend = self.backend, None
        claim, self._claim = self._claim, None
        if backend is not None:
            await backend.close()
        if claim is not None:
            try:
                if backend is not None:
                    self._discard_if_unused(claim.path)
            finally:
                claim.release()
            if backend is not None:
                with contextlib.suppress(OSError):  # only a folder emptied above goes: rmdir refuses any other
                    claim.path.rmdir()
        customer, self._customer_model = self._customer_model, None
        close = getattr(customer, "aclose", None)
        if close is not None:  # a task's user simulator: its HTTP client
            with contextlib.suppress(Exception):
                await close()

    def _discard_if_unused(self, folder: Path) -> None:
        """A session that never started leaves no folder behind (run while the folder is still held).

        Opening the console (or a browser tab, or a console pre-started for a page nobody took) prepares a
        session: a folder with a copy of the database and an empty trace. Quitting, or starting a new session,
        before this one ran leaves nothing that happened, so nothing is kept; any folder with a recorded event
        (or anything else put in it, such as an export) stays as it is. The folder itself goes once its lock is
        released (`close`).
        """
        trace = folder / "trace.jsonl"
        try:
            if trace.stat().st_size:
                return
        except OSError:
            return
        for name in ("trace.jsonl", "db.sqlite", "db.sqlite-wal", "db.sqlite-shm"):
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()

    async def run(self) -> SessionResult:
        if self.session is None:
            await self._open_shielded()
        assert self.session is not None and self.backend is not None
        self.state.phase = Phase.PAUSED if self.pacer.paused else Phase.RUNNING
        self.on_state()
        try:
            self.result = await self.session.run()
        except asyncio.CancelledError:
            # Stopped from outside (quit, new session): the trace still ends with a session_ended.
            with contextlib.suppress(Exception):
                self.result = await self.session.finish(self.cancel_reason)
            raise
        finally:
            await self.close()
        return self._show_end(self.result)

    def _show_end(self, result: SessionResult) -> SessionResult:
        """The status bar's last word on the session: ended, why, and its error if any."""
        self.state.phase = Phase.ENDED
        self.state.end_reason = result.reason
        self.state.error = result.detail or None
        self.on_state()
        return result

    # --------------------------------------------------------------------------------------- operator

    def set_mode(self, mode: SupervisionMode) -> None:
        previous = self.supervisor.mode
        self.supervisor.mode = mode
        if mode is SupervisionMode.STEP and previous is not SupervisionMode.STEP:
            self.pacer.pause()
        elif previous is SupervisionMode.STEP and mode is not SupervisionMode.STEP:
            self.pacer.resume()
        self.on_state()

    def retry(self, again: bool = True) -> bool:
        if self._retry is None or self._retry.done():
            return False
        self._retry.set_result(again)
        return True

    def say_as_customer(self, text: str) -> None:
        if self.human is None:
            raise RuntimeError("the customer seat is not yours in this session")
        self.human.say(text)

    @property
    def rules_version(self) -> str:
        return self.rules.version

    @property
    def disabled_rules(self) -> int:
        """How many rules the gate skips right now (set at start, or toggled in the workbench)."""
        gate = self.agent.gate if self.session is not None else None
        return len(gate.disabled) if gate is not None else len(self.spec.disabled_predicates)

    @property
    def agent(self) -> Any:
        assert self.session is not None
        return self.session.agent

    async def dry_run(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, GateDecision | None]:
        """What sending this call now would get, judged exactly as the send will judge it, and nothing recorded.

        The agent's own executor judges it (`CallExecutor.dry_run`): the same checks, the same evidence mode and
        the same reads the gate makes itself before its verdict, made into a copy of the ledger and recorded
        nowhere; the session's ledger, trace and the gate's anti-loop memory stay as they were. Returns
        (summary, decision): "invalid: …" for calls the executor would refuse, "read: not gated" for reads, or
        the verdict for writes, whose decision lists the reads the gate would make (`gate_reads`).
        """
        preview = await self.agent.executor.dry_run(ToolCall(id="dry-run", name=name, arguments=dict(arguments)))
        return preview.summary, preview.decision
