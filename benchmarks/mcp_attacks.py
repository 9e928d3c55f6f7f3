"""`ledgeragent mcp --transport http` under the attacks its limits are for, full size: what a real client's round
trip is while they go on (tests/console/mcp_server/test_mcp_http_limits.py has them with small numbers).

- mcp_silent_connections: SILENT connections that send nothing (no token, no request) held open, while a
  real client makes CALLS reads, each on a new connection (how a new client's first request arrives: the
  request such connections used to have refused with 503, uvicorn counting them against its limit). Target:
  p95 under 50 ms.
- mcp_wrong_token_flood: FLOOD_RATE requests a second with a wrong bearer token, each on a connection of its
  own, for FLOOD_S seconds, while the real client makes a read every PAUSE_S seconds on its kept connection.
  Target: p95 under 100 ms.

The server is `python -m console mcp --transport http` with its defaults (and a token) in a process of its
own; the real client is this module run as a process of its own (`python -m benchmarks.mcp_attacks client`,
raw JSON-RPC over httpx, so its round trip is the server's answer and the network, not an SDK's own work);
the attackers are threads of the benchmark process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.timing import MS, Result, summarise

ROOT = Path(__file__).resolve().parents[1]
SILENT = 500
CALLS = 100
FLOOD_RATE = 100.0
FLOOD_S = 6.0
PAUSE_S = 0.05
READ = {"name": "find_user_id_by_email", "arguments": {"email": "noah.kim@example.com"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}


class _Server:
    def __init__(self, home: str, token: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGERAGENT_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "console", "mcp", "--domain", "retail", "--transport", "http", "--port", "0",
             f"--token={token}"], cwd=ROOT, env=env | {"LEDGERAGENT_HOME": home, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        self.url = ""
        said: list[str] = []
        for line in self.process.stderr:
            found = re.search(r"serving retail at (\S+)", line)
            if found:
                self.url = found.group(1)
                break
            said.append(line)
        if not self.url:
            code = self.process.wait(timeout=60)
            raise RuntimeError(f"the mcp server did not start (exit {code}): {''.join(said)[-2000:]}")
        threading.Thread(target=self.process.stderr.read, daemon=True).start()  # its log, read on
        host, port = self.url.removeprefix("http://").removesuffix("/mcp").split(":")
        self.address = (host, int(port))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _client(server: _Server, token: str, calls: int, fresh: bool, pause: float) -> list[int]:
    """The real client's timed reads, from a process of its own."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.mcp_attacks", "client", server.url, token, str(calls),
                           "fresh" if fresh else "kept", repr(pause)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise RuntimeError(f"the mcp attack client failed (exit {done.returncode}): {done.stderr[-2000:]}")
    samples: list[int] = json.loads(done.stdout.splitlines()[-1])
    return samples


def bench_mcp_silent_connections(silent: int = SILENT, calls: int = CALLS) -> Result:
    load = os.getloadavg()[0]
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as home:
        server = _Server(home, token)
        held: list[socket.socket] = []
        try:
            for _ in range(silent):
                held.append(socket.create_connection(server.address, timeout=60))
            times = _client(server, token, calls, fresh=True, pause=0.02)
            still_open = sum(1 for sock in held if _open(sock))
        finally:
            for sock in held:
                sock.close()
            server.stop()
    row = summarise("mcp_silent_connections", "", times)
    return Result("mcp_silent_connections",
                  f"mcp over HTTP: a new client's round trip, p95, with {silent} silent connections open", row.p95_ns,
                  row.p95_ns, row.n, target_ns=50 * MS,
                  note=f"median {row.median_ns / MS:.1f} ms; {calls} reads, each on a new connection; "
                       f"{still_open} of {silent} silent connections still open after them (no token, nothing "
                       f"sent; defaults: 512 may wait, 10 s for a head); load average {load:.1f} at the start")


def _open(sock: socket.socket) -> bool:
    """The server has neither answered nor closed this silent connection."""
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)  # an answer, or the end: either way no longer waiting
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def _flood(address: tuple[str, int], rate: float, seconds: float, stop: threading.Event, count: list[int]) -> None:
    """`rate` wrong-token requests a second, each on a connection of its own, paced from the start."""
    host, port = address
    request = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer wrong-{secrets.token_hex(8)}\r\n"
               "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
               "Content-Length: 2\r\n\r\n{}").encode()
    start = time.monotonic()
    sent = 0
    while not stop.is_set() and time.monotonic() - start < seconds:
        due = start + sent / rate
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
        with contextlib.suppress(OSError), socket.create_connection(address, timeout=30) as sock:
            sock.sendall(request)
            while sock.recv(65536):
                pass
            count[0] += 1
        sent += 1


def bench_mcp_wrong_token_flood(rate: float = FLOOD_RATE, seconds: float = FLOOD_S) -> Result:
    load = os.getloadavg()[0]
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as home:
        server = _Server(home, token)
        stop = threading.Event()
        counts = [[0] for _ in range(4)]
        flooders = [threading.Thread(target=_flood, args=(server.address, rate / len(counts), seconds + 2, stop, c),
                                     daemon=True) for c in counts]
        try:
            for thread in flooders:
                thread.start()
            time.sleep(1.0)  # the flood under way before the first timed call
            times = _client(server, token, max(1, round(seconds / PAUSE_S)), fresh=False, pause=PAUSE_S)
        finally:
            stop.set()
            for thread in flooders:
                thread.join(timeout=30)
            server.stop()
    refused = sum(c[0] for c in counts)
    row = summarise("mcp_wrong_token_flood", "", times)
    return Result("mcp_wrong_token_flood",
                  f"mcp over HTTP: a client's round trip, p95, during {rate:g} wrong tokens a second", row.p95_ns,
                  row.p95_ns, row.n, target_ns=100 * MS,
                  note=f"median {row.median_ns / MS:.1f} ms; a read every {PAUSE_S * 1000:g} ms on a kept "
                       f"connection; {refused} wrong-token requests answered 401 meanwhile, each on a connection "
                       f"of its own; load average {load:.1f} at the start")


# ------------------------------------------------------------------------------------------ the client process


def client(url: str, token: str, calls: int, fresh: bool, pause: float) -> list[int]:
    from http import client as http_client

    import httpx2

    host, port_text = url.removeprefix("http://").removesuffix("/mcp").split(":")
    port = int(port_text)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    with httpx2.Client(headers=headers, timeout=60) as http:
        opened = http.post(url, content=json.dumps(INITIALIZE))
        opened.raise_for_status()
        headers |= {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        http.post(url, headers=headers, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        warm = http.post(url, headers=headers, content=json.dumps(  # (untimed: the call that makes the session)
            {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": READ}))
        warm.raise_for_status()
        times: list[int] = []
        for number in range(1, calls + 1):
            body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": READ})
            start = time.perf_counter_ns()
            if fresh:  # (the standard library's client: an httpx client costs more to make than the round trip)
                once = http_client.HTTPConnection(host, port, timeout=60)
                try:
                    once.request("POST", "/mcp", body=body, headers=headers)
                    response = once.getresponse()
                    status, text = response.status, response.read().decode("utf-8")
                finally:
                    once.close()
            else:
                answered = http.post(url, headers=headers, content=body)
                status, text = answered.status_code, answered.text
            times.append(time.perf_counter_ns() - start)
            if status != 200 or '"isError":false' not in text.replace(" ", ""):
                raise RuntimeError(f"call {number}: {status} {text[:300]}")
            time.sleep(pause)
    return times


def main(argv: list[str]) -> int:
    match argv:
        case ["client", url, token, calls, mode, pause]:
            print(json.dumps(client(url, token, int(calls), mode == "fresh", float(pause))))
        case _:
            raise SystemExit("usage: python -m benchmarks.mcp_attacks client URL TOKEN CALLS fresh|kept PAUSE_S")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
