"""Runs inside a fresh interpreter for the replay figures: `python -m benchmarks.replay_child TRACE` opens the
trace in the console (headless, 160x45) the way an operator does (`o`, the path, Enter: the opener's worker,
then the replay screen), then goes to the last step (End) and back to the first (Home). Prints one JSON line:
the time to the step it opens at on screen (a long trace's first step), to the last, and the process's peak
RSS, so the memory figure is the whole visit's, interpreter and Textual included."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def visit(trace: Path) -> dict[str, int]:
    from textual.widgets import Input

    from console.tui.app import make_app
    from console.tui.screens.open_trace import OpenTraceScreen
    from console.tui.screens.replay import ReplayScreen

    async def until(pilot: object, condition: object, limit: float = 600.0) -> None:
        deadline = time.monotonic() + limit
        while not condition():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise TimeoutError("the replay did not get there")
            await pilot.pause(0.005)  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory() as home:
        app = make_app(root=Path(home))
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("o")
            await until(pilot, lambda: isinstance(app.screen, OpenTraceScreen) and app.screen.is_mounted)
            opener = app.screen
            assert isinstance(opener, OpenTraceScreen)
            opener.query_one("#open-path", Input).value = str(trace)
            started = time.perf_counter_ns()
            opener.open(trace)

            def opened() -> bool:  # the step it opens at (a 50k-event trace: its first) is on screen
                screen = app.screen
                return isinstance(screen, ReplayScreen) and screen.shown_step is not None

            await until(pilot, opened)
            await pilot.pause()  # that frame drawn
            first = time.perf_counter_ns() - started
            replay = app.screen
            assert isinstance(replay, ReplayScreen)
            started = time.perf_counter_ns()
            await pilot.press("end")
            await until(pilot, lambda: replay.shown_step == replay.steps[-1])
            await pilot.pause()
            last = time.perf_counter_ns() - started
            await pilot.press("home")
            await until(pilot, lambda: replay.shown_step == replay.steps[0])
            await pilot.pause()
            return {"first_step_ns": first, "last_step_ns": last, "peak_rss_bytes": _peak_rss(),
                    "steps": len(replay.steps)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(visit(Path(sys.argv[1])))), flush=True)
