"""A recorded conversation opened in the console (`o`) replays as an as-recorded audit: the banner and the gate pane
say the verdicts are what the gate would have said, the outcomes are the recording's. Driven through Pilot."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable

from console.tui.app import OperatorConsole
from console.tui.screens.recorded import RecordedConversationsScreen
from console.tui.screens.replay import ReplayScreen
from tests.support.pilot import open_file, wait_for, wait_for_screen
from tests.support.recorded import (
    SWAP_THEN_ADDRESS,
    Exchange,
    check_lines,
    openai_messages,
    record_on_seed,
    tau2_results,
)

SIZE = (160, 45)


async def recorded(tmp_path: Path) -> list[Exchange]:
    return await record_on_seed("retail", tmp_path / "recording.sqlite", SWAP_THEN_ADDRESS)


def gate_rows(replay: ReplayScreen) -> list[tuple[str, str, bool | None]]:
    gate = replay.panes.gate
    return [(row.verdict, row.tool, row.executed) for row in gate.rows.values()]


async def test_an_openai_messages_file_opens_as_what_the_gate_would_have_said(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(openai_messages(await recorded(tmp_path))))
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, path)
        replay: ReplayScreen = await wait_for_screen(pilot, app, ReplayScreen)
        banner = str(replay.query_one("#replay-hypothetical").render())
        assert banner.startswith("What the gate would have said (OpenAI chat messages): every write judged in "
                                 "its recorded context, outcomes as recorded")
        # no database: the reads the gate would make itself cannot be made, so neither write is judged
        assert "2 write(s): 0 ALLOW, 0 needs a read, 0 breaks a rule, 0 BLOCK, 2 not judged" in banner
        assert replay.panes.gate.border_title == "Gate · what the gate would have said"
        # both writes ran in the recording; the gate would have asked for a read first
        assert gate_rows(replay) == [("REVISE", "modify_pending_order_items", True),
                                     ("REVISE", "modify_pending_order_address", True)]
        assert "orders.#W4821002" in replay.panes.ledger.ledger_tree.nodes_by_path


async def test_a_file_of_several_conversations_lists_them_and_replays_the_one_chosen(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    exchanges = await recorded(tmp_path)
    path = tmp_path / "retail-run.json"
    path.write_text(json.dumps(tau2_results("retail", [exchanges[:5], exchanges])))
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, path)
        listing: RecordedConversationsScreen = await wait_for_screen(pilot, app, RecordedConversationsScreen)
        table = listing.query_one("#recorded-table", DataTable)
        assert [[str(cell) for cell in table.get_row_at(i)[:2]] for i in range(table.row_count)] == [
            ["simulations[0] (task 0, trial 0)", "1"], ["simulations[1] (task 1, trial 0)", "2"]]
        table.focus()
        await pilot.press("down", "enter")
        replay: ReplayScreen = await wait_for_screen(pilot, app, ReplayScreen)
        assert str(replay.source).endswith("simulations[1] (task 1, trial 0)")
        assert len(gate_rows(replay)) == 2


async def test_check_lines_are_sent_to_the_command_line(console_app: Callable[..., OperatorConsole],
                                                        tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(check_lines(SWAP_THEN_ADDRESS))
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        opener = await open_file(pilot, app, path)
        await wait_for(pilot, lambda: "ledgeragent check --as-recorded" in str(
            opener.query_one("#open-error").render()))
        assert app.screen is opener


def test_a_trace_whose_session_started_is_missing_is_audited_not_refused(tmp_path: Path) -> None:
    """Only a file that starts with a whole session_started replays (the replay takes its domain from it); a trace
    cut at its head (or whose first line is torn) is still a recording of calls and results: the console audits
    it as recorded, as `check --as-recorded` does, instead of refusing it as "not a LedgerAgent trace"."""
    from console.cli.main import main
    from console.tui.screens.open_trace import TraceLoaded, read_path
    from console.tui.screens.recorded import RecordingAudited

    folder = tmp_path / "s"
    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--out", str(folder)]) == 0
    whole = folder / "trace.jsonl"
    assert isinstance(read_path(whole), TraceLoaded)
    lines = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    for name, head in (("headless", []), ("torn", ['{"seq":1,"step":0,"type":"session_started","dom\n'])):
        damaged = tmp_path / f"{name}.jsonl"
        damaged.write_text("".join([*head, *lines[1:]]), encoding="utf-8")
        opened = read_path(damaged)
        assert isinstance(opened, RecordingAudited), opened
        assert (opened.recording.format, opened.domain.name) == ("trace", "retail")
        writes = [c for audit in opened.audits for c in audit.calls if c.kind == "write"]
        assert len(writes) == 2  # both writes of the session, each judged in its recorded context
