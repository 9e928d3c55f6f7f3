"""Two operators on one desk: alice at the keys (a SupervisorApp), bob through the same DeskAPI (as a second tab
would be). A call one holds cannot be decided by the other until it is released or its claim times out (the
desk's clock is the test's); and an edit the desk refuses stays in the inbox with its message."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TextArea

from console.runtime.desk.view import DeskRefused
from console.runtime.live import SupervisionMode
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk import DeskScreen
from console.tui.screens.desk_decide import DeskReviewScreen
from tests.support.desk import ManualClock, make_desk, of_type, spec, trace_of, until, until_screen

N = SupervisionMode.APPROVE_NON_ALLOW


async def select(pilot: object, screen: DeskScreen, item_id: str) -> None:
    screen.inbox.move_cursor(row=screen.inbox.row_of(item_id))
    await until(pilot, lambda: screen.detail.item_id == item_id)


async def test_second_operator_waits_for_release_or_timeout(tmp_path: Path) -> None:
    clock = ManualClock()
    desk = make_desk([spec("retail", "other-customers-order", N), spec("airline", "cancel-outside-window", N)],
                     tmp_path, clock, claim_ttl=60.0)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 2)
        first, second = screen.inbox.item_ids
        await select(pilot, screen, first)
        await until(pilot, lambda: desk.snapshot().item(first).claimed_by == "alice")  # type: ignore[union-attr]
        with pytest.raises(DeskRefused, match="claimed by alice"):
            await desk.decide(first, "bob", "accept_verdict")
        with pytest.raises(DeskRefused, match="claimed by alice"):
            await desk.claim(first, "bob")
        # alice moves on: the first item is released, bob takes it
        await select(pilot, screen, second)
        await until(pilot, lambda: desk.snapshot().item(first).claimed_by is None)  # type: ignore[union-attr]
        await desk.claim(first, "bob")
        await until(pilot, lambda: "bob" in screen.inbox.get_cell(first, "claimed").plain)
        # alice's keys on bob's item are refused, with who holds it; the item stays
        await select(pilot, screen, first)
        await pilot.press("a")
        await until(pilot, lambda: any("claimed by bob" in m for m in screen.decisions.said))
        assert desk.snapshot().item(first) is not None and "claimed by bob" in screen.detail.plain
        await desk.decide(first, "bob", "accept_verdict")
        await until(pilot, lambda: screen.inbox.item_ids == (second,))
        # alice holds the second; bob is refused until her claim times out
        await until(pilot, lambda: desk.snapshot().item(second).claimed_by == "alice")  # type: ignore[union-attr]
        with pytest.raises(DeskRefused, match="claimed by alice"):
            await desk.decide(second, "bob", "accept_verdict")
        clock.advance(61.0)
        await desk.decide(second, "bob", "accept_verdict")  # no await in between: alice's tick cannot renew it
        await until(pilot, lambda: "every session has ended" in screen.status.plain)
    snapshot = desk.snapshot()
    whos = [d["who"] for r in snapshot.rows for d in of_type(trace_of(snapshot, r.id), "supervisor_decision")]
    assert whos == ["bob", "bob"]


async def test_an_invalid_edit_stays_in_the_inbox_with_its_message(tmp_path: Path) -> None:
    clock = ManualClock()
    desk = make_desk([spec("telecom", "refuel-over-cap", N)], tmp_path, clock)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 1)
        (item_id,) = screen.inbox.item_ids
        await select(pilot, screen, item_id)
        # in the modal: arguments the tool's schema refuses; the modal says why and nothing is decided
        await pilot.press("e")
        modal = await until_screen(pilot, app, DeskReviewScreen)
        modal.query_one("#review-arguments", TextArea).text = (
            '{"customer_id": "C2001", "line_id": "L2001", "gb_amount": "lots"}')
        modal.query_one("#approve").focus()
        await pilot.pause()
        await pilot.press("e")
        await until(pilot, lambda: "gb_amount" in str(modal.query_one("#review-error").render()))
        assert modal.focused is modal.query_one("#review-arguments")  # the cursor back where the fix goes
        await pilot.press("escape")  # leaves the box, for the buttons
        await pilot.press("escape")  # leaves the modal, undecided
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        assert screen.inbox.item_ids == (item_id,)
        # from another client of the desk: a value strict JSON refuses; the desk keeps the message on the item
        with pytest.raises(DeskRefused, match="not a finite number"):
            await desk.decide(item_id, "alice", "edit",
                              arguments={"customer_id": "C2001", "line_id": "L2001", "gb_amount": float("nan")})
        await until(pilot, lambda: "refused: invalid value" in screen.detail.plain)
        assert screen.inbox.item_ids == (item_id,)
        assert desk.snapshot().row("s01").phase == "waiting for operator"  # type: ignore[union-attr]
        await pilot.press("a")  # accept the REVISE: the session goes on
        await until(pilot, lambda: "every session has ended" in screen.status.plain)
    events = trace_of(desk.snapshot(), "s01")
    assert "edit" not in [d["decision"] for d in of_type(events, "supervisor_decision")]
