"""Snapshots of the main screen at the end of one scenario per domain, at 160x45, 120x35 and 80x24.

Each picture is taken once the screen has stopped changing (snapshots.stable_screenshot), so no snapshot
depends on frame timing: a telecom snapshot once flaked because a gate-table cell grew after its row was
added (an operator decision / outcome), which moved a horizontal scrollbar whose position depended on when
the cursor was scrolled into view; the gate table no longer scrolls sideways and nothing is compared
before the screen is still.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import console.tui.widgets.ledger_tree as ledger_tree
from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole
from tests.console.snapshots import assert_stable_snapshot
from tests.support.pilot import open_review, wait_for

SIZES = [(160, 45), (120, 35), (80, 24)]
DOMAINS = [("retail", "refund-to-original-payment"), ("airline", "cancel-outside-window"),
           ("telehealth", "cancel-completed-appointment"), ("telecom", "refuel-over-cap")]


@pytest.fixture(autouse=True)
def no_flash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_tree, "FLASH_SECONDS", 0.0)


@pytest.mark.parametrize(("domain", "scenario"), DOMAINS)
async def test_each_domain_finished_at_three_sizes(console_app: Callable[..., OperatorConsole], domain: str,
                                                   scenario: str) -> None:
    app = console_app(domain=domain, scenario=scenario)
    async with app.run_test(size=SIZES[0]) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        assert app.live is not None and app.live.state.end_reason == "user_stop"
        assert "ALLOW" not in [r.verdict for r in app.gate_pane.rows.values()][:1] or domain == "retail"
        app.gate_pane.table.focus()
        app.gate_pane.table.move_cursor(row=0)
        for width, height in SIZES:
            await pilot.resize_terminal(width, height)
            await assert_stable_snapshot(pilot, app, f"{domain}_{width}x{height}")


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_retail_review_modal(console_app: Callable[..., OperatorConsole], size: tuple[int, int]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=size) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        await assert_stable_snapshot(pilot, app, f"retail_review_{size[0]}x{size[1]}")
