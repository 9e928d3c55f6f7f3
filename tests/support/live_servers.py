"""Real llama.cpp servers for the live tests (tests/live/): started on 127.0.0.1 (a free port), stopped by pid.

tests/live/conftest.py holds the fixtures that start them once per session; what they are built from lives
here, so the live tests import it from a module and never from a conftest.

`make test-live` prepares the servers (tests/live/setup.sh writes .venv-live/live.json). When a server or the
model could not be had on this machine, every live test skips with the reason; a live test never fails for the
environment, only for the protocol.

Between the model adapter and the server sits `RecordingProxy`, a plain forwarding HTTP proxy that keeps
every status and response body, so the tests compare what the server said (its `usage`, its status codes)
with what the agent recorded, instead of trusting the adapter to report on itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(os.environ.get("LEDGERAGENT_LIVE_CONFIG", ROOT / ".venv-live" / "live.json"))
N_CTX = 8192  # SmolLM2's trained context; a retail session's prompt (policy, tools, ledger) passes 4,096 tokens
START_DEADLINE = 300.0  # seconds for a server to load the model and answer its health check
WARMUP_LIMIT = 240.0  # a server slower than this for one tiny request is too slow on this machine: skip


def load_config() -> dict[str, Any]:
    """The config `make test-live` wrote; skips the test (with the reason) when there is none or no model."""
    if not CONFIG.is_file():
        pytest.skip(f"no {CONFIG}: run `make test-live` (it installs the servers and the model)")
    config: dict[str, Any] = json.loads(CONFIG.read_text(encoding="utf-8"))
    if not config.get("model"):
        pytest.skip(f"no model: {config.get('model_reason')}")
    return config


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def threads() -> int:
    """Two threads on an idle machine; one when the cores are busy (llama.cpp's threads spin-wait, and two of
    them fighting other processes for two cores ran 20x slower than one)."""
    cores = os.cpu_count() or 1
    return 1 if os.getloadavg()[0] > cores else min(2, cores)


@dataclass
class LiveServer:
    """One server process. `base_url` goes through a recording proxy; `direct_url` does not."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    proxy: RecordingProxy | None = None

    @property
    def direct_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def base_url(self) -> str:
        assert self.proxy is not None
        return f"http://127.0.0.1:{self.proxy.port}/v1"

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM to the server's process group (by pid), SIGKILL if it is still there after 15 s."""
        if self.proxy is not None:
            self.proxy.stop()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)


def _get(url: str, timeout: float) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (127.0.0.1 only)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return 0


def start_server(name: str, command: list[str], health: str, port: int, tmp: Path) -> LiveServer:
    log = tmp / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    server = LiveServer(name, process, port, log)
    deadline = time.monotonic() + START_DEADLINE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.skip(f"{name} exited at start (code {process.returncode}):\n{server.log_tail()}")
        if _get(f"http://127.0.0.1:{port}{health}", 5.0) == 200:
            server.proxy = RecordingProxy(port).start()
            return server
        time.sleep(0.5)
    server.stop()
    pytest.skip(f"{name} did not answer {health} within {START_DEADLINE:g} s:\n{server.log_tail()}")


def warm_up(server: LiveServer) -> float:
    """One tiny request (loads the weights into the cache); skip when this machine is too slow for the tests."""
    body = json.dumps({"model": "live", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}).encode()
    request = urllib.request.Request(server.direct_url + "/chat/completions", body,
                                     {"Content-Type": "application/json"})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=WARMUP_LIMIT) as response:  # noqa: S310 (127.0.0.1 only)
            response.read()
    except (urllib.error.URLError, OSError) as exc:
        try:
            code = server.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        server.stop()
        if code is not None:  # it died answering (a build whose CPU code this machine cannot run, say)
            pytest.skip(f"{server.name} exited (code {code}) answering its first 4-token request ({exc}):"
                        f"\n{server.log_tail()}")
        pytest.skip(f"{server.name} could not answer a 4-token request within {WARMUP_LIMIT:g} s here ({exc}):"
                    f"\n{server.log_tail()}")
    return time.monotonic() - started


# -- a recording proxy ---------------------------------------------------------------------------------------------


@dataclass
class Exchange:
    path: str
    request: dict[str, Any]
    status: int
    response: Any


@dataclass
class RecordingProxy:
    """Forwards every POST to the server on `upstream` and keeps (request, status, response) in `exchanges`."""

    upstream: int
    exchanges: list[Exchange] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the exchanges are the record."""

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = urllib.request.Request(f"http://127.0.0.1:{proxy.upstream}{self.path}", raw,
                                                 {"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=3600) as response:  # noqa: S310 (127.0.0.1)
                        status, payload = int(response.status), response.read()
                except urllib.error.HTTPError as exc:
                    status, payload = int(exc.code), exc.read()
                except (urllib.error.URLError, OSError):
                    return  # the client gave up or the server went away
                try:
                    parsed: Any = json.loads(payload)
                except ValueError:
                    parsed = payload.decode("utf-8", errors="replace")
                proxy.exchanges.append(Exchange(self.path, json.loads(raw or b"{}"), status, parsed))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client timed out meanwhile

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="live-proxy").start()
        return self

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
