"""The status bar shows every field whole, each label with its value, at 80x24, 120x35 and 160x45.

Read from the screen as the terminal shows it (tests/support/screen.py): a field cut by the edge or an ellipsis
is visible there, where the bar's own data would still hold it. The main screen's snapshots at the three sizes
(tests/console/tui/test_snapshots.py) are the pictures of the same bar."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.app import App, ComposeResult

from console.tui.app import OperatorConsole
from console.tui.widgets.status_bar import StatusBar
from tests.console.snapshots import stable_screenshot
from tests.support.pilot import wait_for
from tests.support.screen import region_lines

SIZES = [(80, 24), (120, 35), (160, 45)]


def fields_of(app: OperatorConsole) -> list[str]:
    """Every field the bar must show, label and value, as the session's own state says them."""
    live = app.live
    assert live is not None
    state = live.state
    return [str(state.phase), f"step {state.steps}", f"tokens {state.prompt_tokens + state.completion_tokens:,}",
            f"mode {live.supervisor.mode.value}", "seat watching", f"domain {live.spec.domain}",
            f"scenario {live.spec.scenario}", f"agent {live.spec.agent}", f"model {live.model.name}",
            f"rules {live.rules_version}"]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_field_is_on_screen_with_its_value(console_app: Callable[..., OperatorConsole],
                                                       size: tuple[int, int]) -> None:
    app = console_app(domain="airline", scenario="cancel-outside-window")
    async with app.run_test(size=size) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended", timeout=20)
        await stable_screenshot(pilot, app)
        bar = region_lines(app, app.query_one(StatusBar))
        assert not any("…" in line for line in bar), bar
        for field in fields_of(app):  # each on one line: a label is never apart from its value
            assert any(field in line for line in bar), (field, bar)
        if size[0] < 110:  # stacked: the pane in front and what `l` brings
            assert any("Transcript in front · l: Ledger, Gate" in line for line in bar), bar


class BarApp(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusBar()


FIELDS: dict[str, Any] = dict(domain="retail", scenario="refund-to-original-payment", agent="ledger",
                              model="scripted-demo", mode="autopilot", seat="watching", steps=12, tokens=48_213,
                              rules="44b668436872")


async def test_a_field_wider_than_the_bar_folds_at_its_words() -> None:
    error = "model error: " + " ".join(f"the server answered 503 on attempt {n} of 9" for n in range(1, 10))
    app = BarApp()
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.query_one(StatusBar)
        bar.show(phase="model error", error=error, **FIELDS)
        await stable_screenshot(pilot, app)
        lines = region_lines(app, bar)
        assert not any("…" in line for line in lines), lines
        assert " ".join(" ".join(lines).split()).count(error) == 1, lines
        for field in ("step 12", "tokens 48,213", "scenario refund-to-original-payment", "rules 44b668436872"):
            assert any(field in line for line in lines), (field, lines)


async def test_the_model_spinner_does_not_move_the_panes() -> None:
    """While the session runs, the bar keeps the room the spinner's field takes, shown or not."""
    app = BarApp()
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.query_one(StatusBar)
        heights = []
        for spinner in ("", "⠋", "", "⠙"):
            bar.show(phase="running", spinner=spinner, front="transcript", others=("ledger", "gate"), **FIELDS)
            await stable_screenshot(pilot, app)
            heights.append(bar.region.height)
        assert len(set(heights)) == 1 and heights[0] >= 3, heights
