"""What the desk knows, said as it knows it: a call waiting on the operator, a call left undecided when its
session ended, an edit linked to the re-gated call it produced and that call's outcome; and a decision on an
item that was replaced or already decided (two operators) refused in one line, with nothing recorded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.cli.main import main
from console.runtime.desk.audit import call_key, describe_outcome, read_audit
from console.runtime.desk.desk import Desk
from console.runtime.desk.view import DeskRefused, ItemView
from console.runtime.live import SupervisionMode
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk_session import SessionViewScreen
from tests.support.cli import cli_home
from tests.support.desk import PATIENCE, ManualClock, make_desk, of_type, spec, trace_of, until, until_screen

N = SupervisionMode.APPROVE_NON_ALLOW
OVER_CAP = {"customer_id": "C2001", "line_id": "L2002", "gb_amount": 3.0}  # still over the 2 GB cap: REVISE again


async def settle(condition: Callable[[], Any], timeout: float = PATIENCE) -> Any:
    """Let the desk's sessions run until `condition()` is truthy (a state, never a fixed sleep); returns it."""
    waited = 0.0
    while not (value := condition()):
        if waited >= timeout:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)
        waited += 0.02
    return value


def next_item(desk: Desk, after: ItemView | None = None) -> Callable[[], ItemView | None]:
    def found() -> ItemView | None:
        items = [i for i in desk.snapshot().items if after is None or i.id != after.id]
        return items[0] if items else None
    return found


async def edited_into_a_second_revise(tmp_path: Path) -> tuple[Desk, asyncio.Task[None], ItemView, ItemView]:
    """refuel-over-cap in 'approve non-ALLOW': alice edits the 5 GB REVISE to 3 GB, which the gate REVISEs again:
    a second item for the same call."""
    desk = make_desk([spec("telecom", "refuel-over-cap", N)], tmp_path, ManualClock())
    runner = asyncio.create_task(desk.run())
    first = await settle(next_item(desk))
    assert first.verdict == "REVISE"
    await desk.decide(first.id, "alice", "edit", arguments=OVER_CAP)
    second = await settle(next_item(desk, first))
    assert second.verdict == "REVISE" and second.arguments == OVER_CAP
    return desk, runner, first, second


async def test_an_edit_is_linked_to_its_regated_call_and_a_session_end_is_its_outcome(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    desk, runner, first, second = await edited_into_a_second_revise(tmp_path)
    await desk.close()  # the re-gated call is never decided: its session ends first
    await runner
    path = tmp_path / "desk" / "audit.jsonl"
    read = read_audit(path)
    edit = next(d for d in read.decisions if d["decision"] == "edit")
    regate = read.regates[call_key(edit)]
    assert (regate["item"], regate["regated_item"], regate["gate_verdict"]) == (first.id, second.id, "REVISE")
    assert regate["arguments"] == OVER_CAP and regate["failing_rules"]
    said = describe_outcome(read.outcomes.get(call_key(edit)))
    assert said == "not executed: the session ended (desk_closed) before a decision"
    cli_home(tmp_path, monkeypatch)
    assert main(["audit", str(path), "--json"]) == 0
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert line["decision"] == "edit" and line["outcome"] == said
    assert line["regated"]["gate_verdict"] == "REVISE" and line["regated"]["item"] == second.id
    assert main(["audit", str(path)]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "not known yet" not in table and "re-gated REVISE" in table


async def test_an_edit_that_runs_records_the_regated_verdict_and_its_outcome(tmp_path: Path) -> None:
    desk = make_desk([spec("telecom", "refuel-over-cap", N)], tmp_path, ManualClock())
    runner = asyncio.create_task(desk.run())
    first = await settle(next_item(desk))
    await desk.decide(first.id, "alice", "edit", arguments={**OVER_CAP, "gb_amount": 2.0})
    await settle(lambda: desk.snapshot().done or desk.snapshot().items)
    while not desk.snapshot().done:  # anything else it asks: accepted
        item = await settle(lambda: next_item(desk)() or desk.snapshot().done)
        if isinstance(item, ItemView):
            await desk.decide(item.id, "alice", "approve")
    await runner
    await desk.close()
    read = read_audit(tmp_path / "desk" / "audit.jsonl")
    edit = next(d for d in read.decisions if d["decision"] == "edit")
    assert read.regates[call_key(edit)]["gate_verdict"] == "ALLOW"
    assert read.regates[call_key(edit)].get("regated_item") is None  # ALLOWed: nobody was asked again
    assert describe_outcome(read.outcomes.get(call_key(edit))) == "executed"


async def test_a_decision_on_a_replaced_or_decided_item_is_refused_and_records_nothing(tmp_path: Path) -> None:
    desk, runner, first, second = await edited_into_a_second_revise(tmp_path)
    path = tmp_path / "desk" / "audit.jsonl"
    before = path.read_text(encoding="utf-8")
    with pytest.raises(DeskRefused) as replaced:
        await desk.decide(first.id, "bob", "force_allow", reason="looks fine to me")
    message = str(replaced.value)
    assert "\n" not in message and f"replaced by {second.id}" in message and "alice" in message
    assert "nothing was recorded" in message
    await desk.decide(second.id, "alice", "accept_verdict")
    after_alice = path.read_text(encoding="utf-8")
    with pytest.raises(DeskRefused) as decided:
        await desk.decide(second.id, "bob", "approve")
    message = str(decided.value)
    assert "\n" not in message and "already decided by alice (accept_verdict)" in message
    assert path.read_text(encoding="utf-8") == after_alice != before  # bob's two attempts: not a byte
    await settle(lambda: desk.snapshot().done or desk.snapshot().items)
    await desk.close()
    await runner
    decisions = of_type(trace_of(desk.snapshot(), "s01"), "supervisor_decision")
    assert [(d["decision"], d["who"]) for d in decisions] == [("edit", "alice"), ("accept_verdict", "alice")]


async def test_the_session_view_says_waiting_then_not_decided_when_the_session_ended(tmp_path: Path) -> None:
    desk = make_desk([spec("retail", "other-customers-order", N)], tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 1)
        screen.sessions.focus()
        screen.sessions.move_cursor(row=0)
        await pilot.press("enter")
        view = await until_screen(pilot, app, SessionViewScreen)
        await until(pilot, lambda: any(r.verdict == "BLOCK" for r in view.panes.gate.rows.values()))
        key = next(k for k, r in view.panes.gate.rows.items() if r.verdict == "BLOCK")
        await until(pilot, lambda: "operator: waiting for the operator" in view.panes.gate.detail(key).plain)
        assert "not asked" not in view.panes.gate.detail(key).plain
        await desk.close()  # the session ends with the BLOCK undecided
        await until(pilot, lambda: bool(view.events) and view.events[-1].type == "session_ended")
        detail = view.panes.gate.detail(key).plain
        assert "operator: not decided: the session ended" in detail and "waiting" not in detail
        assert "outcome: not run: the session ended" in detail
