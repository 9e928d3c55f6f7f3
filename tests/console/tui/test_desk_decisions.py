"""The desk driven with keys (Pilot), ten sessions, every decision kind: what each session's trace and the desk's
audit log recorded (who, how long the call waited, whether it ran).

Sessions in 'approve writes' and 'approve non-ALLOW' (and one in step mode, for the step key); the desk's clock
is the test's (`ManualClock`), moved two seconds before each decision, so every recorded wait is known.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, TextArea

from console.runtime.desk.audit import call_key, read_audit
from console.runtime.desk.view import ItemKind, ItemView
from console.runtime.live import SupervisionMode
from console.tui.desk_app import SupervisorApp
from console.tui.screens.confirm import ConfirmScreen
from console.tui.screens.desk import DeskScreen
from console.tui.screens.desk_decide import DeskReviewScreen
from tests.support.desk import ManualClock, corrected_arguments, make_desk, of_type, spec, trace_of, until, until_screen

W, N, STEP = SupervisionMode.APPROVE_WRITES, SupervisionMode.APPROVE_NON_ALLOW, SupervisionMode.STEP
SESSIONS = [  # (domain, scenario, mode, how the test decides its items)
    ("retail", "refund-to-original-payment", W, "bulk"),  # s01: REVISE accepted, then the ALLOW in a bulk approval
    ("retail", "refund-to-original-payment", W, "bulk"),  # s02: the same, in the same bulk approval
    ("retail", "other-customers-order", N, "force"),  # s03: the BLOCK force-allowed with a reason
    ("telecom", "refuel-over-cap", W, "edit"),  # s04: the REVISE edited into the corrected call, re-gated
    ("telecom", "roaming-abroad", W, "veto"),  # s05: the first ALLOW vetoed with a message
    ("airline", "cancel-outside-window", N, "accept"),  # s06: the BLOCK accepted
    ("airline", "unobserved-flight", STEP, "step"),  # s07: step mode: n for each model call
    ("telehealth", "schedule-after-checking", N, "accept"),  # s08: its REVISE needs a read: back to the model
    ("airline", "persistent-refund-demand", N, "accept"),  # s09
    ("telehealth", "unobserved-supplier-price", W, "approve"),  # s10: a on each: the REVISE accepted, the ALLOW run
]
POLICY = {f"s{n:02d}": how for n, (_, _, _, how) in enumerate(SESSIONS, 1)}
BULK_TOOL = "return_delivered_order_items"


async def select(pilot: object, screen: DeskScreen, item_id: str) -> None:
    """Move the inbox cursor to the item and wait until this screen holds its claim."""
    screen.inbox.move_cursor(row=screen.inbox.row_of(item_id))
    await until(pilot, lambda: screen.claimed == item_id and screen.detail.item_id == item_id)


async def review(pilot: object, app: SupervisorApp, key: str, *, reason: str = "", arguments: str = "") -> None:
    """Open the review modal with `key`, fill in what it asks, and decide with the same key from its buttons."""
    await pilot.press(key)  # type: ignore[attr-defined]
    modal = await until_screen(pilot, app, DeskReviewScreen)
    if arguments:
        modal.query_one("#review-arguments", TextArea).text = arguments
    if reason:
        box = modal.query_one("#review-reason", Input)
        await until(pilot, lambda: box.has_focus)  # v and f ask for the message first, in the reason box
        box.value = reason
    modal.query_one("#approve").focus()
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.press(key)  # type: ignore[attr-defined]
    await until(pilot, lambda: isinstance(app.screen, DeskScreen))


def held(item: ItemView, items: tuple[ItemView, ...]) -> bool:
    """A bulk session's ALLOW waits until both bulk sessions' ALLOWs are in the inbox together."""
    if POLICY[item.session_id] != "bulk" or not item.rule_free:
        return False
    return len([i for i in items if i.tool == BULK_TOOL and i.rule_free]) < 2


async def test_ten_sessions_every_decision_kind(tmp_path: Path) -> None:
    clock = ManualClock()
    desk = make_desk([spec(d, s, m) for d, s, m, _ in SESSIONS], tmp_path, clock)
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    acted: set[str] = set()
    steps = 0
    bulk_question = ""
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        while True:
            await until(pilot, lambda: desk.snapshot().done or any(
                not held(i, desk.snapshot().items) for i in desk.snapshot().items))
            snapshot = desk.snapshot()
            if snapshot.done:
                break
            await until(pilot, lambda: all(i.id in screen.inbox.item_ids for i in desk.snapshot().items))
            item = next(i for i in snapshot.items if not held(i, snapshot.items))
            how = POLICY[item.session_id]
            clock.advance(2.0)
            await select(pilot, screen, item.id)
            first = item.session_id not in acted
            if item.kind is ItemKind.STEP:
                await pilot.press("n")
                steps += 1
            elif how == "bulk" and item.rule_free:
                await pilot.press("A")
                confirm = await until_screen(pilot, app, ConfirmScreen)
                bulk_question = confirm.question
                await pilot.press("y")
                await until(pilot, lambda: not [i for i in desk.snapshot().items if i.tool == BULK_TOOL])
            elif how == "force" and first and item.verdict in ("REVISE", "BLOCK"):
                acted.add(item.session_id)
                await review(pilot, app, "f", reason="spouse, verified by phone")
            elif how == "edit" and first:
                acted.add(item.session_id)
                domain, scenario = SESSIONS[int(item.session_id[1:]) - 1][:2]
                await review(pilot, app, "e", arguments=json.dumps(corrected_arguments(domain, scenario)))
            elif how == "veto" and first and item.verdict == "ALLOW":
                acted.add(item.session_id)
                await review(pilot, app, "v", reason="no, not this one")
            else:
                await pilot.press("a")
            await until(pilot, lambda done=item.id: desk.snapshot().item(done) is None)
        await until(pilot, lambda: "every session has ended" in screen.status.plain)
        await pilot.press("q")  # every session has ended: no question
    snapshot = desk.snapshot()
    assert [r.end_reason for r in snapshot.rows] == ["user_stop"] * 10, [(r.id, r.failure) for r in snapshot.rows]
    traces = {r.id: trace_of(snapshot, r.id) for r in snapshot.rows}
    for events in traces.values():
        assert events[-1]["type"] == "session_ended"
        for decision in of_type(events, "supervisor_decision"):
            assert decision["who"] == "alice" and decision["waited_s"] >= 2.0, decision

    def kinds(session: str) -> list[str]:
        return [e["decision"] for e in of_type(traces[session], "supervisor_decision")]

    def outcome(session: str, decision: str) -> dict[str, object]:
        call = next(e for e in of_type(traces[session], "supervisor_decision") if e["decision"] == decision)["call"]
        return next(e for e in of_type(traces[session], "tool_result") if e["call"]["id"] == call["id"])

    # bulk: both ALLOWs approved in one confirmed keystroke; the confirmation listed them
    for session in ("s01", "s02"):
        assert kinds(session) == ["accept_verdict", "approve"]
        assert outcome(session, "approve")["executed"] is True
        assert outcome(session, "accept_verdict")["executed"] is False
    assert "Approve 2 rule-free ALLOW call(s) of return_delivered_order_items" in bulk_question
    assert "s01" in bulk_question and "s02" in bulk_question
    # force-allow: the BLOCKed call ran, with the reason on record
    assert "force_allow" in kinds("s03") and outcome("s03", "force_allow")["executed"] is True
    forced = next(e for e in of_type(traces["s03"], "supervisor_decision") if e["decision"] == "force_allow")
    assert forced["reason"] == "spouse, verified by phone" and forced["gate_verdict"] == "BLOCK"
    # edit: the edited arguments were gated again (a second gate decision on the edited call) and ran
    edited = next(e for e in of_type(traces["s04"], "supervisor_decision") if e["decision"] == "edit")
    assert edited["edited_arguments"] == corrected_arguments("telecom", "refuel-over-cap")
    assert outcome("s04", "edit")["executed"] is True
    assert [g["verdict"] for g in of_type(traces["s04"], "gate_decision")][:2] == ["REVISE", "ALLOW"]
    # veto: the ALLOWed call did not run, and the model was told why
    assert "veto" in kinds("s05")
    vetoed = outcome("s05", "veto")
    assert vetoed["executed"] is False and vetoed["outcome"] == "vetoed"
    assert "no, not this one" in str(vetoed["content"])
    for session in ("s06", "s09"):
        assert set(kinds(session)) == {"accept_verdict"}
        assert outcome(session, "accept_verdict")["executed"] is False
    # a REVISE that only needs a read is not a human's to accept under approve non-ALLOW: it went back to the model,
    # which read and got its ALLOW; the row counts it as returned for a read
    assert kinds("s08") == []
    assert [(g["verdict"], g["refusal"]) for g in of_type(traces["s08"], "gate_decision")] == [
        ("REVISE", "needs_read"), ("ALLOW", None)]
    assert next(r for r in snapshot.rows if r.id == "s08").returned == 1
    assert steps >= 3 and len(of_type(traces["s07"], "assistant_turn")) <= steps  # no model call without its step
    assert kinds("s10") == ["accept_verdict", "approve"] and outcome("s10", "approve")["executed"] is True
    # the desk-wide audit log: every decision of every trace, and every step, by alice, each with its outcome
    audit = read_audit(tmp_path / "desk" / "audit.jsonl")
    decided = sum(len(of_type(events, "supervisor_decision")) for events in traces.values())
    on_calls = [d for d in audit.decisions if d["decision"] != "step"]
    assert len(on_calls) == decided and audit.skipped == 0
    assert [d["session"] for d in audit.decisions if d["decision"] == "step"] == ["s07"] * steps
    assert {d["decision"] for d in on_calls} == {"approve", "accept_verdict", "veto", "edit", "force_allow"}
    assert {d["operator"] for d in audit.decisions} == {"alice"}
    assert all(f"{d['session']}/{d['call_id']}" in audit.outcomes for d in on_calls)
    assert all(call_key(d) in audit.outcomes for d in audit.decisions)
    assert snapshot.stats.decisions == decided and snapshot.stats.worst_s is not None


async def test_enter_in_the_desk_review_reason_box_completes_the_veto_started_by_v(tmp_path: Path) -> None:
    """The desk's review modal is the console's: `v` starts the veto and asks for the message, and Enter in the
    reason box completes it with the message as typed. A key sent in the same burst after that Enter decides
    nothing more and is not part of the message."""
    from tests.support.pilot import press_at_once

    desk = make_desk([spec("telecom", "roaming-abroad", W)], tmp_path, ManualClock())
    app = SupervisorApp(desk, operator="alice", lifecycle=desk)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(screen.inbox.item_ids) == 1 and screen.claimed is not None)
        await pilot.press("v")
        modal = await until_screen(pilot, app, DeskReviewScreen)
        box = modal.query_one("#review-reason", Input)
        await until(pilot, lambda: box.has_focus)
        await press_at_once(pilot, *"no", "enter", "z")
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        await until(pilot, lambda: bool(of_type(trace_of(desk.snapshot(), "s01"), "supervisor_decision")))
    decisions = of_type(trace_of(desk.snapshot(), "s01"), "supervisor_decision")
    assert [(d["decision"], d["reason"], d["who"]) for d in decisions[:1]] == [("veto", "no", "alice")]
