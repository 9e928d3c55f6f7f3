"""Every table of the console shows its cells literally: a session folder's name, how a trace says its session
ended, an eval results file's domain / task / agent / trial outcome, a rule's id, policy and reason, a recorded
conversation's label. `[red]x[/red]` in any of them is shown as `[red]x[/red]` (a DataTable would read a `str`
cell as Rich markup: style it, turn it into a link, swallow it or fail on an unmatched closing tag), and an ESC
in any of them is shown as `␛`, never sent to the terminal.

What is checked is the table as drawn (the screen's frame, cropped to the table), after waiting for something
in the same table that reads the same before and after the fix, so no assertion waits on a frame."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from console.tui.app import OperatorConsole
from console.tui.screens.open_trace import OpenTraceScreen
from console.tui.screens.recorded import RecordedConversationsScreen
from console.tui.screens.results import ResultsScreen
from console.tui.screens.workbench import WorkbenchScreen
from core.evaluation.results import EvalResults, RunHeader, TrialResult
from tests.support.pilot import open_file, wait_for, wait_for_screen
from tests.support.recorded import SWAP_THEN_ADDRESS, record_on_seed, tau2_results
from tests.support.screen import region_lines

SIZE = (240, 50)
MARKUP = "[red]boom[/red]"
LINK = "[link=http://x]y"
ESC = "\x1b[2J"  # clears the screen if it reaches the terminal
SEEN_ESC = "␛[2J"


def drawn(app: Any, table: DataTable[Any]) -> str:
    """The table as the terminal shows it."""
    return "\n".join(region_lines(app, table))


def assert_no_control(text: str) -> None:
    assert "\x1b" not in text, "an ESC from a cell reached the terminal"


async def shown_when(pilot: Any, app: Any, table: DataTable[Any], *markers: str) -> str:
    """The table as drawn once it shows every one of `markers`; no ESC from a cell reached the terminal in it."""
    await wait_for(pilot, lambda: all(marker in drawn(app, table) for marker in markers))
    shown = drawn(app, table)
    assert_no_control(shown)
    return shown


def write_trace(folder: Path, events: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


async def test_the_open_list_shows_folder_names_and_endings_literally(
        console_app: Callable[..., OperatorConsole], tmp_path: Path, monkeypatch: Any) -> None:
    home = tmp_path / "data"
    monkeypatch.setenv("LEDGERAGENT_HOME", str(home))
    started = {"type": "session_started", "seq": 1, "domain": "retail", "scenario": "x", "agent": "ledger",
               "model": "scripted"}
    folder = f"20260101-000001-[red]boom{ESC}"  # a folder's name can hold anything but "/" (so no "[/red]")
    write_trace(home / "sessions" / folder, [
        started, {"type": "session_ended", "seq": 2, "reason": f"{MARKUP} {LINK}{ESC}", "steps": 3}])
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        screen = await wait_for_screen(pilot, app, OpenTraceScreen)
        table = screen.query_one("#open-recent", DataTable)
        shown = await shown_when(pilot, app, table, "ended:")  # the ending was read and shown
        assert f"20260101-000001-[red]boom{SEEN_ESC}" in shown
        assert f"ended: {MARKUP} {LINK}{SEEN_ESC}" in shown


async def results_table_lines(app: OperatorConsole, results: EvalResults, folder: Path) -> list[str]:
    """The results screen's table as drawn, once a passed (1/1) and a failed (0/1) row both show."""
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(results, folder))
        screen = await wait_for_screen(pilot, app, ResultsScreen)
        table = screen.query_one("#results-table", DataTable)
        return (await shown_when(pilot, app, table, "1/1", "0/1")).splitlines()


async def test_the_results_table_shows_what_the_file_says_literally(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    trials = [
        TrialResult(domain=f"retail{ESC}", task_id="[b]t1", agent=LINK, trial=0, termination="user_stop",
                    success=True),
        TrialResult(domain=f"retail{ESC}", task_id="[/b]t2|x", agent=LINK, trial=0, termination=MARKUP,
                    success=False),
    ]
    results = EvalResults(header=RunHeader(domains=["retail"], agents=[LINK], trials=1, offline=True),
                          trials=trials)
    lines = await results_table_lines(console_app(), results, tmp_path)
    first = next(line for line in lines if "1/1" in line)
    second = next(line for line in lines if "0/1" in line)
    assert first.split()[:3] == [f"retail{SEEN_ESC}", "[b]t1", LINK]
    assert second.split()[:3] == [f"retail{SEEN_ESC}", "[/b]t2|x", LINK]
    assert f"✗ {MARKUP}" in second


async def test_the_workbench_shows_a_rules_id_policy_and_reason_literally(
        console_app: Callable[..., OperatorConsole]) -> None:
    from core.gate import GateContext, LedgerView, Outcome, Verdict, Violation, predicate
    from core.tools import ToolCall

    rule_id = f"house.{MARKUP}{ESC}"

    @predicate(id=rule_id, tools=["return_delivered_order_items"], severity=Verdict.REVISE,
               policy=f"policy {LINK}{ESC}")
    def hostile(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        return Violation(f"because {LINK}{ESC}")

    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        assert app.live is not None
        app.live.agent.gate.predicates = [*app.live.agent.gate.predicates, hostile]
        await pilot.press("w")
        screen = await wait_for_screen(pilot, app, WorkbenchScreen)
        table = screen.query_one("#wb-predicates", DataTable)
        rules = await shown_when(pilot, app, table, "policy")
        assert f"house.{MARKUP}{SEEN_ESC}" in rules
        assert f"policy {LINK}{SEEN_ESC}" in rules
        await pilot.press("g")
        await wait_for(pilot, lambda: screen.last_regate is not None)
        diff = screen.query_one("#wb-diff", DataTable)
        changes = await shown_when(pilot, app, diff, "▶")  # the hostile rule changed a verdict
        assert f"house.{MARKUP}{SEEN_ESC}" in changes
        assert f"because {LINK}{SEEN_ESC}" in changes
        table.move_cursor(row=table.row_count - 1)  # the hostile rule, added last
        table.focus()
        await pilot.press("space")
        message = screen.query_one("#wb-message", Static)
        await wait_for(pilot, lambda: "for the rest of this session" in str(message.render()))
        assert str(message.render()).startswith(f"house.{MARKUP}{SEEN_ESC} disabled")


async def test_a_recorded_conversations_label_is_shown_literally(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    exchanges = await record_on_seed("retail", tmp_path / "recording.sqlite", SWAP_THEN_ADDRESS)
    document = tau2_results("retail", [exchanges[:5], exchanges])  # two: the list of them opens
    document["simulations"][0]["task_id"] = f"{MARKUP}{ESC}"
    path = tmp_path / "retail-run.json"
    path.write_text(json.dumps(document))
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, path)
        listing = await wait_for_screen(pilot, app, RecordedConversationsScreen)
        shown = await shown_when(pilot, app, listing.query_one("#recorded-table", DataTable), "simulations[0]")
        assert f"{MARKUP}{SEEN_ESC}" in shown


async def test_names_holding_a_separator_stay_two_rows_of_the_results_table(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    """Task `r01|fc` of agent `ledger` and task `r01` of agent `fc|ledger` are two rows, each with its own trial
    (joined with "|", both were one row, its trials mixed)."""
    trials = [
        TrialResult(domain="retail", task_id="r01|fc", agent="ledger", trial=0, termination="user_stop",
                    success=True),
        TrialResult(domain="retail", task_id="r01", agent="fc|ledger", trial=0, termination="max_steps",
                    success=False),
    ]
    results = EvalResults(header=RunHeader(domains=["retail"], agents=["ledger", "fc|ledger"], trials=1,
                                           offline=True), trials=trials)
    rows = [line.split()[:5] for line in await results_table_lines(console_app(), results, tmp_path) if "/1" in line]
    assert sorted(rows) == [["retail", "r01", "fc|ledger", "0/1", "✗"], ["retail", "r01|fc", "ledger", "1/1", "✓"]]
