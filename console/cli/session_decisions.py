"""What a session's operator decided about its writes, read from the trace's own events, for `check` to print.

A trace records each human decision as a `SupervisorDecided` (who, when, what, why, and the verdict the session's
gate had given), then the call's `ToolResultEvent` (ran or not). `check` re-judges the calls with today's rules;
beside that verdict it says what the session's operator did, in words taken from those events and never
inferred from a verdict: "BLOCK, force-allowed by dana at 2026-01-01T00:00:00: spouse, verified by phone; ran".

One pass over the lines, keeping only the calls an operator decided (bounded by the decisions, not the trace).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from console.runtime.facts import verdict_words
from core.events import AssistantTurnEvent, SupervisorDecided, ToolResultEvent
from core.strict_json import inert
from core.trace import numbered_events

DECIDED = {
    "approve": "approved",
    "accept_verdict": "refusal accepted",
    "veto": "vetoed",
    "edit": "arguments edited",
    "force_allow": "force-allowed",
}
RESULT_WORDS = {"ok": "ran", "error": "ran: the tool returned an error", "invalid": "not run: invalid",
                "rejected": "not run: refused by the gate", "vetoed": "not run: stopped by the operator",
                "undecided": "not run: no operator decided in time"}


@dataclass
class SessionDecision:
    """The operator's decisions on one proposed call (an edit, then a force-allow: both, in order) and the
    result that followed them (None: the trace ends before one)."""

    call_id: str
    proposed_at: int  # the line of the assistant turn that proposed the call (0: no turn proposed it)
    decisions: list[SupervisorDecided] = field(default_factory=list)
    result_at: int | None = None
    result: ToolResultEvent | None = None


def decided_words(event: SupervisorDecided) -> str:
    """One decision as `check` says it: what, who, when, why ("force-allowed by dana at T: reason"). The name and
    the reason are what someone typed, read back from a file: printed inert."""
    text = f"{DECIDED.get(event.decision, event.decision.replace('_', ' '))} by {inert(event.who)}"
    if event.when:
        text += f" at {inert(event.when)}"
    if event.reason:
        text += f": {inert(event.reason)}"
    if event.decision == "edit":
        text += ", then judged again"
    return text


def decisions_words(entry: SessionDecision) -> str:
    """Every decision on the call, in order, separated by "; "."""
    return "; ".join(decided_words(event) for event in entry.decisions)


def session_words(entry: SessionDecision) -> str:
    """What happened to the call in the session: the gate's verdict as the first decision recorded it, the
    decisions, and the outcome from its tool result ("BLOCK, force-allowed by dana at T: why; ran")."""
    first = entry.decisions[0]
    verdict = verdict_words(first.gate_verdict, first.gate_refusal)
    text = (f"{verdict}, " if verdict else "") + decisions_words(entry)
    if entry.result is not None:
        text += "; " + RESULT_WORDS.get(entry.result.outcome, entry.result.outcome)
    return text


def session_decisions(lines: Iterable[str]) -> list[SessionDecision]:
    """The calls of a trace an operator decided, in the order of their first decision (see the module doc)."""
    proposed: dict[str, int] = {}  # the latest assistant turn's calls (their decisions come before the next turn)
    open_calls: dict[str, SessionDecision] = {}
    found: list[SessionDecision] = []
    for number, item in numbered_events(lines):
        if isinstance(item, AssistantTurnEvent):
            proposed = {call.id: number for call in item.tool_calls}
        elif isinstance(item, SupervisorDecided):
            entry = open_calls.get(item.call.id)
            if entry is None:
                entry = open_calls[item.call.id] = SessionDecision(item.call.id, proposed.get(item.call.id, 0))
                found.append(entry)
            entry.decisions.append(item)
        elif isinstance(item, ToolResultEvent):
            entry = open_calls.pop(item.call.id, None)
            if entry is not None:
                entry.result_at, entry.result = number, item
    return found
