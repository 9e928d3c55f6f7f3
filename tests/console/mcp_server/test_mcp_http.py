"""`ledgeragent mcp --transport http`: safe by default, one session per client, sessions that end properly.

Against the real server in a subprocess, over loopback: the token, the Host check (DNS rebinding), the Origin
allowlist, the path, the rate limit; two clients at once in two sessions that never see each other's data; a
client that closes its session (DELETE) ends its trace; a client of the stateless 2026 era is told to use
the handshake instead of getting a session-less ledger.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from console.mcp.http import bind
from tests.support.desk_remote import socket_folder
from tests.support.mcp_server import (
    HttpServer,
    replay,
    scenario_lines,
    session_folders,
    trace_events,
    wait_until,
)

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(server: HttpServer, headers: dict[str, str], body: object = INITIALIZE, path: str = "/mcp") -> httpx2.Response:
    url = server.url.removesuffix("/mcp") + path
    return httpx2.post(url, headers={**ACCEPT, **headers}, content=json.dumps(body), timeout=30)


def test_every_request_needs_the_token_a_loopback_host_and_a_known_origin(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path, "--allow-origin", "http://127.0.0.1:9999") as server:
        token = {"Authorization": f"Bearer {server.token}"}
        assert post(server, {}).status_code == 401
        assert post(server, {"Authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        rebound = post(server, {**token, "Host": "attacker.example"})
        assert rebound.status_code == 403 and "loopback" in rebound.json()["error"]["message"]
        page = post(server, {**token, "Origin": "http://evil.example"})
        assert page.status_code == 403 and "Origin" in page.json()["error"]["message"]
        assert post(server, {**token, "Origin": "null"}).status_code == 403
        assert post(server, token, path="/other").status_code == 404
        assert post(server, {**token, "Origin": "http://127.0.0.1:9999"}).status_code == 200  # --allow-origin
        answered = post(server, token)
        assert answered.status_code == 200 and answered.headers.get("mcp-session-id")
        assert sum("mcp: refused" in line for line in server.lines) == 6  # one line each, on stderr
    assert session_folders(tmp_path) == []  # a handshake alone makes no session


def test_a_websocket_is_refused_before_anything_else_sees_it(tmp_path: Path) -> None:
    """MCP has no WebSocket: an upgrade (here from a foreign page, with no token) is refused by the guard itself,
    logged like every other refusal, whatever a route behind it would have done."""
    with HttpServer("retail", tmp_path) as server:
        host, port = server.url.removeprefix("http://").removesuffix("/mcp").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as raw:
            raw.sendall((f"GET /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nOrigin: http://evil.example\r\n"
                         "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").encode())
            status = raw.recv(4096).split(b"\r\n", 1)[0]
        assert b" 403 " in status + b" "
        server.wait_for(r"mcp: refused websocket /mcp .*403")


def test_the_token_is_printed_once_and_a_public_bind_needs_one(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path) as server:
        assert server.token and sum(server.token in line for line in server.lines) == 1
    import subprocess
    import sys

    from tests.support.mcp_server import ROOT, server_env

    done = subprocess.run([sys.executable, "-m", "console", "mcp", "--domain", "retail", "--transport", "http",
                           "--host", "0.0.0.0", "--no-token"], cwd=ROOT, env=server_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "token" in done.stderr


def test_a_client_over_its_rate_is_told_to_slow_down(tmp_path: Path) -> None:
    # a burst of 1, then one request every 10 s: on a machine however busy, six requests come faster than that
    with HttpServer("retail", tmp_path, "--rate", "0.1") as server:
        token = {"Authorization": f"Bearer {server.token}"}
        statuses = [post(server, token).status_code for _ in range(6)]
        assert statuses[0] == 200 and 429 in statuses
        assert any("429 too many requests" in line for line in server.lines)


def test_made_up_session_ids_share_the_rate_of_opening_requests(tmp_path: Path) -> None:
    """An id the server never minted is no session of its own: a fresh id per request does not get a fresh
    allowance (nor a row in the limiter's tables), while a session the server opened keeps its own."""
    with HttpServer("retail", tmp_path, "--rate", "0.1") as server:
        token = {"Authorization": f"Bearer {server.token}"}
        opened = post(server, token)  # the one request the shared allowance has (a burst of 1, then 1 per 10 s)
        session = opened.headers["mcp-session-id"]
        made_up = [post(server, {**token, "Mcp-Session-Id": secrets.token_hex(16)}).status_code for _ in range(3)]
        assert made_up == [429, 429, 429]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        mine = post(server, {**token, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}, listing)
        assert mine.status_code == 200


async def test_two_clients_at_once_have_separate_sessions(tmp_path: Path) -> None:
    refund = scenario_lines("retail", "refund-to-original-payment")
    other = scenario_lines("retail", "other-customers-order")
    with HttpServer("retail", tmp_path) as server:
        async def run(lines: list[dict[str, object]]) -> tuple[list[str], str]:
            async with server.client() as client:
                done = await replay(client, lines)
                ledger = await client.read_resource("ledgeragent://ledger")
                return done.verdicts, ledger.contents[0].text  # type: ignore[union-attr]

        (first, first_ledger), (second, second_ledger) = await asyncio.gather(run(refund), run(other))
        assert "REVISE" in first and "BLOCK" in second
        folders = session_folders(tmp_path)
        assert len(folders) == 2
        wait_until(lambda: all(trace_events(f)[-1]["type"] == "session_ended" for f in folders), what="both ends")
    calls = [[e["call"]["arguments"] for e in trace_events(f) if e["type"] == "tool_result"] for f in folders]
    assert sorted(map(len, calls)) == sorted([len(refund), len(other)])
    # each ledger holds the records its own session read, and none of the other's
    assert "users.mia_garcia_4821 = " in first_ledger and "users.noah_kim_3107" not in first_ledger
    assert "users.noah_kim_3107 = " in second_ledger and "users.mia_garcia_4821" not in second_ledger
    for folder in folders:
        assert trace_events(folder)[-1]["reason"] == "client_disconnected"  # the client's DELETE ended it


async def test_a_stateless_era_client_is_told_to_use_the_handshake(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path) as server:
        async with httpx2.AsyncClient(headers=server.headers) as http, \
                Client(streamable_http_client(server.url, http_client=http), mode="2026-07-28") as client:
            with pytest.raises(MCPError, match="initialize handshake"):
                await client.call_tool("find_user_id_by_email", {"email": "x@example.com"})
        async with server.client() as client:  # `auto` (the default, what frameworks use) falls back to it
            done = await client.call_tool("find_user_id_by_email", {"email": "nobody@example.com"})
            assert done.structured_content["outcome"] == "error"
    assert len(session_folders(tmp_path)) == 1


async def test_connections_on_the_listening_socket_send_without_delay() -> None:
    """Every connection the server accepts has TCP_NODELAY, as asyncio (and so uvicorn, which serves `bind`'s
    socket with `loop.create_server`) gives it only to a socket that names TCP as its protocol. Without it a
    response's body waits behind its headers for the client's delayed ACK on a kept-alive connection."""
    loop = asyncio.get_running_loop()
    nodelay: asyncio.Future[int] = loop.create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            raw = transport.get_extra_info("socket")
            nodelay.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    sock = bind("127.0.0.1", 0)
    server = await loop.create_server(Probe, sock=sock)
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        assert await asyncio.wait_for(nodelay, 30) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_answers_are_json_unless_an_operator_can_hold_a_call(tmp_path: Path) -> None:
    """Without a desk every call answers as soon as it ran: one JSON body, which the SDK's client reads to its
    end and so keeps its connection. With a desk (`--listen`) a call may wait for an operator, and its answer is
    an SSE stream, whose keep-alive pings hold the client's read timeout off meanwhile."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_user_details", "arguments": {"user_id": "mia_garcia_4821"}}}
    with socket_folder() as sockets:
        for extra, kind in (((), "application/json"), (("--listen", str(sockets / "desk.sock")), "text/event-stream")):
            with HttpServer("retail", tmp_path / kind.replace("/", "-"), *extra) as server:
                token = {"Authorization": f"Bearer {server.token}"}
                opened = post(server, token)
                assert opened.headers["content-type"].startswith(kind)
                session = {**token, "Mcp-Session-Id": opened.headers["mcp-session-id"],
                           "MCP-Protocol-Version": "2025-11-25"}
                assert post(server, session, {"jsonrpc": "2.0", "method": "notifications/initialized"}
                            ).status_code == 202
                answered = post(server, session, call)
                assert answered.headers["content-type"].startswith(kind)
                assert '"Mia"' in answered.text and '"isError":false' in answered.text.replace(" ", "")
