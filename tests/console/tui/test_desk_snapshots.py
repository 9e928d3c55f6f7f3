"""Snapshots of the desk at 80x24 and 160x45: one call waiting (amber, claimed by this operator, its failing rule
and evidence in the detail pane) and three sessions ended. The desk's clock and wall time are the test's, so the
picture never depends on when or how fast it ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.runtime.live import SupervisionMode
from console.tui.desk_app import SupervisorApp
from tests.console.snapshots import assert_stable_snapshot
from tests.support.desk import ManualClock, make_desk, spec, until

AUTO = SupervisionMode.AUTOPILOT


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_desk_with_one_amber_call(tmp_path: Path, size: tuple[int, int]) -> None:
    clock = ManualClock()
    desk = make_desk([spec("retail", "other-customers-order", SupervisionMode.APPROVE_NON_ALLOW),
                      spec("airline", "cancel-outside-window", AUTO), spec("telecom", "roaming-abroad", AUTO),
                      spec("telehealth", "cancel-completed-appointment", AUTO)], tmp_path, clock, audit=False)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=size) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: [r.phase.value for r in desk.snapshot().rows]
                       == ["waiting for operator", "ended", "ended", "ended"])
        await until(pilot, lambda: screen.claimed == "i1")
        clock.advance(45.0)  # past amber (30 s), not red (120 s)
        screen.redraw()
        await assert_stable_snapshot(pilot, app, f"desk_{size[0]}x{size[1]}")
