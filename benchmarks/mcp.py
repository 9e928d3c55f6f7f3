"""`ledgeragent mcp` figures: what an external agent pays for the gate over the Model Context Protocol.

- stdio round trip: a read and a gated write, each timed around the `mcp` SDK client's `call_tool` (in a load
  process of its own, `benchmarks.mcp_load`) against a real `python -m console mcp --domain retail` child (one
  session), next to the same calls through `check`'s `Checker` in this process (the executor path with no
  protocol): the MCP row's target is check's median plus 3 ms, so what is measured against it is the
  protocol's and the session's own cost.
- 50 concurrent sessions over streamable HTTP, one server process, on this machine's two cores: 50 SDK clients
  in a load process of their own (`benchmarks.mcp_load`: timed here, a round trip would carry this process's
  garbage collections over what the figures before it left), each its own MCP session, each making
  `CALLS_PER_CLIENT` reads with a pause between (`THINK_S`, far less than a real model thinks); the p95
  client-side round trip over every call, and the server's resident memory per session (its RSS with the 50
  sessions open, less its RSS with one, over 50).

The writes alternate with a read of the same profile (a write marks it stale, and the next write is judged
on a fresh read, as an agent's would be); the write is an address change to the address the customer has, so
every one is an ALLOW that runs and the database stays the same size.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.mcp_load import LOGIN, READ, USER
from benchmarks.timing import MS, Result, summarise

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = 50
CALLS_PER_CLIENT = 10
LOAD_PROCESSES = 1  # the clients' processes (apart from this one: see benchmarks.mcp_load)
THINK_S = 1.0  # seconds between one agent's calls: a real model takes longer than this per turn
MIB = 1024 * 1024


def _write(address: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "modify_user_address", {"user_id": USER, **address}


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGERAGENT_")}
    return env | {"LEDGERAGENT_HOME": home, "PYTHONPATH": str(ROOT)}


async def _address() -> dict[str, Any]:
    from domains.registry import load_domain
    from mock_backends.registry import open_backend

    with tempfile.TemporaryDirectory() as folder:
        backend = await open_backend(load_domain("retail").name, Path(folder) / "db.sqlite")
        try:
            user = await backend.call(*READ)
        finally:
            await backend.close()
    address: dict[str, Any] = dict(user["address"])
    return address


# ------------------------------------------------------------------------------------------ stdio vs check


async def _check_samples(rounds: int, write: tuple[str, dict[str, Any]]) -> tuple[list[int], list[int]]:
    from core.replay import Checker, TrajectoryCall
    from domains.registry import load_domain
    from mock_backends.registry import open_backend

    domain = load_domain("retail")
    reads: list[int] = []
    writes: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        backend = await open_backend(domain.name, Path(folder) / "db.sqlite")
        try:
            checker = Checker(domain, backend)
            login = TrajectoryCall(0, 0, *LOGIN)
            await checker.check(login)
            for index in range(1, 2 * rounds + 1, 2):
                for call, into in ((TrajectoryCall(index, index, *READ), reads),
                                   (TrajectoryCall(index + 1, index + 1, *write), writes)):
                    start = time.perf_counter_ns()
                    result = await checker.check(call)
                    into.append(time.perf_counter_ns() - start)
                    if result.verdict != "ALLOW":
                        raise RuntimeError(f"check: {call.name} got {result.verdict}: {result.reason}")
        finally:
            await backend.close()
    return reads, writes


def _stdio_samples(rounds: int, write: tuple[str, dict[str, Any]]) -> tuple[list[int], list[int], list[int]]:
    """The stdio round trips, timed by an SDK client in a load process of its own (see benchmarks.mcp_load)."""
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([sys.executable, "-m", "benchmarks.mcp_load", "stdio", str(rounds), json.dumps(write)],
                              cwd=ROOT, env=_env(home), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"the mcp stdio load process failed (exit {done.returncode}): {done.stderr[-2000:]}")
    samples = json.loads(done.stdout.splitlines()[-1])
    return samples["reads"], samples["writes"], samples["notes"]


def bench_mcp_stdio(rounds: int = 200, warmup: int = 20) -> list[Result]:
    load = os.getloadavg()[0]
    write = _write(asyncio.run(_address()))
    check_reads, check_writes = asyncio.run(_check_samples(rounds + warmup, write))
    mcp_reads, mcp_writes, mcp_notes = _stdio_samples(rounds + warmup, write)
    rows: list[Result] = [summarise(
        "mcp_stdio_floor", "mcp over stdio: log_message round trip (no database, no gate: the protocol's floor)",
        mcp_notes[warmup:], note="the SDK client and server, the pipe, one event on the session's trace")]
    for what, via_check, via_mcp in (("read", check_reads, mcp_reads), ("gated write", check_writes, mcp_writes)):
        key = what.replace(" ", "_")
        base = summarise(f"mcp_check_{key}", f"check: one {what} through the executor (the reference)",
                         via_check[warmup:])
        rows.append(base)
        rows.append(summarise(
            f"mcp_stdio_{key}", f"mcp over stdio: one {what}, client-side round trip (SDK client, server child)",
            via_mcp[warmup:], target_ns=int(base.median_ns + 3 * MS),
            note=f"target: check's median + 3 ms; {rounds} calls after {warmup} warm-up, retail seed data; "
                 f"load average {load:.1f} at the start"))
    return rows


# ------------------------------------------------------------------------------------------ 50 over HTTP


class _Server:
    def __init__(self, home: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "console", "mcp", "--domain", "retail", "--transport", "http", "--port", "0",
             "--no-token", "--rate", "10000", "--max-sessions", str(4 * SESSIONS),
             "--max-sessions-per-client", str(4 * SESSIONS)],
            cwd=ROOT, env=_env(home), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        assert self.process.stderr is not None
        self.url = ""
        for line in self.process.stderr:
            found = re.search(r"serving retail at (\S+)", line)
            if found:
                self.url = found.group(1)
                break
        if not self.url:
            raise RuntimeError("the mcp server did not start")
        # its log lines (one per session) are read on, so a full pipe never blocks the server
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.asynccontextmanager
async def _client(url: str) -> AsyncIterator[Any]:
    from benchmarks.mcp_load import client

    async with client(url) as opened:
        yield opened


class _Load:
    """One `benchmarks.mcp_load` process: `count` of the `total` sessions, each making `calls` reads."""

    def __init__(self, url: str, first: int, count: int, total: int, calls: int, home: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.mcp_load", "http", url, str(first), str(count), str(total), str(calls),
             repr(THINK_S)], cwd=ROOT, env=_env(home), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)

    def expect(self, key: str) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the mcp load process ended (exit {self.process.wait()})")
        return json.loads(line)[key]

    def say(self, word: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(word + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.say("close")
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _concurrent(server: _Server, home: str, sessions: int, calls: int, processes: int
                ) -> tuple[list[int], int, int]:
    """The timed reads of `sessions` clients spread over `processes` load processes, the server's RSS with one
    session open (the baseline: its imports, the domain, one database) and with `sessions` more."""
    loads: list[_Load] = []
    try:
        loads.append(_Load(server.url, 0, 1, 1, 0, home))  # the baseline's session, open to the end
        loads[0].expect("opened")
        baseline = server.rss()
        share, extra = divmod(sessions, processes)
        first = 0
        for index in range(processes):
            count = share + (index < extra)
            if count:
                loads.append(_Load(server.url, first, count, sessions, calls, home))
                first += count
        for load in loads[1:]:
            load.expect("opened")
        during = server.rss()
        for load in loads:
            load.say("go")
        times = [t for load in loads for t in load.expect("times")]
        for load in loads:
            load.say("close")
        for load in loads:
            if load.process.wait(timeout=120) != 0:
                raise RuntimeError(f"the mcp load process failed (exit {load.process.returncode})")
    finally:
        for load in loads:
            load.stop()
    return times, baseline, during


def bench_mcp_concurrent(sessions: int = SESSIONS, calls: int = CALLS_PER_CLIENT,
                         processes: int = LOAD_PROCESSES) -> list[Result]:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as home:
        server = _Server(home)
        try:
            times, baseline, during = _concurrent(server, home, sessions, calls, processes)
        finally:
            server.stop()
    per = (during - baseline) / sessions
    note = (f"{sessions} SDK clients in {processes} load process(es) of their own, each {calls} reads "
            f"{THINK_S:g} s apart, one server process; 2 cores shared by all; load average {load:.1f} at the start")
    p95 = summarise("mcp_http_concurrent", f"mcp over HTTP: {sessions} sessions at once, round trip of a read",
                    times, note=note)
    return [
        Result("mcp_http_concurrent_p95", f"mcp over HTTP: {sessions} concurrent sessions, p95 round trip",
               p95.p95_ns, p95.p95_ns, p95.n, target_ns=50 * MS, note=f"median {p95.median_ns / MS:.1f} ms; {note}"),
        Result("mcp_memory_per_session", f"mcp over HTTP: server resident memory per open session "
               f"({baseline / MIB:.0f} -> {during / MIB:.0f} MiB with {sessions} more)", per, per, 1,
               target_ns=5 * MIB, unit="B"),
    ]


# ------------------------------------------------------------------------------------------ ended sessions


CHURN_SESSIONS = 300
CHURN_AT_ONCE = 10


async def _churn(server: _Server, sessions: int) -> tuple[int, int]:
    """`sessions` short sessions, CHURN_AT_ONCE at a time: each opens, makes one read and closes (the SDK client
    deletes its MCP session). The server's RSS after the first CHURN_AT_ONCE and after all of them."""

    async def one() -> None:
        async with _client(server.url) as client:
            result = await client.call_tool(*READ)
            if result.is_error:
                raise RuntimeError(f"mcp: {result.content}")

    async def batch() -> None:
        await asyncio.gather(*(one() for _ in range(CHURN_AT_ONCE)))

    await batch()
    settled = server.rss()
    for _ in range(max(0, sessions // CHURN_AT_ONCE - 1)):
        await batch()
    return settled, server.rss()


def bench_mcp_churn(sessions: int = CHURN_SESSIONS) -> Result:
    """What an ended session leaves in the server: RSS growth per session over `sessions` short ones (each
    opened, one read, closed), after the first batch. Its folder and trace stay on disk; in memory the desk keeps
    its row only."""
    with tempfile.TemporaryDirectory() as home:
        server = _Server(home)
        try:
            settled, after = asyncio.run(_churn(server, sessions))
        finally:
            server.stop()
    per = max(0.0, (after - settled) / max(1, sessions - CHURN_AT_ONCE))
    return Result("mcp_memory_per_ended_session",
                  f"mcp over HTTP: server resident memory left per ended session ({settled / MIB:.0f} -> "
                  f"{after / MIB:.0f} MiB after {sessions} sessions opened, used once and closed)", per, per, 1,
                  target_ns=64 * 1024, unit="B", note=f"{CHURN_AT_ONCE} at a time; RSS after the first batch "
                  "against RSS after the last")
