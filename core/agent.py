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
from core.evidence import EvidenceMode
from core.executor import CallExecutor, CallOutcome, utc_now
from core.gate import PolicyGate
from core.hearing import hear
from core.ledger import Ledger, render_value
from core.llm.base import AssistantTurn, ChatModel, ModelError, Usage
from core.llm.tokenizer import count_tokens
from core.supervisor import Supervisor
from core.tools import ToolBackend, ToolKind

INSTRUCTIONS = """You are a customer service agent. Help the customer within the policy below.
In each turn either send one message to the customer or make tool calls, not both.
Only act on information the customer gave you or that a tool returned; never invent ids or values.
Tool arguments must be valid JSON matching each tool's schema.
If a tool result says a call was NOT EXECUTED, it did not happen: fix the problem it names, or explain to
the customer why the action cannot be done."""

# Appended to the instructions of the ledger agent only (the paper's ledger block is "an additional state view"):
# what the block is, that values are looked up there, and what STALE asks. Kept short: it is paid on every model
# call, and the ledger agent's prompts should cost no more tokens than the function-calling baseline's
# (`benchmarks.token_ratio`). The gate is not announced: it speaks for itself in its REVISE / BLOCK results,
# and `AgentConfig(gate=False)` renders the ledger without one.
LEDGER_INSTRUCTIONS = """The <ledger> block is the observed state: every record read tools returned, by canonical path.
Look values up there, not in the conversation. A write may have changed a STALE record: read it again before
relying on it."""


@dataclass(frozen=True)
class AgentConfig:
    ledger: bool = True  # render the ledger into every prompt
    gate: bool = True  # check every write against the domain's predicates
    max_revise_streak: int = 3
    disabled_predicates: frozenset[str] = field(default_factory=frozenset)
    # Ledger agent only: a read result the ledger holds is sent as a short reference to its ledger path(s)
    # instead of in full, so the prompt carries each record once (in the ledger block), not once per read.
    compact_history: bool = False
    # Who makes the reads a write's rules lack: the model, told to (ASK, the paper), or the gate (ASSIST).
    evidence: EvidenceMode = EvidenceMode.ASK

    @property
    def label(self) -> str:
        if self.ledger and self.gate:
            return "ledger"
        if self.ledger:
            return "ledger-no-gate"
        if self.gate:
            return "gate-only"
        return "fc"


# The agents a session can run, by the name the command line and session specs use: LedgerAgent, the plain
# function-calling baseline (the same loop with ledger and gate off, so a comparison isolates the method), and
# the ledger without the gate.
AGENTS = {
    "ledger": AgentConfig(ledger=True, gate=True),
    "fc": AgentConfig(ledger=False, gate=False),
    "ledger-no-gate": AgentConfig(ledger=True, gate=False),
}


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
        self._tracks_state = tracks_state
        self.gate = (PolicyGate(domain.predicates, max_revise_streak=self.config.max_revise_streak,
                                disabled=self.config.disabled_predicates, path_map=domain.path_map)
                     if self.config.gate else None)
        self.executor = CallExecutor(domain, backend, bus, ledger=self.ledger if tracks_state else None,
                                     gate=self.gate, supervisor=supervisor, clock=clock,
                                     evidence=self.config.evidence)
        self.history: list[dict[str, Any]] = []
        self.usage = Usage()
        self._tools = [spec.openai_schema() for spec in domain.agent_tools()]
        self._step = 0
        # With compact_history: call id -> the ledger paths holding its result (a read's from its absorption; a
        # write's once a later read stored the very same record), and the successful writes still waiting for one.
        self._held: dict[str, tuple[str, ...]] = {}
        self._unheld_writes: dict[str, str] = {}  # call id -> canonical JSON of the write's returned record
        self._notes: dict[str, str] = {}  # call id -> the supervisor's note that precedes its result
        if self.config.compact_history and self.config.ledger:
            bus.subscribe(self._note_absorbed)
        if hasattr(model, "on_retry") and getattr(model, "on_retry", None) is None:
            model.on_retry = self._on_retry

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def system_prompt(self, ledger_block: str | None = None) -> str:
        """Instructions, policy and (LedgerAgent) the rendered ledger; pass `ledger_block` if already rendered."""
        instructions = f"{INSTRUCTIONS}\n{LEDGER_INSTRUCTIONS}" if self.config.ledger else INSTRUCTIONS
        parts = [f"<instructions>\n{instructions}\n</instructions>", f"<policy>\n{self.domain.policy}\n</policy>"]
        if self.config.ledger:
            parts.append(self.ledger.render() if ledger_block is None else ledger_block)
        return "\n\n".join(parts)

    def messages(self, ledger_block: str | None = None) -> list[dict[str, Any]]:
        history = self._compacted() if self._held else self.history
        return [{"role": "system", "content": self.system_prompt(ledger_block)}, *history]

    def _note_absorbed(self, event: Any) -> None:
        if not isinstance(event, LedgerUpdated):
            return
        paths = tuple(dict.fromkeys((*event.added, *event.changed, *event.refreshed)))
        self._held[event.call_id] = paths
        for call_id, text in list(self._unheld_writes.items()):
            holder = self._holder(paths, text)
            if holder is not None:
                self._held[call_id] = (holder,)
                del self._unheld_writes[call_id]

    def _holder(self, paths: tuple[str, ...], text: str) -> str | None:
        """The one of `paths` whose entry is exactly the record `text`, chosen as the ledger block chooses the path
        that spells a record out (the most specific), or None."""
        whole = [p for p in paths if (entry := self.ledger.entry(p)) is not None and entry.value_text == text]
        return min(whole, key=lambda p: (-p.count("."), p)) if whole else None

    def _note_result(self, outcome: CallOutcome) -> None:
        """Narrow a read's reference to the one path holding its whole result (`users.<id>`, not also its alias
        `user`; a flight search's own path, not every flight it fanned out to); remember a successful write's
        returned record until a later read stores it."""
        if not outcome.ok or not isinstance(outcome.result, dict | list):
            return
        text = render_value(outcome.result)
        held = self._held.get(outcome.call.id)
        if held is not None:
            holder = self._holder(held, text)
            self._held[outcome.call.id] = held if holder is None else (holder,)
        elif outcome.kind is ToolKind.WRITE:
            self._unheld_writes[outcome.call.id] = text

    def _compacted(self) -> list[dict[str, Any]]:
        """The history with every ledger-held tool result replaced by a reference to its path(s).

        A read result is held from the moment it is absorbed. A write's result is never absorbed (observe, don't
        assume), but once a later read stored exactly the record the write returned, the ledger holds it too and
        the reference names where. The message stays a `tool` message answering the same call id (the chat API
        requires one per call); only its content shrinks, and only when the reference is shorter than the
        result; a supervisor's note on the call is kept. A path the ledger has since refreshed from a later read
        still holds the newer observation of the same record, which is what the model should use anyway. The
        stored history is untouched (trace, console and replay see the full results).
        """
        compacted: list[dict[str, Any]] = []
        for message in self.history:
            call_id = str(message.get("tool_call_id", "")) if message.get("role") == "tool" else ""
            paths = self._held.get(call_id) if call_id else None
            if paths:
                reference = f"{self._notes.get(call_id, '')}[result in the ledger at {', '.join(paths)}]"
                if len(reference) < len(str(message.get("content", ""))):
                    message = {**message, "content": reference}
            compacted.append(message)
        return compacted

    def add_user_message(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})

    def add_assistant_message(self, text: str) -> None:
        self.history.append({"role": "assistant", "content": text})

    def hear(self, role: str, text: str | None, step: int) -> None:
        """What was said becomes conversation facts in the ledger (core.conversation), recorded as an event: the
        customer's messages (their stated ids, their yes, their reason) and the agent's (what a yes answers).
        Called once per message, after the event that carries it. A session that keeps no ledger (the
        function-calling baseline) hears nothing."""
        if self._tracks_state:
            hear(self.ledger, self.bus, role, text, step)

    def _on_retry(self, attempt: int, error: ModelError, delay: float) -> None:
        self.bus.emit(ModelRetry(step=self._step, attempt=attempt, kind=error.kind, message=error.message,
                                 delay=delay, detail=error.detail))

    async def step(self, step: int) -> StepResult:
        """One model call, then every proposed call handled in order. Raises ModelError."""
        self._step = step
        # A model that is handed its calls instead of prompted for them (`reads_prompt = False`: an external
        # agent's, over MCP) is given no prompt, so none is built: no ledger block, no token count of it (which
        # would record ledger tokens no model read), no copy of the whole history on every call.
        prompted = getattr(self.model, "reads_prompt", True)
        block = self.ledger.render() if self.config.ledger and prompted else None  # rendered once per model call
        ledger_tokens = count_tokens(block, cache=True) if block is not None else 0  # often unchanged per call
        try:
            turn = await self.model.complete(self.messages(block) if prompted else [], self._tools)
        except ModelError as error:
            self.usage = self.usage + error.usage  # failed attempts the server still ran (timeouts)
            raise
        self.usage = self.usage + turn.usage
        self.bus.emit(AssistantTurnEvent(
            step=step, text=turn.text, tool_calls=[CallInfo.of(c) for c in turn.tool_calls],
            prompt_tokens=turn.usage.prompt_tokens, completion_tokens=turn.usage.completion_tokens,
            tokens_estimated=turn.usage.estimated, ledger_tokens=ledger_tokens))
        self.hear("assistant", turn.text, step)
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
                note = (f"NOTE: a human supervisor changed the arguments to {outcome.call.arguments_json()} "
                        "before this call was handled.\n")
                content = note + content
                self._notes[call.id] = note
            if self.config.compact_history and self.config.ledger:
                self._note_result(outcome)
            self.history.append({"role": "tool", "tool_call_id": call.id, "content": content})
        return StepResult(turn, tuple(outcomes))
