"""A recorded write opened where it happened, driven through Pilot: in the recorded-audit screen `o` opens the
highlighted write's conversation at that write (its step on the slider, its row selected in the gate pane), and
the command `ledgeragent audit`'s report prints beside a finding opens the console on that same write, with the
verdict the report lists."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from console.cli.console import _recorded
from console.cli.main import build_parser, main
from console.tui.app import OperatorConsole
from console.tui.screens.help import screen_keys
from console.tui.screens.recorded import RecordedConversationsScreen
from console.tui.screens.replay import ReplayScreen, StepSlider
from core.events import GateDecided
from tests.console.tui.test_recorded_replay import open_file
from tests.support.audit_recordings import Recordings, write_recordings
from tests.support.pilot import wait_for, wait_for_screen

SIZE = (160, 45)


def selected(replay: ReplayScreen) -> tuple[str, str]:
    """(tool, call id) of the gate pane's highlighted row."""
    gate = replay.panes.gate
    key = gate._cursor_key()
    assert key is not None
    row = gate.rows[key]
    return row.tool, row.call_id


def decision_step(replay: ReplayScreen, call_id: str) -> int:
    assert replay.events is not None
    return next(e.step for e in replay.events if isinstance(e, GateDecided) and e.call.id == call_id)


async def test_o_opens_the_highlighted_write_in_its_conversation(console_app: Callable[..., OperatorConsole],
                                                                 tmp_path: Path) -> None:
    recordings = await write_recordings(tmp_path / "recordings")
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, recordings.retail)
        listing: RecordedConversationsScreen = await wait_for_screen(pilot, app, RecordedConversationsScreen)
        assert ("o", "Open at the write") in screen_keys(listing)  # what `?` lists
        writes = listing.query_one("#recorded-writes", DataTable)
        # conversation 0: the swap, then the address change after it (each with its verdict and rules)
        assert [[str(cell) for cell in writes.get_row_at(i)[:3]] for i in range(writes.row_count)] == [
            ["3", "simulations[0].messages[9].tool_calls[0]", "modify_pending_order_items"],
            ["4", "simulations[0].messages[15].tool_calls[0]", "modify_pending_order_address"]]
        conversations = listing.query_one("#recorded-table", DataTable)
        await pilot.press("down")  # the second conversation: its one write listed
        await wait_for(pilot, lambda: listing.shown == 1)
        assert writes.row_count == 1
        await pilot.press("up")
        await wait_for(pilot, lambda: listing.shown == 0 and writes.row_count == 2)
        assert conversations.cursor_row == 0
        await pilot.press("o")  # the highlighted write: the first, the swap, not the conversation's end
        replay: ReplayScreen = await wait_for_screen(pilot, app, ReplayScreen)
        await wait_for(pilot, lambda: selected(replay)[0] == "modify_pending_order_items")
        tool, call_id = selected(replay)
        slider = replay.query_one(StepSlider)
        assert slider.steps[slider.value] == decision_step(replay, call_id) < slider.steps[-1]
        assert "opened at call 3 (modify_pending_order_items, " in str(
            replay.query_one("#replay-hypothetical").render())
        assert "modify_pending_order_items" in str(replay.panes.gate.query_one("#gate-detail").render())
        await pilot.press("escape")
        listing = await wait_for_screen(pilot, app, RecordedConversationsScreen)
        writes = listing.query_one("#recorded-writes", DataTable)
        writes.focus()
        await pilot.press("down", "o")  # the second write this time
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        await wait_for(pilot, lambda: selected(replay)[0] == "modify_pending_order_address")


async def test_the_reports_command_opens_the_console_at_its_write(tmp_path: Path,
                                                                  monkeypatch: Any) -> None:
    """The command of the report's first rewarded violation, parsed by the real parser, opens the console at that
    write, judged on the same database with the same verdict."""
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    recordings: Recordings = await write_recordings(tmp_path / "recordings")
    argv = ["audit", str(recordings.retail), str(recordings.airline), "--db", str(recordings.retail_db), "--db",
            str(recordings.airline_db), "--out", str(tmp_path / "report")]
    assert await asyncio.to_thread(main, argv) == 0
    finding = json.loads((tmp_path / "report" / "audit.json").read_text(encoding="utf-8"))["rewarded_violations"][1]
    assert (finding["domain"], finding["call"]["name"], finding["category"]) == (
        "airline", "cancel_reservation", "BLOCK")
    command = shlex.split(finding["replay"])
    args = build_parser().parse_args(command[1:])
    from console.tui.app import make_app

    app = make_app(root=tmp_path / "home", recorded=_recorded(args))
    async with app.run_test(size=SIZE) as pilot:
        replay: ReplayScreen = await wait_for_screen(pilot, app, ReplayScreen, timeout=60)
        await wait_for(pilot, lambda: selected(replay)[0] == "cancel_reservation")
        gate = replay.panes.gate
        key = gate._cursor_key()
        assert key is not None and gate.rows[key].verdict == "BLOCK"
        assert "airline.cancel_basis" in gate.rows[key].failed
        assert f"opened at call {finding['call']['index']} (cancel_reservation, BLOCK)" in str(
            replay.query_one("#replay-hypothetical").render())
        await pilot.press("escape")  # under it, the file's conversations, the one opened highlighted
        listing: RecordedConversationsScreen = await wait_for_screen(pilot, app, RecordedConversationsScreen)
        assert listing.query_one("#recorded-table", DataTable).cursor_row == finding["conversation"]["index"]


def test_an_at_the_recording_does_not_have_is_one_line_before_the_console_opens(
        tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    recordings: Recordings = asyncio.run(write_recordings(tmp_path / "recordings"))
    cases = [("5:0", f"--at 5:0: {recordings.retail} has 2 conversation(s), numbered from 0"),
             ("1:99", f"--at 1:99: conversation 1 of {recordings.retail} has "),
             ("one", "--at takes CONVERSATION:CALL, two whole numbers from 0 (e.g. 3:12), not 'one'")]
    for at, message in cases:
        assert main(["console", "--recorded", str(recordings.retail), "--at", at]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"error: {message}"), err
    assert main(["console", "--at", "0:1"]) == 2
    assert "--at names a write of a recording: give the file with --recorded FILE" in capsys.readouterr().err


async def test_a_label_with_brackets_is_listed_whole(console_app: Callable[..., OperatorConsole],
                                                     tmp_path: Path) -> None:
    """tau2's telecom task ids start with `[service_issue]`: a recorded label is text, never Rich markup (which
    took the bracketed part for a style and dropped it)."""
    recordings = await write_recordings(tmp_path / "recordings")
    document = json.loads(recordings.retail.read_text(encoding="utf-8"))
    document["simulations"][0]["task_id"] = "[service_issue]airplane_mode_on[PERSONA:Easy]"
    path = tmp_path / "brackets.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, path)
        listing: RecordedConversationsScreen = await wait_for_screen(pilot, app, RecordedConversationsScreen)
        table = listing.query_one("#recorded-table", DataTable)
        cell = table.get_row_at(0)[0]
        shown = cell.plain if hasattr(cell, "plain") else default_plain(cell)
        assert shown == "simulations[0] (task [service_issue]airplane_mode_on[PERSONA:Easy], trial 0)"


def default_plain(cell: object) -> str:
    """What DataTable draws for a cell given as a string: Rich markup, parsed."""
    from textual.widgets._data_table import default_cell_formatter

    rendered = default_cell_formatter(cell)
    return str(getattr(rendered, "plain", rendered))
