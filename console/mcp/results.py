"""A handled call as an MCP tool result, worded from the events it recorded.

The text content is exactly the tool message our own agent would have been given (the result, the tool's
error, or the gate's feedback on a REVISE or BLOCK: "NOT EXECUTED: ..."). `isError` is set whenever the call
did not run or the tool refused it. The structured content repeats the three facts of a gated call, each from
the event that recorded it, never inferred from another: the gate's verdict (`gate_decision`, with the
refusal kind of a REVISE and the rules that objected), the operator's decision if any
(`supervisor_decision`), and the outcome (`tool_result`). With `ledger_in_results` a second text block holds
the session's ledger as the gate saw it after the call (what the ledger resource returns).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from console.mcp.session import CallResult
from core.events import GateDecided, SupervisorDecided, ToolResultEvent
from core.ledger import Ledger
from core.timeline import recorded_refusal

LEDGER_HEADING = "Ledger after this call (observed state, by canonical path):"


def _rule(result: Any) -> dict[str, Any]:
    return {"id": result.predicate_id, "status": result.status, "verdict": result.verdict, "reason": result.reason,
            "evidence": list(result.evidence), "policy": result.policy}


def facts(result: CallResult) -> dict[str, Any]:
    """The structured content: verdict, refusal kind, objecting rules, operator decision, outcome."""
    gated = [e for e in result.events if isinstance(e, GateDecided)]
    decided = [e for e in result.events if isinstance(e, SupervisorDecided)]
    call_id = result.outcome.call.id  # the client's call: never a read made for it on the way
    outcome = next((e for e in reversed(result.events) if isinstance(e, ToolResultEvent) and e.call.id == call_id),
                   None)
    content: dict[str, Any] = {
        "tool": result.outcome.call.name,
        "kind": "unknown" if outcome is None else outcome.kind,
        "verdict": gated[-1].verdict if gated else None,  # None: not gated (a read, or refused as invalid)
        "refusal": None,
        "rules": [],
        "operator": None,
        "executed": outcome is not None and outcome.executed,
        "outcome": None if outcome is None else outcome.outcome,
    }
    if gated:
        content["rules"] = [_rule(r) for r in gated[-1].results if r.status not in ("pass", "disabled")]
        refusal = recorded_refusal(gated[-1])
        content["refusal"] = None if refusal is None else refusal.value
    if decided:
        last = decided[-1]
        content["operator"] = {"who": last.who, "decision": last.decision, "reason": last.reason, "when": last.when,
                               "edited_arguments": last.edited_arguments}
    if outcome is not None and outcome.executed and outcome.ok:
        content["result"] = outcome.result
    return content


def tool_result(result: CallResult, ledger: Ledger | None = None) -> types.CallToolResult:
    """The MCP result of a handled call (`ledger`: append its rendering, for `--ledger-in-results`)."""
    blocks: list[types.ContentBlock] = [types.TextContent(text=result.content)]
    if ledger is not None:
        blocks.append(types.TextContent(text=f"{LEDGER_HEADING}\n{ledger.render()}"))
    outcome = result.outcome
    return types.CallToolResult(content=blocks, structured_content=facts(result),
                                is_error=not (outcome.executed and outcome.ok))


def text_result(text: str, *, error: bool, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    """A result that is not a domain call's (a noted message, a session that has ended)."""
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured,
                                is_error=error)
