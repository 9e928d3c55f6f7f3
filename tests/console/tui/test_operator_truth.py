"""The console shows what the operator and the gate really did, on one main screen: each test failed on the console
before the change.

Overrides are asserted on what the console shows, not on how the offline demo ends (the adaptive offline
agent is built separately; until it lands a force-allow may still end the scripted demo in agent_error).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.widgets import Input

from console.cli.main import build_parser
from console.runtime.export import transcript_markdown
from console.runtime.live import SupervisionMode
from console.runtime.lookup import first_scenario
from console.tui.app import OperatorConsole
from console.tui.screens.audit import AuditScreen
from console.tui.screens.compose import ComposeScreen
from console.tui.screens.confirm import ConfirmScreen
from console.tui.screens.help import HelpScreen
from console.tui.screens.new_session import NewSessionScreen
from console.tui.screens.open_trace import OpenTraceScreen
from console.tui.screens.replay import ReplayScreen, load_replay, trace_outcome
from console.tui.screens.results import trial_outcome
from console.tui.widgets.ledger_tree import LEDGER_PLACEHOLDER
from core.evaluation.results import Failure, TrialResult
from core.events import SessionEnded, SessionStarted
from core.trace import load_trace
from domains.registry import load_domain
from tests.support.pilot import open_review, press_at_once, wait_for, wait_for_screen

SIZE = (160, 45)


def ended(app: OperatorConsole) -> Callable[[], bool]:
    return lambda: app.live is not None and app.live.state.phase == "ended"


def rendered(widget: Any) -> str:
    return str(widget.render())


async def force_allow_block(app: OperatorConsole, pilot: Any) -> None:
    """other-customers-order in 'approve non-ALLOW': force-allow the BLOCKed cancel, wait for its outcome."""
    await pilot.press("space")
    screen = await open_review(pilot, app)
    assert screen.verdict == "BLOCK"
    screen.query_one("#review-reason", Input).value = "spouse, verified by phone"
    screen.query_one("#approve").focus()
    await pilot.press("f")
    assert app.live is not None
    await wait_for(pilot, lambda: any(e.type == "tool_result" and e.call.name == "cancel_pending_order"
                                      for e in app.live.bus.history))  # type: ignore[union-attr]
    await pilot.pause()


# --------------------------------------------------------------------------------------------- 10.1


async def test_force_allow_shows_verdict_decision_and_outcome_as_three_facts(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW, operator="dana")
    async with app.run_test(size=SIZE) as pilot:
        await force_allow_block(app, pilot)
        key, row = next((k, r) for k, r in app.gate_pane.rows.items() if r.verdict == "BLOCK")
        detail = app.gate_pane.detail(key).plain
        assert "NOT executed" not in detail  # the gate's message to the model is not the outcome
        assert "gate: BLOCK" in detail
        assert "operator: dana force-allowed despite the gate (gate said BLOCK)" in detail
        assert "spouse, verified by phone" in detail
        assert "outcome: executed" in detail
        assert row.executed is True
        assert "overridden 1" in str(app.gate_pane.border_subtitle)
        transcript = app.transcript.text()
        assert "operator dana force-allowed despite the gate" in transcript
        assert "cancel_pending_order executed" in transcript
        assert app.live is not None
        markdown = transcript_markdown(app.live.bus.history)
        assert "operator: dana force-allowed despite the gate (gate said BLOCK)" in markdown
        assert "outcome: executed" in markdown
        await pilot.press("a")
        audit = await wait_for_screen(pilot, app, AuditScreen)
        table = audit.query_one("#audit-table")
        labels = [str(c.label) for c in table.ordered_columns]  # type: ignore[attr-defined]
        assert labels == ["time", "who", "tool", "gate", "decision", "reason", "call"]  # 10.12
        assert str(table.get_row_at(0)[4]) == "force-allowed despite the gate"  # type: ignore[attr-defined]


async def test_accepting_a_revise_has_its_own_name(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        await pilot.press("a")
        await wait_for(pilot, ended(app))
        assert app.live is not None
        decision = next(e for e in app.live.bus.history if e.type == "supervisor_decision")
        assert decision.decision == "accept_verdict"  # was recorded as "approve"
        row = next(r for r in app.gate_pane.rows.values() if r.verdict == "REVISE")
        assert row.executed is False and "not executed: refused by the gate" in row.outcome


# --------------------------------------------------------------------------------------------- 10.2


async def test_disabled_rule_is_named_not_all_rules_passed(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        rule = "retail.refund_to_original_or_gift_card"
        await app.load_session(replace(app.spec, disabled_predicates=(rule,)))
        assert "1 rule(s) DISABLED" in rendered(app.main.query_one("#status"))
        await pilot.press("space")
        await wait_for(pilot, lambda: bool(app.gate_pane.rows))
        key, row = next(iter(app.gate_pane.rows.items()))
        assert row.verdict == "ALLOW" and row.disabled == [rule]
        detail = app.gate_pane.detail(key).plain
        assert "All rules passed" not in detail and f"NOT CHECKED (disabled): {rule}" in detail
        shown = app.transcript.text()
        assert "ALLOW: 7 rule(s) passed; NOT CHECKED (disabled):" in shown and rule in shown
        assert app.live is not None
        assert f"NOT CHECKED (disabled): {rule}" in transcript_markdown(app.live.bus.history)


# --------------------------------------------------------------------------------------------- 10.3


async def test_new_session_resets_every_pane_detail_and_counter(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        app.ledger_pane.show_entry("orders.#W4821001")
        app.gate_pane.show(next(iter(app.gate_pane.rows)))
        await app.load_session(app.spec)
        await pilot.pause()
        assert rendered(app.ledger_pane.query_one("#ledger-detail")) == LEDGER_PLACEHOLDER
        assert "Select a verdict" in rendered(app.gate_pane.query_one("#gate-detail"))
        assert app.gate_pane.rows == {} and app.gate_pane.counts == {"ALLOW": 0, "REVISE": 0, "BLOCK": 0}
        assert "orders.#W4821001" not in app.ledger_pane.ledger_tree.nodes_by_path
        assert app.ledger_pane.ledger_tree.highlighted == set()


# ------------------------------------------------------------------------------------ 10.4 / 16.1


async def test_replay_has_its_own_keys_and_audit(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW, operator="dana")
    async with app.run_test(size=SIZE) as pilot:
        await force_allow_block(app, pilot)
        assert app.live is not None and app.live.folder is not None
        events, domain, _ = load_replay(app.live.folder / "trace.jsonl")
        await app.load_session(replace(app.spec, mode=SupervisionMode.AUTOPILOT))  # a fresh, unstarted session
        app.push_screen(ReplayScreen(events, domain, app.live.folder / "trace.jsonl"))
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        await pilot.press("n", "space")
        await pilot.pause()
        assert not app.started and app.live.state.steps == 0  # the hidden live session did not move
        keys = {b.binding.action for b in replay.active_bindings.values()}
        assert not {"step", "start_or_pause", "cycle_mode", "export_markdown"} & keys
        await pilot.press("a")
        audit = await wait_for_screen(pilot, app, AuditScreen)
        assert [d.who for d in audit.decisions] == ["dana"]  # the replayed session's decisions


# --------------------------------------------------------------------------------------------- 10.5


async def test_baseline_replay_says_no_ledger_and_shows_the_failure(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(agent="fc")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        assert app.live is not None and app.live.folder is not None
        assert "no ledger (baseline agent)" in str(app.ledger_pane.border_subtitle)
        events, domain, _ = load_replay(app.live.folder / "trace.jsonl")
        trial = TrialResult(domain="retail", task_id="t1", agent="fc", trial=0, success=False,
                            failure=Failure(category="wrong_write", evidence="refund went to the credit card"),
                            termination="user_stop")
        app.push_screen(ReplayScreen(events, domain, app.live.folder, outcome=trial_outcome(trial)))
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        assert replay.panes.ledger.ledger_tree.nodes_by_path == {}
        assert "no ledger (baseline agent)" in str(replay.panes.ledger.border_subtitle)
        assert "wrong_write — refund went to the credit card" in rendered(replay.query_one("#replay-outcome"))


async def run_demo(folder: Path, max_steps: int | None = None) -> str:
    """The retail demo run by core's Session (as `ledgeragent run` does) into `folder`; its ending reason."""
    from core.scenario import list_scenarios, load_scenario
    from core.session import Session
    from domains.registry import load_offline_reader
    from mock_backends.registry import open_backend

    domain = load_domain("retail")
    scenario = load_scenario(list_scenarios(domain.scenarios_dir)["refund-to-original-payment"])
    folder.mkdir(parents=True)
    backend = await open_backend("retail", folder / "db.sqlite")
    try:
        session = Session(domain=domain, backend=backend, model=scenario.build_model(load_offline_reader("retail")),
                          user=scenario.build_user(), trace_path=folder / "trace.jsonl", scenario=scenario.name,
                          max_steps=max_steps or scenario.max_steps)
        return (await session.run()).reason
    finally:
        await backend.close()


async def test_a_standalone_trace_that_failed_shows_its_category_and_reason(
        console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    """Opened with `o` (no eval results file): the failure category comes from the evaluation's own rules for
    how a session ended; a trace that ended normally shows no failure line."""
    failed, clean = tmp_path / "failed", tmp_path / "clean"
    assert await run_demo(failed, max_steps=3) == "max_steps" and await run_demo(clean) == "user_stop"
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        for folder, expected in ((failed, "failed: reasoning loop / max steps — ended with max_steps "
                                                 "(step limit reached)"), (clean, None)):
            await pilot.press("o")
            opener = await wait_for_screen(pilot, app, OpenTraceScreen)
            opener.query_one("#open-path", Input).value = str(folder / "trace.jsonl")
            await pilot.press("enter")
            replay = await wait_for_screen(pilot, app, ReplayScreen)
            shown = replay.query("#replay-outcome")
            if expected is None:
                assert not shown
            else:
                assert expected in rendered(shown.first()) and shown.first().has_class("-failed")
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, ReplayScreen))


def test_the_trace_outcome_names_a_harness_error_with_its_detail() -> None:
    """A session the agent could not continue (the strict script's divergence) is a harness error, with the
    session's own detail; a trace without session_ended is unfinished, never called passed."""
    started = SessionStarted(seq=0, step=0, domain="retail", agent="ledger", model="scripted", user="scripted")
    ended = SessionEnded(seq=1, step=5, reason="script_diverged", steps=5,
                         detail="scenario diverged before agent step 6")
    assert trace_outcome([started, ended]) == ("failed: harness error — session ended with script_diverged "
                                               "(script diverged): scenario diverged before agent step 6")
    assert trace_outcome([started]).startswith("unfinished: the trace has no session_ended")  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------- 10.7


async def test_customer_input_mode_and_end_conversation(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(seat="customer")
    async with app.run_test(size=SIZE) as pilot:
        box = app.main.input_box
        assert app.focused is box  # focused at start
        mode = app.live.supervisor.mode if app.live else None
        await pilot.press("m", "e", "o")
        assert box.value == "meo" and app.screen is app.main  # typed, no hotkey fired
        assert app.live is not None and app.live.supervisor.mode is mode
        box.value = ""
        await pilot.press(*"Hi, I need help with a return.", "enter")
        await wait_for(pilot, lambda: app.live is not None and app.live.human is not None and app.live.human.waiting)
        assert app.focused is box  # after Enter, on the customer's turn
        await pilot.press("ctrl+e")  # End conversation: nobody types ###STOP###
        await wait_for(pilot, ended(app))
        assert app.live.state.end_reason == "user_stop"
        assert "the customer ended the conversation" in app.transcript.text()


# --------------------------------------------------------------------------------------------- 10.8


async def test_reloaded_rules_apply_to_later_sessions_and_are_recorded(
        console_app: Callable[..., OperatorConsole]) -> None:
    from console.tui.screens.workbench import WorkbenchScreen

    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.live is not None
        shipped = app.live.rules_version
        await pilot.press("w")
        bench = await wait_for_screen(pilot, app, WorkbenchScreen)
        await pilot.press("r")
        assert "every later one" in rendered(bench.query_one("#wb-message"))
        assert "live: rules" in rendered(bench.query_one("#wb-title"))
        assert "retail" in app.rules and app.rules["retail"].loaded_at
        await pilot.press("escape")
        await app.load_session(app.spec)
        assert app.live.rules is app.rules["retail"]
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        assert app.live.folder is not None
        started = next(e for e in load_trace(app.live.folder / "trace.jsonl") if e.type == "session_started")
        assert started.rules_version == app.rules["retail"].version and len(shipped) == 12


# ------------------------------------------------------------------------------------------- 10.10


async def test_small_terminal_stacks_the_panes_and_cycles(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = [p.id for p in (app.transcript, app.ledger_pane, app.gate_pane) if p.display]
        assert shown == ["transcript"] and app.transcript.region.width >= 76
        await pilot.press("l")
        await pilot.pause()
        assert app.ledger_pane.display and not app.transcript.display and app.ledger_pane.region.width >= 76
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert all(p.display and p.region.width >= 30 for p in (app.transcript, app.ledger_pane, app.gate_pane))


async def test_review_modal_buttons_fit_at_80x24(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        await pilot.pause()
        for button in ("#approve", "#veto", "#edit", "#force"):
            region = screen.query_one(button).region
            assert region.width > 0 and region.right <= 80 and region.bottom <= 23, button


def test_markers_come_before_the_summary() -> None:
    from types import SimpleNamespace

    from console.tui.widgets.ledger_tree import LedgerTree

    tree = LedgerTree()
    entry = SimpleNamespace(path="orders.#W1", value={"status": "x" * 60}, is_stale=True)
    tree.highlighted = {"orders.#W1"}
    label = tree.label_for(entry).plain  # type: ignore[arg-type]
    assert label.startswith("◆ stale #W1")  # a 38-column pane cuts the end, never the marks


# ------------------------------------------------------------------------------------------- 10.11


async def test_modal_footer_shows_the_modal_keys(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        actions = {b.binding.action: b.binding.description for b in screen.active_bindings.values() if b.enabled}
        assert actions.get("accept('REVISE')") == "Accept REVISE (don't run)" and "audit" not in actions
        reason = screen.query_one("#review-reason", Input)
        reason.focus()
        await pilot.press(*"ok", "enter")  # nothing started: Enter goes to the safe button, never Force-allow
        assert reason.value == "ok" and app.focused is screen.query_one("#approve")


async def test_a_decision_key_in_the_same_burst_as_enter_in_the_reason_box_decides_nothing(
        console_app: Callable[..., OperatorConsole]) -> None:
    """Enter in the reason box (nothing started) moves the cursor to the safe button. An `f` typed right after it
    in the same burst was typed before the operator could see where the cursor went: it is neither a letter in the
    box nor a force-allow; the dialog says to press it again, and `f` pressed again starts the force-allow."""
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        screen = await open_review(pilot, app)
        assert screen.verdict in ("REVISE", "BLOCK")
        reason = screen.query_one("#review-reason", Input)
        reason.focus()
        await press_at_once(pilot, *"ok", "enter", "f")
        live = app.live
        assert live is not None
        error = screen.query_one("#review-error")
        await wait_for(pilot, lambda: "again" in str(error.render()))
        assert reason.value == "ok"  # not "okf": the f was not typed into the box
        assert app.screen is screen and app.focused is screen.query_one("#approve")
        assert not [e for e in live.bus.history if e.type == "supervisor_decision"]
        await pilot.press("f")  # now it is the operator's act: with the reason typed, a force-allow
        await wait_for(pilot, lambda: any(e.type == "supervisor_decision" for e in live.bus.history))
        assert [(e.decision, e.reason) for e in live.bus.history if e.type == "supervisor_decision"] == [
            ("force_allow", "ok")]


async def test_quit_mid_session_asks_and_ends_the_trace(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await open_review(pilot, app)
        await pilot.press("escape")  # leave the question pending, as an operator walking away would
        await pilot.pause()
        await pilot.press("q")
        await wait_for_screen(pilot, app, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and app.screen is app.main
        assert app.live is not None and app.live.folder is not None
        folder = app.live.folder
        await pilot.press("q")
        await wait_for_screen(pilot, app, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running)
    last = load_trace(folder / "trace.jsonl")[-1]
    assert last.type == "session_ended" and last.reason == "quit"


async def test_retry_is_in_the_footer_during_a_model_error(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.live is not None
        app.live.state.phase = "model error"
        app.main.refresh_bindings()
        await pilot.pause()
        shown = {b.binding.action for b in app.main.active_bindings.values() if b.binding.show and b.enabled}
        assert "retry" in shown


async def test_ctrl_d_dry_runs_from_inside_a_text_field(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(model="operator")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        assert app.live is not None and app.live.operator_agent is not None
        await wait_for(pilot, lambda: app.live.operator_agent.waiting)  # type: ignore[union-attr]
        await pilot.press("c")
        screen = await wait_for_screen(pilot, app, ComposeScreen)
        called: list[bool] = []
        original = screen.action_dry_run

        def spy() -> Any:
            called.append(True)
            return original()

        screen.action_dry_run = spy  # type: ignore[method-assign]
        inputs = list(screen.query(Input))
        inputs[0].focus()
        await pilot.press("ctrl+d")
        assert called == [True]


# ------------------------------------------------------------------------------------------- 10.13


def test_a_domain_alone_opens_its_first_scenario() -> None:
    args = build_parser().parse_args(["console", "--domain", "airline"])
    assert args.scenario is None
    assert first_scenario(load_domain("airline")) == "cancel-outside-window"
    assert first_scenario(load_domain("retail")) == "refund-to-original-payment"


async def test_new_session_dialog_preselects_the_current_scenario(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+n")
        dialog = await wait_for_screen(pilot, app, NewSessionScreen)
        await pilot.pause()
        assert dialog.spec().scenario == "other-customers-order"


# ------------------------------------------------------------------------------------------- 10.14


async def test_question_mark_shows_the_keys_of_the_screen_in_front(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, app, HelpScreen)
        assert ("n", "Step") in help_screen.keys
        await pilot.press("escape")
        await pilot.press("space")
        await open_review(pilot, app)
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, app, HelpScreen)
        assert ("f", "Force-allow despite REVISE") in help_screen.keys and ("n", "Step") not in help_screen.keys


def test_internal_tokens_are_shown_in_words() -> None:
    from console.runtime.facts import words

    assert words("user_stop") == "the customer ended the conversation"
    assert words("force_allow") == "force-allowed despite the gate"
    assert words("###STOP###") == "(ends the conversation)"
    assert "###STOP###" not in json.dumps(words("###STOP###"))


async def test_slash_filters_the_transcript_gate_and_audit(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW, operator="dana")
    async with app.run_test(size=SIZE) as pilot:
        await force_allow_block(app, pilot)
        app.transcript.focus()
        await pilot.press("slash", *"cancel_pending")
        assert app.transcript.items and all("cancel_pending" in " ".join(s.text for s in e.strips).lower()
                                            or e.kind == "intro" for e in app.transcript.items)
        await pilot.press("escape")
        assert len(app.transcript.items) == len(app.transcript.every)
        app.gate_pane.table.focus()
        await pilot.press("slash", *"nothing-like-this", "enter")
        assert app.gate_pane.table.row_count == 0 and app.gate_pane.rows  # narrowed, nothing lost
        await pilot.press("a")
        audit = await wait_for_screen(pilot, app, AuditScreen)
        await pilot.press("slash", *"zzz")
        assert audit.query_one("#audit-table").row_count == 0  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert audit.query_one("#audit-table").row_count == 1  # type: ignore[attr-defined]


async def test_copy_a_ledger_path(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await wait_for(pilot, ended(app))
        tree = app.ledger_pane.ledger_tree
        tree.focus()
        tree.move_cursor(tree.nodes_by_path["orders.#W4821001"])
        await pilot.press("y")
        assert app.clipboard == "orders.#W4821001"
        await pilot.press("Y")
        assert json.loads(app.clipboard)["status"] == "return requested"


async def test_results_failures_only(console_app: Callable[..., OperatorConsole], tmp_path: Any) -> None:
    from console.tui.screens.results import ResultsScreen
    from core.evaluation.results import EvalResults, RunHeader

    trials = [TrialResult(domain="retail", task_id=t, agent="ledger", trial=0, termination="user_stop",
                          success=(t == "ok")) for t in ("ok", "bad")]
    results = EvalResults(header=RunHeader(domains=["retail"], agents=["ledger"], trials=1, offline=True),
                          trials=trials)
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(results, tmp_path))
        screen = await wait_for_screen(pilot, app, ResultsScreen)
        table = screen.query_one("#results-table")
        assert table.row_count == 2  # type: ignore[attr-defined]
        await pilot.press("f")
        assert table.row_count == 1  # type: ignore[attr-defined]
