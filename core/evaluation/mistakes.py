"""What became of each simulated mistake in a trial: did it reach the database, did a tool refuse it, or did the
gate stop it, and what the stop cost.

An error profile (core.error_profile) makes the scripted agent propose a mistaken call; the agent records the
call's id and the kind of mistake (`AdaptiveScriptedAgent.mistake_calls`). This module reads the trial's events
for each such call. "What the stop cost" is measured inside the trial that was stopped: the agent's model calls
after the refusal up to and including the next call that ran (its recovery, usually the corrected write), or to
the end of the conversation, and their tokens. The baseline's trial has no such calls: it ran the mistake.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from core.events import AssistantTurnEvent, GateDecided, ToolResultEvent
from core.timeline import failed_ids, recorded_refusal

Outcome = Literal["reached the database", "tool refused", "gate refused", "operator stopped", "nobody decided",
                  "invalid", "not proposed"]
# A call that did not run, by the outcome its tool_result recorded (each its own reason, never another's).
NOT_RUN: dict[str, Outcome] = {"rejected": "gate refused", "vetoed": "operator stopped",
                               "undecided": "nobody decided", "invalid": "invalid"}


class Mistake(BaseModel):
    kind: str  # core.error_profile.FailureKind
    tool: str = ""
    call_id: str = ""
    outcome: Outcome = "not proposed"
    verdict: str = ""  # the gate's verdict on it (ledger agent), "" without a gate
    refusal: str = ""  # for a REVISE: "needs a read" or "breaks a rule"
    rules: list[str] = []  # the rules that objected
    recovery_calls: int = 0  # model calls after a refusal up to the next call that ran
    recovery_tokens: int = 0


def mistake_outcomes(events: Sequence[Any], proposed: Iterable[tuple[str, str]]) -> list[Mistake]:
    """One `Mistake` per (kind, call id) the agent proposed, read from the trial's typed events."""
    results = {e.call.id: e for e in events if isinstance(e, ToolResultEvent)}
    decisions = {e.call.id: e for e in events if isinstance(e, GateDecided)}
    turns = [e for e in events if isinstance(e, AssistantTurnEvent)]
    out: list[Mistake] = []
    for kind, call_id in proposed:
        result = results.get(call_id)
        decision = decisions.get(call_id)
        mistake = Mistake(kind=kind, call_id=call_id, tool=result.call.name if result is not None else "")
        if decision is not None:
            mistake.verdict = decision.verdict
            refusal = recorded_refusal(decision)
            mistake.refusal = refusal.label if refusal is not None else ""
            mistake.rules = list(failed_ids(decision.results))
        if result is None:
            out.append(mistake)
            continue
        if result.outcome in NOT_RUN:
            mistake.outcome = NOT_RUN[result.outcome]
        else:
            mistake.outcome = "reached the database" if result.ok else "tool refused"
        if mistake.outcome in ("gate refused", "tool refused"):
            mistake.recovery_calls, mistake.recovery_tokens = _recovery(turns, results, call_id)
        out.append(mistake)
    return out


def _recovery(turns: Sequence[AssistantTurnEvent], results: dict[str, ToolResultEvent],
              call_id: str) -> tuple[int, int]:
    """Model calls (and their tokens) after the turn that proposed `call_id`, up to and including the first
    turn one of whose calls ran, or to the end."""
    start = next((n for n, t in enumerate(turns) if any(c.id == call_id for c in t.tool_calls)), None)
    if start is None:
        return 0, 0
    calls = tokens = 0
    for turn in turns[start + 1:]:
        calls += 1
        tokens += turn.prompt_tokens + turn.completion_tokens
        ran = [results[c.id] for c in turn.tool_calls if c.id in results]
        if any(r.executed and r.ok and r.kind == "write" for r in ran):
            break
    return calls, tokens
