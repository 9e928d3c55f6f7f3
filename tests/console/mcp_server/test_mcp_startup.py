"""`ledgeragent mcp` over stdio answers `initialize` before it imports the SDK (`console.mcp.handshake`): that
answer is the SDK's own, for every domain and protocol version; its tables are the SDK's and the domains';
and a client that sends everything at once, or anything but a plain `initialize` first, is served as before.
(What is imported before the answer: tests/test_startup_imports.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from console.mcp import handshake
from console.mcp.manager import McpSessions
from console.mcp.server import build_server
from console.mcp.session import McpSessionSpec
from console.runtime.desk.desk import Desk
from domains.registry import DOMAINS, load_domain
from tests.support.mcp_server import RawStdio

VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01")


async def sdk_answer(domain: str, protocol_version: str, tmp_path: Path) -> dict[str, Any]:
    """The result the SDK's server (ours, as `ledgeragent mcp` builds it) gives an `initialize`."""
    desk = Desk([], concurrency=1, root=tmp_path)
    spec = McpSessionSpec(domain=domain, scenario=None, model="mcp")
    server = build_server(load_domain(domain), McpSessions(desk, spec, decision_timeout=None), lambda _ctx: "k")
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](8)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](8)
    request = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="initialize", params={
        "protocolVersion": protocol_version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.run, server_reads, server_writes, server.create_initialization_options())
            await to_server.send(SessionMessage(request))
            answer = await from_server.receive()
            group.cancel_scope.cancel()
    finally:
        await desk.close()
    assert isinstance(answer.message, types.JSONRPCResponse)
    return json.loads(answer.message.model_dump_json(by_alias=True, exclude_unset=True))["result"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("domain", DOMAINS)
async def test_the_early_answer_is_the_sdks_own(domain: str, tmp_path: Path) -> None:
    for version in VERSIONS:
        assert handshake.initialize_result(domain, version) == await sdk_answer(domain, version, tmp_path), version


def test_the_handshakes_tables_are_the_sdks_and_the_domains() -> None:
    from importlib.metadata import version

    assert handshake.version() == version("ledgeragent-console")
    assert handshake.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert handshake.TITLES == {name: load_domain(name).title for name in DOMAINS}


def test_everything_sent_at_once_is_answered_once_each(tmp_path: Path) -> None:
    """The handshake, `initialized`, a listing and a call in one write: the early answer, then each other
    answer, and no second answer to the `initialize` (the SDK's own, for the same request, is not written)."""
    raw = RawStdio("retail", tmp_path)
    try:
        raw.send_line(b"".join(json.dumps(m).encode() + b"\n" for m in (
            *RawStdio.HANDSHAKE, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "find_user_id_by_email", "arguments": {"email": "noah.kim@example.com"}}})))
        assert raw.answer(0)["result"]["serverInfo"]["name"] == "ledgeragent-retail"
        assert "find_user_id_by_email" in {t["name"] for t in raw.answer(1)["result"]["tools"]}
        assert raw.answer(2)["result"]["content"][0]["text"] == "noah_kim_3107"
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    raw.join()
    assert raw.answered == [0, 1, 2]


@pytest.mark.parametrize("first", [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                                                                    "capabilities": "none", "clientInfo": {}}},
    {"jsonrpc": "2.0", "id": 0, "method": "tools/list"},
], ids=["malformed initialize", "no initialize"])
def test_a_first_line_the_handshake_cannot_answer_is_the_sdks_to_answer(first: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    raw = RawStdio("retail", tmp_path)
    try:
        raw.send(first)
        answer = raw.answer(0)
        assert "error" in answer and answer["error"]["code"] == -32602  # the SDK's own refusal, as before
        raw.handshake()  # and the handshake after it is the SDK's
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()


@pytest.mark.parametrize("extra, words", [
    (["--mode", "approve writes"], "add --listen SOCKET"),
    (["--token", "t0ken-t0ken-t0ken"], "are for --transport http"),
    (["--db", "no/such/db.json"], "no such database file: no/such/db.json"),
])
def test_options_that_cannot_work_are_one_line_before_anything_is_read(extra: list[str], words: str,
                                                                       tmp_path: Path) -> None:
    """The client's pipe stays open and silent: the command does not wait for a handshake to refuse them."""
    import subprocess
    import sys

    from tests.support.mcp_server import ROOT, server_env

    process = subprocess.Popen([sys.executable, "-m", "console", "mcp", "--domain", "retail", *extra], cwd=ROOT,
                               env=server_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.wait(timeout=120) == 2
        assert process.stderr is not None and process.stdout is not None
        err = process.stderr.read()
        assert len(err.strip().splitlines()) == 1 and words in err
        assert process.stdout.read() == ""  # nothing was answered
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
