"""The desk over its socket: what a browser tab's operator process waits for.

A desk host runs in a child process (`python -m benchmarks.desk_remote host SOCKET N`: N scripted retail
sessions in "approve writes" mode, all at once, as `serve --supervise` runs it) and this process is one
operator on a `RemoteDesk`, deciding every item as soon as it sees it, so the sessions go on to their end.

- item visible: from the moment the desk put a call in its inbox (right after the gate's verdict, stamped
  on the host's monotonic clock, `ItemView.asked_at`) to the push that shows it reaching the operator's
  listener. CLOCK_MONOTONIC is one clock for every process on Linux, so the two stamps compare.
- decide round trip: `await remote.decide(...)` from the call to its answer (the change pushed first).
- push size: the largest snapshot line with every session on the desk (informative).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.timing import MS, Result, summarise

SESSIONS = 50
SCENARIO = "refund-to-original-payment"
ROOT = Path(__file__).resolve().parents[1]


async def _host(socket: Path, sessions: int) -> None:
    from console.runtime.desk.desk import Desk
    from console.runtime.desk.remote import DeskHost
    from console.runtime.live import SessionSpec, SupervisionMode

    home = socket.parent.parent / "home"
    specs = [SessionSpec(domain="retail", scenario=SCENARIO, mode=SupervisionMode.APPROVE_WRITES)
             for _ in range(sessions)]
    desk = Desk(specs, concurrency=sessions, root=home, audit_path=home / "audit.jsonl")
    host = DeskHost(desk, socket)
    await host.start()
    print("ready", flush=True)
    await desk.run()
    await asyncio.Event().wait()  # until killed: the operator reads the end state


async def _operate(socket: Path) -> tuple[list[int], list[int], int]:
    from console.runtime.desk.remote import RemoteDesk

    remote = await RemoteDesk.connect(socket, "bench")
    visible: list[int] = []
    round_trips: list[int] = []
    seen: set[str] = set()
    changed = asyncio.Event()

    def on_push() -> None:
        arrived = time.monotonic()
        for item in remote.snapshot().items:
            if item.id not in seen:
                seen.add(item.id)
                visible.append(int((arrived - item.asked_at) * 1e9))
        changed.set()

    remote.subscribe(on_push)
    on_push()
    largest = 0
    while not remote.snapshot().done:
        await asyncio.wait_for(changed.wait(), 120)
        changed.clear()
        for item in remote.snapshot().items:
            decision = "approve" if item.verdict in (None, "ALLOW") else "accept_verdict"
            start = time.perf_counter_ns()
            try:
                await remote.decide(item.id, "bench", decision)
            except Exception:  # noqa: BLE001 - an item gone meanwhile (its session ended): not a sample
                continue
            round_trips.append(time.perf_counter_ns() - start)
        largest = max(largest, len(str(remote.snapshot().to_json())))
    await remote.close()
    return visible, round_trips, largest


def bench_desk_remote(sessions: int = SESSIONS, runs: int = 2) -> list[Result]:
    visible: list[int] = []
    round_trips: list[int] = []
    largest = 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="ldbench-") as folder:
            socket = Path(folder) / "sock" / "desk.sock"
            env = os.environ | {"LEDGERAGENT_HOME": str(Path(folder) / "home")}
            child = asyncio.run(_run(socket, sessions, env))
            visible += child[0]
            round_trips += child[1]
            largest = max(largest, child[2])
    note = f"{sessions} scripted retail sessions at once, host in its own process; {runs} runs"
    return [
        summarise("desk_remote_item_visible", "desk over its socket: inbox item visible to an operator after the "
                  "gate's verdict", visible, target_ns=100 * MS, note=note),
        summarise("desk_remote_decide", "desk over its socket: decide, call to answer (change pushed first)",
                  round_trips, note=note),
        Result("desk_remote_push_size", "desk over its socket: largest snapshot pushed", float(largest),
               float(largest), 1, unit="B", note=note),
    ]


async def _run(socket: Path, sessions: int, env: dict[str, str]) -> tuple[list[int], list[int], int]:
    child = await asyncio.create_subprocess_exec(sys.executable, "-m", "benchmarks.desk_remote", "host", str(socket),
                                                 str(sessions), cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE)
    try:
        assert child.stdout is not None
        if await asyncio.wait_for(child.stdout.readline(), 120) != b"ready\n":
            raise RuntimeError("the desk host did not start")
        return await _operate(socket)
    finally:
        child.kill()
        await child.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["host"]:
        asyncio.run(_host(Path(args[1]), int(args[2])))
        return 0
    from benchmarks.report import environment, print_report

    print_report(bench_desk_remote(), environment("desk_remote"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
