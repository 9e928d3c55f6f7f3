"""The three facts about a gated write, each worded from the one event that recorded it.

A write has a gate verdict (`GateDecided`), maybe an operator decision (`SupervisorDecided`) and an outcome
(`ToolResultEvent`). They are different facts: a BLOCK that an operator force-allowed *was executed*, and the
gate's message to the model ("… was NOT executed …") is not the outcome. Every surface (gate pane,
transcript, replay, Markdown export, audit screen) words them through these functions, so they cannot
disagree, and internal tokens (`force_allow`, `user_stop`, `###STOP###`) are shown in words.
"""

from __future__ import annotations

from typing import Any

from console.textview import shorten

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
    """The gate's verdict in one line: which rules objected, or which passed, and which were skipped."""
    failed = failed_rules(e)
    skipped = disabled_rules(e)
    if failed:
        text = f"{e.verdict}: " + "; ".join(
            f"{r.predicate_id}{' (crashed)' if r.status == 'error' else ''}" for r in failed)
    elif skipped:
        checked = len(e.results) - len(skipped)
        text = f"{e.verdict}: {checked} rule(s) passed"
    elif e.results:
        text = f"{e.verdict}: all {len(e.results)} rule(s) passed"
    else:
        text = f"{e.verdict}: no rule guards this tool"
    if skipped:
        text += f"; NOT CHECKED (disabled): {', '.join(skipped)}"
    return text


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
