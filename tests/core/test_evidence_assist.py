"""Evidence assist: the gate reads what a write's rules lack, as the domain declares, and judges again.

Over the real retail backend on its shipped seed (Mia Garcia's and Noah Kim's orders), through the one call path
(`CallExecutor`, here driven by `Checker` and by a scripted session): what it reads, how it is recorded, what the
model is shown, and what it never does (read before identification, show another customer's record, loop, read
past its bound, read after a crash).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.agent import AgentConfig
from core.domain import Domain
from core.events import EventBus, GateDecided, ToolResultEvent
from core.evidence import MAX_GATE_READS, EvidenceMode, EvidenceReads, GateRead
from core.gate import (
    GateContext,
    GateDecision,
    LedgerView,
    MissingEvidence,
    Outcome,
    Pass,
    PolicyGate,
    RefusalKind,
    Verdict,
    Violation,
    predicate,
)
from core.ledger import READ_BY_GATE, Ledger
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.regate import regate
from core.replay import Checker, TrajectoryCall
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from core.timeline import LedgerTimeline
from core.tools import ToolCall
from core.trace import load_trace
from core.users import ScriptedUser
from domains.registry import load_domain, load_offline_reader
from domains.retail import DOMAIN
from mock_backends.registry import open_backend
from mock_backends.retail import RetailBackend
from tests.support.scenario_runs import SCENARIOS, FirstWriteOverride

MIA_EMAIL, MIA_PENDING, NOAH_PENDING = "mia.garcia@example.com", "#W4821002", "#W3107002"
CANCEL = "cancel_pending_order"


async def _checker(tmp_path: Path, evidence: EvidenceMode = EvidenceMode.ASSIST,
                   domain: Domain = DOMAIN) -> tuple[Checker, EventBus, RetailBackend]:
    backend = await RetailBackend.open(tmp_path / "db.sqlite")
    bus = EventBus()
    return Checker(domain, backend, bus=bus, evidence=evidence), bus, backend


async def _run(checker: Checker, lines: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
    return [await checker.check(TrajectoryCall(i, i + 1, name, arguments)) for i, (name, arguments) in
            enumerate(lines)]


def _login() -> tuple[str, dict[str, Any]]:
    return ("find_user_id_by_email", {"email": MIA_EMAIL})


def _cancel(order_id: str = MIA_PENDING) -> tuple[str, dict[str, Any]]:
    return (CANCEL, {"order_id": order_id, "reason": "no longer needed"})


def _gate_reads(bus: EventBus) -> list[ToolResultEvent]:
    return [e for e in bus.history if isinstance(e, ToolResultEvent) and e.by == READ_BY_GATE]


def _decisions(bus: EventBus) -> list[GateDecided]:
    return [e for e in bus.history if isinstance(e, GateDecided)]


async def test_assist_reads_the_missing_order_absorbs_it_and_allows(tmp_path: Path) -> None:
    checker, bus, backend = await _checker(tmp_path)
    try:
        results = await _run(checker, [_login(), _cancel()])
    finally:
        await backend.close()
    cancel = results[1]
    assert (cancel.verdict, cancel.executed, cancel.gate_reads) == (
        "ALLOW", True, ('get_order_details(order_id="#W4821002")',))
    (read,) = _gate_reads(bus)
    assert (read.call.id, read.call.name, read.for_call, read.gate_only, read.ok) == (
        "call_1~gate1", "get_order_details", "call_1", False, True)
    (decided,) = _decisions(bus)  # one verdict per proposal: the one the write got, naming the read it took
    assert decided.verdict == "ALLOW" and [g.outcome for g in decided.gate_reads] == ["ok"]
    entry = checker.ledger.entry(f"orders.{MIA_PENDING}")
    assert entry is not None and entry.provenance.by == READ_BY_GATE
    assert entry.provenance.describe().endswith("read by the gate")
    written = [e for e in bus.history if isinstance(e, ToolResultEvent) and e.call.id == "call_1"]
    assert written[0].content.startswith('NOTE: before judging this call the gate read get_order_details(order_id='
                                         '"#W4821002") itself (now in the ledger).\n')


async def test_ask_mode_is_the_papers_gate(tmp_path: Path) -> None:
    checker, bus, backend = await _checker(tmp_path, EvidenceMode.ASK)
    try:
        results = await _run(checker, [_login(), _cancel()])
    finally:
        await backend.close()
    assert (results[1].verdict, results[1].refusal, results[1].gate_reads) == ("REVISE", "needs_read", ())
    assert not _gate_reads(bus)
    (decided,) = _decisions(bus)
    assert decided.refusal == "needs_read"
    assert any(r.missing == [f"orders.{MIA_PENDING}"] for r in decided.results if r.status == "missing")
    assert decided.feedback.startswith("REVISE (needs a read): cancel_pending_order was NOT executed")


async def test_another_customers_order_is_evidence_for_the_gate_only(tmp_path: Path) -> None:
    """Mia asks to cancel Noah's order: the gate reads it to judge, BLOCKs citing the owner, and neither the ledger
    the model sees, nor its rebuild from the trace, ever holds Noah's order; re-gating gives the same BLOCK."""
    checker, bus, backend = await _checker(tmp_path)
    try:
        results = await _run(checker, [_login(), _cancel(NOAH_PENDING)])
    finally:
        await backend.close()
    refused = results[1]
    assert (refused.verdict, refused.predicates) == ("BLOCK", ("retail.order_owned_by_customer",))
    assert "belongs to 'noah_kim_3107'" in refused.reason
    (read,) = _gate_reads(bus)
    assert read.gate_only and read.content == "" and read.result["user_id"] == "noah_kim_3107"
    assert checker.ledger.entry(f"orders.{NOAH_PENDING}") is None
    assert "noah_kim_3107" not in checker.ledger.render()
    timeline = LedgerTimeline.build(bus.history, DOMAIN.path_map)
    assert f"orders.{NOAH_PENDING}" not in timeline.at(bus.history[-1].seq).paths()
    assert not timeline.divergences
    (row,) = regate(bus.history, DOMAIN)
    assert (row.new_verdict, row.changed) == ("BLOCK", False)
    written = [e for e in bus.history if isinstance(e, ToolResultEvent) and e.call.id == "call_1"][0]
    assert "it is not the customer's record and is not shown" in written.content


async def test_a_read_that_fails_is_shown_and_the_write_stays_revise(tmp_path: Path) -> None:
    checker, bus, backend = await _checker(tmp_path)
    try:
        results = await _run(checker, [_login(), _cancel("#W0000000"), _cancel("#W0000000")])
    finally:
        await backend.close()
    first, again = results[1], results[2]
    assert (first.verdict, first.refusal, first.executed) == ("REVISE", "needs_read", False)
    assert first.gate_reads == ('get_order_details(order_id="#W0000000") (failed: Order not found)',)
    (failed,) = _gate_reads(bus)
    assert (failed.ok, failed.outcome, failed.content) == (False, "error", "Error: Order not found")
    decided = _decisions(bus)
    assert [g.outcome for g in decided[0].gate_reads] == ["error"]
    written = [e for e in bus.history if isinstance(e, ToolResultEvent) and e.call.id == "call_1"][0]
    assert "the gate tried to read get_order_details" in written.content and "Order not found" in written.content
    # the same call again, nothing new observed: rejected as a repeat, and the gate does not read again
    assert (again.verdict, again.gate_reads) == ("REVISE", ()) and decided[1].repeated


async def test_no_read_before_anyone_is_identified(tmp_path: Path) -> None:
    checker, bus, backend = await _checker(tmp_path)
    try:
        results = await _run(checker, [_cancel()])
    finally:
        await backend.close()
    assert results[0].verdict == "REVISE" and results[0].predicates == ("retail.authenticated",)
    assert not _gate_reads(bus)


def test_the_plan_is_empty_before_identification_and_past_the_bound() -> None:
    reads = DOMAIN.evidence_reads
    gate = PolicyGate(DOMAIN.predicates, path_map=DOMAIN.path_map)
    ledger = Ledger(DOMAIN.path_map)
    decision = gate.dry_run(ToolCall("w", CANCEL, {"order_id": MIA_PENDING, "reason": "no longer needed"}), ledger,
                            GateContext(domain="retail", customer_id="mia_garcia_4821"))
    assert decision.refusal is RefusalKind.NEEDS_READ
    nobody = GateContext(domain="retail")
    assert reads.plan(decision, ledger, nobody) == []
    mia = GateContext(domain="retail", customer_id="mia_garcia_4821")
    assert [p.text for p in reads.plan(decision, ledger, mia)] == ['get_order_details(order_id="#W4821002")']
    assert reads.plan(decision, ledger, mia, budget=0) == []
    assert reads.plan(decision, ledger, mia, tried=['get_order_details(order_id="#W4821002")']) == []
    assert MAX_GATE_READS <= 8


def test_a_pattern_a_rule_asks_for_is_no_record_the_gate_can_read() -> None:
    rule = GateRead("orders.{order_id}", "get_order_details")
    assert rule.match("orders.#W1") == {"order_id": "#W1"}
    assert rule.match("orders.*") is None and rule.match("orders.#W1.items") is None


def test_an_identification_tool_cannot_be_declared_as_a_gate_read() -> None:
    with pytest.raises(ValueError, match="never identifies anyone"):
        EvidenceReads(reads=(GateRead("auth.user_id", "find_user_id_by_email"),),
                      identification=frozenset({"find_user_id_by_email"}))


@predicate(id="retail.crashes", tools=[CANCEL], severity=Verdict.REVISE, policy="a rule with a bug")
def _crashes(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    raise RuntimeError("bug")


async def test_a_crashing_rule_stays_revise_and_never_makes_the_gate_read(tmp_path: Path) -> None:
    domain = replace(DOMAIN, predicates=(*DOMAIN.predicates, _crashes))
    checker, bus, backend = await _checker(tmp_path, domain=domain)
    try:
        results = await _run(checker, [_login(), _cancel()])
    finally:
        await backend.close()
    assert (results[1].verdict, results[1].refusal) == ("REVISE", "breaks_rule")
    assert "retail.crashes" in results[1].crashed
    assert not _gate_reads(bus)


def _session(tmp_path: Path, name: str, backend: RetailBackend) -> Session:
    """The agent cancels Mia's pending order once she confirmed it (her "yes" is the confirmation rule's evidence),
    reading nothing but her id: the gate reads the order itself."""
    steps = [ScriptedStep(say=f"I'll cancel order {MIA_PENDING} as no longer needed. Shall I?"),
             ScriptedStep(calls=(ScriptedCall("find_user_id_by_email", {"email": MIA_EMAIL}),)),
             ScriptedStep(calls=(ScriptedCall(CANCEL, {"order_id": MIA_PENDING, "reason": "no longer needed"}),)),
             ScriptedStep(say="Done.")]
    return Session(domain=DOMAIN, backend=backend, model=ScriptedChatModel(steps),
                   user=ScriptedUser(["hi", "Yes, please."]),
                   config=AgentConfig(evidence=EvidenceMode.ASSIST), trace_path=tmp_path / name / "trace.jsonl")


async def test_the_model_sees_the_gate_read_in_its_next_prompt_and_the_trace_is_deterministic(tmp_path: Path) -> None:
    traces = []
    for name in ("one", "two"):
        backend = await RetailBackend.open(tmp_path / f"{name}.sqlite")
        try:
            session = _session(tmp_path, name, backend)
            await session.run()
        finally:
            await backend.close()
        prompt = session.agent.system_prompt()
        assert f"orders.{MIA_PENDING} = " in prompt  # rendered like any read
        started = load_trace(tmp_path / name / "trace.jsonl")[0]
        assert getattr(started, "evidence", None) == "assist"
        traces.append((tmp_path / name / "trace.jsonl").read_bytes())
    assert traces[0] == traces[1]


def test_one_proposal_is_one_decision_for_the_anti_loop_memory() -> None:
    """A needs-read REVISE the gate then resolves with its own reads leaves no REVISE streak behind."""
    gate = PolicyGate(DOMAIN.predicates, path_map=DOMAIN.path_map, max_revise_streak=2)
    ledger = Ledger(DOMAIN.path_map)
    ctx = GateContext(domain="retail", customer_id="mia_garcia_4821")
    call = ToolCall("w", CANCEL, {"order_id": MIA_PENDING, "reason": "no longer needed"})
    for _ in range(3):  # would escalate to BLOCK at the second REVISE if every first pass counted
        first: GateDecision = gate.evaluate(call, ledger, ctx)
        assert first.verdict is Verdict.REVISE
        gate.forget_last()
    assert gate.evaluate(call, ledger, ctx).verdict is Verdict.REVISE  # still REVISE, not escalated


async def test_a_session_with_gate_reads_rebuilds_and_exports_in_either_mode(tmp_path: Path) -> None:
    """The trace's gate reads rebuild the ledger the session had (no divergence), and the exported check file
    holds them as plain reads, so it reproduces every verdict with the paper's gate too."""
    from core.regate import export_trajectory

    backend = await RetailBackend.open(tmp_path / "session.sqlite")
    try:
        session = _session(tmp_path, "s", backend)
        await session.run()
    finally:
        await backend.close()
    events = load_trace(tmp_path / "s" / "trace.jsonl")
    timeline = LedgerTimeline.build(events, DOMAIN.path_map)
    assert not timeline.divergences
    entry = timeline.at(events[-1].seq).entry(f"orders.{MIA_PENDING}")
    assert entry is not None and entry.provenance.by == READ_BY_GATE
    exported = export_trajectory(events)
    assert [(line["name"], line["expect"]) for line in exported.lines] == [
        ("find_user_id_by_email", "ALLOW"), ("get_order_details", "ALLOW"), (CANCEL, "ALLOW")]
    assert exported.lines[1]["note"].startswith("read by the gate for ")
    from tests.support.gold_replay import calls

    for evidence in EvidenceMode:
        replay_backend = await RetailBackend.open(tmp_path / f"replay-{evidence.value}.sqlite")
        try:
            results = await Checker(DOMAIN, replay_backend, evidence=evidence).run(calls(exported.lines))
        finally:
            await replay_backend.close()
        assert all(r.met for r in results), (evidence, [(r.name, r.verdict) for r in results])


# ---------------------------------------------------------------------------------------------------
# Reads sized to the decision: a rule that needs one qualifying record among many (MissingEvidence.one_at_a_time)

CANDIDATES = ("#W0000001", MIA_PENDING, "#W4821001", NOAH_PENDING)  # none, pending, delivered, Noah's


def _needs_a_delivered_order(budget: int) -> Any:
    """A rule that needs ONE delivered order among CANDIDATES: the first that shows it settles it."""

    @predicate(id="retail.one_delivered_order", tools=[CANCEL], severity=Verdict.REVISE,
               policy="a test rule: some order among the candidates is delivered")
    def check(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        unread = []
        for order_id in CANDIDATES:
            order = view.get(f"orders.{order_id}")
            if isinstance(order, dict) and order.get("status") == "delivered":
                return Pass(f"{order_id} is delivered")
            if order is None:
                unread.append(f"orders.{order_id}")
        if unread:
            return MissingEvidence(paths=tuple(unread), reason="read them until one is delivered",
                                   one_at_a_time=budget)
        return Violation("no candidate order is delivered")

    return check


async def test_one_answer_among_many_is_read_one_at_a_time_and_the_gate_stops_at_the_first(tmp_path: Path) -> None:
    """The rule's candidates are read in its order, one per round, skipping a read that failed, until one answers:
    the delivered order; the one after it (another customer's) is never read. The order the cancellation needs in
    any case is read with the first round."""
    domain = replace(DOMAIN, predicates=(*DOMAIN.predicates, _needs_a_delivered_order(3)))
    checker, bus, backend = await _checker(tmp_path, domain=domain)
    try:
        results = await _run(checker, [_login(), _cancel()])
    finally:
        await backend.close()
    cancel = results[1]
    assert (cancel.verdict, cancel.executed) == ("ALLOW", True), cancel.reason
    assert cancel.gate_reads == ('get_order_details(order_id="#W4821002")',
                                 'get_order_details(order_id="#W0000001") (failed: Order not found)',
                                 'get_order_details(order_id="#W4821001")')
    assert NOAH_PENDING not in " ".join(r.call.arguments.get("order_id", "") for r in _gate_reads(bus))


async def test_a_spent_read_budget_is_said_in_the_refusal(tmp_path: Path) -> None:
    domain = replace(DOMAIN, predicates=(*DOMAIN.predicates, _needs_a_delivered_order(1)))
    checker, bus, backend = await _checker(tmp_path, domain=domain)
    try:
        results = await _run(checker, [_login(), _cancel()])
    finally:
        await backend.close()
    cancel = results[1]
    assert (cancel.verdict, cancel.refusal, len(cancel.gate_reads)) == ("REVISE", "needs_read", 2)
    (decided,) = _decisions(bus)
    (result,) = [r for r in decided.results if r.predicate_id == "retail.one_delivered_order"]
    assert result.reason.endswith("the gate read 1 of them itself for this call, the most this rule lets it read "
                                  "for one write (1), and none gave the answer; the rest are for the agent to read")
    assert result.reason in decided.feedback


def test_the_plan_reads_the_next_candidate_only() -> None:
    """The planner reads a one-at-a-time rule's first unread candidate, skips one already tried, and stops (asks
    the model) once the rule's budget is spent."""
    domain = replace(DOMAIN, predicates=(*DOMAIN.predicates, _needs_a_delivered_order(2)))
    gate = PolicyGate(domain.predicates, path_map=domain.path_map)
    ledger = Ledger(domain.path_map)
    mia = GateContext(domain="retail", customer_id="mia_garcia_4821")
    decision = gate.dry_run(ToolCall("w", CANCEL, {"order_id": MIA_PENDING, "reason": "no longer needed"}), ledger,
                            mia)
    (search,) = decision.searches
    assert search.missing == tuple(f"orders.{o}" for o in CANDIDATES) and f"orders.{MIA_PENDING}" in decision.required
    texts = [(p.text, p.search) for p in domain.evidence_reads.plan(decision, ledger, mia)]
    assert texts == [('get_order_details(order_id="#W4821002")', None),
                     ('get_order_details(order_id="#W0000001")', "retail.one_delivered_order")]
    # the tried candidate is skipped; the next one is a read the cancellation needs anyway: one read serves both
    failed = 'get_order_details(order_id="#W0000001")'
    assert [(p.text, p.search) for p in domain.evidence_reads.plan(decision, ledger, mia, tried=[failed])] == [
        ('get_order_details(order_id="#W4821002")', None)]
    assert domain.evidence_reads.plan(decision, ledger, mia, searched={"retail.one_delivered_order": 2}) == []


# ---------------------------------------------------------------------------------------------------
# Dry-run = send: one path for the verdict (CallExecutor.dry_run / execute), the same gate reads, nothing recorded


class _DryRunFirst:
    """Every write the agent sends is first dry-run through the same executor; both answers are kept."""

    def __init__(self, executor: Any) -> None:
        self.executor = executor
        self.send = executor.execute
        self.pairs: list[tuple[Any, Any]] = []
        executor.execute = self.execute

    async def execute(self, call: ToolCall, step: int) -> Any:
        spec = self.executor.domain.tool(call.name)
        preview = await self.executor.dry_run(call, step) if spec is not None and spec.kind.value == "write" else None
        outcome = await self.send(call, step)
        if preview is not None:
            self.pairs.append((preview, outcome))
        return outcome


def _judged(decision: GateDecision | None) -> tuple[Any, ...]:
    assert decision is not None
    return (decision.verdict, decision.refusal, tuple(r.predicate_id for r in decision.failed),
            tuple((r.text, r.outcome, r.detail) for r in decision.gate_reads))


async def _scenario(domain_name: str, name: str, folder: Path, evidence: EvidenceMode,
                    dry_run_first: bool) -> tuple[bytes, list[tuple[Any, Any]]]:
    domain = load_domain(domain_name)
    scenario = load_scenario(list_scenarios(domain.scenarios_dir)[name])
    folder.mkdir(parents=True)
    backend = await open_backend(domain_name, folder / "db.sqlite")
    try:
        session = Session(domain=domain, backend=backend, model=scenario.build_model(load_offline_reader(domain_name)),
                          user=scenario.build_user(), config=AgentConfig(evidence=evidence),
                          supervisor=FirstWriteOverride("approve", scenario), trace_path=folder / "trace.jsonl",
                          scenario=scenario.name, max_steps=scenario.max_steps, clock=lambda: "2026-01-01T00:00:00")
        spy = _DryRunFirst(session.agent.executor) if dry_run_first else None
        await session.run()
    finally:
        await backend.close()
    return (folder / "trace.jsonl").read_bytes(), [] if spy is None else spy.pairs


@pytest.mark.parametrize("evidence", list(EvidenceMode))
@pytest.mark.parametrize(("domain_name", "name"), SCENARIOS)
async def test_a_dry_run_judges_every_scenario_write_exactly_as_its_send(domain_name: str, name: str,
                                                                        evidence: EvidenceMode,
                                                                        tmp_path: Path) -> None:
    """For each write a shipped scenario sends: dry-run it, then send it. Same verdict, refusal kind, failed
    rules and gate reads; and the session with the dry-runs leaves the very trace it leaves without them (the
    dry-runs' reads reached neither the ledger, nor the trace, nor the gate's anti-loop memory)."""
    alone, _ = await _scenario(domain_name, name, tmp_path / "alone", evidence, dry_run_first=False)
    traced, pairs = await _scenario(domain_name, name, tmp_path / "dry", evidence, dry_run_first=True)
    assert pairs, "the scenario sends no write"
    for preview, outcome in pairs:
        assert preview.summary == outcome.decision.verdict.value
        assert _judged(preview.decision) == _judged(outcome.decision), outcome.call
    assert traced == alone
    reads = any(outcome.decision.gate_reads for _, outcome in pairs)
    assert reads == (evidence is EvidenceMode.ASSIST and name in GATE_READ_SCENARIOS)


# the scenarios where, in assist, the gate reads for a write itself (so the agreement covers its reads)
GATE_READ_SCENARIOS = {"unobserved-flight", "overdue-bill-resume", "roaming-abroad", "schedule-after-checking"}
