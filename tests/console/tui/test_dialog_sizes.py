"""Every dialog shows its input and its action buttons at every terminal size: a snapshot per dialog per size,
and, beside each picture, the check a reviewer would make on it (the box and each button lie inside the
terminal, above the footer), so that a baseline rewritten by mistake cannot hide a button below the fold.

Review, compose (with a dry-run result), new session, open trace, help, confirm and the `/` filter bar, at
80x24, 100x30, 120x35, 160x45 and 200x60. One app per dialog, resized through the sizes; each picture is
taken once the screen has stopped changing (tests/console/snapshots.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from textual.widget import Widget
from textual.widgets import Button, Input

import console.tui.widgets.ledger_tree as ledger_tree
from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole
from console.tui.screens.compose import ComposeScreen
from console.tui.screens.confirm import ConfirmScreen
from console.tui.screens.help import HelpScreen
from console.tui.screens.new_session import NewSessionScreen
from console.tui.screens.open_trace import OpenTraceScreen
from tests.console.snapshots import assert_stable_snapshot
from tests.support.pilot import compose_tool_call, open_review, wait_for, wait_for_screen
from tests.support.screen import screen_lines
from tests.support.shown import shown

SIZES = [(80, 24), (100, 30), (120, 35), (160, 45), (200, 60)]


@pytest.fixture(autouse=True)
def no_flash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_tree, "FLASH_SECONDS", 0.0)


async def at_every_size(pilot: Any, app: OperatorConsole, name: str,
                        acted_with: Callable[[], Iterable[Widget]]) -> None:
    for size in SIZES:
        await pilot.resize_terminal(*size)
        await assert_stable_snapshot(pilot, app, f"{name}_{size[0]}x{size[1]}")
        widgets = list(acted_with())
        assert widgets
        for widget in widgets:
            assert shown(widget), (name, size, widget.id, widget.region)


async def test_review(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(domain="airline", scenario="cancel-outside-window", mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        await at_every_size(pilot, app, "dialog_review",
                            lambda: [screen.query_one("#review-reason"), *screen.query(Button)])


async def test_review_editing(console_app: Callable[..., OperatorConsole]) -> None:
    """`e` with the arguments as proposed starts the edit: the cursor goes into the arguments box, which is on
    screen at every size (at 80x24 it was under the fold, below the gate's long feedback), with the reason box
    and the buttons."""
    from textual.widgets import TextArea

    app = console_app(domain="airline", scenario="cancel-outside-window", mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        await pilot.press("e")
        area = screen.query_one("#review-arguments", TextArea)
        await wait_for(pilot, lambda: area.has_focus)
        await at_every_size(pilot, app, "dialog_review_editing",
                            lambda: [area, screen.query_one("#review-reason"), *screen.query(Button)])


async def test_compose_with_its_dry_run(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(model="operator")
    async with app.run_test(size=SIZES[0]) as pilot:
        screen: ComposeScreen = await compose_tool_call(pilot, app, "cancel_pending_order")
        order = screen.query_one("#arg-order_id", Input)
        order.value = "#W4821002"
        order.focus()
        await pilot.press("ctrl+d")
        await wait_for(pilot, lambda: "dry-run" in str(screen.query_one("#compose-verdict").render()))
        await at_every_size(pilot, app, "dialog_compose",
                            lambda: [order, screen.query_one("#compose-verdict"), *screen.query(Button)])


async def test_new_session(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("ctrl+n")
        screen = await wait_for_screen(pilot, app, NewSessionScreen)
        await at_every_size(pilot, app, "dialog_new_session",
                            lambda: [screen.query_one("#ns-domain"), *screen.query(Button)])


async def test_open_trace(console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    # This console's own session folder goes elsewhere: the recent-session list (a folder name with the time it
    # was made, its absolute path) stays empty, and the picture the same from run to run.
    app = console_app(root=tmp_path / "elsewhere")
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("o")
        screen = await wait_for_screen(pilot, app, OpenTraceScreen)
        await at_every_size(pilot, app, "dialog_open_trace",
                            lambda: [screen.query_one("#open-path"), screen.query_one("#open-recent")])


async def test_help(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("question_mark")
        screen = await wait_for_screen(pilot, app, HelpScreen)
        await at_every_size(pilot, app, "dialog_help", lambda: [screen.query_one("#help-dialog")])


async def test_confirm(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.main.review_waiting)  # a running session: quitting asks
        await pilot.press("q")
        screen = await wait_for_screen(pilot, app, ConfirmScreen)
        await at_every_size(pilot, app, "dialog_confirm", lambda: list(screen.query(Button)))


async def test_filter_bar(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("slash", *"refund")
        bar = app.main.query_one("#filter-bar")
        await at_every_size(pilot, app, "dialog_filter", lambda: [bar])
        assert "refund" in screen_lines(app)[bar.region.y]  # the query itself, on its row
