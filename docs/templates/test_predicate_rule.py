"""Template for a rule's table-driven test: the example rule of `docs/templates/predicate_rule.py`, judged
through the real gate over a real ledger filled by absorbed reads, as the tests of `tests/domains/<d>/` are.

Use it one of two ways (docs/predicates.md, "Its test"):
- paste the `move_order` helper and the rows of REJECTED and ALLOWED into the tables of
  `tests/domains/<domain>/test_<domain>_predicates.py` (same fields; that file's meta-test fails until every
  predicate of the domain has a row in both), and the tests below the tables into a file beside it;
- or copy the whole file to `tests/domains/<domain>/test_<domain>_<what_it_checks>.py` while you write the
  rule, then move its rows into the domain's tables.
Either way, write the rule's id as a literal in each row and test: `ledgeragent predicates --coverage` and
the workbench find a rule's tests by its id in the test sources. Until the rule is in the domain's
`PREDICATES`, this file fails.

- A REJECTED row: the session (the reads the agent made), the call, the one rule that fails, its verdict,
  the ledger values and paths its reason must cite, and exactly the paths it read (its evidence).
- An ALLOWED row: a session and call where the whole gate says ALLOW while the rule ran and passed.
- Then one test per way the evidence can be missing (never read, stale after a write), what the rule does
  before anyone is identified, and its declaration (a house rule: labelled, REVISE, switchable off).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from core.gate import GateDecision, PolicyGate, PredicateResult, RefusalKind, Status, Verdict
from core.tools import ToolCall
from domains.retail import DOMAIN, PATH_MAP, PREDICATES
from tests.support.retail_records import MIA, MIA_PENDING, RetailSession, mia_address, mia_pending_order, mia_session

Call = tuple[str, dict[str, Any]]


def move_order(address: dict[str, str], order_id: str = MIA_PENDING) -> Call:
    """modify_pending_order_address to `address` (the fields get_order_details shows under `address`)."""
    return "modify_pending_order_address", {"order_id": order_id, **address}


# ---------------------------------------------------------------------------------------------------
# The tables.


@dataclass(frozen=True)
class Rejected:
    label: str
    predicate_id: str
    verdict: Verdict
    session: Callable[[], RetailSession]
    call: Call
    cites: tuple[str, ...]  # ledger values and paths the reason must name
    evidence: tuple[str, ...]  # exactly what the failing rule read


@dataclass(frozen=True)
class Allowed:
    label: str
    predicate_id: str
    session: Callable[[], RetailSession]
    call: Call


REJECTED: list[Rejected] = [
    Rejected("move an order to the address it already ships to", "retail.new_address_differs", Verdict.REVISE,
             mia_session, move_order(mia_address()),
             ("order #W4821002 already ships to 12 Elm Street, Apt 3, Springfield, IN, USA, 46281",
              "(orders.#W4821002.address)", "ask the customer"),
             ("orders.#W4821002",)),
]

ALLOWED: list[Allowed] = [
    Allowed("move an order to another flat of the same building", "retail.new_address_differs", mia_session,
            move_order({**mia_address(), "address2": "Apt 4"})),
    Allowed("move an order to another town", "retail.new_address_differs", mia_session,
            move_order({**mia_address(), "city": "Indianapolis", "zip": "46204"})),
]


def result_of(decision: GateDecision, predicate_id: str) -> PredicateResult:
    [result] = [r for r in decision.results if r.predicate_id == predicate_id]
    return result


def failed_ids(decision: GateDecision) -> set[str]:
    return {r.predicate_id for r in decision.failed}


@pytest.mark.parametrize("case", REJECTED, ids=[c.label for c in REJECTED])
def test_rejected(case: Rejected) -> None:
    tool, arguments = case.call
    decision = case.session().propose(tool, **arguments)
    assert decision.verdict is case.verdict, decision.feedback
    assert failed_ids(decision) == {case.predicate_id}, decision.feedback
    result = result_of(decision, case.predicate_id)
    assert result.status is Status.VIOLATION
    for cited in case.cites:
        assert cited in result.reason, f"{cited!r} not in {result.reason!r}"
    assert result.evidence == case.evidence
    assert case.predicate_id in decision.feedback and result.reason in decision.feedback
    assert decision.refusal is RefusalKind.BREAKS_RULE  # a conflict in what was read, not a missing read


@pytest.mark.parametrize("case", ALLOWED, ids=[f"{c.predicate_id}: {c.label}" for c in ALLOWED])
def test_allowed(case: Allowed) -> None:
    tool, arguments = case.call
    decision = case.session().propose(tool, **arguments)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert result_of(decision, case.predicate_id).status is Status.PASS


# ---------------------------------------------------------------------------------------------------
# Missing evidence: a REVISE that asks for a read (RefusalKind.NEEDS_READ), never a violation.


def test_an_unread_order_asks_for_get_order_details() -> None:
    session = mia_session(orders=[])
    tool, arguments = move_order(mia_address())
    decision = session.propose(tool, **arguments)
    result = result_of(decision, "retail.new_address_differs")
    assert decision.verdict is Verdict.REVISE and result.status is Status.MISSING
    assert 'get_order_details(order_id="#W4821002")' in result.reason
    assert result.evidence == ("orders.#W4821002",)
    assert decision.refusal is RefusalKind.NEEDS_READ


def test_an_order_moved_by_a_write_is_read_again_first() -> None:
    session = mia_session()
    flat = {**mia_address(), "address2": "Apt 4"}
    tool, there = move_order(flat)
    session.wrote(tool, **there)  # the move ran: the order's record is stale until read again
    _, back = move_order(mia_address())
    stale = result_of(session.propose(tool, **back), "retail.new_address_differs")
    assert stale.status is Status.MISSING and "may have changed since modify_pending_order_address" in stale.reason

    session.read_order({**mia_pending_order(), "address": flat})  # read again: it ships to the new flat now
    assert session.propose(tool, **back).verdict is Verdict.ALLOW
    again = session.propose(tool, **there)
    assert failed_ids(again) == {"retail.new_address_differs"}
    assert "already ships to 12 Elm Street, Apt 4" in result_of(again, "retail.new_address_differs").reason


def test_before_anyone_is_identified_only_the_identity_rule_objects() -> None:
    session = RetailSession()
    session.read_order(mia_pending_order())
    tool, arguments = move_order(mia_address())
    decision = session.propose(tool, **arguments)
    assert failed_ids(decision) == {"retail.authenticated"}
    assert result_of(decision, "retail.new_address_differs").status is Status.PASS  # stands aside, with a note
    session.authenticate(MIA)
    assert failed_ids(session.propose(tool, **arguments)) == {"retail.new_address_differs"}


# ---------------------------------------------------------------------------------------------------
# Its declaration: the tables above assume it.


def test_the_rule_is_a_house_rule_that_never_blocks() -> None:
    [rule] = [p for p in PREDICATES if p.id == "retail.new_address_differs"]
    assert rule.house_rule and rule.source == "house rule" and rule.policy.startswith("house rule: ")
    assert rule.severity is Verdict.REVISE
    assert {case.call[0] for case in [*REJECTED, *ALLOWED]} <= rule.tools


def test_a_domain_without_house_rules_has_it_switched_off() -> None:
    session = mia_session()
    gate = PolicyGate(DOMAIN.without_house_rules().predicates, path_map=PATH_MAP)
    tool, arguments = move_order(mia_address())
    decision = gate.evaluate(ToolCall(id="proposal", name=tool, arguments=arguments), session.ledger,
                             session.context())
    assert decision.verdict is Verdict.ALLOW
    assert result_of(decision, "retail.new_address_differs").status is Status.DISABLED
