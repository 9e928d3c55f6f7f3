"""The sessions side of the desk: a session whose model endpoint fails (a real HTTP stub answering 500) shows
failed with its reason while the others finish; Enter opens a session's three panes, rebuilt from its events
alone, where its pending call can be decided; sorting and `/` filtering of the table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from console.runtime.live import SessionSpec, SupervisionMode
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk import DeskScreen
from console.tui.screens.desk_session import SessionViewScreen
from core.llm.base import ChatModel
from core.llm.openai_model import OpenAIChatModel
from tests.support.desk import ManualClock, make_desk, of_type, spec, trace_of, until, until_screen
from tests.support.openai_stub import OpenAIStub

N = SupervisionMode.APPROVE_NON_ALLOW


async def test_a_failing_model_endpoint_shows_failed_while_the_others_finish(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        stub.reply_error(500, "the model server is down")

        def model(chosen: SessionSpec) -> ChatModel:
            return OpenAIChatModel(chosen.model, base_url=chosen.base_url, max_retries=0)

        live = replace(spec("retail", "refund-to-original-payment", N), model="stub-model", base_url=stub.base_url)
        desk = make_desk([live, spec("retail", "other-customers-order", N),
                          spec("airline", "cancel-outside-window", SupervisionMode.AUTOPILOT)], tmp_path,
                         ManualClock(), model_factory=model)
        app = SupervisorApp(desk, operator="alice", lifecycle=desk)
        async with app.run_test(size=(160, 45)) as pilot:
            screen = app.desk_screen
            await until(pilot, lambda: "failed" in str(screen.sessions.get_cell("s01", "phase")))
            note = str(screen.sessions.get_cell("s01", "note"))
            assert "500" in note or "server" in note, note
            await until(pilot, lambda: len(screen.inbox.item_ids) == 1)
            await pilot.press("a")  # the other sessions are not held up by the failed one
            await until(pilot, lambda: "every session has ended" in screen.status.plain)
            assert "1 failed" in screen.status.plain
    rows = {r.id: r for r in desk.snapshot().rows}
    assert rows["s01"].phase == "failed" and rows["s01"].failure.startswith("model ")
    assert rows["s02"].end_reason == "user_stop" and rows["s03"].end_reason == "user_stop"
    assert of_type(trace_of(desk.snapshot(), "s01"), "session_ended")  # even the failed trace is closed


async def test_enter_opens_the_session_and_its_pending_call_is_decided_there(tmp_path: Path) -> None:
    desk = make_desk([spec("retail", "other-customers-order", N), spec("retail", "refund-to-original-payment", N)],
                     tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 2)
        screen.sessions.focus()
        screen.sessions.move_cursor(row=0)
        await pilot.press("enter")
        view = await until_screen(pilot, app, SessionViewScreen)
        assert view.session_id == "s01"
        events = desk.events_of("s01")
        await until(pilot, lambda: len(view.events) == len(desk.events_of("s01")))
        assert len(view.panes.gate.rows) == len([e for e in events if e.type == "gate_decision"]) == 1
        assert "orders.#W4821002" in view.panes.ledger.ledger_tree.nodes_by_path  # the ledger, from the events
        assert "waits" in str(view.query_one("#session-title").render())
        await pilot.press("a")  # accept the BLOCK from the session view
        await until(pilot, lambda: desk.snapshot().row("s01").phase == "ended")  # type: ignore[union-attr]
        await until(pilot, lambda: len(view.events) == len(desk.events_of("s01")))
        assert [e.type for e in view.events][-1] == "session_ended"  # it kept up while open
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        decisions = of_type(trace_of(desk.snapshot(), "s01"), "supervisor_decision")
        assert [(d["decision"], d["who"]) for d in decisions] == [("accept_verdict", "alice")]
        (left,) = screen.inbox.item_ids  # back at the desk: the highlighted item is claimed again
        await until(pilot, lambda: desk.snapshot().item(left).claimed_by == "alice")  # type: ignore[union-attr]
        await pilot.press("a")
        await until(pilot, lambda: "every session has ended" in screen.status.plain)


async def test_r_resumes_a_step_mode_session_from_the_desk_and_from_its_view(tmp_path: Path) -> None:
    """`r` on the desk (on the highlighted step item) and in a session's view takes that session out of step
    mode; `?` lists the key; each resume is in the audit log with this operator."""
    from console.runtime.desk.audit import read_audit
    from console.tui.screens.help import HelpScreen

    step = SupervisionMode.STEP
    desk = make_desk([spec("retail", "refund-to-original-payment", step), spec("airline", "unobserved-flight", step)],
                     tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)

    def mode(session: str) -> str:
        row = desk.snapshot().row(session)
        return row.mode if row is not None else ""

    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 2)
        await pilot.press("question_mark")
        shown = await until_screen(pilot, app, HelpScreen)
        assert dict(shown.keys)["r"] == "Resume (leave step mode)"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        first = screen.inbox.item_ids[0]
        screen.inbox.move_cursor(row=0)
        await until(pilot, lambda: screen.claimed == first)
        # the detail names the step the session waits for, the same in its heading and in its keys line
        # (it once said "customer turn" above and "next model call" in the keys)
        what = desk.snapshot().item(first).tool  # type: ignore[union-attr]
        assert what in ("customer turn", "model call")
        assert f"waits to make its next {what}" in screen.detail.plain
        assert f"let this session take its next step ({what})" in screen.detail.plain
        resumed = desk.snapshot().item(first).session_id  # type: ignore[union-attr]
        other = "s02" if resumed == "s01" else "s01"
        await pilot.press("r")
        await until(pilot, lambda: mode(resumed) == "approve non-ALLOW")
        assert mode(other) == "step"
        screen.sessions.focus()
        screen.sessions.move_cursor(row=screen.sessions.row_ids.index(other))
        await pilot.press("enter")
        view = await until_screen(pilot, app, SessionViewScreen)
        assert view.session_id == other
        await pilot.press("r")
        await until(pilot, lambda: mode(other) == "approve non-ALLOW")
        assert any("out of step mode" in m for m in view.decisions.said)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
    records = read_audit(tmp_path / "desk" / "audit.jsonl").decisions
    assert sorted((d["session"], d["operator"]) for d in records if d["decision"] == "resume") == [
        ("s01", "alice"), ("s02", "alice")]


async def test_sort_cycles_and_slash_filters_the_sessions(tmp_path: Path) -> None:
    desk = make_desk([spec("retail", "other-customers-order", SupervisionMode.AUTOPILOT),
                      spec("airline", "cancel-outside-window", SupervisionMode.AUTOPILOT),
                      spec("telecom", "roaming-abroad", SupervisionMode.AUTOPILOT)], tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: "every session has ended" in screen.status.plain)
        table = screen.sessions
        table.focus()
        assert table.row_ids == ("s01", "s02", "s03")
        await pilot.press("s", "s", "s")  # id -> waited -> phase -> domain
        await until(pilot, lambda: table.sort_name == "domain")
        assert table.row_ids == ("s02", "s01", "s03")  # airline, retail, telecom
        await pilot.press("slash")
        for key in "retail":
            await pilot.press(key)
        await until(pilot, lambda: table.row_ids == ("s01",))
        await pilot.press("escape")  # clears the filter
        await until(pilot, lambda: len(table.row_ids) == 3)
