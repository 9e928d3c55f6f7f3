"""The three facts about a gated write, each worded from the one event that recorded it.

A write has a gate verdict (`GateDecided`), maybe an operator decision (`SupervisorDecided`) and an outcome
(`ToolResultEvent`). They are different facts: a BLOCK that an operator force-allowed *was executed*, and the
gate's message to the model ("… was NOT executed …") is not the outcome. Every surface (gate pane,
transcript, replay, Markdown export, audit screen) words them through these functions, so they cannot
disagree, and internal tokens (`force_allow`, `user_stop`, `###STOP###`) are shown in words.
"""

from __future__ import annotations

from typing import Any

from console.runtime.textview import shorten
from core.conversation_rules import customer_said
from core.gate import RefusalKind

DECISION_WORDS = {
    "approve": "approved: run it",
    "accept_verdict": "accepted the gate's refusal: don't run",
    "veto": "vetoed: don't run",
    "edit": "edited the arguments (re-gated)",
    "force_allow": "force-allowed despite the gate",
}

END_WORDS = {
    "user_stop": "the customer ended the conversation",
    "transfer": "transferred to a human agent",
    "max_steps": "step limit reached",
    "agent_error": "the agent failed",
    "model_error": "the model failed",
    "cancelled": "stopped by the operator",
    "quit": "the operator quit the console",
    "client_disconnected": "the MCP client disconnected",
    "client_idle": "the MCP client went quiet (idle timeout)",
    "server_stopped": "the MCP server stopped",
}

OUTCOME_WORDS = {
    "ok": "executed",
    "error": "executed, and the tool returned an error",
    "invalid": "not executed: the call was invalid",
    "rejected": "not executed: refused by the gate",
    "vetoed": "not executed: stopped by the operator",
    "undecided": "not executed: no operator decided in time",
}


def refusal_words(refusal: object) -> str:
    """"needs a read" / "breaks a rule" for a REVISE's recorded kind (GateDecided.refusal, a RefusalKind or its
    value), in RefusalKind's own words; "" for none (ALLOW, BLOCK, or a trace recorded before kinds)."""
    value = getattr(refusal, "value", refusal)
    return RefusalKind(value).label if value in REFUSAL_VALUES else ""


REFUSAL_VALUES = frozenset(kind.value for kind in RefusalKind)


def verdict_words(verdict: str | None, refusal: object = None) -> str:
    """A verdict with its kind when it has one: "REVISE · needs a read", "BLOCK", "" (no gate)."""
    kind = refusal_words(refusal)
    return f"{verdict} · {kind}" if verdict and kind else (verdict or "")


def gate_reads_summary(e: Any) -> str:
    """The reads the gate made itself before a verdict, from GateDecided.gate_reads ("" when none)."""
    reads = getattr(e, "gate_reads", None) or []
    parts = []
    for read in reads:
        if read.outcome == "ok":
            parts.append(read.text)
        elif read.outcome == "gate_only":
            parts.append(f"{read.text} (not the customer's: for the gate only, not shown to the model)")
        else:
            parts.append(f"{read.text} (failed: {read.detail})")
    return "the gate read " + "; ".join(parts) + " itself" if parts else ""


def read_by_gate(e: Any) -> str:
    """How a tool result names a read the gate made itself (ToolResultEvent.by/gate_only); "" for any other."""
    if getattr(e, "by", "") != "gate":
        return ""
    return "read by the gate, for its own check only: not shown to the model" if getattr(e, "gate_only", False) \
        else "read by the gate"


def returned_for_read(rows: Any) -> str:
    """The desk's count of needs-a-read REVISEs that went straight back to the model (no human asked), over its
    sessions' rows ("" while there are none)."""
    returned = sum(getattr(row, "returned", 0) for row in rows)
    return f"  returned for a read {returned}" if returned else ""


def words(token: str) -> str:
    """An internal token in plain words (unknown tokens come back with underscores spaced)."""
    if token == "###STOP###":
        return "(ends the conversation)"
    return DECISION_WORDS.get(token) or END_WORDS.get(token) or token.replace("_", " ")


def failed_rules(e: Any) -> list[Any]:
    """The predicate results of a GateDecided that objected (a crash counts: the gate fails closed)."""
    return [r for r in e.results if r.status not in ("pass", "disabled")]


def disabled_rules(e: Any) -> list[str]:
    return [r.predicate_id for r in e.results if r.status == "disabled"]


def crashed_rules(e: Any) -> list[str]:
    return [r.predicate_id for r in e.results if r.status == "error"]


def verdict_summary(e: Any) -> str:
    """The gate's verdict in one line: its kind for a REVISE (needs a read / breaks a rule), which rules objected,
    or which passed, which were skipped, and the reads the gate made itself."""
    failed = failed_rules(e)
    skipped = disabled_rules(e)
    kind = refusal_words(getattr(e, "refusal", None))
    verdict = f"{e.verdict} ({kind})" if kind else e.verdict
    if failed:
        text = f"{verdict}: " + "; ".join(
            f"{r.predicate_id}{' (crashed)' if r.status == 'error' else ''}" for r in failed)
    elif skipped:
        checked = len(e.results) - len(skipped)
        text = f"{verdict}: {checked} rule(s) passed"
    elif e.results:
        text = f"{verdict}: all {len(e.results)} rule(s) passed"
    else:
        text = f"{verdict}: no rule guards this tool"
    if skipped:
        text += f"; NOT CHECKED (disabled): {', '.join(skipped)}"
    reads = gate_reads_summary(e)
    if reads:
        text += f"; {reads}"
    return text


def customer_words(results: Any) -> str:
    """What the customer said, quoted beside a verdict (core.conversation_rules.customer_said)."""
    return customer_said(results)


def verdict_reasons(e: Any) -> list[str]:
    """One line per objecting rule: its id and reason."""
    return [f"{r.predicate_id}: {r.reason}" for r in failed_rules(e)]


def decision_summary(e: Any) -> str:
    """Who decided what about the call, when, and why."""
    text = f"{e.who} {DECISION_WORDS.get(e.decision, e.decision)}"
    if e.gate_verdict:
        text += f" (gate said {e.gate_verdict})"
    if e.when:
        text += f" at {e.when}"
    if e.reason:
        text += f": {e.reason}"
    return text


def outcome_summary(e: Any, width: int = 120) -> str:
    """Executed or not, and what came back."""
    head: str = OUTCOME_WORDS.get(e.outcome, str(e.outcome))
    if e.outcome == "ok":
        return f"{head}: {shorten(e.content, width)}"
    if e.outcome in ("error", "invalid"):
        return f"{head}: {shorten(e.content, width)}"
    return head
