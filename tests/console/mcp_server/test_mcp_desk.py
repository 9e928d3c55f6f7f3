"""MCP sessions supervised live on a desk (`ledgeragent mcp --listen SOCKET --mode ...`).

A write the mode holds waits in the desk's inbox, as any session's does, and the MCP call waits with it: an
operator's decision (over the desk's socket, as `supervise --connect` makes it) is what the client gets back,
and it is in the trace and the audit log. With no decision in time the client is told the call was not
decided and did not run, and nothing records a decision nobody made. A client that goes away while its call
is held leaves a trace that ends and a database that is intact and unchanged.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from console.runtime.desk.remote import RemoteDesk
from tests.support.desk_remote import socket_folder, until, until_items
from tests.support.mcp_server import (
    HttpServer,
    RawStdio,
    check_lines,
    ended_hash,
    integrity,
    replay,
    scenario_lines,
    session_folders,
    stdio_client,
    trace_events,
    wait_until,
)

LINES = scenario_lines("retail", "refund-to-original-payment")
READS, ALLOWED = LINES[:3], LINES[5]  # the customer, their profile and order; the refund the gate allows


async def test_a_held_write_is_decided_on_the_desk_and_the_client_gets_the_outcome(tmp_path: Path) -> None:
    with socket_folder() as sockets:
        path = sockets / "desk.sock"
        with HttpServer("retail", tmp_path, "--listen", str(path), "--mode", "approve writes",
                        "--audit", str(tmp_path / "audit.jsonl")) as server:
            remote = await RemoteDesk.connect(path, "alice")
            try:
                async with server.client() as client:
                    await replay(client, READS)
                    held = asyncio.create_task(client.call_tool(ALLOWED["name"], ALLOWED["arguments"]))
                    await until_items(remote)
                    snapshot = remote.snapshot()
                    [item] = snapshot.items
                    row = snapshot.row(item.session_id)
                    assert row is not None and row.label.startswith("mcp ") and row.domain == "retail"
                    assert (item.tool, item.verdict) == (ALLOWED["name"], "ALLOW")
                    assert not held.done()  # the MCP call waits on the operator
                    await remote.claim(item.id, "alice")
                    await remote.decide(item.id, "alice", "approve", reason="checked the receipt")
                    result = await held
                    events = await remote.session_events(item.session_id)
            finally:
                await remote.close()
    facts = result.structured_content
    assert result.is_error is False and facts["executed"] is True and facts["verdict"] == "ALLOW"
    assert facts["operator"]["who"] == "alice" and facts["operator"]["decision"] == "approve"
    decided = [e for e in events if e["type"] == "supervisor_decision"]
    assert [(e["who"], e["decision"], e["reason"]) for e in decided] == [("alice", "approve", "checked the receipt")]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(r["type"], r.get("operator"), r.get("decision")) for r in audit] == [
        ("decision", "alice", "approve"), ("outcome", None, None)]
    assert audit[1]["executed"] is True


async def test_an_undecided_write_times_out_not_run_and_with_no_decision_on_record(tmp_path: Path) -> None:
    with socket_folder() as sockets:
        path = sockets / "desk.sock"
        async with stdio_client("retail", tmp_path, "--listen", str(path), "--mode", "approve writes",
                                "--decision-timeout", "1") as client:
            await replay(client, READS)
            remote = await RemoteDesk.connect(path, "bob")
            try:
                result = await client.call_tool(ALLOWED["name"], ALLOWED["arguments"])
                await until(remote, lambda: not remote.snapshot().items, "the given-up item leaves the inbox")
            finally:
                await remote.close()
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith("NOT EXECUTED: no operator decided within 1 s")
    facts = result.structured_content
    assert (facts["verdict"], facts["executed"], facts["outcome"], facts["operator"]) == \
        ("ALLOW", False, "undecided", None)
    [folder] = session_folders(tmp_path)
    events = trace_events(folder)
    assert not [e for e in events if e["type"] == "supervisor_decision"]
    assert [e["outcome"] for e in events if e["type"] == "tool_result"][-1] == "undecided"


async def test_a_client_that_goes_mid_call_leaves_a_complete_trace_and_an_intact_database(
        tmp_path: Path, capsys: object) -> None:
    with socket_folder() as sockets:
        path = sockets / "desk.sock"
        raw = RawStdio("retail", tmp_path / "home", "--listen", str(path), "--mode", "approve writes")
        try:
            raw.handshake()
            for number, line in enumerate(READS, 1):
                raw.call(number, line["name"], line["arguments"])
                assert "result" in raw.answer(number)
            remote = await RemoteDesk.connect(path, "carol")
            try:
                raw.call(99, ALLOWED["name"], ALLOWED["arguments"])
                await until_items(remote)
                raw.close_input()  # the client is gone, its write still held
                assert raw.wait() == 0
            finally:
                await remote.close()
        finally:
            raw.stop()
    [folder] = session_folders(tmp_path / "home")
    events = trace_events(folder)
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "client_disconnected"
    assert [e["call"]["name"] for e in events if e["type"] == "tool_result"] == [line["name"] for line in READS]
    assert integrity(folder / "db.sqlite") == "ok"
    reads_only = await check_lines("retail", READS, tmp_path / "reference", capsys)  # type: ignore[arg-type]
    assert ended_hash(folder) == reads_only.db_hash  # the held write never ran
    wait_until(lambda: not path.exists(), what="the desk socket removed")
