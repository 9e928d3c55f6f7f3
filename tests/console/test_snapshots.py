"""Snapshots of the main screen mid-scenario and at the end (one scenario per domain that has one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import wait_for
from snapshots import assert_snapshot

import console.widgets.ledger_tree as ledger_tree
from console.app import OperatorConsole
from console.live import SupervisionMode
from console.screens.review import ReviewScreen


async def settle(pilot: Any) -> None:
    """Let every pending refresh, idle rebuild and animation finish before the picture is taken."""
    for _ in range(3):
        await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


@pytest.fixture(autouse=True)
def no_flash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_tree, "FLASH_SECONDS", 0.0)


async def test_retail_demo_finished(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        app.gate_pane.table.focus()
        app.gate_pane.table.move_cursor(row=0)
        await settle(pilot)
        assert_snapshot(app, "retail_refund_finished")


async def test_retail_review_modal(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen))
        await settle(pilot)
        assert_snapshot(app, "retail_refund_review")


@pytest.mark.parametrize(("domain", "scenario"), [("airline", "cancel-outside-window"),
                                                  ("telehealth", "cancel-completed-appointment"),
                                                  ("telecom", "refuel-over-cap")])
async def test_other_domains_finished(console_app: Callable[..., OperatorConsole], domain: str,
                                      scenario: str) -> None:
    app = console_app(domain=domain, scenario=scenario)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        assert app.live is not None and app.live.state.end_reason == "user_stop"
        assert "ALLOW" not in [r.verdict for r in app.gate_pane.rows.values()][:1]
        await settle(pilot)
        assert_snapshot(app, f"{domain}_{scenario.replace('-', '_')}_finished")


async def test_usable_at_120x35(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        for pane in (app.transcript, app.ledger_pane, app.gate_pane):
            assert pane.region.width >= 24 and pane.region.height >= 20
        # no SVG here: the gate table's horizontal scrollbar position at this width depends on timing
