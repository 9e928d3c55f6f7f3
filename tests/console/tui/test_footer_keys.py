"""Every live key is in the footer, whole, with what it does: the compare view at 80x24, 120x35 and 160x45, the
main console and the desk at 80x24, the review dialog (ALLOW and BLOCK) at 80x24 and 120x35, the desk's review
at 80x24. The footer's keys wrap into a second row when one row cannot hold them (Textual's Footer cut them at
the edge: the compare view lost `2 Step LedgerAgent`, `e Export`, `? Keys` and `q Quit` at 80 columns, the
BLOCK review `esc Back, undecided` and `? Keys`). The checks read the screen as the terminal shows it; each key
and its label must be on one footer row, in one piece. `?` still lists each of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widgets import Button

import console.tui.widgets.ledger_tree as ledger_tree
from console.runtime.live import SessionSpec, SupervisionMode
from console.tui.app import OperatorConsole
from console.tui.compare_app import CompareConsole
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk_decide import DeskReviewScreen
from console.tui.screens.help import HelpScreen, binding_keys
from console.tui.widgets.footer import ConsoleFooter
from tests.console.snapshots import assert_stable_snapshot, stable_screenshot
from tests.support.desk import ManualClock, make_desk, spec, until
from tests.support.pilot import open_review, wait_for, wait_for_screen
from tests.support.screen import region_lines
from tests.support.shown import shown

SIZES = [(80, 24), (120, 35), (160, 45)]
COMPARE_KEYS = ["space Start/Pause", "d What differs", "n Step both", "1 Step baseline", "2 Step LedgerAgent",
                "e Export", "? Keys", "q Quit", "^p palette"]
STACKED_ONLY = "s Side"  # below 140 columns the sides stack, one at a time: `s` switches
REVIEW_SIZES = [(80, 24), (120, 35)]
BLOCK_REVIEW_KEYS = ["a Accept BLOCK (don't run)", "v Veto", "e Edit & re-gate", "f Force-allow despite BLOCK",
                     "esc Back, undecided", "? Keys"]
ALLOW_REVIEW_KEYS = ["a Approve (run it)", "v Veto", "e Edit & re-gate", "esc Back, undecided", "? Keys"]


@pytest.fixture(autouse=True)
def no_flash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_tree, "FLASH_SECONDS", 0.0)


def footer_rows(app: App[Any]) -> list[str]:
    return region_lines(app, app.screen.query_one(ConsoleFooter))


def live_keys(screen: Screen[Any]) -> list[tuple[Any, str]]:
    """The keys the screen's bindings say the footer shows now (the first binding of each action with `show`, as
    Textual's Footer picks them), each with its label as the footer writes it: key, space, what it does."""
    first: dict[str, Any] = {}
    for _node, binding, _enabled, _tooltip in screen.active_bindings.values():
        if binding.show:
            first.setdefault(binding.action, binding)
    return [(b, f"{screen.app.get_key_display(b)} {b.description}") for b in first.values()]


def not_whole(rows: list[str], labels: list[str]) -> list[str]:
    """The labels no footer row shows in one piece."""
    return [label for label in labels if not any(label in row for row in rows)]


async def assert_every_key_whole(pilot: Any, app: App[Any], *, palette: bool = True) -> list[str]:
    """Each key the bindings show now is on a footer row, whole; the labels checked. A modal screen has no
    command palette key (`palette=False`): it hides the App's bindings."""
    await stable_screenshot(pilot, app)
    rows = footer_rows(app)
    labels = [label for _binding, label in live_keys(app.screen)] + (["^p palette"] if palette else [])
    assert not_whole(rows, labels) == [], rows
    return labels


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_compare_footer_shows_every_key_whole(tmp_path: Path, size: tuple[int, int]) -> None:
    app = CompareConsole(SessionSpec(domain="airline", scenario="cancel-outside-window"), root=tmp_path)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.compare.pair is not None and bool(app.compare.panes))
        await stable_screenshot(pilot, app)
        rows = footer_rows(app)
        wanted = COMPARE_KEYS + ([STACKED_ONLY] if size[0] < 140 else [])
        assert not_whole(rows, wanted) == [], rows
        assert STACKED_ONLY not in "".join(rows) or size[0] < 140
        assert len(await assert_every_key_whole(pilot, app)) == len(wanted)
        await assert_stable_snapshot(pilot, app, f"compare_footer_{size[0]}x{size[1]}")
        shown = live_keys(app.screen)
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, app, HelpScreen)
        listed = [(keys, what.split(" (")[0]) for keys, what in help_screen.keys]
        assert [label for binding, label in shown if (binding_keys(binding), binding.description) not in listed] == []


async def test_the_main_console_footer_shows_every_key_whole_at_80x24(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(domain="telecom", scenario="roaming-abroad", seat="customer",
                      mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await assert_every_key_whole(pilot, app)  # typing in the customer's box: the keys that work from it
        await pilot.press("escape")  # out of the box: every key of the screen
        await wait_for(pilot, lambda: not app.query_one("#customer-input").has_focus)
        assert len(await assert_every_key_whole(pilot, app)) > 12  # more than one 80-column row holds
        assert not_whole(footer_rows(app), ["p Phone", "^e End conversation", "l Next pane", "q Quit"]) == []


async def test_the_main_console_footer_names_the_waiting_review_whole_at_80x24(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.main.review_waiting)
        assert len(await assert_every_key_whole(pilot, app)) > 8
        assert not_whole(footer_rows(app), ["f3 Review the write", "? Keys", "q Quit"]) == []


async def test_the_desk_footer_shows_every_key_whole_at_80x24(tmp_path: Path) -> None:
    desk = make_desk([spec("retail", "other-customers-order", SupervisionMode.APPROVE_NON_ALLOW)], tmp_path,
                     ManualClock(), audit=False)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.desk_screen.claimed == "i1")
        assert len(await assert_every_key_whole(pilot, app)) > 8
        assert not_whole(footer_rows(app), ["A Bulk-approve ALLOWs", "/ Filter", "? Keys", "q Quit"]) == []


async def assert_review_keys_whole(pilot: Any, app: OperatorConsole, wanted: list[str]) -> None:
    """The review in front, at each of REVIEW_SIZES from the one it opened at: its footer shows `wanted` (and no
    other key), each whole on a row; the reason box and every button stay on screen above the footer."""
    opened_at = (app.size.width, app.size.height)
    for size in [opened_at] + [s for s in REVIEW_SIZES if s != opened_at]:
        await pilot.resize_terminal(*size)
        labels = await assert_every_key_whole(pilot, app, palette=False)
        rows = footer_rows(app)
        assert not_whole(rows, wanted) == [], (size, rows)
        assert sorted(labels) == sorted(wanted), (size, rows)
        for widget in [app.screen.query_one("#review-reason"), *app.screen.query(Button)]:
            assert shown(widget), (size, widget.id, widget.region)


@pytest.mark.parametrize("size", REVIEW_SIZES, ids=[f"{w}x{h}" for w, h in REVIEW_SIZES])
async def test_the_block_review_footer_shows_every_decision_key_whole(
        console_app: Callable[..., OperatorConsole], size: tuple[int, int]) -> None:
    app = console_app(domain="airline", scenario="cancel-outside-window", mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=size) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        assert screen.verdict == "BLOCK"
        await assert_review_keys_whole(pilot, app, BLOCK_REVIEW_KEYS)


@pytest.mark.parametrize("size", REVIEW_SIZES, ids=[f"{w}x{h}" for w, h in REVIEW_SIZES])
async def test_the_allow_review_footer_shows_every_decision_key_whole(
        console_app: Callable[..., OperatorConsole], size: tuple[int, int]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_WRITES)
    async with app.run_test(size=size) as pilot:
        await pilot.press("space")
        assert (await open_review(pilot, app)).verdict == "REVISE"
        await pilot.press("a")  # accept the REVISE: the plan proposes the corrected call, an ALLOW
        screen = await open_review(pilot, app)
        assert screen.verdict == "ALLOW"
        await assert_review_keys_whole(pilot, app, ALLOW_REVIEW_KEYS)
        assert "Force-allow" not in " ".join(footer_rows(app))  # f does nothing on an ALLOW: not shown


async def test_the_desk_review_footer_shows_every_key_whole_at_80x24(tmp_path: Path) -> None:
    """`f` on the desk's BLOCK opens its review with the cursor in the reason box, where letters are text and the
    footer says only how to leave it; escape leaves it for the buttons, and every decision key is back, whole."""
    desk = make_desk([spec("retail", "other-customers-order", SupervisionMode.APPROVE_NON_ALLOW)], tmp_path,
                     ManualClock(), audit=False)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.desk_screen.claimed == "i1")
        await pilot.press("f")
        modal = await wait_for_screen(pilot, app, DeskReviewScreen)
        box = modal.query_one("#review-reason")
        await until(pilot, lambda: box.has_focus)
        assert await assert_every_key_whole(pilot, app, palette=False) == ["esc Leave the box"]
        await pilot.press("escape")
        await until(pilot, lambda: not box.has_focus)
        labels = await assert_every_key_whole(pilot, app, palette=False)
        assert sorted(labels) == sorted(BLOCK_REVIEW_KEYS), footer_rows(app)
