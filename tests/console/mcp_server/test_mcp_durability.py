"""Every event of a call is on disk before the client has its answer: a server killed outright (SIGKILL: no
flush, no end of session) right after answering leaves a trace that holds every event of every answered call,
whole, and a database that holds the write it answered as run and passes its integrity check. Over stdio and
over HTTP (where the answer is one JSON body, sent once the call has run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mock_backends.registry import backend_class
from tests.support.mcp_server import HttpServer, RawStdio, integrity, session_folders, trace_events

NEW_ADDRESS = {"address1": "7 Harbour Road", "address2": "", "city": "Portland", "state": "ME", "country": "USA",
               "zip": "04101"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"}),
    ("get_user_details", {"user_id": "mia_garcia_4821"}),
    ("modify_user_address", {"user_id": "mia_garcia_4821", **NEW_ADDRESS}),
]


def over_stdio(home: Path) -> list[dict[str, Any]]:
    raw = RawStdio("retail", home)
    try:
        raw.handshake()
        answers = []
        for number, (name, arguments) in enumerate(CALLS, start=1):
            raw.call(number, name, arguments)
            answers.append(raw.answer(number)["result"])
        raw.process.kill()
        raw.process.wait(timeout=60)
    finally:
        raw.stop()
    return answers


def over_http(home: Path) -> list[dict[str, Any]]:
    with HttpServer("retail", home) as server:
        headers = {**server.headers, "Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}

        def post(body: object) -> httpx2.Response:
            return httpx2.post(server.url, headers=headers, content=json.dumps(body), timeout=60)

        opened = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "killed", "version": "1"}}})
        headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        assert post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
        answers = []
        for number, (name, arguments) in enumerate(CALLS, start=1):
            answered = post({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                             "params": {"name": name, "arguments": arguments}})
            answers.append(answered.json()["result"])
        assert server.process is not None
        server.process.kill()
        server.process.wait(timeout=60)
    return answers


@pytest.mark.parametrize("transport", [over_stdio, over_http], ids=["stdio", "http"])
async def test_a_server_killed_after_answering_has_every_answered_call_on_disk(tmp_path: Path,
                                                                                transport: Any) -> None:
    answers = transport(tmp_path)
    assert [a["isError"] for a in answers] == [False, False, False]
    assert answers[-1]["structuredContent"]["verdict"] == "ALLOW" and answers[-1]["structuredContent"]["executed"]
    [folder] = session_folders(tmp_path)
    events = trace_events(folder)  # every line whole: a torn one would not parse
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["call"]["name"], r["outcome"]) for r in results] == [(name, "ok") for name, _ in CALLS]
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == ["ALLOW"]
    assert not [e for e in events if e["type"] == "session_ended"]  # killed: it never ended
    assert integrity(folder / "db.sqlite") == "ok"
    backend = await backend_class("retail").attach(folder / "db.sqlite")
    try:
        user = await backend.call("get_user_details", {"user_id": "mia_garcia_4821"})
    finally:
        await backend.close()
    assert {k: user["address"][k] for k in NEW_ADDRESS} == NEW_ADDRESS
