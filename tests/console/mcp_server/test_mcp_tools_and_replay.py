"""`ledgeragent mcp` through the `mcp` SDK's own client, on the shipped seed data.

- the tools a client is offered: the domain's agent tools with their specs' descriptions and schemas, read /
  write annotations, telecom's phone tools left out, and the message tool;
- every domain's scripted scenario replayed through the server (stdio) gets the very verdicts and end state
  `ledgeragent check` gets on the same lines;
- a REVISE's and a BLOCK's results are errors carrying the gate's feedback, their facts in structured content.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.mcp.server import MESSAGE_TOOL
from core.scenario import list_scenarios, load_scenario
from core.tools import Requestor, ToolKind
from domains.registry import DOMAINS, load_domain
from tests.support.mcp_server import (
    check_lines,
    ended_hash,
    replay,
    scenario_lines,
    session_folders,
    stdio_client,
    trace_events,
)

SCENARIO = {"retail": "refund-to-original-payment", "airline": "unobserved-flight", "telecom": "roaming-abroad",
            "telehealth": "schedule-after-checking"}


@pytest.mark.parametrize("domain_name", ["retail", "telecom"])
async def test_the_tools_are_the_agent_tools_with_their_schemas_and_annotations(domain_name: str,
                                                                                 tmp_path: Path) -> None:
    domain = load_domain(domain_name)
    async with stdio_client(domain_name, tmp_path) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    agent = {spec.name: spec for spec in domain.tools if spec.requestor is Requestor.ASSISTANT}
    assert set(listed) == {*agent, MESSAGE_TOOL}
    phone = [spec.name for spec in domain.tools if spec.requestor is Requestor.USER]
    assert (domain_name == "telecom") == bool(phone) and not set(phone) & set(listed)
    for name, spec in agent.items():
        tool = listed[name]
        assert tool.description == spec.description
        assert tool.input_schema == dict(spec.parameters)
        assert tool.annotations is not None
        if spec.kind is ToolKind.WRITE:
            assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint) == (False, True), name
        else:
            assert tool.annotations.read_only_hint is True, name
    assert listed[MESSAGE_TOOL].annotations is not None and listed[MESSAGE_TOOL].annotations.read_only_hint
    assert session_folders(tmp_path) == []  # listing tools needs no session: nothing was made


@pytest.mark.parametrize("domain_name", DOMAINS)
async def test_a_scenario_through_the_server_gets_checks_verdicts_and_end_state(
        domain_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = scenario_lines(domain_name, SCENARIO[domain_name])
    # a scenario whose story is the gate asking for a read is replayed with the gate that asks, on both sides
    written_for = load_scenario(list_scenarios(load_domain(domain_name).scenarios_dir)[SCENARIO[domain_name]]).evidence
    mode = ("--evidence", written_for) if written_for else ()
    async with stdio_client(domain_name, tmp_path / "home", *mode) as client:
        served = await replay(client, lines)
    checked = await check_lines(domain_name, lines, tmp_path / "reference", capsys, extra=mode)
    assert served.verdicts == checked.verdicts
    assert {"REVISE", "ALLOW"} <= set(served.verdicts)
    [folder] = session_folders(tmp_path / "home")
    assert ended_hash(folder) == checked.db_hash  # the trace ends (the client went) with check's end state
    events = trace_events(folder)
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "session_ended"
    assert events[-1]["reason"] == "client_disconnected"
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == \
        [v for v, row in zip(checked.verdicts, checked.rows, strict=True) if row["kind"] == "write"]
    # the client's agent was given no prompt of ours, so no turn records ledger tokens some model read
    turns = [e for e in events if e["type"] == "assistant_turn"]
    assert len(turns) == len(lines) and all(e.get("ledger_tokens", 0) == 0 for e in turns)


async def test_revise_and_block_are_errors_with_the_gates_feedback(tmp_path: Path) -> None:
    revise_lines = scenario_lines("retail", "refund-to-original-payment")
    block_lines = scenario_lines("retail", "other-customers-order")
    async with stdio_client("retail", tmp_path / "a") as client:
        revised = await replay(client, revise_lines)
    async with stdio_client("retail", tmp_path / "b") as client:
        blocked = await replay(client, block_lines)
    for done, verdict in ((revised, "REVISE"), (blocked, "BLOCK")):
        index = done.verdicts.index(verdict)
        result = done.results[index]
        facts = result.structured_content
        assert result.is_error is True
        text = result.content[0].text
        assert text.startswith(f"{verdict}: ") and "NOT executed" in text
        assert facts["verdict"] == verdict and facts["executed"] is False and facts["outcome"] == "rejected"
        assert facts["rules"] and all(rule["id"] in text for rule in facts["rules"])
        assert facts["refusal"] == ("breaks_rule" if verdict == "REVISE" else None)
        [folder] = session_folders(tmp_path / ("a" if verdict == "REVISE" else "b"))
        results = [e for e in trace_events(folder) if e["type"] == "tool_result"]
        assert results[index]["content"] == text  # exactly what the trace says our own agent was given
    allowed = revised.results[revised.verdicts.index("REVISE") + 1]
    assert allowed.is_error is False and allowed.structured_content["verdict"] == "ALLOW"
    assert allowed.structured_content["executed"] is True


async def test_the_gate_reads_what_an_external_agent_skipped_unless_told_to_ask(tmp_path: Path) -> None:
    """An MCP client that identifies the customer and cancels an order it never read: by default the gate reads
    the order itself and the cancellation runs; with `--evidence ask` (the paper's gate) it comes back as an
    error asking for the read."""
    lines = [{"name": "find_user_id_by_email", "arguments": {"email": "mia.garcia@example.com"}},
             {"name": "cancel_pending_order", "arguments": {"order_id": "#W4821002", "reason": "no longer needed"}}]
    async with stdio_client("retail", tmp_path / "assist") as client:
        assisted = await replay(client, lines)
    async with stdio_client("retail", tmp_path / "ask", "--evidence", "ask") as client:
        asked = await replay(client, lines)
    assert assisted.verdicts[1] == "ALLOW" and assisted.results[1].is_error is False
    [folder] = session_folders(tmp_path / "assist")
    gate_reads = [e for e in trace_events(folder) if e["type"] == "tool_result" and e.get("by") == "gate"]
    assert [e["call"]["name"] for e in gate_reads] == ["get_order_details"]
    assert asked.verdicts[1] == "REVISE" and asked.results[1].is_error is True
    assert asked.results[1].structured_content["refusal"] == "needs_read"
    assert "get_order_details" in asked.results[1].content[0].text
