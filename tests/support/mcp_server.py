"""Helpers for `ledgeragent mcp` tests: the real server in a subprocess (stdio or streamable HTTP), the SDK's
own client on it, the lines a scenario's agent calls, and `ledgeragent check` on the same lines for reference.

Everything is real: the server is `python -m console mcp ...` in its own process, the client is the `mcp`
SDK's `Client`, and the reference is the real CLI's `check --json` with its database read back from disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from console.cli.main import main as cli_main
from domains.registry import load_domain
from mock_backends.registry import backend_class

ROOT = Path(__file__).resolve().parents[2]
Line = dict[str, Any]


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGERAGENT_")}
    return env | {"LEDGERAGENT_HOME": str(home), "PYTHONPATH": str(ROOT)}


def stdio_params(domain: str, home: Path, *extra: str) -> StdioServerParameters:
    """`python -m console mcp --domain D ...` as the SDK's stdio client launches a server."""
    return StdioServerParameters(command=sys.executable, args=["-m", "console", "mcp", "--domain", domain, *extra],
                                 env=server_env(home), cwd=str(ROOT))


@contextlib.asynccontextmanager
async def stdio_client(domain: str, home: Path, *extra: str) -> AsyncIterator[Client]:
    async with Client(stdio_params(domain, home, *extra), read_timeout_seconds=120) as client:
        yield client


class HttpServer:
    """`python -m console mcp --transport http --port 0 ...` in a subprocess; its URL and token once it serves."""

    def __init__(self, domain: str, home: Path, *extra: str, timeout: float = 120.0) -> None:
        self.argv = [sys.executable, "-m", "console", "mcp", "--domain", domain, "--transport", "http",
                     "--port", "0", *extra]
        self.env = server_env(home)
        self.timeout = timeout
        self.lines: list[str] = []
        self.url = ""
        self.token: str | None = None
        self._changed = threading.Condition()
        self._done = False
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> HttpServer:
        self.process = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                        errors="replace")
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        try:
            self.url = self.wait_for(r"serving \S+ at (\S+)").group(1)
            found = self.wait_for(r"mcp: (token (\S+)|no access token|token from)").group(2)
            self.token = found
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _drain(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._done = True
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float | None = None, start: int = 0) -> re.Match[str]:
        """The first stderr line (from `start`) matching `pattern`; AssertionError with the log if none came."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        with self._changed:
            while True:
                for line in self.lines[start:]:
                    if found := compiled.search(line):
                        return found
                left = deadline - time.monotonic()
                if left <= 0 or self._done:
                    raise AssertionError(f"the server never logged {pattern!r}:\n" + "\n".join(self.lines))
                self._changed.wait(min(left, 0.2))

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @contextlib.asynccontextmanager
    async def client(self, **kwargs: Any) -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(120.0)) as http, \
                Client(streamable_http_client(self.url, http_client=http), read_timeout_seconds=120,
                       **kwargs) as client:
            yield client

    def stop(self) -> int | None:
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode


def scenario_lines(domain: str, scenario: str) -> list[Line]:
    """The agent's calls of a shipped scenario, in order, as `check` lines (its customer's phone actions are
    not the agent's and are left out)."""
    loaded = load_domain(domain)
    assert loaded.scenarios_dir is not None
    plan = json.loads((loaded.scenarios_dir / f"{scenario}.json").read_text(encoding="utf-8"))
    return [{"name": c["name"], "arguments": c.get("arguments", {})} for step in plan["agent"]
            for c in step.get("calls", [])]


def verdict_of(structured: Mapping[str, Any]) -> str:
    """An MCP result's verdict in `check`'s words: a gated call's verdict, ERROR when the call failed or was
    refused as invalid, ALLOW for an ungated call that ran."""
    if structured["outcome"] in ("error", "invalid"):
        return "ERROR"
    if structured["verdict"] is not None:
        return str(structured["verdict"])
    return "ALLOW" if structured["executed"] else "ERROR"


@dataclass
class Replayed:
    verdicts: list[str]
    results: list[Any] = field(default_factory=list)  # the CallToolResults, in order


async def replay(client: Client, lines: Sequence[Line]) -> Replayed:
    """Every line as a `tools/call` on `client`, in order."""
    done = Replayed([])
    for line in lines:
        result = await client.call_tool(line["name"], line["arguments"])
        done.results.append(result)
        done.verdicts.append(verdict_of(result.structured_content))
    return done


@dataclass(frozen=True)
class Checked:
    verdicts: list[str]
    db_hash: str
    rows: list[dict[str, Any]]


async def check_lines(domain: str, lines: Sequence[Line], folder: Path, capsys: pytest.CaptureFixture[str],
                      *, db: Path | None = None, extra: Sequence[str] = ()) -> Checked:
    """`ledgeragent check FILE --domain D --json --out FOLDER` on `lines`: its verdicts and its database's hash."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "lines.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = folder / "check"
    capsys.readouterr()
    argv = ["check", str(path), "--domain", domain, "--json", "--out", str(out),
            *(["--db", str(db)] if db else []), *extra]
    code = await _in_thread(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [json.loads(row) for row in captured.out.splitlines() if row.strip()]
    backend = await backend_class(domain).attach(out / "db.sqlite")
    try:
        digest = await backend.state_hash()
    finally:
        await backend.close()
    return Checked([row["verdict"] for row in rows], digest, rows)


async def _in_thread(argv: list[str]) -> int:
    """The CLI runs its own event loop (asyncio.run), so from an async test it runs in a thread."""
    import asyncio

    return await asyncio.to_thread(cli_main, argv)


def session_folders(home: Path) -> list[Path]:
    base = home / "sessions"
    return sorted(base.iterdir()) if base.is_dir() else []


def trace_events(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "trace.jsonl").read_text(encoding="utf-8").splitlines()]


def ended_hash(folder: Path) -> str | None:
    """The database hash the session's `session_ended` recorded (None until it ended)."""
    ended = [e for e in trace_events(folder) if e["type"] == "session_ended"]
    return ended[-1]["db_hash"] if ended else None


def wait_until(predicate: Any, timeout: float = 60.0, what: str = "the condition") -> None:
    """Poll a cheap condition on files another process writes (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def integrity(path: Path) -> str:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def _size_limit(limit: int) -> Any:
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


class RawStdio:
    """The server on stdio driven line by line, as a client of any quality might: what it writes is read by a
    thread into a list, and closing stdin is a client that went away (its end of the pipe closed)."""

    HANDSHAKE = ({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "raw", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def __init__(self, domain: str, home: Path, *extra: str, file_size_limit: int | None = None) -> None:
        """`file_size_limit`: the child's `RLIMIT_FSIZE` (`ulimit -f`, in bytes): a write past it fails with
        EFBIG as one on a full disk fails with ENOSPC, which any user may set (tests/console/runtime/
        test_disk_full.py fills a disk the same way)."""
        params = stdio_params(domain, home, *extra)
        limit = None if file_size_limit is None else _size_limit(file_size_limit)
        self.process = subprocess.Popen([params.command, *params.args], cwd=ROOT, env=params.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        preexec_fn=limit)
        self.out: list[dict[str, Any]] = []
        self.answered: list[Any] = []  # the id of every response, in the order they were written
        self.err: list[str] = []
        self._changed = threading.Condition()
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._errors, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            message = json.loads(raw)
            with self._changed:
                self.out.append(message)
                if "result" in message or "error" in message:
                    self.answered.append(message.get("id"))
                self._changed.notify_all()

    def _errors(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            with self._changed:
                self.err.append(raw.decode("utf-8", "replace").rstrip())
                self._changed.notify_all()

    def send_line(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.process.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_line(json.dumps(message).encode("utf-8"))

    def handshake(self) -> None:
        for message in self.HANDSHAKE:
            self.send(message)
        self.answer(0)

    def call(self, request_id: int, name: str, arguments: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})

    def answer(self, request_id: Any, timeout: float = 60.0) -> dict[str, Any]:
        """The response with this id (`None`: the next one written with id null)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in self.out:
                    if "id" in message and message["id"] == request_id and ("result" in message or "error" in message):
                        self.out.remove(message)
                        return message
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no answer to {request_id!r}; stdout {self.out}, stderr {self.err}")
                self._changed.wait(min(left, 0.2))

    def close_input(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self, timeout: float = 60.0) -> int:
        return self.process.wait(timeout=timeout)

    def join(self, timeout: float = 60.0) -> None:
        """Wait until everything the (ended) child wrote on stdout and stderr has been read."""
        for thread in self._threads:
            thread.join(timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
