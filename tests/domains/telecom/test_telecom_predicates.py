"""Every telecom predicate, judged through the real gate over a real ledger filled by absorbed reads.

Two tables drive most of the file: REJECTED cases (exactly one rule fails, with the expected verdict, the
ledger values its reason must cite and the evidence paths it read) and ALLOWED cases (the whole gate says
ALLOW while that rule ran and passed). A meta-test makes sure every predicate appears in both tables. The
tests below them cover missing and stale evidence (including what the customer's phone actions make stale),
identity, and the rules standing aside for other customers' records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from core.gate import GateDecision, PredicateResult, Status, Verdict
from core.tools import Requestor
from domains.telecom import PREDICATES
from tests.support.telecom_records import (
    DANIEL,
    MARIA,
    OTHER_MARIA,
    TelecomSession,
    bill,
    customer,
    line,
    maria,
    plan,
)

Call = tuple[str, dict[str, Any]]


# ---------------------------------------------------------------------------------------------------
# Calls.


def suspend(line_id: str = "L2001", reason: str = "overdue bill: B2003", customer_id: str = MARIA) -> Call:
    return "suspend_line", {"customer_id": customer_id, "line_id": line_id, "reason": reason}


def resume(line_id: str = "L2003", customer_id: str = MARIA) -> Call:
    return "resume_line", {"customer_id": customer_id, "line_id": line_id}


def pay_request(bill_id: str = "B2003", customer_id: str = MARIA) -> Call:
    return "send_payment_request", {"customer_id": customer_id, "bill_id": bill_id}


def roaming(line_id: str = "L2001", customer_id: str = MARIA) -> Call:
    return "enable_roaming", {"customer_id": customer_id, "line_id": line_id}


def refuel(gb_amount: Any = 2.0, line_id: str = "L2002", customer_id: str = MARIA) -> Call:
    return "refuel_data", {"customer_id": customer_id, "line_id": line_id, "gb_amount": gb_amount}


# ---------------------------------------------------------------------------------------------------
# Sessions.


def unidentified() -> TelecomSession:
    """The agent read a line and a name search that found two customers: neither identifies anyone."""
    session = TelecomSession()
    session.read_line(line("L2001"))
    session.read("get_customer_by_name", [customer(MARIA), customer(OTHER_MARIA)], full_name="Maria Lopez",
                 dob="1990-07-21")
    return session


def _maria_pending() -> TelecomSession:
    session = maria("L2003", B2003="Paid")
    session.read_line(line("L2003", status="Pending Activation"))
    return session


def maria_roaming() -> TelecomSession:
    return maria("L2001", bills=False)


def maria_roaming_already_on() -> TelecomSession:
    session = TelecomSession()
    session.identify(MARIA)
    session.read_line(line("L2001", roaming_enabled=True))
    return session


def maria_tablet(**statuses: str) -> TelecomSession:
    return maria("L2003", **statuses)


def maria_tablet_paid() -> TelecomSession:
    return maria("L2001", "L2003", B2003="Paid")


def maria_refuel(price: Any = 4.0) -> Callable[[], TelecomSession]:
    def build() -> TelecomSession:
        session = maria("L2002", bills=False)
        session.read_plan({**plan("P2001"), "data_refueling_price_per_gb": price})
        return session
    return build


def daniel(**statuses: str) -> Callable[[], TelecomSession]:
    def build() -> TelecomSession:
        session = TelecomSession()
        session.identify(DANIEL)
        session.read_line(line("L2004"))
        session.read_line(line("L2005"))
        session.read_bills(DANIEL, **statuses)
        return session
    return build


def daniel_with_ended_contract_on_l2004() -> TelecomSession:
    session = daniel()()
    session.read_line(line("L2004", contract_end_date="2025-01-31"))
    return session


def maria_without_contract_end() -> TelecomSession:
    session = maria_tablet_paid()
    session.read_line(line("L2003", contract_end_date=None))
    return session


# ---------------------------------------------------------------------------------------------------
# The tables.


@dataclass(frozen=True)
class Rejected:
    label: str
    predicate_id: str
    verdict: Verdict
    session: Callable[[], TelecomSession]
    call: Call
    cites: tuple[str, ...]  # ledger values and paths the reason must name
    evidence: tuple[str, ...]  # exactly what the failing rule read


@dataclass(frozen=True)
class Allowed:
    label: str
    predicate_id: str
    session: Callable[[], TelecomSession]
    call: Call


REJECTED: list[Rejected] = [
    Rejected("enable roaming before identifying anyone", "telecom.customer_identified", Verdict.REVISE, unidentified,
             roaming(), ("customer is not set", "get_customer_by_phone", "date of birth"), ("customer",)),
    Rejected("enable roaming on another customer's line", "telecom.line_belongs_to_customer", Verdict.BLOCK,
             maria_roaming, roaming("L2004"),
             ("line 'L2004' is not one of C2001's lines ['L2001', 'L2002', 'L2003']", "customers.C2001.line_ids"),
             ("customer", "customers.C2001")),
    Rejected("act for another customer than the identified one", "telecom.line_belongs_to_customer", Verdict.BLOCK,
             maria_roaming, roaming("L2004", customer_id=DANIEL),
             ("acts for customer 'C2002'", "the identified customer is 'C2001'"), ("customer",)),
    Rejected("request payment of another customer's bill", "telecom.bill_belongs_to_customer", Verdict.BLOCK,
             maria_tablet, pay_request("B2005"),
             ("bill 'B2005' is not one of C2001's bills", "customers.C2001.bill_ids"), ("customer", "customers.C2001")),
    Rejected("request payment of a bill that is not overdue", "telecom.payment_request_for_overdue_bill",
             Verdict.BLOCK, maria_tablet, pay_request("B2002"), ("bill B2002 is 'Issued'", "bills.B2002.status"),
             ("customer", "customers.C2001", "bills.B2002")),
    Rejected("request payment of a paid bill", "telecom.payment_request_for_overdue_bill", Verdict.BLOCK,
             maria_tablet, pay_request("B2001"), ("bill B2001 is 'Paid'",), ("customer", "customers.C2001",
                                                                             "bills.B2001")),
    Rejected("a second request while one awaits payment", "telecom.no_payment_already_awaited", Verdict.REVISE,
             daniel(), pay_request("B2005", DANIEL),
             ("C2002 already has a bill awaiting payment: B2006 (bills.B2006.status)", "make_payment"),
             ("customer", "customers.C2002", "bills.B2005", "bills.B2006")),
    Rejected("resume an active line", "telecom.resume_only_suspended", Verdict.BLOCK, maria_tablet_paid,
             resume("L2001"), ("line L2001 is 'Active'", "lines.L2001.status"),
             ("customer", "customers.C2001", "lines.L2001")),
    Rejected("resume a line whose contract has ended", "telecom.resume_contract_not_ended", Verdict.BLOCK,
             daniel(B2005="Paid", B2006="Paid"), resume("L2005", DANIEL),
             ("line L2005's contract ended on 2025-01-31", "lines.L2005.contract_end_date", "today 2025-02-25"),
             ("customer", "customers.C2002", "lines.L2005")),
    Rejected("resume before the overdue bill is paid", "telecom.resume_after_overdue_paid", Verdict.REVISE,
             maria_tablet, resume(), ("C2001 still has unpaid bills: B2003 (Overdue, bills.B2003.status)",
                                      "send a payment request"),
             ("customer", "customers.C2001", "bills.B2001", "bills.B2002", "bills.B2003", "bills.B2004")),
    Rejected("resume while the payment is only requested", "telecom.resume_after_overdue_paid", Verdict.REVISE,
             lambda: maria_tablet(B2003="Awaiting Payment"), resume(), ("B2003 (Awaiting Payment",),
             ("customer", "customers.C2001", "bills.B2001", "bills.B2002", "bills.B2003", "bills.B2004")),
    Rejected("refuel 5 GB", "telecom.refuel_within_cap", Verdict.REVISE, maria_refuel(), refuel(5.0),
             ("5.0 GB would bring line L2002 to 5.0 GB of refuel, over the 2.0 GB cap", "at most 2.0 GB more"),
             ("effects.refuel_data",)),
    Rejected("refuel zero GB", "telecom.refuel_within_cap", Verdict.REVISE, maria_refuel(), refuel(0),
             ("gb_amount 0 is not a positive number of GB",), ()),
    Rejected("refuel from a plan without a refuel price", "telecom.refuel_priced_from_plan", Verdict.REVISE,
             maria_refuel(price=None), refuel(), ("plan P2001 shows no refuel price",),
             ("customer", "customers.C2001", "lines.L2002", "plans.P2001")),
    Rejected("enable roaming that is already on", "telecom.roaming_not_already_enabled", Verdict.REVISE,
             maria_roaming_already_on, roaming(),
             ("roaming is already enabled on line L2001 (lines.L2001.roaming_enabled)", "Data Roaming"),
             ("customer", "customers.C2001", "lines.L2001")),
    Rejected("suspend with no reason", "telecom.suspension_reason_stated", Verdict.REVISE, daniel(),
             suspend("L2004", "  ", DANIEL), ("reason '  ' is empty",), ()),
    Rejected("suspend for a contract that has not ended", "telecom.suspension_reason_allowed", Verdict.BLOCK,
             lambda: maria("L2001", B2003="Paid"), suspend(reason="contract ended"),
             ("has a contract running until 2026-09-30", "lines.L2001.contract_end_date", "no Overdue bill"),
             ("customer", "customers.C2001", "lines.L2001", "bills.B2001", "bills.B2002", "bills.B2003",
              "bills.B2004")),
    Rejected("suspend for an overdue bill nobody has", "telecom.suspension_reason_allowed", Verdict.BLOCK,
             lambda: maria("L2001", B2003="Paid"), suspend(),
             ("C2001 has no Overdue bill",),
             ("customer", "customers.C2001", "lines.L2001", "bills.B2001", "bills.B2002", "bills.B2003",
              "bills.B2004")),
    Rejected("resume a line that is Pending Activation", "telecom.resume_pending_activation", Verdict.REVISE,
             lambda: _maria_pending(), resume("L2003"),
             ("'Pending Activation' (lines.L2003.status), not Suspended",), ("customer", "customers.C2001",
                                                                              "lines.L2003")),
]

def maria_answered(answer: str) -> Callable[[], TelecomSession]:
    """Maria's line and plan read; the agent told her the refuel's amount and price and she answered."""
    def build() -> TelecomSession:
        session = maria_refuel()()
        session.confirmed("2 GB on line L2002 would be $8.00 on your next bill. Shall I add it?", answer)
        return session
    return build


REJECTED.append(
    Rejected("refuel before the customer agreed to the price", "telecom.explicit_confirmation", Verdict.REVISE,
             maria_answered("Is there a cheaper option?"), refuel(),
             ('"Is there a cheaper option?"', "a question, no yes", "conversation.confirmation"),
             ("conversation.confirmation",)))

ALLOWED: list[Allowed] = [
    Allowed("enable roaming for the identified customer", "telecom.customer_identified", maria_roaming, roaming()),
    Allowed("enable roaming on her own line", "telecom.line_belongs_to_customer", maria_roaming, roaming()),
    Allowed("request payment of her own overdue bill", "telecom.bill_belongs_to_customer", maria_tablet,
            pay_request()),
    Allowed("request payment of an overdue bill", "telecom.payment_request_for_overdue_bill", maria_tablet,
            pay_request()),
    Allowed("request payment when nothing awaits payment", "telecom.no_payment_already_awaited", maria_tablet,
            pay_request()),
    Allowed("resume a suspended line", "telecom.resume_only_suspended", maria_tablet_paid, resume()),
    Allowed("resume a line whose contract runs on", "telecom.resume_contract_not_ended", maria_tablet_paid,
            resume()),
    Allowed("resume a line without a contract end date", "telecom.resume_contract_not_ended",
            maria_without_contract_end, resume()),
    Allowed("resume once the overdue bill is paid", "telecom.resume_after_overdue_paid", maria_tablet_paid,
            resume()),
    Allowed("refuel 2 GB", "telecom.refuel_within_cap", maria_refuel(), refuel(2.0)),
    Allowed("refuel an integer 2 GB", "telecom.refuel_within_cap", maria_refuel(), refuel(2)),
    Allowed("refuel with the line and plan read", "telecom.refuel_priced_from_plan", maria_refuel(), refuel(1.5)),
    Allowed("enable roaming that is off", "telecom.roaming_not_already_enabled", maria_roaming, roaming()),
    Allowed("suspend for an observed overdue bill", "telecom.suspension_reason_allowed", daniel(),
            suspend("L2004", "Overdue bill: B2005", DANIEL)),
    Allowed("suspend for an ended contract", "telecom.suspension_reason_allowed",
            daniel_with_ended_contract_on_l2004, suspend("L2004", "contract_ended", DANIEL)),
    Allowed("suspend with a reason in the agent's own words", "telecom.suspension_reason_stated", daniel(),
            suspend("L2004", "Customer has an overdue bill (B2005)", DANIEL)),
    Allowed("resume a suspended line (not Pending Activation)", "telecom.resume_pending_activation",
            maria_tablet_paid, resume()),
    Allowed("refuel after the customer's ok", "telecom.explicit_confirmation", maria_answered("OK, add it."),
            refuel()),
]


def result_of(decision: GateDecision, predicate_id: str) -> PredicateResult:
    [result] = [r for r in decision.results if r.predicate_id == predicate_id]
    return result


def failed_ids(decision: GateDecision) -> set[str]:
    return {r.predicate_id for r in decision.failed}


def propose(session: TelecomSession, call: Call) -> GateDecision:
    tool, arguments = call
    return session.propose(tool, **arguments)


@pytest.mark.parametrize("case", REJECTED, ids=[c.label for c in REJECTED])
def test_rejected(case: Rejected) -> None:
    decision = propose(case.session(), case.call)
    assert decision.verdict is case.verdict, decision.feedback
    assert failed_ids(decision) == {case.predicate_id}, decision.feedback
    result = result_of(decision, case.predicate_id)
    assert result.status is Status.VIOLATION
    for cited in case.cites:
        assert cited in result.reason, f"{cited!r} not in {result.reason!r}"
    assert result.evidence == case.evidence
    assert case.predicate_id in decision.feedback and result.reason in decision.feedback


@pytest.mark.parametrize("case", ALLOWED, ids=[f"{c.predicate_id}: {c.label}" for c in ALLOWED])
def test_allowed(case: Allowed) -> None:
    decision = propose(case.session(), case.call)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert result_of(decision, case.predicate_id).status is Status.PASS


def test_every_predicate_has_an_allowed_and_a_rejected_case() -> None:
    ids = {p.id for p in PREDICATES}
    assert len(ids) == 15
    assert {c.predicate_id for c in REJECTED} == ids
    assert {c.predicate_id for c in ALLOWED} == ids
    guards = {p.id: p.tools for p in PREDICATES}
    cases: list[Rejected | Allowed] = [*REJECTED, *ALLOWED]
    for case in cases:
        assert case.call[0] in guards[case.predicate_id], case.label


def test_a_refuel_pass_note_shows_the_price_from_the_plan() -> None:
    decision = propose(maria_refuel()(), refuel(2.0))
    assert result_of(decision, "telecom.refuel_priced_from_plan").reason == (
        "2.0 GB x $4.0/GB = $8.00 (plans.P2001.data_refueling_price_per_gb)")


# ---------------------------------------------------------------------------------------------------
# Missing and stale evidence: always REVISE with the exact read, never BLOCK.


def test_a_payment_request_before_reading_the_bills_asks_for_them() -> None:
    session = maria(bills=False)
    decision = propose(session, pay_request())
    assert decision.verdict is Verdict.REVISE
    assert failed_ids(decision) == {"telecom.payment_request_for_overdue_bill", "telecom.no_payment_already_awaited"}
    overdue = result_of(decision, "telecom.payment_request_for_overdue_bill")
    assert overdue.status is Status.MISSING and 'get_details_by_id(id="B2003")' in overdue.reason
    awaited = result_of(decision, "telecom.no_payment_already_awaited")
    assert awaited.status is Status.MISSING and 'get_bills_for_customer(customer_id="C2001")' in awaited.reason


def test_a_refuel_without_the_plan_asks_for_it() -> None:
    decision = propose(maria("L2002", bills=False), refuel())
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "telecom.refuel_priced_from_plan")
    assert result.status is Status.MISSING and 'get_details_by_id(id="P2001")' in result.reason


def test_paying_on_the_phone_makes_the_bills_stale_until_read_again() -> None:
    """The overdue-bill flow: request (ALLOW), the customer pays on the phone, resume waits for a fresh read."""
    session = maria("L2003")
    assert propose(session, pay_request()).verdict is Verdict.ALLOW
    assert session.wrote("send_payment_request", customer_id=MARIA, bill_id="B2003") == ["bills.B2003"]
    session.phone("check_payment_request", "You have a payment request for bill B2003 of 15.0 USD.")
    staled = session.wrote("make_payment", requestor=Requestor.USER)
    assert staled == ["bills.B2001", "bills.B2002", "bills.B2004", "device.payment_request"]
    decision = propose(session, resume())
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "telecom.resume_after_overdue_paid")
    assert result.status is Status.MISSING  # the bill the resume waits on is the one named, not the first
    assert result.reason.startswith("bills.B2003 may have changed since send_payment_request")
    session.read_bills(MARIA, B2003="Paid")
    assert propose(session, resume()).verdict is Verdict.ALLOW


def test_enabled_roaming_is_refused_only_once_the_line_was_read_again() -> None:
    session = maria_roaming()
    session.wrote("enable_roaming", customer_id=MARIA, line_id="L2001")
    again = propose(session, roaming())
    assert again.verdict is Verdict.REVISE
    assert result_of(again, "telecom.roaming_not_already_enabled").status is Status.MISSING
    session.read_line(line("L2001", roaming_enabled=True))
    assert result_of(propose(session, roaming()), "telecom.roaming_not_already_enabled").status is Status.VIOLATION


def test_after_a_refuel_a_second_line_is_refuelled_without_a_re_read() -> None:
    """A refuel changes the line's refuelled GB, the Draft bill and maybe (no Draft bill observed) the bill list of
    the customer record; never which lines the customer owns, nor a plan's price. So a refuel of another line
    right after it is judged on the records as read."""
    session = maria_refuel()()
    session.read_line(line("L2001"))
    session.read_plan(plan("P2002"))
    staled = session.wrote("refuel_data", customer_id=MARIA, line_id="L2002", gb_amount=2.0)
    assert staled == ["lines.L2002", "customers.C2001", "customer"]
    assert session.ledger.entry("customer").stale.fields == {"bill_ids"}  # type: ignore[union-attr]
    assert session.ledger.entry("lines.L2002").stale.fields == {"data_refueling_gb"}  # type: ignore[union-attr]
    second = propose(session, ("refuel_data", {"customer_id": MARIA, "line_id": "L2001", "gb_amount": 1.0}))
    assert second.verdict is Verdict.ALLOW, second.feedback


def test_phone_readings_land_under_device_and_go_stale_with_any_change() -> None:
    session = maria_roaming()
    absorbed = session.phone("check_network_status", "Data Roaming Enabled: No")
    assert absorbed.added == ("device.network_status",)
    session.phone("check_app_permissions", "App 'messaging' has permission for: sms.", app_name="messaging")
    assert session.ledger.get("device.app_permissions.messaging") == "App 'messaging' has permission for: sms."
    assert session.wrote("toggle_roaming", requestor=Requestor.USER) == [
        "device.network_status", "device.app_permissions.messaging"]
    session.phone("check_network_status", "Data Roaming Enabled: Yes")
    assert session.wrote("enable_roaming", customer_id=MARIA, line_id="L2001") == [
        "lines.L2001", "device.network_status"]


# ---------------------------------------------------------------------------------------------------
# Identity, and standing aside for strangers' records.


def test_first_identification_wins() -> None:
    session = TelecomSession()
    session.identify(MARIA)
    later = session.identify(DANIEL)
    assert later.added == ("customers.C2002",) and later.skipped == ("customer: condition not met",)
    assert session.context().customer_id == MARIA
    session.read_line(line("L2004"))
    decision = propose(session, roaming("L2004", DANIEL))
    assert decision.verdict is Verdict.BLOCK
    assert failed_ids(decision) == {"telecom.line_belongs_to_customer"}


def test_a_name_search_identifies_only_with_exactly_one_match() -> None:
    session = TelecomSession()
    both = session.read("get_customer_by_name", [customer(MARIA), customer(OTHER_MARIA)], full_name="Maria Lopez",
                        dob="1983-04-12")
    assert both.added == ("customers.C2001", "customers.C2004") and session.context().customer_id is None
    session.read("get_customer_by_name", [], full_name="Maria Lopez", dob="2000-01-01")
    assert session.context().customer_id is None
    one = session.read("get_customer_by_name", [customer(OTHER_MARIA)], full_name="Maria Lopez", dob="1990-07-21")
    assert one.added == ("customer",) and session.context().customer_id == OTHER_MARIA


def test_a_lookup_by_customer_id_identifies_through_either_tool() -> None:
    """get_details_by_id with a customer id is the identification the policy allows."""
    by_details = TelecomSession()
    by_details.read("get_details_by_id", customer(MARIA), id=MARIA)
    assert by_details.context().customer_id == MARIA
    by_details.read_line(line("L2001"))
    assert propose(by_details, roaming()).verdict is Verdict.ALLOW
    by_id = TelecomSession()
    by_id.read_customer(MARIA)
    assert by_id.context().customer_id == MARIA
    by_id.read("get_details_by_id", customer(DANIEL), id=DANIEL)  # a later lookup changes nobody
    assert by_id.context().customer_id == MARIA


def test_rules_do_not_ask_to_read_a_strangers_records() -> None:
    """Daniel's line was never read: the ownership rule refuses without asking for it."""
    decision = propose(maria_tablet(), resume("L2005"))
    assert decision.verdict is Verdict.BLOCK
    assert failed_ids(decision) == {"telecom.line_belongs_to_customer"}
    assert "lines.L2005" not in decision.evidence


def test_the_reference_date_decides_whether_a_contract_has_ended() -> None:
    ends_today = maria_tablet_paid()
    ends_today.read_line(line("L2003", contract_end_date="2025-02-25"))
    assert propose(ends_today, resume()).verdict is Verdict.ALLOW  # ends today: not ended yet
    ended_yesterday = maria_tablet_paid()
    ended_yesterday.read_line(line("L2003", contract_end_date="2025-02-24"))
    assert propose(ended_yesterday, resume()).verdict is Verdict.BLOCK
    unreadable = maria_tablet_paid()
    unreadable.read_line(line("L2003", contract_end_date="someday"))
    assert "does not parse" in result_of(propose(unreadable, resume()), "telecom.resume_contract_not_ended").reason


def test_bill_records_from_a_listing_and_by_id_are_the_same_path() -> None:
    session = maria("L2003")
    refreshed = session.read_bill(bill("B2003"))
    assert refreshed.refreshed == ("bills.B2003",)


# ---------------------------------------------------------------------------------------------------
# Facts, not wording; limits that repetition cannot get around; house rules.


@pytest.mark.parametrize("reason", ["Customer has an overdue bill (B2005)", "overdue bill", "Overdue bill: B2005",
                                    "unpaid balance", "The line's contract end date is in the past"])
def test_a_suspension_backed_by_an_overdue_bill_is_allowed_however_it_is_worded(reason: str) -> None:
    assert propose(daniel()(), suspend("L2004", reason, DANIEL)).verdict is Verdict.ALLOW


@pytest.mark.parametrize("reason", ["The line's contract end date is in the past", "contract ended",
                                    "Customer has an overdue bill"])
def test_a_suspension_backed_by_an_ended_contract_is_allowed_however_it_is_worded(reason: str) -> None:
    session = daniel(B2005="Paid", B2006="Paid")()
    session.read_line(line("L2004", contract_end_date="2025-01-31"))
    assert propose(session, suspend("L2004", reason, DANIEL)).verdict is Verdict.ALLOW


def test_a_suspension_with_neither_fact_is_refused_whatever_the_reason_says() -> None:
    """The boundary: a contract ending TODAY has not ended; the wording 'contract ended' does not change it."""
    session = daniel(B2005="Paid", B2006="Paid")()
    session.read_line(line("L2004", contract_end_date="2025-02-25"))
    decision = propose(session, suspend("L2004", "contract ended", DANIEL))
    assert decision.verdict is Verdict.BLOCK
    reason = result_of(decision, "telecom.suspension_reason_allowed").reason
    assert "has a contract running until 2025-02-25" in reason and "today is 2025-02-25" in reason
    assert "has its contract runs" not in reason


def test_an_ended_contract_is_enough_without_reading_the_bills() -> None:
    session = TelecomSession()
    session.identify(DANIEL)
    session.read_line(line("L2004", contract_end_date="2025-01-31"))
    assert propose(session, suspend("L2004", "contract ended", DANIEL)).verdict is Verdict.ALLOW


def test_a_suspension_needs_the_facts_read_before_it_is_refused() -> None:
    session = TelecomSession()
    session.identify(DANIEL)
    decision = propose(session, suspend("L2004", "contract ended", DANIEL))
    assert decision.verdict is Verdict.REVISE
    assert "get_details_by_id(id=\"L2004\")" in decision.feedback


REFUEL_RESULT = {"message": "Successfully added", "new_data_refueling_gb": 1.5, "charge": 6.0}


def test_a_second_refuel_cannot_go_past_the_cap_on_the_same_line() -> None:
    session = maria_refuel()()
    assert propose(session, refuel(1.5)).verdict is Verdict.ALLOW
    session.executed("refuel_data", REFUEL_RESULT, customer_id=MARIA, line_id="L2002", gb_amount=1.5)
    session.identify(MARIA)
    session.read_line(line("L2002"))
    session.read("get_details_by_id", plan("P2001"), id="P2001")
    decision = propose(session, refuel(1.5))
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "telecom.refuel_within_cap")
    assert "already refuelled line L2002 with 1.5 GB" in result.reason and "at most 0.5 GB more" in result.reason
    assert "effects.refuel_data" in result.evidence
    assert propose(session, refuel(0.5)).verdict is Verdict.ALLOW  # the exact remainder is legal


def test_the_cap_counts_per_line_and_only_executed_refuels() -> None:
    session = maria_refuel()()
    session.wrote("refuel_data", customer_id=MARIA, line_id="L2002", gb_amount=1.5)  # no return: not an effect
    session.executed("refuel_data", REFUEL_RESULT, customer_id=MARIA, line_id="L2001", gb_amount=2.0)
    session.identify(MARIA)
    session.read_line(line("L2002"))
    session.read("get_details_by_id", plan("P2001"), id="P2001")
    assert propose(session, refuel(2.0)).verdict is Verdict.ALLOW


def test_float_refuels_add_up_exactly_to_the_cap() -> None:
    session = maria_refuel()()
    session.executed("refuel_data", REFUEL_RESULT, customer_id=MARIA, line_id="L2002", gb_amount=1.1)
    session.identify(MARIA)
    session.read_line(line("L2002"))
    session.read("get_details_by_id", plan("P2001"), id="P2001")
    assert propose(session, refuel(0.9)).verdict is Verdict.ALLOW


def test_house_rules_are_labelled_revise_at_most_and_switch_off_with_the_domain() -> None:
    from core.gate import PolicyGate
    from domains.telecom import DOMAIN

    house = {p.id for p in PREDICATES if p.house_rule}
    assert house == {"telecom.roaming_not_already_enabled", "telecom.resume_pending_activation"}
    for p in PREDICATES:
        assert p.policy.startswith("house rule: ") == p.house_rule
        assert p.source == ("house rule" if p.house_rule else "policy")
        assert not (p.house_rule and p.severity is Verdict.BLOCK)
    session = maria_roaming_already_on()
    on = propose(session, roaming())
    assert on.verdict is Verdict.REVISE and "house rule:" in on.feedback
    off_domain = DOMAIN.without_house_rules()
    gate = PolicyGate(off_domain.predicates, path_map=off_domain.path_map)
    decision = gate.evaluate(on.call, session.ledger, session.context())
    assert decision.verdict is Verdict.ALLOW
    off = result_of(decision, "telecom.roaming_not_already_enabled")
    assert off.reason == "house rule switched off for this domain"


def test_a_house_rule_never_escalates_to_block() -> None:
    from core.gate import PolicyGate
    from core.tools import ToolCall

    session = maria_roaming_already_on()
    gate = PolicyGate(PREDICATES)
    for n in range(5):
        call = ToolCall(id=f"p{n}", name="enable_roaming", arguments={"customer_id": MARIA, "line_id": "L2001"})
        session.read_line(line("L2001", roaming_enabled=True))  # new version each time: re-judged
        assert gate.evaluate(call, session.ledger, session.context()).verdict is Verdict.REVISE


# ---------------------------------------------------------------------------------------------------
# No hint asks for a record that could be a stranger's; reasons show what was seen.


@pytest.mark.parametrize("call", [resume("L2001"), roaming("L2001"), refuel(1.0, "L2001"), pay_request("B2001")],
                         ids=["resume", "roaming", "refuel", "payment request"])
def test_before_identification_no_rule_asks_to_read_the_line_or_bill(call: Call) -> None:
    """Before anyone is identified the line or bill may be anyone's: only telecom.customer_identified
    complains, and no feedback names get_details_by_id for it (the rules used to ask for it)."""
    session = TelecomSession()
    decision = propose(session, call)
    assert failed_ids(decision) == {"telecom.customer_identified"}, decision.feedback
    assert "get_details_by_id(" not in decision.feedback


def test_a_refused_suspension_lists_every_bill_status_it_read() -> None:
    session = daniel(B2005="Paid", B2006="Paid")()
    session.read_line(line("L2004", contract_end_date="2025-02-25"))
    reason = result_of(propose(session, suspend("L2004", "overdue bill", DANIEL)),
                       "telecom.suspension_reason_allowed").reason
    assert reason.startswith(f"{DANIEL} has no Overdue bill (customers.{DANIEL}.bill_ids: B2005 'Paid' "
                             "(bills.B2005.status), B2006 'Paid' (bills.B2006.status)) and line L2004 has a contract "
                             "running until 2025-02-25"), reason
