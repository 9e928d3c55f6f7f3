from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, asdict, replace

import pytest

from core.domain import split_policy
from core.gate import (
    GateContext,
    LedgerView,
    Outcome,
    Pass,
    PolicyGate,
    Predicate,
    PredicateResult,
    RefusalKind,
    Status,
    Verdict,
    Violation,
    predicate,
    requires_customer,
)
from core.ledger import Ledger
from core.tools import ToolCall
from tests.support.toy_domain import DOMAIN, PATH_MAP, PREDICATES


def ledger_with(*accounts: dict[str, object], customer: str | None = "ann") -> Ledger:
    ledger = Ledger(PATH_MAP)
    if customer:
        ledger.absorb(ToolCall("l", "login", {"name": customer}), customer, 1)
    for account in accounts:
        ledger.absorb(ToolCall(f"g{account['id']}", "get_account", {"account_id": account["id"]}), account, 2)
    return ledger


ANN = {"id": "A1", "owner": "ann", "balance": 100.0}
BOB = {"id": "B1", "owner": "bob", "balance": 50.0}


def transfer(account: str = "A1", amount: float = 10, call_id: str = "t") -> ToolCall:
    return ToolCall(call_id, "transfer", {"account_id": account, "amount": amount})


def gate() -> PolicyGate:
    return PolicyGate(PREDICATES, path_map=PATH_MAP)


def test_allow_records_evidence_per_predicate() -> None:
    ledger = ledger_with(ANN)
    decision = gate().evaluate(transfer(), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.ALLOW and decision.feedback == ""
    by_id = {r.predicate_id: r for r in decision.results}
    assert by_id["toy.balance"].evidence == ("accounts.A1",)
    assert by_id["toy.owner"].status is Status.PASS


def test_block_beats_revise_and_feedback_names_rule_and_state() -> None:
    ledger = ledger_with(ANN, BOB)
    decision = gate().evaluate(transfer("B1", 500), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.BLOCK
    assert {r.predicate_id for r in decision.failed} == {"toy.owner", "toy.balance"}
    assert "toy.owner" in decision.feedback and "'bob'" in decision.feedback
    assert "accounts.B1" in decision.feedback and "NOT executed" in decision.feedback


def test_missing_evidence_is_revise_with_read_suggestion() -> None:
    ledger = ledger_with()
    decision = gate().evaluate(transfer(), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.REVISE
    missing = [r for r in decision.results if r.status is Status.MISSING]
    assert missing and all(r.verdict is Verdict.REVISE for r in missing)
    assert 'get_account(account_id="A1")' in decision.feedback


def test_stale_evidence_asks_for_reread() -> None:
    ledger = ledger_with(ANN)
    ledger.mark_stale(transfer(), 3)
    decision = gate().evaluate(transfer(amount=1), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.REVISE
    assert "may have changed since transfer at step 3" in decision.feedback


def test_a_revise_says_whether_it_needs_a_read_or_breaks_a_rule() -> None:
    nothing_read = ledger_with()
    needs_read = gate().evaluate(transfer(), nothing_read, DOMAIN.context(nothing_read))
    assert needs_read.verdict is Verdict.REVISE and needs_read.refusal is RefusalKind.NEEDS_READ
    assert needs_read.refusal.label == "needs a read"

    stale = ledger_with(ANN)
    stale.mark_stale(transfer(), 3)
    assert gate().evaluate(transfer(amount=1), stale, DOMAIN.context(stale)).refusal is RefusalKind.NEEDS_READ

    ledger = ledger_with(ANN)
    allowed = gate().evaluate(transfer(), ledger, DOMAIN.context(ledger))
    assert allowed.refusal is None

    @predicate(id="toy.crash", tools=["transfer"], severity=Verdict.REVISE, policy="never crash")
    def crash(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        raise ZeroDivisionError("boom")

    crashed = PolicyGate([*PREDICATES, crash]).evaluate(transfer(), ledger, DOMAIN.context(ledger))
    assert crashed.verdict is Verdict.REVISE and crashed.refusal is RefusalKind.BREAKS_RULE


def test_crashing_predicate_fails_closed() -> None:
    @predicate(id="toy.crash", tools=["transfer"], severity=Verdict.BLOCK, policy="never crash")
    def crash(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        view.get("accounts.A1")
        raise ZeroDivisionError("boom")

    ledger = ledger_with(ANN)
    decision = PolicyGate([*PREDICATES, crash]).evaluate(transfer(), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.REVISE
    result = next(r for r in decision.results if r.predicate_id == "toy.crash")
    assert result.status is Status.ERROR and "ZeroDivisionError: boom" in result.reason
    assert result.evidence == ("accounts.A1",)


def test_non_outcome_return_fails_closed() -> None:
    @predicate(id="toy.bad", tools=["transfer"], severity=Verdict.REVISE, policy="return an outcome")
    def bad(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        return True  # type: ignore[return-value]

    ledger = ledger_with(ANN)
    assert PolicyGate([bad]).evaluate(transfer(), ledger, DOMAIN.context(ledger)).verdict is Verdict.REVISE


def test_identical_rejected_call_is_repeated_without_rerunning_rules() -> None:
    runs: list[int] = []

    @predicate(id="toy.count", tools=["transfer"], severity=Verdict.REVISE, policy="count runs")
    def counting(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        runs.append(1)
        return Violation("always no")

    g = PolicyGate([counting], max_revise_streak=10)
    ledger = ledger_with(ANN)
    first = g.evaluate(transfer(call_id="a"), ledger, DOMAIN.context(ledger))
    second = g.evaluate(transfer(call_id="b"), ledger, DOMAIN.context(ledger))
    assert not first.repeated and second.repeated and len(runs) == 1
    assert "same call that was already rejected" in second.feedback
    ledger.absorb(ToolCall("r", "get_account", {"account_id": "B1"}), BOB, 5)
    third = g.evaluate(transfer(call_id="c"), ledger, DOMAIN.context(ledger))
    assert not third.repeated and len(runs) == 2


def test_revise_streak_escalates_to_block_and_resets_on_pass() -> None:
    g = PolicyGate(PREDICATES, max_revise_streak=3)
    ledger = ledger_with(ANN)
    verdicts = [g.evaluate(transfer(amount=1000 + i), ledger, DOMAIN.context(ledger)) for i in range(3)]
    assert [d.verdict for d in verdicts] == [Verdict.REVISE, Verdict.REVISE, Verdict.BLOCK]
    assert verdicts[2].escalated and "3 times in a row" in verdicts[2].feedback
    assert g.evaluate(transfer(amount=1), ledger, DOMAIN.context(ledger)).verdict is Verdict.ALLOW
    assert g.evaluate(transfer(amount=2000), ledger, DOMAIN.context(ledger)).verdict is Verdict.REVISE


def test_a_streak_of_revises_that_ask_for_a_read_never_escalates() -> None:
    g = PolicyGate(PREDICATES, max_revise_streak=3)
    nothing_read = ledger_with()
    verdicts = [g.evaluate(transfer(amount=1 + i), nothing_read, DOMAIN.context(nothing_read)) for i in range(5)]
    assert [d.verdict for d in verdicts] == [Verdict.REVISE] * 5
    assert all(d.refusal is RefusalKind.NEEDS_READ and not d.escalated for d in verdicts)


def test_disabled_predicate_is_reported_not_run() -> None:
    g = PolicyGate(PREDICATES, disabled=["toy.balance"])
    ledger = ledger_with(ANN)
    decision = g.evaluate(transfer(amount=1000), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.ALLOW
    assert any(r.status is Status.DISABLED for r in decision.results)


def test_unguarded_tool_is_allowed_and_context_carries_identity() -> None:
    ledger = ledger_with(customer="ann")
    assert DOMAIN.context(ledger) == GateContext(domain="toy", now=None, customer_id="ann")
    decision = gate().evaluate(ToolCall("n", "note", {"text": "x"}), ledger, DOMAIN.context(ledger))
    assert decision.verdict is Verdict.ALLOW and decision.results == ()


def test_duplicate_predicate_ids_rejected() -> None:
    import pytest

    with pytest.raises(ValueError, match="duplicate"):
        PolicyGate([*PREDICATES, PREDICATES[0]])


def test_pass_note_is_kept() -> None:
    @predicate(id="toy.note", tools=["transfer"], severity=Verdict.REVISE, policy="note")
    def noted(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        return Pass("fine because reasons")

    ledger = ledger_with(ANN)
    assert PolicyGate([noted]).evaluate(transfer(), ledger, DOMAIN.context(ledger)).results[0].reason == (
        "fine because reasons")


def test_dry_run_leaves_the_anti_loop_memory_untouched() -> None:
    g = PolicyGate(PREDICATES, max_revise_streak=2)
    ledger = ledger_with(ANN)
    for _ in range(3):
        assert g.dry_run(transfer(amount=1000), ledger, DOMAIN.context(ledger)).verdict is Verdict.REVISE
    first = g.evaluate(transfer(amount=1000), ledger, DOMAIN.context(ledger))
    assert first.verdict is Verdict.REVISE and not first.repeated


# ---------------------------------------------------------------------------------------------------
# House rules (labelled, never BLOCK, switchable) and @for_customer (passes with a note until a customer is known).


def _always_fails(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    return Violation("no transfers on Sundays")


def test_a_house_rule_is_labelled_and_can_never_block() -> None:
    rule = predicate(id="toy.sunday", tools=["transfer"], severity=Verdict.REVISE, policy="No Sunday transfers.",
                     house_rule=True)(_always_fails)
    assert rule.policy == "house rule: No Sunday transfers." and rule.source == "house rule"
    with pytest.raises(ValueError, match="never BLOCK"):
        predicate(id="toy.x", tools=["transfer"], severity=Verdict.BLOCK, policy="x", house_rule=True)(_always_fails)
    with pytest.raises(ValueError, match="only a house rule"):
        predicate(id="toy.y", tools=["transfer"], severity=Verdict.REVISE, policy="y", enabled=False)(_always_fails)
    g = PolicyGate([*PREDICATES, rule], max_revise_streak=2)
    ledger = ledger_with({"id": "A1", "owner": "ann", "balance": 100.0})
    for n in range(4):  # a house rule's REVISE streak never escalates
        ledger.absorb(ToolCall(id=f"r{n}", name="get_account", arguments={"account_id": "A1"}),
                      {"id": "A1", "owner": "ann", "balance": 100.0 + n}, 10 + n)
        decision = g.evaluate(transfer(), ledger, DOMAIN.context(ledger))
        assert decision.verdict is Verdict.REVISE and not decision.escalated
    assert "house rule: No Sunday transfers." in decision.feedback


def test_a_domain_without_house_rules_starts_its_gates_with_them_switched_off() -> None:
    from dataclasses import replace

    rule = predicate(id="toy.sunday", tools=["transfer"], severity=Verdict.REVISE, policy="No Sunday transfers.",
                     house_rule=True)(_always_fails)
    domain = replace(DOMAIN, predicates=(*PREDICATES, rule)).without_house_rules()
    assert [p.switched_off for p in domain.predicates] == [False, False, False, True]
    ledger = ledger_with({"id": "A1", "owner": "ann", "balance": 100.0})
    g = PolicyGate(domain.predicates)
    decision = g.evaluate(transfer(), ledger, domain.context(ledger))
    assert decision.verdict is Verdict.ALLOW
    [off] = [r for r in decision.results if r.predicate_id == "toy.sunday"]
    assert off.status is Status.DISABLED and off.reason == "house rule switched off for this domain"
    g.set_enabled("toy.sunday", True)  # an operator can switch it back on
    assert g.evaluate(transfer(call_id="t2"), ledger, domain.context(ledger)).verdict is Verdict.REVISE


def test_for_customer_passes_with_a_note_until_someone_is_identified() -> None:
    seen: list[str] = []
    for_customer = requires_customer("toy.authenticated", lambda view, ctx: ctx.customer_id)

    @for_customer
    def body(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
        seen.append(customer)
        return Pass()

    rule: Predicate = predicate(id="toy.body", tools=["transfer"], severity=Verdict.BLOCK, policy="p")(body)
    assert "test_gate.py" in rule.location  # the wrapped body's own place, not the decorator's
    nobody = ledger_with({"id": "A1", "owner": "ann", "balance": 100.0}, customer=None)
    [result] = [r for r in PolicyGate([rule]).evaluate(transfer(), nobody, DOMAIN.context(nobody)).results]
    assert result.status is Status.PASS and result.reason == "no customer yet (see toy.authenticated)"
    ann = ledger_with({"id": "A1", "owner": "ann", "balance": 100.0})
    PolicyGate([rule]).evaluate(transfer(), ann, DOMAIN.context(ann))
    assert seen == ["ann"]


def test_split_policy_lives_once_in_core() -> None:
    text = "# P\n\nBe kind at {now}.\n\n## What the gate checks and what it cannot\n\n| a | `x.y` | REVISE |\n"
    policy, notes = split_policy(text, required=("{now}",))
    assert policy == "# P\n\nBe kind at {now}.\n" and notes.startswith("## What the gate checks")
    with pytest.raises(ValueError, match="no '## What the gate checks"):
        split_policy("# P\n")
    with pytest.raises(ValueError, match="'{now}'"):
        split_policy(text.replace("{now}", "noon"), required=("{now}",))


def test_a_passing_result_built_on_the_fast_path_is_the_same_value_as_one_built_normally() -> None:
    """`PredicateResult.passed` skips the frozen dataclass's __init__ (the gate's hot path): it must still be
    an equal, equally hashed, equally shown, still frozen and picklable value."""
    fast = PredicateResult.passed("toy.balance", "note", ("accounts.A1",), "policy text")
    slow = PredicateResult("toy.balance", Status.PASS, Verdict.ALLOW, "note", ("accounts.A1",), "policy text")
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert asdict(fast) == asdict(slow) and pickle.loads(pickle.dumps(fast)) == slow
    assert replace(fast, reason="other") == replace(slow, reason="other")
    assert not fast.failed
    with pytest.raises(FrozenInstanceError):
        fast.reason = "changed"  # type: ignore[misc]
