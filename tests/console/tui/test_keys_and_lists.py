"""Help names keys as they are typed and lists every key of the screen; the open-trace list says how each
session ended; `f` on a results file without failures says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from console.tui.app import OperatorConsole
from console.tui.screens.help import HelpScreen
from console.tui.screens.open_trace import OpenTraceScreen
from console.tui.screens.results import ResultsScreen
from core.evaluation.results import EvalResults, RunHeader, TrialResult
from tests.support.pilot import wait_for, wait_for_screen

SIZE = (160, 45)


async def test_help_names_keys_as_typed_and_lists_the_panes_keys(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        screen = await wait_for_screen(pilot, app, HelpScreen)
        keys = dict(screen.keys)
        assert keys.get("/") == "Filter" and keys.get("?") == "Keys"
        assert "slash" not in keys and "question_mark" not in keys
        assert keys.get("ctrl+n") == "New"
        assert "ctrl+e" not in keys  # ending the conversation is the customer's: watching, it does nothing
        assert keys.get("x", "").startswith("Fold/unfold results")  # the transcript's key, focused or not
        assert all("," not in key or key == "," for key in keys), keys  # "escape,w" is two keys
    app = console_app(seat="customer")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("escape", "question_mark")  # out of the customer's box first, where ? is text
        screen = await wait_for_screen(pilot, app, HelpScreen)
        assert dict(screen.keys).get("ctrl+e") == "End conversation"


def write_trace(folder: Path, events: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


async def test_the_open_trace_list_says_how_each_session_ended(console_app: Callable[..., OperatorConsole],
                                                               tmp_path: Path, monkeypatch: Any) -> None:
    home = tmp_path / "data"
    monkeypatch.setenv("LEDGERAGENT_HOME", str(home))
    started = {"type": "session_started", "seq": 1, "domain": "retail", "scenario": "x", "agent": "ledger",
               "model": "scripted"}
    write_trace(home / "sessions" / "20260101-000001-retail-ended", [
        started, {"type": "session_ended", "seq": 2, "reason": "user_stop", "steps": 3}])
    write_trace(home / "sessions" / "20260101-000002-retail-failed", [
        started, {"type": "session_ended", "seq": 2, "reason": "script_diverged", "steps": 3,
                  "detail": "scenario diverged before agent step 6"}])
    write_trace(home / "sessions" / "20260101-000003-retail-unfinished", [started])
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        screen = await wait_for_screen(pilot, app, OpenTraceScreen)
        table = screen.query_one("#open-recent", DataTable)

        def ending(name: str) -> str:
            key = str(home / "sessions" / name / "trace.jsonl")
            return str(table.get_cell(key, "ending"))

        await wait_for(pilot, lambda: "…" not in ending("20260101-000001-retail-ended"))
        assert ending("20260101-000001-retail-ended").startswith("ended")
        assert ending("20260101-000002-retail-failed").startswith("failed")
        assert "script diverged" in ending("20260101-000002-retail-failed")
        assert ending("20260101-000003-retail-unfinished").startswith("unfinished")


async def test_failures_only_on_results_without_failures_says_so(console_app: Callable[..., OperatorConsole],
                                                                 tmp_path: Path) -> None:
    trials = [TrialResult(domain="retail", task_id=t, agent="ledger", trial=0, termination="user_stop",
                          success=True) for t in ("a", "b")]
    results = EvalResults(header=RunHeader(domains=["retail"], agents=["ledger"], trials=1, offline=True),
                          trials=trials)
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(results, tmp_path))
        screen = await wait_for_screen(pilot, app, ResultsScreen)
        await pilot.press("f")
        table = screen.query_one("#results-table", DataTable)
        assert table.row_count == 2  # nothing hidden: there is nothing to hide
        hint = str(screen.query_one("#results-hint", Static).render())
        assert "no failed trial" in hint


async def test_the_customer_seat_start_card_says_enter_not_space(console_app: Callable[..., OperatorConsole]) -> None:
    from console.tui.widgets.status_bar import StatusBar
    from tests.support.screen import region_lines

    app = console_app(seat="customer")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: bool(app.transcript.items))
        card = " ".join(" ".join(s.text for s in app.transcript.items[0].strips).split())
        assert "press Enter" in card and "press space" not in card.lower() and "Press space" not in card
        status = " ".join(region_lines(app, app.query_one(StatusBar)))
        assert "type and press Enter" in status and "press space" not in status
