"""Hostile input to `ledgeragent mcp` is normal input: each bad request gets a clear MCP error of its own, the
session and the server go on, and nothing reaches the database.

Over stdio, line by line (a client of any quality): a line that is not JSON (parse error, id null), a request
that is not a valid message (invalid request, with its id), a line over the size bound, a tool nobody is
offered (a protocol error, and no session is made for it), arguments that fail the schema, non-finite numbers
and nesting too deep (the executor's refusals, recorded in the trace as our own agent's would be). Over HTTP:
a client that never reads its responses does not hold up another client.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx2
import pytest

from tests.support.mcp_server import (
    HttpServer,
    RawStdio,
    check_lines,
    ended_hash,
    replay,
    scenario_lines,
    session_folders,
    trace_events,
)

FIND = {"name": "find_user_id_by_email", "arguments": {"email": "noah.kim@example.com"}}
WRITE = "cancel_pending_order"


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


async def test_bad_requests_each_get_an_error_and_the_session_goes_on(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    raw = RawStdio("retail", tmp_path / "home", "--max-request-bytes", "20000")
    try:
        raw.handshake()
        raw.send_line(b"{this is not json")
        assert raw.answer(None)["error"]["code"] == -32700
        raw.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": "not an object"})
        assert raw.answer(5)["error"]["code"] == -32600
        raw.send_line(b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "x", '
                      b'"arguments": {"s": "' + b"x" * 30000 + b'"}}}')
        too_large = raw.answer(None)
        assert too_large["error"]["code"] == -32700 and "too large" in too_large["error"]["message"]
        raw.call(7, "drop_all_tables", {})
        unknown = raw.answer(7)
        assert unknown["error"]["code"] == -32602 and "Unknown tool" in unknown["error"]["message"]
        raw.call(8, "get_order_details", {"order_id": 42})
        raw.send_line(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "' + WRITE.encode()
                      + b'", "arguments": {"order_id": "#W4821002", "reason": NaN}}}')
        raw.call(10, WRITE, {"order_id": nested(80), "reason": "no longer needed"})
        raw.call(11, WRITE, {"order_id": nested(300), "reason": "no longer needed"})
        answers = {n: raw.answer(n) for n in (8, 9, 10, 11)}
        for n in (8, 9, 10):
            assert "result" in answers[n], (n, answers[n])
            result = answers[n]["result"]
            assert result["isError"] is True and result["structuredContent"]["outcome"] == "invalid", n
            assert result["structuredContent"]["executed"] is False
        assert "must be string" in answers[8]["result"]["content"][0]["text"]
        assert "nan is not a finite number" in answers[9]["result"]["content"][0]["text"]
        assert "deep" in answers[10]["result"]["content"][0]["text"]
        assert answers[11]["error"]["code"] in (-32700, -32600)  # beyond what the JSON parser nests
        raw.call(12, FIND["name"], FIND["arguments"])
        fine = raw.answer(12)["result"]
        assert fine["isError"] is False and fine["content"][0]["text"] == "noah_kim_3107"
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    [folder] = session_folders(tmp_path / "home")
    events = trace_events(folder)
    assert [e["outcome"] for e in events if e["type"] == "tool_result"] == ["invalid", "invalid", "invalid", "ok"]
    assert not [e for e in events if e["type"] == "gate_decision"]  # no write was ever judged, let alone run
    assert events[-1]["type"] == "session_ended"
    reference = await check_lines("retail", [FIND], tmp_path / "reference", capsys)
    assert ended_hash(folder) == reference.db_hash  # nothing was written


def test_an_unknown_tool_alone_makes_no_session(tmp_path: Path) -> None:
    raw = RawStdio("retail", tmp_path)
    try:
        raw.handshake()
        raw.call(1, "get_customer_by_phone", {"phone_number": "555"})  # telecom's, not retail's
        assert raw.answer(1)["error"]["code"] == -32602
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    assert session_folders(tmp_path) == []


def test_telecom_phone_tools_are_not_callable(tmp_path: Path) -> None:
    raw = RawStdio("telecom", tmp_path)
    try:
        raw.handshake()
        raw.call(1, "toggle_airplane_mode", {})
        assert raw.answer(1)["error"]["code"] == -32602
    finally:
        raw.close_input()
        raw.stop()


async def test_a_client_that_never_reads_its_responses_holds_up_no_one(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path, "--rate", "100000") as server:
        host, port = server.url.removeprefix("http://").removesuffix("/mcp").split(":")
        headers = {**server.headers, "Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        opened = httpx2.post(server.url, headers=headers, content=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "deaf", "version": "1"}}}), timeout=30)
        session = opened.headers["mcp-session-id"]
        listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
        head = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {server.token}\r\n"
                f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(listing)}\r\n\r\n").encode()
        deaf = socket.create_connection((host, int(port)))
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            deaf.sendall((head + listing) * 300)  # pipelined, megabytes of answers, and never read
            async with server.client() as client:
                done = await replay(client, scenario_lines("retail", "other-customers-order"))
            assert done.verdicts[-1] == "BLOCK"
        finally:
            deaf.close()
        async with server.client() as client:  # and after it went, the server still serves
            assert (await client.call_tool(FIND["name"], FIND["arguments"])).content[0].text == "noah_kim_3107"


def test_a_clients_name_is_inert_in_the_servers_log_and_on_the_desk() -> None:
    """A `clientInfo` name is the client's own text: the label the server logs ("mcp: session for ...") and the desk
    shows has no control character left for the operator's terminal to act on, and shows what was there."""
    from console.mcp.manager import client_label

    label = client_label("evil\x1b]0;pwned\x07\x1b[2J\u202e", "1.0")
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c == "\u202e" for c in label), repr(label)
    assert label.startswith("evil␛]0;pwned") and label.endswith("1.0")
