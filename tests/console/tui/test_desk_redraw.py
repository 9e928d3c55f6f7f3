"""How the desk draws: a burst of desk changes is one redraw, a tick that moves one wait changes that cell in
place (no row rebuilt), and quitting while sessions run asks first, then ends every session's trace."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rich.segment import Segment

from console.runtime.live import SupervisionMode
from console.tui.desk_app import SupervisorApp
from console.tui.screens.confirm import ConfirmScreen
from console.tui.screens.desk import DeskScreen
from console.tui.widgets.desk_grid import RowTable
from tests.support.desk import ManualClock, make_desk, one_waiting_two_ended, spec, trace_of, until, until_screen

N = SupervisionMode.APPROVE_NON_ALLOW
CELL = r">(?:&#160;)*{}(?:&#160;)*<"


def shows(app: SupervisorApp, text: str) -> bool:
    """Whether the screen as drawn holds `text` as one piece (a cell of its own, in the SVG screenshot)."""
    return re.search(CELL.format(re.escape(text)), app.export_screenshot()) is not None
AUTO = SupervisionMode.AUTOPILOT
STEP = SupervisionMode.STEP


async def test_a_burst_of_changes_is_one_redraw_and_cells_change_in_place(tmp_path: Path) -> None:
    clock = ManualClock()
    desk = one_waiting_two_ended(tmp_path, clock)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: [r.phase.value for r in desk.snapshot().rows]
                       == ["waiting for operator", "ended", "ended"])
        await until(pilot, lambda: screen.inbox.item_ids == ("i1",) and screen.claimed == "i1")
        await pilot.pause()
        table = screen.sessions
        redraws, rebuilds, cells = screen.redraws - screen.ticks, table.rebuilds, table.cell_updates
        assert shows(app, "0s")
        for listener in list(desk._listeners):  # the desk calls every listener on each event: 200 of them here
            for _ in range(200):
                listener()
        await pilot.pause()
        await pilot.pause()
        assert screen.redraws - screen.ticks - redraws == 1  # (the 1 s clock tick's own redraws not counted)
        assert (table.rebuilds, table.cell_updates) == (rebuilds, cells)  # nothing changed: nothing touched
        clock.advance(3.0)
        screen.redraw()
        assert table.rebuilds == rebuilds and table.cell_updates == cells + 1  # s01's waited cell, in place
        assert str(table.get_cell("s01", "waited")) == "3s"
        await pilot.pause()
        assert shows(app, "3s") and not shows(app, "0s")  # on screen: the row's cached render was dropped
        await pilot.press("a")
        await until(pilot, lambda: "every session has ended" in screen.status.plain)


async def test_quit_while_sessions_run_asks_then_ends_every_trace(tmp_path: Path) -> None:
    desk = make_desk([spec("retail", "other-customers-order", N), spec("airline", "cancel-outside-window", N)],
                     tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 2)
        await pilot.press("q")
        confirm = await until_screen(pilot, app, ConfirmScreen)
        assert "2 session(s) started (2 waiting on the inbox): quitting ends them" in confirm.question
        await pilot.press("n")  # no: the desk goes on
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        assert not desk.snapshot().done
        await pilot.press("q")
        await until_screen(pilot, app, ConfirmScreen)
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running)
    snapshot = desk.snapshot()
    for row in snapshot.rows:
        last = trace_of(snapshot, row.id)[-1]
        assert last["type"] == "session_ended" and last["reason"] == "desk_closed", json.dumps(last)


async def test_quit_question_tells_waiting_from_queued_and_queued_sessions_never_start(tmp_path: Path) -> None:
    """Two sessions hold the two slots (one waits on a BLOCK, one paused in step mode: both wait on the inbox);
    the third is queued. The question says so, and after quitting the queued one has no folder."""
    desk = make_desk([spec("retail", "other-customers-order", N), spec("airline", "unobserved-flight", STEP),
                      spec("airline", "cancel-outside-window", N)], tmp_path, ManualClock(), concurrency=2)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(pilot, lambda: [r.phase.value for r in desk.snapshot().rows]
                    == ["waiting for operator", "paused", "queued"])
        await pilot.press("q")
        confirm = await until_screen(pilot, app, ConfirmScreen)
        assert confirm.question == ("2 session(s) started (2 waiting on the inbox): quitting ends them "
                                    "(their traces are kept). 1 queued, not started: they never will, and leave "
                                    "no folder. Quit?")
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running)
    rows = desk.snapshot().rows
    assert [bool(r.folder) for r in rows] == [True, True, False]
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == sorted(Path(r.folder).name for r in rows[:2])


async def test_help_lists_the_desk_keys_and_bulk_refuses_a_call_with_a_failing_rule(tmp_path: Path) -> None:
    from console.tui.screens.help import HelpScreen

    desk = make_desk([spec("retail", "other-customers-order", N)], tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: screen.inbox.item_ids == ("i1",))
        await pilot.press("question_mark")
        shown = await until_screen(pilot, app, HelpScreen)
        keys = dict(shown.keys)
        assert keys["A"] == "Bulk-approve ALLOWs" and keys["f"] == "Force-allow" and keys["q"] == "Quit"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        await pilot.press("A")  # the BLOCK is not a rule-free ALLOW: refused, nothing asked, nothing decided
        await until(pilot, lambda: any("only ALLOWs every rule passed" in m for m in screen.decisions.said))
        assert isinstance(app.screen, DeskScreen) and screen.inbox.item_ids == ("i1",)
        await pilot.press("a")
        await until(pilot, lambda: "every session has ended" in screen.status.plain)


def table_lines(table: RowTable) -> list[list[Segment]]:
    """Every visible line of a row table as drawn: the header and each row, segment by segment (text, style)."""
    return [list(table.render_line(y)) for y in range(min(table.size.height, table.row_count + 1))]


async def test_t_recolours_rows_already_drawn_as_a_desk_drawn_fresh_in_the_new_theme(tmp_path: Path) -> None:
    """A desk drawn in the dark theme, then `t`: every visible line of the sessions table and the inbox is the
    one a desk started in the light theme draws (a failed row, which never changes, included). The desk has
    settled before either is drawn, so both saw the same cells (columns only grow)."""
    import asyncio

    desk = make_desk([spec("retail", "other-customers-order", N), spec("airline", "no-such-scenario", N),
                      spec("airline", "cancel-outside-window", AUTO)], tmp_path, ManualClock())
    runner = asyncio.create_task(desk.run())
    for _ in range(60_000):  # a bound on polls, not a time limit
        if [r.phase.value for r in desk.snapshot().rows] == ["waiting for operator", "failed", "ended"]:
            break
        await asyncio.sleep(0.001)

    async def drawn(app: SupervisorApp, pilot: Any) -> tuple[list[list[Segment]], list[list[Segment]]]:
        screen = app.desk_screen
        await until(pilot, lambda: screen.inbox.item_ids == ("i1",) and screen.claimed == "i1"
                    and screen.sessions.row_count == 3)
        await pilot.pause()
        return table_lines(screen.sessions), table_lines(screen.inbox)

    fresh = SupervisorApp(desk, operator="alice")
    fresh.theme = "textual-light"
    async with fresh.run_test(size=(160, 45)) as pilot:
        expected = await drawn(fresh, pilot)
    app = SupervisorApp(desk, operator="alice")
    async with app.run_test(size=(160, 45)) as pilot:
        assert await drawn(app, pilot) != expected  # the themes do differ in these rows
        await pilot.press("t")
        await until(pilot, lambda: app.theme == "textual-light")
        await pilot.pause()
        await pilot.pause()
        screen = app.desk_screen
        assert table_lines(screen.sessions) == expected[0]
        assert table_lines(screen.inbox) == expected[1]
    await desk.close()
    await runner
