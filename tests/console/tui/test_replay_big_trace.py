"""A 50 MB / 50,000-event trace opens in replay (it once stayed "opening …" for minutes, growing past 586 MB):
`o` shows its first step, End its last with every gate decision of the session counted, Home the first again.
How fast is `make bench`'s figure ("replay open of a 50k-event trace"); here only what is shown."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.big_trace import write_big_trace
from console.tui.app import OperatorConsole
from console.tui.screens.replay import ReplayScreen, StepSlider
from tests.support.pilot import open_file, wait_for, wait_for_screen

SIZE = (160, 45)
EVENTS = 50_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "trace.jsonl"
    write_big_trace(path, EVENTS, distinct=2_000)
    return path


def verdicts(trace: Path) -> Counter[str]:
    with trace.open("rb") as handle:
        return Counter(json.loads(line)["verdict"] for line in handle if b'"type":"gate_decision"' in line[:60])


async def test_a_50k_event_trace_opens_at_its_first_step_and_reaches_its_end(
        console_app: Callable[..., OperatorConsole], big: Path) -> None:
    assert big.stat().st_size > 45_000_000
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, big)
        replay = await wait_for_screen(pilot, app, ReplayScreen, timeout=120)
        assert isinstance(replay, ReplayScreen)
        await wait_for(pilot, lambda: replay.shown_step == replay.steps[0], timeout=120)
        panes = replay.panes
        assert "Hi! How can I help you today?" in panes.transcript.text()
        assert panes.gate.counts == {"ALLOW": 0, "REVISE": 0, "BLOCK": 0}
        assert replay.events is None  # read on demand, never all in memory
        assert len(replay.steps) > 5_000

        await pilot.press("end")
        await wait_for(pilot, lambda: replay.shown_step == replay.steps[-1], timeout=300)
        assert panes.gate.counts == {"ALLOW": 0, "REVISE": 0, "BLOCK": 0} | dict(verdicts(big))
        assert sum(1 for path in panes.ledger.ledger_tree.nodes_by_path if path.startswith("orders.#W")) == 2_000
        assert "ended" in panes.transcript.text().lower()
        assert not replay.query_one(StepSlider).reading

        await pilot.press("home")
        await wait_for(pilot, lambda: replay.shown_step == replay.steps[0], timeout=120)
        assert panes.gate.counts == {"ALLOW": 0, "REVISE": 0, "BLOCK": 0}


async def test_a_trace_that_goes_away_after_opening_is_one_error_not_a_crash(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    from console.tui.screens.replay import open_replay

    trace = tmp_path / "trace.jsonl"
    write_big_trace(trace, 4_000, distinct=20)  # more than the event cache holds, less than opens at the start
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        timeline, domain, _ = open_replay(trace)
        app.push_screen(ReplayScreen(timeline, domain, trace))
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        assert isinstance(replay, ReplayScreen)
        await wait_for(pilot, lambda: replay.shown_step == replay.steps[-1])  # a short trace opens at its end
        trace.unlink()
        replay.query_one(StepSlider).value = 0  # the start was never read: it has to be read now
        await wait_for(pilot, lambda: any("cannot read step" in n.message for n in app._notifications))
        assert replay.shown_step == replay.steps[-1] and app.screen is replay
