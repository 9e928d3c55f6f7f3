"""Runs inside a fresh interpreter for the supervision desk figures, printing one JSON line.

`python -m benchmarks.desk_child memory N`: N offline scripted sessions (the 12 scenarios in turn, "approve
writes") run at once until every one of them waits on the inbox, so all N are alive together; prints the
resident memory before (after a warm-up desk of 12 sessions ran to its end, so imports, domains and caches are
paid) and with the N sessions waiting.

`python -m benchmarks.desk_child screen N`: the desk App (headless, 160x45) over N offline sessions in
"approve writes" mode, every item approved as soon as a frame shows it. Per item: from the gate's verdict
(its `gate_decision` event reaching the desk) to the first frame handed to the display whose inbox holds the
item. Per redraw: the screen's redraw handler plus the frame it causes (both CPU-bound, on this loop, while
N sessions run beside it).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DOMAINS = ("retail", "airline", "telecom", "telehealth")


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def specs(count: int, mode: str = "approve writes") -> list[Any]:
    from console.runtime.live import SessionSpec, SupervisionMode
    from core.scenario import list_scenarios
    from domains.registry import load_domain

    names = [(d, n) for d in DOMAINS for n in sorted(list_scenarios(load_domain(d).scenarios_dir))]
    return [SessionSpec(domain=names[i % len(names)][0], scenario=names[i % len(names)][1],
                        mode=SupervisionMode(mode)) for i in range(count)]


async def run_to_end(desk: Any) -> None:
    """Run a desk, approving whatever waits, until every session ended."""
    runner = asyncio.create_task(desk.run())
    while not runner.done():
        for item in desk.snapshot().items:
            await desk.decide(item.id, "bench", "step" if item.kind == "step" else "approve")
        await asyncio.sleep(0.002)
    await runner


async def memory(count: int) -> dict[str, Any]:
    from console.runtime.desk.desk import Desk

    with tempfile.TemporaryDirectory() as home:
        root = Path(home)
        await run_to_end(Desk(specs(12), root=root, concurrency=12))
        gc.collect()
        before = rss_bytes()
        desk = Desk(specs(count), root=root, concurrency=count)
        runner = asyncio.create_task(desk.run())
        while len(desk.snapshot().items) < count and not runner.done():
            await asyncio.sleep(0.005)
        waiting = len(desk.snapshot().items)
        gc.collect()
        during = rss_bytes()
        await desk.close()
        return {"before": before, "during": during, "sessions": count, "waiting": waiting}


async def screen(count: int) -> dict[str, Any]:
    from console.runtime.desk.desk import Desk
    from console.tui.desk_app import SupervisorApp

    with tempfile.TemporaryDirectory() as home:
        await run_to_end(Desk(specs(12), root=Path(home), concurrency=12))  # warm-up: imports, caches
        desk = Desk(specs(count), root=Path(home), concurrency=count)
        verdict_at: dict[tuple[str, str], int] = {}
        original_event = desk._event

        def event(session: Any, e: Any) -> None:
            if e.type == "gate_decision":
                verdict_at[(session.id, e.call.id)] = time.perf_counter_ns()
            original_event(session, e)

        desk._event = event  # type: ignore[method-assign]
        app = SupervisorApp(desk, operator="bench", lifecycle=desk)
        latencies: list[int] = []
        redraws: list[int] = []
        seen: set[str] = set()
        async with app.run_test(size=(160, 45)) as pilot:
            screen = app.desk_screen
            original_redraw = screen.redraw
            original_update = screen._on_timer_update
            pending_redraw = [0]

            def redraw() -> None:
                start = time.perf_counter_ns()
                original_redraw()
                pending_redraw[0] += time.perf_counter_ns() - start

            def update() -> None:
                start = time.perf_counter_ns()
                original_update()
                if pending_redraw[0]:
                    redraws.append(pending_redraw[0] + time.perf_counter_ns() - start)
                    pending_redraw[0] = 0

            screen.redraw = redraw  # type: ignore[method-assign]
            screen._on_timer_update = update  # type: ignore[method-assign]
            screen._update_timer._callback = update
            original_display = app._display

            def display(on: Any, renderable: Any) -> None:
                original_display(on, renderable)
                if renderable is None:
                    return
                now = time.perf_counter_ns()
                for item_id in screen.inbox.item_ids:
                    item = desk._items.get(item_id)
                    if item_id in seen or item is None or item.review is None:
                        continue
                    seen.add(item_id)
                    latencies.append(now - verdict_at[(item.session.id, item.review.call.id)])
                    asyncio.get_running_loop().create_task(desk.decide(item_id, "bench", "approve"))

            app._display = display  # type: ignore[method-assign]
            while not desk.snapshot().done:
                await pilot.pause(0.02)
            await pilot.pause()
            rows = len(screen.sessions.rows)
        return {"latency_ns": latencies, "redraw_ns": redraws, "rows": rows, "sessions": count}


def main(argv: list[str]) -> int:
    mode, *rest = argv
    if mode == "memory":
        print(json.dumps(asyncio.run(memory(int(rest[0])))))
        return 0
    if mode == "screen":
        print(json.dumps(asyncio.run(screen(int(rest[0])))))
        return 0
    print(f"unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
