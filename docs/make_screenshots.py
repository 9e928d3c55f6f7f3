"""Regenerate the docs' console screenshots in docs/screenshots/ (SVG, from Textual's own screenshot).

    .venv/bin/python docs/make_screenshots.py

Runs the scripted retail demo headless and saves the three panes right after the gate's
REVISE (mid-scenario), the override modal, a force-allowed BLOCK (verdict, decision and outcome), the
stacked layout at 80x24, and the predicate workbench after a re-gate.

    .venv/bin/python docs/make_screenshots.py desk

only writes the supervision desk's (all twelve scenarios in 'approve non-ALLOW', mid-run, a few calls waiting).

    .venv/bin/python docs/make_screenshots.py compare

only writes the compare view's (`console --compare` on the paper's figure 1, at its end: 160x45 side by side,
80x24 stacked showing the LedgerAgent side).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from console.runtime.live import SupervisionMode  # noqa: E402
from console.tui.app import make_app  # noqa: E402

OUT = Path(__file__).parent / "screenshots"
SIZE = (160, 45)


async def until(pilot: object, condition: object, limit: float = 10.0) -> None:
    waited = 0.0
    while not condition():  # type: ignore[operator]
        await pilot.pause(0.05)  # type: ignore[attr-defined]
        waited += 0.05
        if waited > limit:
            raise TimeoutError


async def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        app = make_app(root=Path(home), pace=0.3)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await until(pilot, lambda: len(app.gate_pane.rows) == 1)
            await pilot.press("space")  # pause right after the REVISE: mid-scenario
            app.gate_pane.table.focus()
            await pilot.pause(2)
            app.save_screenshot(str(OUT / "console-mid-scenario.svg"))
        app = make_app(root=Path(home), mode=SupervisionMode.APPROVE_NON_ALLOW)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await until(pilot, lambda: app.main.review_waiting)  # announced; F3 opens it
            await pilot.press("f3")
            await until(pilot, lambda: type(app.screen).__name__ == "ReviewScreen")
            await pilot.pause(2)
            app.save_screenshot(str(OUT / "console-review.svg"))
        app = make_app(root=Path(home), scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW,
                       operator="dana")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await until(pilot, lambda: app.main.review_waiting)
            await pilot.press("f3")
            await until(pilot, lambda: type(app.screen).__name__ == "ReviewScreen")
            await pilot.pause(0.5)
            app.screen.query_one("#review-reason").value = "spouse, verified by phone"  # type: ignore[attr-defined]
            await pilot.press("f")  # force-allow: the gate pane shows verdict, decision and outcome
            await until(pilot, lambda: any(r.executed for r in app.gate_pane.rows.values()))
            app.gate_pane.table.focus()
            app.gate_pane.table.move_cursor(row=0)
            await pilot.pause(1)
            app.save_screenshot(str(OUT / "console-force-allow.svg"))
        app = make_app(root=Path(home))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("space")
            await until(pilot, lambda: app.live.state.phase == "ended")  # type: ignore[union-attr]
            await pilot.pause(1)
            app.save_screenshot(str(OUT / "console-80x24.svg"))
        app = make_app(root=Path(home))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await until(pilot, lambda: app.live.state.phase == "ended")  # type: ignore[union-attr]
            await pilot.press("w")
            await pilot.pause(0.2)
            await pilot.press("g")
            await pilot.pause(0.5)
            app.save_screenshot(str(OUT / "console-workbench.svg"))


async def desk() -> None:
    """The desk with every scenario in 'approve non-ALLOW': the sessions table, the inbox, one item's evidence."""
    from console.runtime.desk.desk import Desk
    from console.runtime.desk_specs import scenario_specs
    from console.tui.desk_app import SupervisorApp

    with tempfile.TemporaryDirectory() as home:
        root = Path(home)
        specs = scenario_specs("all", "all", SupervisionMode.APPROVE_NON_ALLOW)
        board = Desk(specs, root=root, audit_path=root / "desks" / "demo" / "audit.jsonl", concurrency=12)
        app = SupervisorApp(board, operator="dana", lifecycle=board)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: len(board.snapshot().items) >= 8, limit=60)
            await pilot.press("a", "a")  # two decided: the status line has a time-to-decision
            await pilot.pause(1.5)
            app.save_screenshot(str(OUT / "desk.svg"))


async def compare() -> None:
    """The baseline and LedgerAgent on the paper's figure 1, both ended, with the difference strip."""
    from console.runtime.live import SessionSpec
    from console.tui.compare_app import CompareConsole

    for size, name in (((160, 45), "compare-160x45.svg"), ((80, 24), "compare-80x24.svg")):
        with tempfile.TemporaryDirectory() as home:
            app = CompareConsole(SessionSpec(domain="airline", scenario="cancel-outside-window"), root=Path(home))
            screen = app.compare
            async with app.run_test(size=size) as pilot:
                await until(pilot, lambda s=screen: s.pair is not None and bool(s.panes))  # type: ignore[misc]
                await pilot.press("space")
                await until(pilot, lambda s=screen: s.pair is not None and s.pair.end is not None,  # type: ignore[misc]
                            limit=30)
                if size[0] < 160:
                    await pilot.press("s")  # the stacked layout, showing the LedgerAgent side
                await pilot.pause(1)
                app.save_screenshot(str(OUT / name))


if __name__ == "__main__":
    chosen = {"desk": desk, "compare": compare}.get(sys.argv[1] if sys.argv[1:] else "", main)
    asyncio.run(chosen())
