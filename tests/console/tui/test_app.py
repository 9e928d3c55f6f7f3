"""The operator console driven as a person would, through Pilot: presenter, supervisor, predicate author."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from textual.widgets import Button, Input

from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole
from console.tui.screens.review import ReviewScreen
from core.trace import load_trace
from tests.support.pilot import open_review, wait_for

SIZE = (160, 45)


def ended(app: OperatorConsole) -> Callable[[], bool]:
    return lambda: app.live is not None and app.live.state.phase == "ended"


async def db_order(app: OperatorConsole, order_id: str) -> dict[str, object]:
    from mock_backends.retail import RetailBackend

    assert app.live is not None and app.live.folder is not None
    backend = await RetailBackend.attach(app.live.folder / "db.sqlite")
    try:
        order = await backend.store.get("orders", order_id)
        assert order is not None
        return order
    finally:
        await backend.close()


async def test_presenter_one_key_runs_the_demo(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.live is not None and app.live.state.phase == "ready"
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        rows = list(app.gate_pane.rows.values())
        assert [r.verdict for r in rows] == ["REVISE", "ALLOW"]
        assert rows[0].failed == ["retail.refund_to_original_or_gift_card"]
        assert {"orders.#W4821001", "user", "auth.user_id"} <= set(app.ledger_pane.ledger_tree.nodes_by_path)
        kinds = [entry.kind for entry in app.transcript.items]
        assert "user" in kinds and "agent" in kinds and "call" in kinds
        assert app.live.state.end_reason == "user_stop"
        assert (app.live.folder / "trace.jsonl").exists()  # type: ignore[operator]
        assert (await db_order(app, "#W4821001"))["status"] == "return requested"


async def test_selecting_a_verdict_highlights_its_evidence(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        app.gate_pane.table.focus()
        app.gate_pane.table.move_cursor(row=0)
        await pilot.pause()
        revise = next(iter(app.gate_pane.rows.values()))
        tree = app.ledger_pane.ledger_tree
        assert tree.highlighted == set(revise.evidence) & set(tree.nodes_by_path)
        assert "orders.#W4821001" in tree.highlighted


async def test_ledger_entry_shows_record_and_provenance(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        app.ledger_pane.show_entry("orders.#W4821001")
        detail = str(app.ledger_pane.query_one("#ledger-detail").render())
        assert 'get_order_details(order_id="#W4821001")' in detail and "return requested" in detail


async def test_approve_every_write_asks_and_records(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_WRITES)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        assert app.live is not None and app.live.state.phase == "waiting for operator"
        assert app.screen.verdict == "REVISE"  # type: ignore[attr-defined]
        await pilot.press("a")  # accept the REVISE: the call is dropped
        assert (await open_review(pilot, app)).verdict == "ALLOW"
        await pilot.press("a")  # approve the corrected call: it runs
        await wait_for(pilot, ended(app))
        decisions = [e for e in app.live.bus.history if e.type == "supervisor_decision"]
        assert [(d.decision, d.gate_verdict, d.who) for d in decisions] == [
            ("accept_verdict", "REVISE", "operator"), ("approve", "ALLOW", "operator")]
        assert (await db_order(app, "#W4821001"))["status"] == "return requested"
        await pilot.press("a")
        assert "audit-table" in [w.id for w in app.screen.query("*")]
        assert app.screen.query_one("#audit-table").row_count == 2  # type: ignore[attr-defined]


async def test_force_allow_needs_a_reason_and_is_recorded(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW, operator="dana")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.verdict == "BLOCK"
        await pilot.press("f")
        assert app.screen is screen  # no reason: still asking
        assert "needs a reason" in str(screen.query_one("#review-error").render())
        screen.query_one("#review-reason", Input).value = "customer's spouse, verified by phone"
        screen.query_one("#approve").focus()
        await pilot.press("f")
        await wait_for(pilot, ended(app))
        assert app.live is not None and app.live.folder is not None
        record = next(e for e in load_trace(app.live.folder / "trace.jsonl") if e.type == "supervisor_decision")
        assert (record.decision, record.who, record.gate_verdict) == ("force_allow", "dana", "BLOCK")
        assert record.reason == "customer's spouse, verified by phone" and record.when
        assert (await db_order(app, "#W4821002"))["status"] == "cancelled"


async def test_edit_is_regated_and_the_transcript_shows_what_ran(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_WRITES)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        area = screen.query_one("#review-arguments")
        area.text = json.dumps({"order_id": "#W4821001", "item_ids": ["2000000011"],  # type: ignore[attr-defined]
                                "payment_method_id": "gift_card_4821001"})
        screen.query_one("#approve").focus()
        await pilot.press("e")
        assert await open_review(pilot, app) is not screen
        assert app.screen.verdict == "ALLOW"  # type: ignore[attr-defined]
        await pilot.press("a")
        assert app.live is not None
        await wait_for(pilot, lambda: any(e.type == "tool_result" and e.executed and e.call.name.startswith("return")
                                          for e in app.live.bus.history))  # type: ignore[union-attr]
        ran = [e for e in app.live.bus.history if e.type == "tool_result" and e.executed
               and e.call.name == "return_delivered_order_items"]
        assert ran[0].call.arguments["payment_method_id"] == "gift_card_4821001"
        assert [r.verdict for r in app.gate_pane.rows.values()][:2] == ["REVISE", "ALLOW"]


async def test_edit_with_bad_json_is_refused_inline(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_WRITES)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        screen = app.screen
        screen.query_one("#review-arguments").text = '{"order_id": '  # type: ignore[attr-defined]
        screen.query_one("#approve").focus()
        await pilot.press("e")
        assert app.screen is screen and "Not valid JSON" in str(screen.query_one("#review-error").render())
        assert app.focused is screen.query_one("#review-arguments")  # the cursor where the fix goes
        screen.query_one("#review-arguments").text = '{"order_id": 5}'  # type: ignore[attr-defined]
        await pilot.press("escape", "e")  # as the box's border says: escape leaves it, then e re-gates
        assert app.screen is screen and "must be string" in str(screen.query_one("#review-error").render())


async def test_veto_sends_the_message_to_the_model(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_WRITES)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        screen = app.screen
        screen.query_one("#review-reason", Input).value = "ask which card first"
        screen.query_one("#approve").focus()
        await pilot.press("v")
        # The offline agent tells the customer and asks how to go on; she accepts the gift card, and the plan's
        # corrected return comes up for review: the session goes on instead of ending in an error.
        assert (await open_review(pilot, app)).verdict == "ALLOW"
        await pilot.press("a")
        await wait_for(pilot, ended(app))
        assert app.live is not None and app.live.state.end_reason == "user_stop"
        vetoed = [e for e in app.live.bus.history if e.type == "tool_result" and e.outcome == "vetoed"]
        assert len(vetoed) == 1 and "ask which card first" in vetoed[0].content
        told = [e.text for e in app.live.bus.history if e.type == "assistant_turn" and e.text]
        assert any("a supervisor stopped it (ask which card first)" in text for text in told)


async def test_step_mode_runs_one_model_call_per_key(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.STEP)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        assert app.live is not None
        await wait_for(pilot, lambda: app.live.state.phase == "paused"  # type: ignore[union-attr]
                       and any(e.type == "assistant_turn" for e in app.live.bus.history))  # type: ignore[union-attr]
        turns = lambda: sum(e.type == "assistant_turn" for e in app.live.bus.history)  # type: ignore[union-attr] # noqa: E731
        assert turns() == 1
        await pilot.press("n")
        await wait_for(pilot, lambda: turns() == 2 and app.live.state.phase == "paused")  # type: ignore[union-attr]
        await pilot.press("m")  # leave step mode: autopilot would be after step in the cycle
        assert app.live.supervisor.mode is SupervisionMode.AUTOPILOT
        await wait_for(pilot, ended(app))


async def test_pause_and_resume(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")  # start with a single step: the session then waits, paused
        assert app.live is not None
        await wait_for(pilot, lambda: app.live.state.phase == "paused")  # type: ignore[union-attr]
        steps = app.live.state.steps
        await pilot.pause(0.3)
        assert app.live.state.steps == steps and app.live.pacer.paused
        await pilot.press("space")  # resume
        await wait_for(pilot, ended(app))
        await pilot.press("space")  # nothing to pause once it ended: no error
        assert app.live.state.phase == "ended"


async def test_operator_plays_the_customer(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(seat="customer")
    async with app.run_test(size=SIZE) as pilot:
        box = app.query_one("#customer-input", Input)
        assert box.display
        box.focus()
        await pilot.press(*"I am Mia Garcia, 46281")
        await pilot.press("enter")
        assert app.live is not None
        await wait_for(pilot, lambda: app.live.human is not None and app.live.human.waiting  # type: ignore[union-attr]
                       and any(e.type == "message" and e.role == "user" for e in app.live.bus.history))
        said = [e.text for e in app.live.bus.history if e.type == "message" and e.role == "user"]
        assert said == ["I am Mia Garcia, 46281"]
        assert app.ledger_pane.ledger_tree.nodes_by_path.get("auth.user_id") is not None


async def test_export_markdown(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        await pilot.press("e")
        assert app.live is not None and app.live.folder is not None
        text = (app.live.folder / "transcript.md").read_text()
        assert "gate **REVISE**" in text and "retail.refund_to_original_or_gift_card" in text


async def test_command_palette_lists_actions(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Start/Pause", "Step", "Mode", "Audit", "Predicates", "New", "Export",
                       "Supervision: approve writes"):
            assert wanted in titles


async def test_light_theme_toggle(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        assert app.theme == "textual-light"
        await pilot.press("t")
        assert app.theme == "textual-dark"


def test_session_folder_is_outside_the_package(tmp_path: Path) -> None:
    from console.runtime.storage import new_session_folder

    claim = new_session_folder("retail", "x", tmp_path)
    claim.release()
    assert claim.path.parent == tmp_path / "sessions"


async def test_the_review_says_when_the_arguments_box_has_the_keys(
        console_app: Callable[..., OperatorConsole]) -> None:
    """Inside the arguments box `a`, `v`, `e`, `f` are text and the footer is empty: the box's border says so
    (and how to get out), wherever the body is scrolled; the hint goes when the focus leaves."""
    app = console_app(mode=SupervisionMode.APPROVE_WRITES)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        area = app.screen.query_one("#review-arguments")
        assert not area.border_title
        await pilot.press("shift+tab")  # from the safe button back to the reason box, then the arguments
        await pilot.press("shift+tab")
        await wait_for(pilot, lambda: app.focused is area)
        await wait_for(pilot, lambda: "escape leaves the box, then e re-gates" in str(area.border_title))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not area.border_title and isinstance(app.focused, Button))
