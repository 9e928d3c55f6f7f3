"""The agent loop of the paper's Algorithm 1: absorb, render, generate once, gate each write.

The function-calling baseline is this same class with `AgentConfig(ledger=False, gate=False)`: same
prompt skeleton, same tools, same number of model calls, so a comparison isolates the method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.domain import Domain
from core.events import AssistantTurnEvent, CallInfo, EventBus, LedgerUpdated, ModelRetry
from core.executor import CallExecutor, CallOutcome, utc_now
from core.gate import PolicyGate
from core.ledger import Ledger
from core.llm.base import AssistantTurn, ChatModel, ModelError, Usage
from core.llm.tokenizer import count_tokens
from core.supervisor import Supervisor
from core.tools import ToolBackend

INSTRUCTIONS = """You are a customer service agent. Help the customer within the policy below.
In each turn either send one message to the customer or make tool calls, not both.
Only act on information the customer gave you or that a tool returned; never invent ids or values.
Tool arguments must be valid JSON matching each tool's schema.
If a tool result says a call was NOT EXECUTED, it did not happen: fix the problem it names, or explain to
the customer why the action cannot be done."""

LEDGER_INSTRUCTIONS = """The <ledger> block lists every record observed so far through read tools, each
under a canonical path. It is the current observed state: look values up there instead of searching the
conversation. Entries marked STALE were changed by a later write; read them again before relying on them.
Write calls are checked against the policy using this observed state before they run."""


@dataclass(frozen=True)
class AgentConfig:
    ledger: bool = True  # render the ledger into every prompt
    gate: bool = True  # check every write against the domain's predicates
    max_revise_streak: int = 3
    disabled_predicates: frozenset[str] = field(default_factory=frozenset)
    # Ledger agent only: a read result the ledger holds is sent as a short reference to its ledger path(s)
    # instead of in full, so the prompt carries each record once (in the ledger block), not once per read.
    compact_history: bool = False

    @property
    def label(self) -> str:
        if self.ledger and self.gate:
            return "ledger"
        if self.ledger:
            return "ledger-no-gate"
        if self.gate:
            return "gate-only"
        return "fc"


@dataclass(frozen=True)
class StepResult:
    turn: AssistantTurn
    outcomes: tuple[CallOutcome, ...]

    @property
    def ends_turn(self) -> bool:
        """A turn with no tool calls hands the floor back to the customer."""
        return not self.turn.tool_calls


class Agent:
    def __init__(self, domain: Domain, model: ChatModel, backend: ToolBackend, bus: EventBus,
                 config: AgentConfig | None = None, supervisor: Supervisor | None = None,
                 clock: Callable[[], str] = utc_now) -> None:
        self.domain = domain
        self.model = model
        self.bus = bus
        self.config = config or AgentConfig()
        tracks_state = self.config.ledger or self.config.gate
        self.ledger = Ledger(domain.path_map)
        self.gate = (PolicyGate(domain.predicates, max_revise_streak=self.config.max_revise_streak,
                                disabled=self.config.disabled_predicates, path_map=domain.path_map)
                     if self.config.gate else None)
        self.executor = CallExecutor(domain, backend, bus, ledger=self.ledger if tracks_state else None,
                                     gate=self.gate, supervisor=supervisor, clock=clock)
        self.history: list[dict[str, Any]] = []
        self.usage = Usage()
        self._tools = [spec.openai_schema() for spec in domain.agent_tools()]
        self._step = 0
        # call id -> ledger paths its read result was absorbed at (filled only with compact_history on)
        self._held: dict[str, tuple[str, ...]] = {}
        if self.config.compact_history and self.config.ledger:
            bus.subscribe(self._note_absorbed)
        if hasattr(model, "on_retry") and getattr(model, "on_retry", None) is None:
            model.on_retry = self._on_retry

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def system_prompt(self, ledger_block: str | None = None) -> str:
        """Instructions, policy and (LedgerAgent) the rendered ledger; pass `ledger_block` if already rendered."""
        parts = [f"<instructions>\n{INSTRUCTIONS}\n</instructions>", f"<policy>\n{self.domain.policy}\n</policy>"]
        if self.config.ledger:
            parts.append(f"<ledger_instructions>\n{LEDGER_INSTRUCTIONS}\n</ledger_instructions>")
            parts.append(self.ledger.render() if ledger_block is None else ledger_block)
        return "\n\n".join(parts)

    def messages(self, ledger_block: str | None = None) -> list[dict[str, Any]]:
        history = self._compacted() if self._held else self.history
        return [{"role": "system", "content": self.system_prompt(ledger_block)}, *history]

    def _note_absorbed(self, event: Any) -> None:
        if isinstance(event, LedgerUpdated):
            self._held[event.call_id] = tuple(dict.fromkeys((*event.added, *event.changed, *event.refreshed)))

    def _compacted(self) -> list[dict[str, Any]]:
        """The history with every ledger-held read result replaced by a reference to its path(s).

        The message stays a `tool` message answering the same call id (the chat API requires one per call);
        only its content shrinks, and only when the reference is shorter than the result. A path the ledger
        has since refreshed from a later read still holds the newer observation of the same record, which is
        what the model should use anyway. The stored history is untouched (trace, console and replay see
        the full results).
        """
        compacted: list[dict[str, Any]] = []
        for message in self.history:
            paths = self._held.get(message.get("tool_call_id", "")) if message.get("role") == "tool" else None
            if paths:
                reference = f"[result held in the ledger at {', '.join(paths)}]"
                if len(reference) < len(str(message.get("content", ""))):
                    message = {**message, "content": reference}
            compacted.append(message)
        return compacted

    def add_user_message(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})

    def add_assistant_message(self, text: str) -> None:
        self.history.append({"role": "assistant", "content": text})

    def _on_retry(self, attempt: int, error: ModelError, delay: float) -> None:
        self.bus.emit(ModelRetry(step=self._step, attempt=attempt, kind=error.kind, message=error.message,
                                 delay=delay, detail=error.detail))

    async def step(self, step: int) -> StepResult:
        """One model call, then every proposed call handled in order. Raises ModelError."""
        self._step = step
        block = self.ledger.render() if self.config.ledger else None  # rendered once per model call
        ledger_tokens = count_tokens(block, cache=True) if block is not None else 0  # often unchanged per call
        try:
            turn = await self.model.complete(self.messages(block), self._tools)
        except ModelError as error:
            self.usage = self.usage + error.usage  # failed attempts the server still ran (timeouts)
            raise
        self.usage = self.usage + turn.usage
        self.bus.emit(AssistantTurnEvent(
            step=step, text=turn.text, tool_calls=[CallInfo.of(c) for c in turn.tool_calls],
            prompt_tokens=turn.usage.prompt_tokens, completion_tokens=turn.usage.completion_tokens,
            tokens_estimated=turn.usage.estimated, ledger_tokens=ledger_tokens))
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in turn.tool_calls]
        self.history.append(message)
        outcomes: list[CallOutcome] = []
        for call in turn.tool_calls:
            outcome = await self.executor.execute(call, step)
            outcomes.append(outcome)
            # Every call id gets exactly one tool message, executed or not, so the history stays valid
            # for the chat API even when the gate drops a call.
            content = outcome.content
            if outcome.call.arguments != call.arguments:
                content = (f"NOTE: a human supervisor changed the arguments to {outcome.call.arguments_json()} "
                           f"before this call was handled.\n{content}")
            self.history.append({"role": "tool", "tool_call_id": call.id, "content": content})
        return StepResult(turn, tuple(outcomes))
