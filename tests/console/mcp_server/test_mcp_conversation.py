"""`log_message` feeds what the customer said to the gate: over MCP as in a live session, the customer's lines become
conversation facts (core.conversation) and `<domain>.explicit_confirmation` judges the next write with them; a
client that logs no customer line is never refused for it (the other tests here log none)."""

from __future__ import annotations

from pathlib import Path

from console.mcp.server import MESSAGE_TOOL
from tests.support.mcp_server import session_folders, stdio_client, trace_events, verdict_of

CANCEL = {"order_id": "#W4821002", "reason": "no longer needed"}


async def test_the_customers_logged_yes_is_what_the_gate_judges_a_write_with(tmp_path: Path) -> None:
    async with stdio_client("retail", tmp_path) as client:
        await client.call_tool("find_user_id_by_email", {"email": "mia.garcia@example.com"})
        await client.call_tool("get_order_details", {"order_id": "#W4821002"})
        await client.call_tool(MESSAGE_TOOL, {"role": "agent", "text": "I'll cancel order #W4821002 as no longer "
                                                                        "needed. Shall I?"})
        await client.call_tool(MESSAGE_TOOL, {"role": "customer", "text": "Hmm, wait. Let me think."})
        hesitated = await client.call_tool("cancel_pending_order", CANCEL)
        logged = await client.call_tool(MESSAGE_TOOL, {"role": "customer", "text": "OK, yes, go ahead."})
        confirmed = await client.call_tool("cancel_pending_order", CANCEL)
    assert logged.is_error is False
    assert verdict_of(hesitated.structured_content) == "REVISE" and hesitated.is_error is True
    assert [rule["id"] for rule in hesitated.structured_content["rules"]] == ["retail.explicit_confirmation"]
    assert '"Hmm, wait. Let me think."' in hesitated.content[0].text
    assert verdict_of(confirmed.structured_content) == "ALLOW" and confirmed.is_error is False
    [folder] = session_folders(tmp_path)
    events = trace_events(folder)
    heard = [e["call_id"] for e in events if e["type"] == "ledger_updated" and e["tool"] == "customer_message"]
    assert heard == ["said_1", "said_2"]  # each customer line once; the agent's line is what the yes answers
    decision = [e for e in events if e["type"] == "gate_decision"][-1]
    confirmation = next(r for r in decision["results"] if r["predicate_id"] == "retail.explicit_confirmation")
    assert confirmation["reason"].startswith('the customer said "OK, yes, go ahead." to "I\'ll cancel order')
