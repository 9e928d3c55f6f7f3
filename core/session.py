"""A session: user ↔ agent ↔ tools, with a step guard and every event on disk as it happens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.agent import Agent, AgentConfig
from core.domain import Domain
from core.events import EventBus, MessageSent, ModelFailed, SessionEnded, SessionStarted
from core.executor import utc_now
from core.llm.base import ChatModel, ModelError, Usage
from core.supervisor import Supervisor
from core.tools import ToolBackend
from core.trace import TraceWriter
from core.users import UserProxy, UserScriptDiverged, Utterance, stop_reason

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
                 on_model_error: ModelErrorHandler | None = None) -> None:
        self.domain = domain
        self.pacer = pacer
        self.on_model_error = on_model_error
        self.backend = backend
        self.user = user
        self.bus = bus or EventBus()
        self.trace: TraceWriter | None = TraceWriter(trace_path) if trace_path is not None else None
        if self.trace is not None:
            self.bus.subscribe(self.trace)
        self.agent = Agent(domain, model, backend, self.bus, config, supervisor, clock)
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

    def start(self) -> None:
        config = self.agent.config
        self.bus.emit(SessionStarted(
            domain=self.domain.name, agent=config.label, model=self.agent.model.name, user=self.user.name,
            scenario=self.scenario,
            reference_time=None if self.domain.reference_time is None else self.domain.reference_time.isoformat(),
            predicates=[p.id for p in self.domain.predicates] if config.gate else [],
            disabled_predicates=sorted(config.disabled_predicates)))
        if self.greeting:
            self._say("assistant", self.greeting)

    async def user_turn(self) -> str | None:
        """Ask the customer for a message. Returns a termination reason if the customer ended it."""
        if self.pacer is not None:
            await self.pacer("user")
        self.steps += 1
        try:
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
                                          attempts=exc.attempts))
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
            while reason is None:
                if self.steps >= self.max_steps:
                    reason = "max_steps"
                    break
                reason = await self.user_turn()
                if reason is not None:
                    break
                reason = await self.agent_turn()
        except ModelError as exc:
            self.bus.emit(ModelFailed(step=self.steps, kind=exc.kind, message=exc.message, attempts=exc.attempts))
            reason, detail = ("script_diverged" if exc.kind == "script" else "agent_error"), exc.message
        except SessionAborted as exc:
            reason, detail = exc.reason, exc.detail
        except UserSideError as exc:
            error = exc.error
            self.bus.emit(ModelFailed(step=self.steps, kind=error.kind, message=f"user simulator: {error.message}",
                                      attempts=error.attempts))
            reason, detail = "user_error", f"user simulator: {error.message}"
        except UserScriptDiverged as exc:
            reason, detail = "script_diverged", str(exc)
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
