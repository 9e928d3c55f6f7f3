"""The supervision desk's engine (console.runtime.desk.desk.Desk) with real sessions, databases, traces and audit log.

No Textual here: the desk's screens are tested apart. Time is a hand-moved clock, so waits, claims and
service levels are exact.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.runtime.desk.audit import AuditFilter, call_key, describe_outcome, read_audit
from console.runtime.desk.desk import Desk
from console.runtime.desk.view import DeskRefused, DeskSnapshot, ItemKind, ItemView, RowPhase, Service
from console.runtime.live import SessionSpec, SupervisionMode
from core.llm.base import ChatModel
from core.scenario import list_scenarios
from domains.registry import load_domain

DOMAINS = ("retail", "airline", "telecom", "telehealth")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def every_scenario(mode: SupervisionMode) -> list[SessionSpec]:
    specs = []
    for domain in DOMAINS:
        for name in sorted(list_scenarios(load_domain(domain).scenarios_dir)):
            specs.append(SessionSpec(domain=domain, scenario=name, mode=mode))
    return specs


def make_desk(tmp_path: Path, specs: list[SessionSpec], clock: Clock, **kwargs: Any) -> Desk:
    return Desk(specs, root=tmp_path, audit_path=tmp_path / "desk" / "audit.jsonl", clock=clock,
                wall=lambda: "2026-12-01T10:00:00+00:00", **kwargs)


async def settle(desk: Desk, runner: asyncio.Task[None], want: Callable[[DeskSnapshot], bool]) -> DeskSnapshot:
    """Let the sessions run until `want` holds for the desk's snapshot (or every session ended)."""
    for _ in range(60_000):  # a bound on polls, not a time limit: a busy machine only makes it slower
        snapshot = desk.snapshot()
        if want(snapshot) or runner.done():
            return snapshot
        await asyncio.sleep(0.001)  # yield to the database threads as well as to the loop
    raise AssertionError("the desk never got there")


def trace(folder: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (Path(folder) / "trace.jsonl").read_text().splitlines()]


async def drive(desk: Desk, answer: Callable[[ItemView], tuple[str, str, str, dict[str, Any] | None]],
                clock: Clock) -> DeskSnapshot:
    """Run the desk to its end, answering every inbox item with `answer` (operator, decision, reason, args),
    each after it waited 7 s on the desk's clock."""
    runner = asyncio.create_task(desk.run())
    while True:
        snapshot = await settle(desk, runner, lambda s: bool(s.items))
        if runner.done() and not snapshot.items:
            await runner
            return desk.snapshot()
        item = snapshot.items[0]
        clock.t += 7
        operator, decision, reason, arguments = answer(item)
        await desk.decide(item.id, operator, decision, reason=reason, arguments=arguments)


async def test_twelve_sessions_run_at_once_and_every_decision_is_in_its_trace_and_the_audit_log(tmp_path: Path) -> None:
    clock = Clock()
    desk = make_desk(tmp_path, every_scenario(SupervisionMode.APPROVE_WRITES), clock, concurrency=4)
    snapshot = await drive(desk, lambda item: ("alice", "approve", "", None), clock)
    assert [r.phase for r in snapshot.rows] == [RowPhase.ENDED] * 12
    assert {r.end_reason for r in snapshot.rows} == {"user_stop"}
    assert snapshot.done and not snapshot.items
    read = read_audit(tmp_path / "desk" / "audit.jsonl")
    assert read.skipped == 0
    assert snapshot.stats.decisions == len(read.decisions) > 12
    waits = [r["waited_s"] for r in read.decisions]
    # each item waits 7 s per decision made while it was pending (how many depends on scheduling)
    assert all(w >= 7.0 and w % 7.0 == 0 for w in waits)
    assert (snapshot.stats.median_s, snapshot.stats.worst_s) == (statistics.median(waits), max(waits))
    in_traces = 0
    for row in snapshot.rows:
        events = trace(row.folder)
        decisions = [e for e in events if e["type"] == "supervisor_decision"]
        in_traces += len(decisions)
        audited = [r["waited_s"] for r in read.decisions if r["session"] == row.id]
        assert [d["who"] for d in decisions] == ["alice"] * len(decisions)
        assert [d["waited_s"] for d in decisions] == audited
        # approve on an ALLOW runs it; on a REVISE/BLOCK it accepts the refusal, under its own name
        for d in decisions:
            assert d["decision"] == ("approve" if d["gate_verdict"] == "ALLOW" else "accept_verdict")
        results = {e["call"]["id"]: e for e in events if e["type"] == "tool_result"}
        for record in (r for r in read.decisions if r["session"] == row.id):
            outcome = read.outcomes[call_key(record)]
            assert outcome["executed"] == results[record["call_id"]]["executed"]
            assert (record["gate_verdict"] == "ALLOW") == outcome["executed"]
        assert row.allow + row.revise + row.block == sum(e["type"] == "gate_decision" for e in events)
    assert in_traces == len(read.decisions)
    assert {r.customer for r in snapshot.rows if r.domain == "retail"} == {"Noah Kim", "Mia Garcia"}


async def test_a_session_waiting_on_the_inbox_pauses_only_itself(tmp_path: Path) -> None:
    clock = Clock()
    specs = [SessionSpec(domain="retail", scenario="other-customers-order", mode=SupervisionMode.APPROVE_WRITES),
             SessionSpec(domain="airline", scenario="unobserved-flight", mode=SupervisionMode.AUTOPILOT)]
    desk = make_desk(tmp_path, specs, clock)
    runner = asyncio.create_task(desk.run())
    # The retail session first waits on its item; only then is the airline one's end proof that a waiting
    # session holds up nobody (the two run side by side: which gets where first is the scheduler's choice).
    await settle(desk, runner, lambda s: s.rows[0].phase is RowPhase.WAITING)
    snapshot = await settle(desk, runner, lambda s: s.rows[1].phase is RowPhase.ENDED)
    assert snapshot.rows[0].phase is RowPhase.WAITING and snapshot.rows[0].pending == snapshot.items[0].id
    assert snapshot.rows[1].end_reason == "user_stop"
    await desk.close()
    assert trace(snapshot.rows[0].folder)[-1]["reason"] == "desk_closed"


async def test_service_levels_turn_amber_then_red(tmp_path: Path) -> None:
    clock = Clock()
    desk = make_desk(tmp_path, every_scenario(SupervisionMode.APPROVE_WRITES)[:1], clock, amber_s=30, red_s=120)
    runner = asyncio.create_task(desk.run())
    snapshot = await settle(desk, runner, lambda s: bool(s.items))
    item = snapshot.items[0]
    assert snapshot.service(item) is Service.OK
    clock.t += 30
    assert desk.snapshot().service(item) is Service.AMBER
    clock.t += 90
    assert desk.snapshot().service(item) is Service.RED
    await desk.close()


async def test_a_claim_keeps_the_item_for_its_holder_until_released_or_timed_out(tmp_path: Path) -> None:
    clock = Clock()
    desk = make_desk(tmp_path, every_scenario(SupervisionMode.APPROVE_WRITES)[:1], clock, claim_ttl=60)
    runner = asyncio.create_task(desk.run())
    item = (await settle(desk, runner, lambda s: bool(s.items))).items[0]
    await desk.claim(item.id, "alice")
    assert desk.snapshot().items[0].claimed_by == "alice"
    with pytest.raises(DeskRefused, match="claimed by alice"):
        await desk.decide(item.id, "bob", "approve")
    with pytest.raises(DeskRefused, match="claimed by alice"):
        await desk.claim(item.id, "bob")
    await desk.release_all("alice")  # alice's tab closed
    await desk.claim(item.id, "bob")
    clock.t += 61  # bob walked away: the claim ran out
    assert desk.snapshot().items[0].claimed_by is None
    await desk.decide(item.id, "alice", "approve")
    with pytest.raises(DeskRefused, match="no longer waiting"):  # never decided twice
        await desk.decide(item.id, "bob", "approve")
    await settle(desk, runner, lambda s: any(e.type == "tool_result" and e.kind == "write"
                                             for e in desk.events_of("s01")))
    events = trace(desk.snapshot().rows[0].folder)
    assert [e["who"] for e in events if e["type"] == "supervisor_decision"] == ["alice"]
    await desk.close()


async def test_refused_input_changes_nothing_and_an_invalid_edit_stays_in_the_inbox(tmp_path: Path) -> None:
    clock = Clock()
    spec = SessionSpec(domain="retail", scenario="other-customers-order", mode=SupervisionMode.APPROVE_WRITES)
    desk = make_desk(tmp_path, [spec], clock)
    runner = asyncio.create_task(desk.run())
    item = (await settle(desk, runner, lambda s: bool(s.items))).items[0]
    assert item.verdict == "BLOCK" and item.tool == "cancel_pending_order"
    assert [r.id for r in item.failing] == ["retail.order_owned_by_customer"]
    assert "orders.#W4821002" in item.evidence
    refusals = [
        ("force_allow", "", None, "needs a reason"),
        ("veto", " ", None, "message for the model"),
        ("edit", "", {"order_id": "#W4821002", "reason": float("nan")}, "invalid value"),
        ("edit", "", {"order_id": 7}, "order_id"),
        ("edit", "", dict(item.arguments), "unchanged"),  # the proposal's own arguments: not an edit
        ("edit", "", {"order_id": "#W4821002", "reason": "no longer needed", "extra": 1}, "extra"),
        ("launch", "", None, "unknown decision"),
    ]
    for decision, reason, arguments, message in refusals:
        with pytest.raises(DeskRefused, match=message):
            await desk.decide(item.id, "alice", decision, reason=reason, arguments=arguments)
    with pytest.raises(DeskRefused, match="operator name"):
        await desk.decide(item.id, "  ", "approve")
    still = desk.snapshot().items
    assert [i.id for i in still] == [item.id] and "extra" in still[0].error
    assert not read_audit(tmp_path / "desk" / "audit.jsonl").decisions
    assert not [e for e in trace(desk.snapshot().rows[0].folder) if e["type"] == "supervisor_decision"]
    await desk.close()


async def test_edit_is_gated_again_and_force_allow_runs_with_its_reason(tmp_path: Path) -> None:
    clock = Clock()
    spec = SessionSpec(domain="retail", scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW)
    desk = make_desk(tmp_path, [spec], clock)
    runner = asyncio.create_task(desk.run())
    item = (await settle(desk, runner, lambda s: bool(s.items))).items[0]
    edited = dict(item.arguments, reason="ordered by mistake")
    await desk.decide(item.id, "alice", "edit", arguments=edited)
    again = (await settle(desk, runner, lambda s: bool(s.items))).items[0]
    assert again.id != item.id and again.verdict == "BLOCK" and again.arguments == edited  # re-gated
    await desk.decide(again.id, "bob", "force_allow", reason="customer verified by phone")
    await runner
    events = trace(desk.snapshot().rows[0].folder)
    decisions = [e for e in events if e["type"] == "supervisor_decision"]
    assert [(d["decision"], d["who"]) for d in decisions] == [("edit", "alice"), ("force_allow", "bob")]
    assert decisions[0]["edited_arguments"] == edited
    result = next(e for e in events if e["type"] == "tool_result" and e["call"]["name"] == "cancel_pending_order")
    assert result["executed"] and result["call"]["arguments"] == edited
    read = read_audit(tmp_path / "desk" / "audit.jsonl", AuditFilter(decision="force_allow"))
    assert [r["operator"] for r in read.decisions] == ["bob"]
    assert describe_outcome(read.outcomes[call_key(read.decisions[0])]) == "executed"
    assert desk.snapshot().rows[0].overridden == 2
    assert [r["operator"] for r in read_audit(tmp_path / "desk" / "audit.jsonl",
                                              AuditFilter(operator="alice")).decisions] == ["alice"]
    assert not read_audit(tmp_path / "desk" / "audit.jsonl", AuditFilter(verdict="ALLOW")).decisions


async def test_veto_tells_the_model_and_nothing_runs(tmp_path: Path) -> None:
    clock = Clock()
    spec = SessionSpec(domain="airline", scenario="unobserved-flight", mode=SupervisionMode.APPROVE_WRITES)
    desk = make_desk(tmp_path, [spec], clock)
    snapshot = await drive(desk, lambda item: ("carol", "veto", "call the customer back first", None), clock)
    events = trace(snapshot.rows[0].folder)
    writes = [e for e in events if e["type"] == "tool_result" and e["kind"] == "write"]
    assert writes and all(not w["executed"] and w["outcome"] == "vetoed" for w in writes)
    assert "call the customer back first" in writes[0]["content"]
    assert snapshot.rows[0].end_reason == "user_stop"


async def test_bulk_approval_takes_only_rule_free_allows_of_one_tool(tmp_path: Path) -> None:
    clock = Clock()
    specs = [SessionSpec(domain="telecom", scenario="overdue-bill-resume", mode=SupervisionMode.APPROVE_WRITES)
             for _ in range(3)] + [SessionSpec(domain="retail", scenario="other-customers-order",
                                               mode=SupervisionMode.APPROVE_WRITES)]
    desk = make_desk(tmp_path, specs, clock)
    runner = asyncio.create_task(desk.run())
    snapshot = await settle(desk, runner, lambda s: len(s.items) == 4)
    groups = snapshot.bulk_groups()
    assert list(groups) == ["send_payment_request"] and len(groups["send_payment_request"]) == 3
    blocked = next(i for i in snapshot.items if i.verdict == "BLOCK")
    with pytest.raises(DeskRefused, match="only ALLOWs"):
        await desk.bulk_approve([groups["send_payment_request"][0].id, blocked.id], "alice")
    assert len(desk.snapshot().items) == 4  # all or nothing
    done = await desk.bulk_approve([i.id for i in groups["send_payment_request"]], "alice")
    assert len(done) == 3
    assert [i.id for i in desk.snapshot().items if i.tool == "send_payment_request"] == []
    await desk.close()


async def test_step_mode_sessions_wait_in_the_inbox_for_each_step(tmp_path: Path) -> None:
    clock = Clock()
    spec = SessionSpec(domain="retail", scenario="refund-to-original-payment", mode=SupervisionMode.STEP)
    desk = make_desk(tmp_path, [spec], clock)
    runner = asyncio.create_task(desk.run())
    steps = 0
    while not runner.done():
        snapshot = await settle(desk, runner, lambda s: bool(s.items))
        if not snapshot.items:
            break
        item = snapshot.items[0]
        if item.kind is ItemKind.STEP:
            assert snapshot.rows[0].phase is RowPhase.PAUSED
            with pytest.raises(DeskRefused, match="only decision is step"):
                await desk.decide(item.id, "alice", "approve")
            if steps == 0:  # a step is a decision: another operator's claim refuses it
                await desk.claim(item.id, "bob")
                with pytest.raises(DeskRefused, match="claimed by bob"):
                    await desk.decide(item.id, "alice", "step")
                await desk.release(item.id, "bob")
                clock.t += 2.0
            await desk.decide(item.id, "alice", "step")
            steps += 1
        else:
            await desk.decide(item.id, "alice", "approve")
    await runner
    assert steps > 5 and desk.snapshot().rows[0].end_reason == "user_stop"
    await desk.close()
    # every step is on record, with who, when and how long it waited, and says it was no call
    audit = read_audit(tmp_path / "desk" / "audit.jsonl", AuditFilter(decision="step"))
    assert len(audit.decisions) == steps
    first = audit.decisions[0]
    assert (first["operator"], first["session"], first["call_id"], first["waited_s"]) == ("alice", "s01", None, 2.0)
    assert first["reason"] in ("one more step: a model call", "one more step: a customer turn")
    assert {describe_outcome(audit.outcomes.get(call_key(d))) for d in audit.decisions} == {
        "no call (the session took one more step)"}


async def test_resume_leaves_step_mode_only_and_is_audited_with_its_operator(tmp_path: Path) -> None:
    """Resume takes a step-mode session out of step mode (its step item goes; no more step items come) and is
    on record in the audit log with who, when and how long the step waited; another operator's claim on the
    step item refuses it; a session in another mode is refused, its mode untouched."""
    clock = Clock()
    step = SessionSpec(domain="retail", scenario="refund-to-original-payment", mode=SupervisionMode.STEP)
    writes = SessionSpec(domain="airline", scenario="cancel-outside-window", mode=SupervisionMode.APPROVE_WRITES)
    desk = make_desk(tmp_path, [step, writes], clock)
    runner = asyncio.create_task(desk.run())
    snapshot = await settle(desk, runner, lambda s: len(s.items) == 2)
    item = next(i for i in snapshot.items if i.session_id == "s01")
    assert item.kind is ItemKind.STEP
    with pytest.raises(DeskRefused, match="not in step mode .*'approve writes'"):
        await desk.resume("s02", "alice")
    await desk.claim(item.id, "bob")
    with pytest.raises(DeskRefused, match="claimed by bob"):
        await desk.resume("s01", "alice")
    await desk.release(item.id, "bob")
    clock.t += 4.0
    await desk.resume("s01", "alice")
    assert desk.snapshot().item(item.id) is None
    with pytest.raises(DeskRefused, match="not in step mode"):
        await desk.resume("s01", "alice")
    seen_steps = 0
    while not runner.done():
        snapshot = await settle(desk, runner, lambda s: bool(s.items))
        for pending in snapshot.items:
            seen_steps += pending.kind is ItemKind.STEP
            await desk.decide(pending.id, "alice", "step" if pending.kind is ItemKind.STEP else "approve")
    await runner
    assert seen_steps == 0
    rows = desk.snapshot().rows
    assert [r.end_reason for r in rows] == ["user_stop", "user_stop"] and rows[0].mode == "approve non-ALLOW"
    assert rows[1].mode == "approve writes"
    await desk.close()
    audit = read_audit(tmp_path / "desk" / "audit.jsonl")
    resumed = [d for d in audit.decisions if d["decision"] == "resume"]
    assert [(d["operator"], d["session"], d["item"], d["waited_s"], d["when"], d["call_id"]) for d in resumed] == [
        ("alice", "s01", item.id, 4.0, "2026-12-01T10:00:00+00:00", None)]
    assert describe_outcome(audit.outcomes.get(call_key(resumed[0]))) == \
        "no call (the session's supervision mode changed)"


async def test_a_crashing_session_shows_failed_and_the_others_finish(tmp_path: Path) -> None:
    def broken(spec: SessionSpec) -> ChatModel:
        raise RuntimeError("no such model server")

    clock = Clock()
    specs = [SessionSpec(domain="retail", scenario="other-customers-order"),
             SessionSpec(domain="retail", scenario=None, seat="customer", model="gpt-x"),
             SessionSpec(domain="airline", scenario="no-such-scenario")]
    desk = make_desk(tmp_path, specs, clock, model_factory=broken)
    await desk.run()
    rows = desk.snapshot().rows
    assert rows[0].phase is RowPhase.ENDED and rows[0].end_reason == "user_stop"
    assert rows[1].phase is RowPhase.FAILED and "no such model server" in rows[1].failure
    assert rows[2].phase is RowPhase.FAILED and "unknown scenario" in rows[2].failure


async def test_a_torn_audit_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    clock = Clock()
    desk = make_desk(tmp_path, every_scenario(SupervisionMode.APPROVE_WRITES)[:1], clock)
    await drive(desk, lambda item: ("alice", "approve", "", None), clock)
    path = tmp_path / "desk" / "audit.jsonl"
    whole = len(read_audit(path).decisions)
    with path.open("a") as handle:
        handle.write('{"type": "decision", "operator": "mallory", "gate_verdict": NaN}\n{"type": "deci')
    read = read_audit(path)
    assert len(read.decisions) == whole and read.skipped == 2


def test_snapshots_survive_json() -> None:
    snapshot = DeskSnapshot(now=1.0, rows=(), items=(ItemView(id="i1", session_id="s01", kind=ItemKind.WRITE,
                                                              asked_at=0.5, asked_when="t", tool="x"),),
                            stats=Desk([]).snapshot().stats, amber_s=1, red_s=2)
    assert DeskSnapshot.from_json(json.loads(json.dumps(snapshot.to_json()))) == snapshot


async def test_closing_the_desk_while_sessions_open_leaves_no_half_open_database(tmp_path: Path) -> None:
    """A session cancelled while its database opens waits for it, closes it and keeps nothing (it never ran)."""
    clock = Clock()
    desk = make_desk(tmp_path, every_scenario(SupervisionMode.APPROVE_WRITES), clock, concurrency=12)
    runner = asyncio.create_task(desk.run())
    for _ in range(10_000):
        opening = [s for s in desk.sessions if s.live is not None and s.live.folder is not None
                   and s.live.backend is None]
        if opening:
            break
        await asyncio.sleep(0)
    assert opening, "no session was caught opening its database"
    await desk.close()
    await runner
    assert all(s.live is None or s.live.backend is None for s in desk.sessions)  # every database closed
    for folder in (tmp_path / "sessions").iterdir():  # only sessions that ran left a folder, with their trace
        assert (folder / "trace.jsonl").stat().st_size > 0, folder
