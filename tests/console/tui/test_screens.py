"""Workbench, replay, operator-as-agent, new-session and retry, driven through Pilot."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets import Input, Select

from console.runtime.live import SessionSpec
from console.tui.app import OperatorConsole
from console.tui.screens.compose import ComposeScreen
from console.tui.screens.new_session import NewSessionScreen
from console.tui.screens.open_trace import OpenTraceScreen
from console.tui.screens.replay import ReplayScreen, StepSlider
from console.tui.screens.workbench import WorkbenchScreen
from core.llm.openai_model import OpenAIChatModel
from core.replay import Checker, parse_trajectory
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend
from tests.support.openai_stub import OpenAIStub
from tests.support.pilot import open_file, wait_for, wait_for_screen

SIZE = (160, 45)


def ended(app: OperatorConsole) -> Callable[[], bool]:
    return lambda: app.live is not None and app.live.state.phase == "ended"


async def run_to_end(app: OperatorConsole, pilot: Any) -> None:
    await pilot.press("space")
    await wait_for(pilot, ended(app))


async def finished_workbench(app: OperatorConsole, pilot: Any) -> Any:
    """The demo run to its end, then the predicate workbench open on it."""
    await run_to_end(app, pilot)
    await pilot.press("w")
    return await wait_for_screen(pilot, app, WorkbenchScreen)


async def test_workbench_toggle_regate_and_export(console_app: Callable[..., OperatorConsole],
                                                  tmp_path: Path) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await finished_workbench(app, pilot)
        table = screen.query_one("#wb-predicates")
        assert table.row_count == len(DOMAIN.predicates)  # type: ignore[attr-defined]
        row = [p.id for p in DOMAIN.predicates].index("retail.refund_to_original_or_gift_card")
        table.move_cursor(row=row)  # type: ignore[attr-defined]
        table.focus()
        await pilot.press("space")
        assert app.live is not None and "retail.refund_to_original_or_gift_card" in app.live.agent.gate.disabled
        await pilot.press("g")  # re-gated in a worker
        await wait_for(pilot, lambda: screen.last_regate is not None)
        rows = screen.last_regate
        assert [(r.old_verdict, r.new_verdict, r.changed) for r in rows] == [("REVISE", "ALLOW", True),
                                                                           ("ALLOW", "ALLOW", False)]
        assert "1 changed" in str(screen.query_one("#wb-message").render())
        await pilot.press("space")  # enable it again
        await pilot.press("x")
        lines = parse_trajectory(screen.exported_path.read_text())
        assert not lines.problems
        backend = await RetailBackend.create(tmp_path / "check.sqlite", __import__(
            "mock_backends.retail", fromlist=["load_seed"]).load_seed())
        try:
            results = await Checker(DOMAIN, backend).run(lines.calls)
        finally:
            await backend.close()
        assert all(r.met is not False for r in results)
        assert [r.verdict for r in results if r.kind == "write"] == ["REVISE", "ALLOW"]


async def test_workbench_regate_shows_a_crashing_rule_in_full_and_recounts(
        console_app: Callable[..., OperatorConsole]) -> None:
    """An edited rule that now crashes gives the same REVISE from the same rule: the diff marks it changed,
    names the crash, opens the whole reason, and the pass/fail/error counts follow the re-gate."""
    from core.gate import GateContext, LedgerView, Outcome, Verdict, predicate
    from core.tools import ToolCall

    rule = "retail.refund_to_original_or_gift_card"

    @predicate(id=rule, tools=["return_delivered_order_items"], severity=Verdict.REVISE,
               policy="Refunds go to the original payment method or a gift card.")
    def crashing(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        raise KeyError("payment_history")

    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await finished_workbench(app, pilot)
        table = screen.query_one("#wb-predicates")
        row = [p.id for p in DOMAIN.predicates].index(rule)

        def counts() -> list[str]:
            return [str(table.get_cell_at((row, column))) for column in (5, 6, 7)]  # type: ignore[attr-defined]

        assert counts() == ["1", "1", "0"]  # recorded: the ALLOW passed it, the REVISE violated it
        assert app.live is not None
        gate = app.live.agent.gate
        gate.predicates = [crashing if p.id == rule else p for p in gate.predicates]
        await pilot.press("g")
        await wait_for(pilot, lambda: screen.last_regate is not None)
        diff = screen.query_one("#wb-diff")
        calls = [str(diff.get_cell_at((i, 2))) for i in range(diff.row_count)]  # type: ignore[attr-defined]
        assert calls == ["▶ return_delivered_order_items", "▶ return_delivered_order_items"]
        assert "crashed" in str(diff.get_cell_at((0, 6)))  # type: ignore[attr-defined]
        assert counts() == ["0 (was 1)", "0 (was 1)", "2 (was 0)"]
        diff.focus()
        diff.move_cursor(row=0)  # type: ignore[attr-defined]
        await pilot.pause()
        detail = str(screen.query_one("#wb-detail").render())
        first = screen.last_regate[0]
        assert len(first.new_reason) > 120 and first.new_reason in " ".join(detail.split())
        assert f"{rule}: violation → error" in detail
        assert "credit_card_4821002" in detail  # the recorded reason, in full too


async def test_workbench_reload_failure_keeps_rules(console_app: Callable[..., OperatorConsole],
                                                    monkeypatch: Any) -> None:
    import console.tui.screens.workbench as workbench

    def broken(_name: str) -> Any:
        raise SyntaxError("invalid syntax (predicates.py, line 12)")

    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await finished_workbench(app, pilot)
        assert app.live is not None
        before = list(app.live.agent.gate.predicates)
        monkeypatch.setattr(workbench, "reload_rules", broken)
        await pilot.press("r")
        assert "Reload failed" in str(screen.query_one("#wb-message").render())
        assert app.live.agent.gate.predicates == before
        monkeypatch.undo()
        await pilot.press("r")
        assert "Reloaded 17 predicates" in str(screen.query_one("#wb-message").render())
        assert [p.id for p in app.live.agent.gate.predicates] == [p.id for p in before]


async def test_replay_slider_shows_the_state_at_each_step(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_to_end(app, pilot)
        assert app.live is not None and app.live.folder is not None
        trace = app.live.folder / "trace.jsonl"
        await pilot.press("o")
        opener = await wait_for_screen(pilot, app, OpenTraceScreen)
        assert trace in opener.traces
        box = opener.query_one("#open-path", Input)
        box.value = str(trace)
        box.focus()
        await pilot.press("enter")
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        assert isinstance(replay, ReplayScreen)
        gate = replay.query_one("#gate")
        assert [r.verdict for r in gate.rows.values()] == ["REVISE", "ALLOW"]  # type: ignore[attr-defined]
        slider = replay.query_one(StepSlider)
        slider.value = 0
        await pilot.pause()
        assert gate.rows == {}  # type: ignore[attr-defined]
        ledger = replay.query_one("#ledger")
        assert ledger.ledger_tree.nodes_by_path == {}  # type: ignore[attr-defined]
        revise_step = next(r.step for r in replay.timeline.gate_rows())
        slider.value = replay.steps.index(revise_step)
        await pilot.pause()
        assert [r.verdict for r in gate.rows.values()] == ["REVISE"]  # type: ignore[attr-defined]
        assert "orders.#W4821001" in ledger.ledger_tree.nodes_by_path  # type: ignore[attr-defined]
        await pilot.press("end")
        assert replay.shown_step == replay.steps[-1]


async def test_open_trace_reports_bad_files(console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "message", "role": "user", "text": "hi"}\n')
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        opener = await open_file(pilot, app, bad)  # read in a worker: the error arrives as a message
        # no session_started: not replayed, audited as a recording, which holds no call to judge
        await wait_for(pilot, lambda: "cannot tell the domain: the file holds no valid tool call" in str(
            opener.query_one("#open-error").render()))
        assert app.screen is opener


async def test_operator_plays_the_agent_with_dry_run(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(model="operator")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        assert app.live is not None and app.live.operator_agent is not None
        await wait_for(pilot, lambda: app.live.operator_agent.waiting)  # type: ignore[union-attr]

        async def compose_call(name: str, arguments: dict[str, Any]) -> ComposeScreen:
            await pilot.press("c")
            screen = await wait_for_screen(pilot, app, ComposeScreen)
            screen.query_one("#compose-tool", Select).value = name
            await wait_for(pilot, lambda: screen.form is not None and screen.form.spec.name == name)
            await pilot.pause()
            assert screen.form is not None
            screen.form.set_values(arguments)
            return screen

        async def send(name: str, arguments: dict[str, Any]) -> None:
            screen = await compose_call(name, arguments)
            await screen.action_send_call()
            await wait_for(pilot, lambda: app.live.operator_agent.waiting and not isinstance(  # type: ignore[union-attr]
                app.screen, ComposeScreen))

        await send("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"})
        await send("get_user_details", {"user_id": "mia_garcia_4821"})
        await send("get_order_details", {"order_id": "#W4821001"})
        # the operator, as the agent, describes the return; the scenario's customer says yes (the policy's explicit
        # confirmation, which the gate reads from the conversation)
        app.live.operator_agent.say("I'll return the gold tablet of order #W4821001 with a refund. Shall I?")  # type: ignore[union-attr]
        await wait_for(pilot, lambda: app.live.operator_agent.waiting and any(  # type: ignore[union-attr]
            e.type == "message" and e.role == "user" and "Yes" in e.text for e in app.live.bus.history))  # type: ignore
        screen = await compose_call("return_delivered_order_items", {
            "order_id": "#W4821001", "item_ids": "2000000011", "payment_method_id": "credit_card_4821002"})
        assert await screen.action_dry_run()
        shown = str(screen.query_one("#compose-verdict").render())
        assert "REVISE" in shown and "retail.refund_to_original_or_gift_card" in shown
        assert not any(e.type == "gate_decision" for e in app.live.bus.history)  # dry-run recorded nothing
        screen.form.set_values({"payment_method_id": "gift_card_4821001"})  # type: ignore[union-attr]
        assert await screen.action_dry_run() and "ALLOW" in str(screen.query_one("#compose-verdict").render())
        await screen.action_send_call()
        await wait_for(pilot, lambda: any(e.type == "gate_decision" for e in app.live.bus.history))  # type: ignore
        decision = next(e for e in app.live.bus.history if e.type == "gate_decision")
        assert decision.verdict == "ALLOW"


async def test_the_agent_seats_dry_run_judges_as_the_send_does_with_the_gates_own_reads(
        console_app: Callable[..., OperatorConsole]) -> None:
    """The session runs in evidence assist (the default): the operator, as the agent, cancels an order never read.
    The dry-run answers what the send will get, the ALLOW after the gate reads the order itself, and lists that
    read, yet records nothing; the send then gets that very verdict, with that read."""
    app = console_app(model="operator")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        assert app.live is not None and app.live.operator_agent is not None
        await wait_for(pilot, lambda: app.live.operator_agent.waiting)  # type: ignore[union-attr]

        async def compose_call(name: str, arguments: dict[str, Any]) -> ComposeScreen:
            await pilot.press("c")
            screen = await wait_for_screen(pilot, app, ComposeScreen)
            screen.query_one("#compose-tool", Select).value = name
            await wait_for(pilot, lambda: screen.form is not None and screen.form.spec.name == name)
            await pilot.pause()
            assert screen.form is not None
            screen.form.set_values(arguments)
            return screen

        await compose_call("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"})
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.live.operator_agent.waiting and not isinstance(  # type: ignore[union-attr]
            app.screen, ComposeScreen))
        # the operator describes the cancellation and the scenario's customer says yes (explicit confirmation)
        app.live.operator_agent.say("I'll cancel order #W4821002, as no longer needed. Shall I?")  # type: ignore[union-attr]
        await wait_for(pilot, lambda: app.live.operator_agent.waiting and any(  # type: ignore[union-attr]
            e.type == "message" and e.role == "user" and "Yes" in e.text for e in app.live.bus.history))  # type: ignore
        screen = await compose_call("cancel_pending_order", {"order_id": "#W4821002", "reason": "no longer needed"})
        before = len(app.live.bus.history)
        await pilot.press("ctrl+d")
        verdict = screen.query_one("#compose-verdict")
        await wait_for(pilot, lambda: "dry-run" in str(verdict.render()))
        shown = str(verdict.render())
        assert "ALLOW" in shown and "REVISE" not in shown, shown
        assert 'reads the gate would make: get_order_details(order_id="#W4821002")' in shown
        assert len(app.live.bus.history) == before  # nothing on the trace: no gate read, no verdict
        assert app.live.agent.ledger.entry("orders.#W4821002") is None  # nothing in the session's ledger
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any(e.type == "gate_decision" for e in app.live.bus.history))  # type: ignore
        decision = next(e for e in app.live.bus.history if e.type == "gate_decision")
        assert decision.verdict == "ALLOW"
        assert [r.text for r in decision.gate_reads] == ['get_order_details(order_id="#W4821002")']


async def test_compose_rejects_bad_field_values(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(model="operator")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live.operator_agent.waiting)  # type: ignore[union-attr]
        await pilot.press("c")
        screen = await wait_for_screen(pilot, app, ComposeScreen)
        assert not await screen.action_dry_run()
        assert "Choose a tool first" in str(screen.query_one("#compose-verdict").render())
        screen.query_one("#compose-tool", Select).value = "return_delivered_order_items"
        await wait_for(pilot, lambda: screen.form is not None)
        await pilot.pause()
        screen.form.set_values({"order_id": "#W4821001", "payment_method_id": "x"})  # type: ignore[union-attr]
        screen.query_one("#arg-item_ids", Input).value = '["2000000011", '
        assert not await screen.action_dry_run()
        assert "item_ids: not a JSON array" in str(screen.query_one("#compose-verdict").render())
        screen.query_one("#arg-item_ids", Input).value = "2000000011, 2000000012"
        assert await screen.action_dry_run()  # a valid call: the gate answers (not authenticated yet)
        assert "retail.authenticated" in str(screen.query_one("#compose-verdict").render())


async def test_new_session_dialog_validates_and_switches(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+n")
        dialog = await wait_for_screen(pilot, app, NewSessionScreen)
        dialog.query_one("#ns-scenario", Select).value = "(free chat)"
        await pilot.pause()
        dialog.action_start()
        assert app.screen is dialog
        assert "needs a scenario" in str(dialog.query_one("#ns-error").render())
        dialog.query_one("#ns-scenario", Select).value = "other-customers-order"
        dialog.query_one("#ns-agent", Select).value = "fc"
        await pilot.pause()
        dialog.action_start()
        await wait_for(pilot, lambda: app.live is not None and app.live.spec.scenario == "other-customers-order")
        assert app.live is not None and app.live.spec.agent == "fc"
        await run_to_end(app, pilot)
        assert app.gate_pane.rows == {}  # the FC baseline has no gate


async def test_model_error_shows_and_retry_continues(console_app: Callable[..., OperatorConsole]) -> None:
    async def no_sleep(_d: float) -> None:
        return None

    with OpenAIStub() as stub:
        stub.reply_error(500, "upstream exploded")
        stub.reply_text("Hello! How can I help?")

        def factory(spec: SessionSpec) -> OpenAIChatModel:
            return OpenAIChatModel("stub", base_url=stub.base_url, api_key="x", max_retries=0, sleep=no_sleep)

        app = OperatorConsole(SessionSpec(scenario="refund-to-original-payment", model="stub-model"),
                              root=None, model_factory=factory)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "model error")
            assert "upstream exploded" in (app.live.state.error or "")  # type: ignore[union-attr]
            await pilot.press("r")
            await wait_for(pilot, lambda: any(e.type == "assistant_turn" for e in app.live.bus.history))  # type: ignore
            said = [e.text for e in app.live.bus.history if e.type == "assistant_turn"]  # type: ignore[union-attr]
            assert said == ["Hello! How can I help?"]
        assert json.dumps(stub.requests[1]["messages"]).count("Mia Garcia") >= 1


async def test_results_viewer_opens_a_trial_in_replay(console_app: Callable[..., OperatorConsole],
                                                      tmp_path: Path) -> None:
    import argparse

    from console.cli.eval_options import register
    from console.tui.screens.results import ResultsScreen, row_key

    root = argparse.ArgumentParser()
    register(root.add_subparsers(dest="command"))
    out = tmp_path / "run"
    args = root.parse_args(["eval", "--domain", "retail", "--agent", "both", "--trials", "2", "--tasks", "r01",
                            "--out", str(out), "--error-rate", "1", "--seed", "5"])
    assert await args.handler(args) == 0
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_file(pilot, app, out / "results.json")
        results = await wait_for_screen(pilot, app, ResultsScreen)
        assert isinstance(results, ResultsScreen)
        assert "SIMULATION" in str(results.query_one(".screen-title").render())
        table = results.query_one("#results-table")
        assert table.row_count == 2  # type: ignore[attr-defined]
        assert set(results.rows) == {row_key("retail", "r01", "ledger"), row_key("retail", "r01", "fc")}
        table.focus()
        table.move_cursor(row=0, column=4)  # type: ignore[attr-defined]
        await pilot.press("enter")
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        assert isinstance(replay, ReplayScreen) and replay.events[0].type == "session_started"


async def test_operator_as_customer_uses_the_phone_in_telecom(console_app: Callable[..., OperatorConsole]) -> None:
    from console.tui.screens.phone import PhoneScreen

    app = console_app(domain="telecom", scenario="roaming-abroad", seat="customer")
    async with app.run_test(size=SIZE) as pilot:
        assert app.live is not None and app.live.human is not None
        box = app.query_one("#customer-input", Input)
        box.focus()
        box.value = "Hi, I'm abroad and mobile data stopped working. Maria Lopez, 555-210-3001."
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.live.human.waiting  # type: ignore[union-attr]
                       and any(e.type == "assistant_turn" and e.text for e in app.live.bus.history))  # type: ignore
        await pilot.press("f2")  # works while the message box has the focus
        phone = app.screen
        assert isinstance(phone, PhoneScreen)
        phone.query_one("#phone-tool", Select).value = "check_network_status"
        await wait_for(pilot, lambda: phone.form is not None)
        phone.action_run_action()
        await wait_for(pilot, lambda: any(e.type == "tool_result" and e.call.requestor == "user"
                                          for e in app.live.bus.history))  # type: ignore[union-attr]
        result = next(e for e in app.live.bus.history if e.type == "tool_result" and e.call.requestor == "user")
        assert result.ok and "Data Roaming Enabled: No" in result.content
        assert any(p.startswith("device.") for p in app.live.agent.ledger.paths())
        assert "customer's phone" in app.transcript.text()


async def test_slow_model_shows_a_spinner(console_app: Callable[..., OperatorConsole]) -> None:
    with OpenAIStub() as stub:
        stub.reply_text("Hello, how can I help?", delay=3.0)

        def factory(spec: SessionSpec) -> OpenAIChatModel:
            return OpenAIChatModel("stub", base_url=stub.base_url, api_key="x", max_retries=0, timeout=20)

        app = OperatorConsole(SessionSpec(scenario="refund-to-original-payment", model="stub-model"),
                              model_factory=factory)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("space")
            await wait_for(pilot, lambda: app.live is not None and app.live.state.thinking, timeout=30)
            await pilot.pause(0.3)
            bar = str(app.query_one("#status").render())
            assert "waiting for the model" in bar
            # the stub has nothing more to say: the next model call fails and the spinner stops
            await wait_for(pilot, lambda: app.live.state.phase == "model error", timeout=30)  # type: ignore
            assert not app.live.state.thinking  # type: ignore[union-attr]
            await pilot.pause(0.2)
            assert "waiting for the model" not in str(app.query_one("#status").render())
