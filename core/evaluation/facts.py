"""What a trial did, read back from its events: the one place that interprets a trace for grading.

Rewards, token counts, gate statistics and the failure taxonomy all start from these facts, and the facts
come only from events. So a trial re-read from `results.json` is graded exactly like a live one, and the
grade never depends on in-memory state that the trace does not show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.events import (
    AssistantTurnEvent,
    GateDecided,
    MessageSent,
    SessionEnded,
    SupervisorDecided,
    ToolResultEvent,
)


@dataclass(frozen=True)
class ExecutedCall:
    """A tool call that reached the backend (gate-rejected and invalid calls never did)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    kind: str  # read | write | generic | unknown
    ok: bool
    content: str
    result: Any
    requestor: str = "assistant"  # "user": the customer's own phone action (dual control)
    by: str = ""  # "gate": a read the gate made itself (evidence assist), not the agent's call

    @property
    def agents(self) -> bool:
        """A call of the conversation's two sides, as tau2 sees one (not the gate's own read)."""
        return self.by != "gate"

    def signature(self) -> str:
        return f"{self.name}:{json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)}"


@dataclass
class TrialFacts:
    executed: list[ExecutedCall] = field(default_factory=list)
    rejected: list[GateDecided] = field(default_factory=list)  # writes the gate refused (REVISE/BLOCK)
    decisions: list[GateDecided] = field(default_factory=list)
    overrides: list[SupervisorDecided] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    user_texts: list[str] = field(default_factory=list)
    turns: list[AssistantTurnEvent] = field(default_factory=list)
    tool_errors: int = 0  # the agent's calls that failed plus those refused as invalid (tau2 counts both)
    ended: SessionEnded | None = None

    @property
    def writes(self) -> list[ExecutedCall]:
        """Successful executed writes of both sides, in order: what changed the state (dual control: the
        customer's phone actions too, since the phone's state counts in the DB reward as in tau2)."""
        return [c for c in self.executed if c.kind == "write" and c.ok]

    @property
    def agent_writes(self) -> list[ExecutedCall]:
        """The agent's own successful writes: the calls the gate judges."""
        return [c for c in self.writes if c.requestor != "user"]

    @property
    def termination(self) -> str:
        return self.ended.reason if self.ended is not None else "unknown"


def collect(events: Iterable[Any]) -> TrialFacts:
    """Facts from typed events (the bus history or a trace loaded back)."""
    facts = TrialFacts()
    for event in events:
        if isinstance(event, ToolResultEvent):
            if event.executed:
                facts.executed.append(ExecutedCall(event.call.id, event.call.name, dict(event.call.arguments),
                                                   event.kind, event.ok, event.content, event.result,
                                                   event.call.requestor, event.by))
            if event.outcome in ("error", "invalid") and event.by != "gate":
                facts.tool_errors += 1
        elif isinstance(event, GateDecided):
            facts.decisions.append(event)
            if event.verdict != "ALLOW":
                facts.rejected.append(event)
        elif isinstance(event, SupervisorDecided):
            facts.overrides.append(event)
        elif isinstance(event, AssistantTurnEvent):
            facts.turns.append(event)
            if event.text:
                facts.assistant_texts.append(event.text)
        elif isinstance(event, MessageSent):
            if event.role == "user":
                facts.user_texts.append(event.text)
            elif event.text not in facts.assistant_texts[-1:]:
                facts.assistant_texts.append(event.text)
        elif isinstance(event, SessionEnded):
            facts.ended = event
    return facts


def arguments_equal(expected: Mapping[str, Any], actual: Mapping[str, Any], compare: list[str] | None) -> bool:
    """tau2's `Action.compare_with_tool_call` (names already equal): with `compare_args` None the keys compared
    are the CALL's own keys, so an argument the call leaves out is not a mismatch, while an argument the gold
    action lacks is; with `compare_args` given, exactly those keys are compared (absent on one side only is a
    mismatch); no keys to compare is a match."""
    keys = set(actual) if compare is None else set(compare)
    if not keys:
        return True
    return {k: v for k, v in actual.items() if k in keys} == {k: v for k, v in expected.items() if k in keys}
