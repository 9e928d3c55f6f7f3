"""How the desk draws: a burst of desk changes is one redraw, a tick that moves one wait changes that cell in
place (no row rebuilt), and quitting while sessions run asks first, then ends every session's trace."""

from __future__ import annotations

import json
import re
from pathlib import Path

from console.desk_app import SupervisorApp
from console.live import SupervisionMode
from console.screens.confirm import ConfirmScreen
from console.screens.desk import DeskScreen
from tests.support.desk import ManualClock, make_desk, spec, trace_of, until, until_screen

N = SupervisionMode.APPROVE_NON_ALLOW
CELL = r">(?:&#160;)*{}(?:&#160;)*<"


def shows(app: SupervisorApp, text: str) -> bool:
    """Whether the screen as drawn holds `text` as one piece (a cell of its own, in the SVG screenshot)."""
    return re.search(CELL.format(re.escape(text)), app.export_screenshot()) is not None
AUTO = SupervisionMode.AUTOPILOT
STEP = SupervisionMode.STEP


async def test_a_burst_of_changes_is_one_redraw_and_cells_change_in_place(tmp_path: Path) -> None:
    clock = ManualClock()
    desk = make_desk([spec("retail", "other-customers-order", N), spec("airline", "cancel-outside-window", AUTO),
                      spec("telecom", "roaming-abroad", AUTO)], tmp_path, clock)
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
        assert "Sessions 2 waiting on the inbox: quitting ends them" in confirm.question
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
        assert confirm.question == ("Sessions 2 waiting on the inbox: quitting ends them (their traces are kept). "
                                    "1 queued, not started: they never will, and leave no folder. Quit?")
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running)
    rows = desk.snapshot().rows
    assert [bool(r.folder) for r in rows] == [True, True, False]
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == sorted(Path(r.folder).name for r in rows[:2])


async def test_help_lists_the_desk_keys_and_bulk_refuses_a_call_with_a_failing_rule(tmp_path: Path) -> None:
    from console.screens.help import HelpScreen

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
