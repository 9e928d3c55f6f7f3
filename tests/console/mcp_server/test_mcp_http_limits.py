"""`ledgeragent mcp --transport http` under hostile clients: every limit holds, says what it did, and leaves real
clients served.

Against the real server in a subprocess over loopback, with raw sockets where a client must misbehave: silent
connections (with and without a bound reached), a head sent byte by byte, a body that never arrives or is cut
off, duplicated headers that name two sessions, a flood of wrong tokens, one client that opens session after
session. The limits are configured low so that small numbers reach them; the full-size figures are `make bench`
rows (benchmarks.mcp_attacks).
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.support.mcp_server import HttpServer, session_folders, trace_events, wait_until

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
FIND = {"name": "find_user_id_by_email", "arguments": {"email": "noah.kim@example.com"}}


def address(server: HttpServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").removesuffix("/mcp").split(":")
    return host, int(port)


def opened(server: HttpServer, name: str = "probe") -> str:
    """A new MCP session (the handshake, then `initialized`) of a client named `name`: its id."""
    body = {**INITIALIZE, "params": {**INITIALIZE["params"], "clientInfo": {"name": name, "version": "1"}}}
    answered = httpx2.post(server.url, headers={**server.headers, **ACCEPT}, content=json.dumps(body), timeout=60)
    assert answered.status_code == 200, answered.text
    session = answered.headers["mcp-session-id"]
    done = httpx2.post(server.url, headers={**in_session(server, session)},
                       content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), timeout=60)
    assert done.status_code == 202
    return str(session)


def in_session(server: HttpServer, session: str) -> dict[str, str]:
    return {**server.headers, **ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}


def call(server: HttpServer, session: str, request_id: int = 2) -> httpx2.Response:
    return httpx2.post(server.url, headers=in_session(server, session), timeout=60, content=json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": FIND}))


def read_all(sock: socket.socket, timeout: float = 60.0) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(timeout)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@contextlib.contextmanager
def silent(server: HttpServer, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that send nothing (no token, no request), oldest first."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(address(server), timeout=60))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


async def a_real_client_is_served(server: HttpServer) -> None:
    async with server.client() as client:
        assert (await client.call_tool(FIND["name"], FIND["arguments"])).content[0].text == "noah_kim_3107"


async def test_silent_connections_take_no_real_clients_place(tmp_path: Path) -> None:
    """70 connections that never send a byte (a concurrency limit of 64 before: each counted) leave a real
    client's handshake and calls answered; they stay open, costing their sender only."""
    with HttpServer("retail", tmp_path, "--max-sessions", "1") as server, silent(server, 70) as idle:
        await a_real_client_is_served(server)
        idle[0].settimeout(0.2)
        with pytest.raises(TimeoutError):  # neither an answer nor a close: the oldest is still open
            idle[0].recv(1)
        assert not [line for line in server.lines if "Exceeded concurrency" in line or "closed" in line]


async def test_past_the_bound_the_oldest_waiting_connection_goes_and_every_head_has_a_deadline(
        tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path, "--max-waiting-connections", "20", "--header-timeout", "3") as server:
        with silent(server, 40) as idle:
            for sock in idle[:20]:  # the 20 oldest made room for the 20 newest
                answer = read_all(sock)
                assert answer.startswith(b"HTTP/1.1 503 ") and b"too many connections are waiting" in answer
            for sock in idle[20:]:  # the others, once their time to send a head is up
                answer = read_all(sock)
                assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 3 s" in answer
            await a_real_client_is_served(server)
        host, port = address(server)
        with socket.create_connection((host, port), timeout=60) as trickle:  # sending keeps no head alive
            trickle.sendall(f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
            answer = b""
            with contextlib.suppress(OSError):
                for _ in range(600):
                    trickle.sendall(b"X")
                    trickle.settimeout(0.05)
                    with contextlib.suppress(TimeoutError):
                        answer += trickle.recv(4096)
                        if answer.endswith(b"}"):
                            break
            assert answer.startswith(b"HTTP/1.1 408 ")
        server.wait_for(r"mcp: closed 1 connection that sent no request, to make room for newer ones")
        server.wait_for(r"mcp: closed \d+ connections? whose request head did not arrive within 3 s")
        assert not [line for line in server.lines if "Traceback" in line]


def test_a_body_that_does_not_arrive_is_answered_408_and_one_cut_off_is_one_log_line(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path, "--body-timeout", "2") as server:
        host, port = address(server)
        head = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {server.token}\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000\r\n\r\n").encode()
        with socket.create_connection((host, port), timeout=60) as stalled:
            stalled.sendall(head + b'{"jsonrpc"')
            answer = read_all(stalled)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"body did not arrive within 2 s" in answer
        with socket.create_connection((host, port), timeout=60) as gone:
            gone.sendall(head + b'{"jsonrpc"')
        server.wait_for(r"mcp: POST /mcp from 127\.0\.0\.1: the client went before its request's body had "
                        r"arrived \(10 of 1000 bytes\)")
        assert opened(server)  # and the server goes on
        assert not [line for line in server.lines if "Traceback" in line or "ClientDisconnect" in line]


def test_two_headers_of_one_kind_are_refused_and_end_no_session(tmp_path: Path) -> None:
    """Two `Mcp-Session-Id` headers named two sessions, the SDK acting on the first and the guard on the last:
    a DELETE could end one session's transport and another's ledger. Refused, as two of any header that says
    who asks or about what."""
    with HttpServer("retail", tmp_path) as server:
        first, second = opened(server, "first"), opened(server, "second")
        assert call(server, first).status_code == call(server, second).status_code == 200  # both have ledgers
        base = {**server.headers, **ACCEPT, "MCP-Protocol-Version": "2025-11-25"}
        both = [*base.items(), ("Mcp-Session-Id", first), ("Mcp-Session-Id", second)]
        deleted = httpx2.delete(server.url, headers=both, timeout=60)
        assert deleted.status_code == 400 and "more than one mcp-session-id header" in deleted.text
        host, port = address(server)
        for name, value in (("Authorization", f"Bearer {server.token}"), ("Origin", f"http://{host}:{port}"),
                            ("MCP-Protocol-Version", "2025-11-25")):
            twice = [*in_session(server, first).items(), (name, value), (name, value)]
            refused = httpx2.post(server.url, headers=twice, content=json.dumps(
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": FIND}), timeout=60)
            assert refused.status_code == 400 and f"more than one {name.lower()} header" in refused.text, name
        with socket.create_connection((host, port), timeout=60) as raw:  # (h11 refuses two Host headers itself)
            raw.sendall(f"GET /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nHost: attacker.example\r\n\r\n".encode())
            assert read_all(raw).startswith(b"HTTP/1.1 400 ")
        assert call(server, first, 4).status_code == call(server, second, 4).status_code == 200  # both alive
    folders = session_folders(tmp_path)
    assert len(folders) == 2
    assert all(trace_events(f)[-1]["reason"] == "server_stopped" for f in folders)


def test_a_flood_of_wrong_tokens_keeps_no_connection_and_serves_the_right_one(tmp_path: Path) -> None:
    """A refused token closes its connection (it cannot be kept open to try again, or to sit on); the real
    client's requests go on being answered."""
    with HttpServer("retail", tmp_path) as server:
        session = opened(server)
        host, port = address(server)
        for attempt in range(30):
            with socket.create_connection((host, port), timeout=60) as sock:
                sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer wrong-{attempt}"
                              "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}").encode())
                answer = read_all(sock)  # closed by the server after its answer
            assert answer.startswith(b"HTTP/1.1 401 ") and b"connection: close" in answer.lower()
            assert call(server, session, attempt + 10).status_code == 200


def test_jsonrpc_corner_cases_are_answered_as_the_spec_says(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path) as server:
        session = opened(server)

        def send(body: object) -> httpx2.Response:
            return httpx2.post(server.url, headers=in_session(server, session), content=json.dumps(body), timeout=60)

        for bad_id in ({"x": 1}, [1], None, 1.5, True):
            answered = send({"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"})
            assert answered.status_code == 400, bad_id  # never a 202 that answers nothing
            assert answered.json()["id"] is None and answered.json()["error"]["code"] == -32600, bad_id
        batch = send([{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}])
        assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
        assert "batch" in batch.json()["error"]["message"]
        empty = send({})
        assert empty.status_code == 400 and empty.json() == {
            "jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": empty.json()["error"]["message"]}}
        bad_params = send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "not an object"})
        assert bad_params.status_code == 400 and bad_params.json()["id"] == 6
        assert bad_params.json()["error"]["code"] == -32600
        assert send({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).status_code == 200  # the session goes on


def test_one_client_cannot_take_every_session(tmp_path: Path) -> None:
    """With 4 sessions in all, one client (its address and name) gets a quarter: its next handshake is told
    so (429), and another client still gets in."""
    with HttpServer("retail", tmp_path, "--max-sessions", "4") as server:
        opened(server, "hog")
        refused = httpx2.post(server.url, headers={**server.headers, **ACCEPT}, timeout=60, content=json.dumps(
            {**INITIALIZE, "params": {**INITIALIZE["params"], "clientInfo": {"name": "hog", "version": "2"}}}))
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert "('hog' from 127.0.0.1) has 1 sessions open" in refused.json()["error"]["message"]
        for name in ("other", "third", "fourth"):
            assert opened(server, name)


def test_at_the_cap_the_session_idle_the_longest_makes_room(tmp_path: Path) -> None:
    with HttpServer("retail", tmp_path, "--max-sessions", "2", "--max-sessions-per-client", "2",
                    "--reclaim-after", "1") as server:
        oldest = opened(server, "hog")
        assert call(server, oldest).status_code == 200  # it has a ledger session
        newer = opened(server, "hog")
        headers = {**server.headers, **ACCEPT}
        answers: list[httpx2.Response] = []

        def admitted() -> bool:
            answers.append(httpx2.post(server.url, headers=headers, content=json.dumps(INITIALIZE), timeout=60))
            return answers[-1].status_code == 200

        wait_until(admitted, what="a place for a new session")
        assert {a.status_code for a in answers[:-1]} <= {503}
        if len(answers) > 1:
            assert "all used in the last 1 s" in answers[0].json()["error"]["message"]
        gone = call(server, oldest, 9)
        assert gone.status_code == 404 and "its place was needed for a new session" in gone.json()["error"]["message"]
        assert call(server, newer, 9).status_code == 200  # the one used more lately stays
        ends = [[e["reason"] for e in trace_events(f) if e["type"] == "session_ended"]
                for f in session_folders(tmp_path)]
        assert ends == [["client_idle"], []]  # the oldest's trace is complete; the newer one goes on
