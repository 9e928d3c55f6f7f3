"""Telecom policy as executable predicates over the ledger (API.md §4.3, in our own words in policy.md).

Each predicate is one sentence of `policy.md`, checked against observed records only. Reading rules:

- `view.get/require` is the only way to see the ledger; every path read becomes the verdict's evidence.
  Absent or stale evidence a rule needs makes the gate answer REVISE ("read X first", with the read).
- Severity follows "can the model fix this by changing the call, or by reading, or by doing something
  first?". A refuel amount over the cap, an unread plan, a bill still unpaid, a payment request already
  pending, roaming already on: REVISE, there is a next step that makes the request acceptable. A fact
  about the world that no argument or next step changes is BLOCK: the line or bill is someone else's, the
  bill is not overdue, the line is not suspended, its contract has ended, or the policy has no such
  suspension reason.
- Before a customer is identified only `telecom.customer_identified` complains; rules that need to know
  the customer pass with a note instead of piling up the same complaint. Rules about a line or bill that
  is known NOT to be the customer's stand aside too: the ownership rules refuse the call, and asking the
  agent to read a stranger's records would be noise and a privacy breach.
- Every lookup is a dictionary access on a path the call (or a record it names) determines, never a scan
  of the whole ledger: a customer's bills are found through `customers.<id>.bill_ids`, so a decision
  costs the same with 50 or 10,000 observed records.
- What a predicate cannot see (the customer abroad, the price quoted and confirmed, an explicit yes, the
  troubleshooting done before a transfer) is not faked here; `policy.md` lists it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.gate import GateContext, LedgerView, Outcome, Pass, Predicate, Verdict, Violation, predicate
from core.tools import ToolCall, call_text
from domains.telecom.paths import CUSTOMER_PATH
from domains.telecom.vocabulary import (
    MAX_REFUEL_GB,
    REFERENCE_DATE,
    SUSPENSION_REASONS,
    UNPAID_STATUSES,
    parse_day,
)

SUSPEND, RESUME, PAYMENT_REQUEST = "suspend_line", "resume_line", "send_payment_request"
ENABLE_ROAMING, DISABLE_ROAMING, REFUEL = "enable_roaming", "disable_roaming", "refuel_data"

LINE_WRITES = (SUSPEND, RESUME, ENABLE_ROAMING, DISABLE_ROAMING, REFUEL)
ALL_WRITES = (*LINE_WRITES, PAYMENT_REQUEST)

Record = Mapping[str, Any]


# ---------------------------------------------------------------------------------------------------
# Reading helpers: how a rule gets the records it needs, and what to tell the model when they are missing.


def _mapping(value: Any) -> Record:
    return value if isinstance(value, Mapping) else {}


def _customer(view: LedgerView, ctx: GateContext) -> str | None:
    """Who is identified; looking at `customer` through the view makes it part of the evidence."""
    view.has(CUSTOMER_PATH)
    return ctx.customer_id


def _customer_record(view: LedgerView, customer_id: str) -> Record:
    record: Record = view.need(f"customers.{customer_id}", call_text("get_customer_by_id", customer_id=customer_id))
    return record


def _line(view: LedgerView, line_id: str) -> Record:
    record: Record = view.need(f"lines.{line_id}", call_text("get_details_by_id", id=line_id))
    return record


def _bill(view: LedgerView, bill_id: str) -> Record:
    record: Record = view.need(f"bills.{bill_id}", call_text("get_details_by_id", id=bill_id))
    return record


def _ids(record: Record, field: str) -> list[str]:
    values = record.get(field, [])
    return [str(v) for v in values] if isinstance(values, list) else []


def _owned(view: LedgerView, ctx: GateContext, call: ToolCall, field: str, argument: str) -> bool | None:
    """Whether the call's line/bill is the identified customer's: None when no customer is identified yet,
    False when the call names another customer or the customer's record does not list the id."""
    customer = _customer(view, ctx)
    if customer is None:
        return None
    if call.arguments.get("customer_id") != customer:
        return False
    return str(call.arguments.get(argument, "")) in _ids(_customer_record(view, customer), field)


def _customer_bills(view: LedgerView, customer_id: str) -> list[tuple[str, Record]]:
    """Every bill the customer's record lists, each observed and fresh (else: read the customer's bills)."""
    record = _customer_record(view, customer_id)
    read = call_text("get_bills_for_customer", customer_id=customer_id)
    return [(bill_id, _mapping(view.need(f"bills.{bill_id}", read))) for bill_id in _ids(record, "bill_ids")]


def _unpaid(bills: list[tuple[str, Record]]) -> list[str]:
    return [f"{bill_id} ({bill.get('status')}, bills.{bill_id}.status)" for bill_id, bill in bills
            if bill.get("status") in UNPAID_STATUSES]


def _today(ctx: GateContext) -> Any:
    return ctx.now.date() if ctx.now is not None else REFERENCE_DATE


# ---------------------------------------------------------------------------------------------------
# Identity and ownership.


@predicate(
    id="telecom.customer_identified",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="Identify the customer before changing anything: look them up by phone number, by customer id, or "
           "by full name together with date of birth.",
)
def customer_identified(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _customer(view, ctx) is None:
        return Violation(
            "no customer has been identified in this conversation (customer is not set); look them up with "
            "get_customer_by_phone, get_customer_by_id, or get_customer_by_name with their full name and date "
            "of birth"
        )
    return Pass()


@predicate(
    id="telecom.line_belongs_to_customer",
    tools=LINE_WRITES,
    severity=Verdict.BLOCK,
    policy="Only change lines of the identified customer: the line must be one of their line_ids.",
)
def line_belongs_to_customer(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    owned = _owned(view, ctx, call, "line_ids", "line_id")
    if owned is None:
        return Pass("no customer identified yet (see telecom.customer_identified)")
    if owned:
        return Pass()
    customer, given = ctx.customer_id, call.arguments.get("customer_id")
    line_id = call.arguments.get("line_id")
    if given != customer:
        return Violation(f"the call acts for customer {given!r}, but the identified customer is {customer!r} "
                         "(customer.customer_id); only their own lines may be changed")
    return Violation(f"line {line_id!r} is not one of {customer}'s lines "
                     f"{_ids(_customer_record(view, str(customer)), 'line_ids')} (customers.{customer}.line_ids)")


@predicate(
    id="telecom.bill_belongs_to_customer",
    tools=[PAYMENT_REQUEST],
    severity=Verdict.BLOCK,
    policy="Only request payment of the identified customer's own bills: the bill must be one of their bill_ids.",
)
def bill_belongs_to_customer(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    owned = _owned(view, ctx, call, "bill_ids", "bill_id")
    if owned is None:
        return Pass("no customer identified yet (see telecom.customer_identified)")
    if owned:
        return Pass()
    customer, given = ctx.customer_id, call.arguments.get("customer_id")
    if given != customer:
        return Violation(f"the call acts for customer {given!r}, but the identified customer is {customer!r} "
                         "(customer.customer_id); only their own bills may be requested")
    return Violation(f"bill {call.arguments.get('bill_id')!r} is not one of {customer}'s bills "
                     f"{_ids(_customer_record(view, str(customer)), 'bill_ids')} (customers.{customer}.bill_ids)")


# ---------------------------------------------------------------------------------------------------
# Payment requests.


@predicate(
    id="telecom.payment_request_for_overdue_bill",
    tools=[PAYMENT_REQUEST],
    severity=Verdict.BLOCK,
    policy="Send a payment request only for a bill you have seen is Overdue (the tool does not check).",
)
def payment_request_for_overdue_bill(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "bill_ids", "bill_id") is False:
        return Pass("not the customer's bill (see telecom.bill_belongs_to_customer)")
    bill_id = str(call.arguments.get("bill_id", ""))
    status = _bill(view, bill_id).get("status")
    if status != "Overdue":
        return Violation(f"bill {bill_id} is {status!r} (bills.{bill_id}.status); only an Overdue bill may be "
                         "sent as a payment request")
    return Pass()


@predicate(
    id="telecom.no_payment_already_awaited",
    tools=[PAYMENT_REQUEST],
    severity=Verdict.REVISE,
    policy="Send a payment request only when none of the customer's bills is already Awaiting Payment; read all "
           "their bills first.",
)
def no_payment_already_awaited(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "bill_ids", "bill_id") is not True:
        return Pass("no customer identified, or not their bill (see the identity and ownership rules)")
    customer = str(ctx.customer_id)
    awaiting = [f"{bill_id} (bills.{bill_id}.status)" for bill_id, bill in _customer_bills(view, customer)
                if bill.get("status") == "Awaiting Payment"]
    if awaiting:
        return Violation(f"{customer} already has a bill awaiting payment: {', '.join(awaiting)}; the customer has "
                         "to pay it on their phone (check_payment_request, make_payment) before another request")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Resuming a line.


@predicate(
    id="telecom.resume_only_suspended",
    tools=[RESUME],
    severity=Verdict.BLOCK,
    policy="Only a Suspended line can be resumed.",
)
def resume_only_suspended(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is False:
        return Pass("not the customer's line (see telecom.line_belongs_to_customer)")
    line_id = str(call.arguments.get("line_id", ""))
    status = _line(view, line_id).get("status")
    if status != "Suspended":
        return Violation(f"line {line_id} is {status!r} (lines.{line_id}.status); only a Suspended line can be "
                         "resumed")
    return Pass()


@predicate(
    id="telecom.resume_contract_not_ended",
    tools=[RESUME],
    severity=Verdict.BLOCK,
    policy="Never resume a line whose contract has ended, even after the customer paid.",
)
def resume_contract_not_ended(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is False:
        return Pass("not the customer's line (see telecom.line_belongs_to_customer)")
    line_id = str(call.arguments.get("line_id", ""))
    raw = _line(view, line_id).get("contract_end_date")
    if raw is None:
        return Pass("the line has no contract end date")
    ends = parse_day(raw)
    if ends is None:
        return Violation(f"line {line_id}'s contract end date {raw!r} does not parse (lines.{line_id}."
                         "contract_end_date)")
    today = _today(ctx)
    if ends < today:
        return Violation(f"line {line_id}'s contract ended on {ends.isoformat()} (lines.{line_id}.contract_end_date),"
                         f" before today {today.isoformat()}; a line whose contract has ended cannot be resumed")
    return Pass()


@predicate(
    id="telecom.resume_after_overdue_paid",
    tools=[RESUME],
    severity=Verdict.REVISE,
    policy="Resume a line only once every overdue bill of the customer is Paid; read the bills again after the "
           "customer pays.",
)
def resume_after_overdue_paid(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass("no customer identified, or not their line (see the identity and ownership rules)")
    customer = str(ctx.customer_id)
    unpaid = _unpaid(_customer_bills(view, customer))
    if unpaid:
        return Violation(f"{customer} still has unpaid bills: {', '.join(unpaid)}; send a payment request for an "
                         "Overdue bill, let the customer pay it on their phone, read the bills again, then resume")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Data refuel.


@predicate(
    id="telecom.refuel_within_cap",
    tools=[REFUEL],
    severity=Verdict.REVISE,
    policy=f"Refuel at most {MAX_REFUEL_GB} GB at a time.",
)
def refuel_within_cap(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    amount = call.arguments.get("gb_amount")
    if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
        return Violation(f"gb_amount {amount!r} is not a positive number of GB")
    if amount > MAX_REFUEL_GB:
        return Violation(f"{amount} GB is over the {MAX_REFUEL_GB} GB refuel cap; offer the customer at most "
                         f"{MAX_REFUEL_GB} GB")
    return Pass()


@predicate(
    id="telecom.refuel_priced_from_plan",
    tools=[REFUEL],
    severity=Verdict.REVISE,
    policy="Before a refuel, read the line and its plan: the price you quote is the GB amount times the plan's "
           "refuel price per GB.",
)
def refuel_priced_from_plan(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is False:
        return Pass("not the customer's line (see telecom.line_belongs_to_customer)")
    line_id = str(call.arguments.get("line_id", ""))
    plan_id = str(_line(view, line_id).get("plan_id", ""))
    plan = _mapping(view.need(f"plans.{plan_id}", call_text("get_details_by_id", id=plan_id)))
    price = plan.get("data_refueling_price_per_gb")
    if isinstance(price, bool) or not isinstance(price, int | float):
        return Violation(f"plan {plan_id} shows no refuel price (plans.{plan_id}.data_refueling_price_per_gb)")
    amount = call.arguments.get("gb_amount")
    if isinstance(amount, int | float) and not isinstance(amount, bool):
        return Pass(f"{amount} GB x ${price}/GB = ${amount * price:.2f} (plans.{plan_id}.data_refueling_price_per_gb)")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Roaming.


@predicate(
    id="telecom.roaming_not_already_enabled",
    tools=[ENABLE_ROAMING],
    severity=Verdict.REVISE,
    policy="Enable roaming only for a line you have seen has roaming off; when it is already on, the fix is on "
           "the customer's phone (its Data Roaming setting).",
)
def roaming_not_already_enabled(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is False:
        return Pass("not the customer's line (see telecom.line_belongs_to_customer)")
    line_id = str(call.arguments.get("line_id", ""))
    if _line(view, line_id).get("roaming_enabled") is True:
        return Violation(f"roaming is already enabled on line {line_id} (lines.{line_id}.roaming_enabled); ask the "
                         "customer to check that Data Roaming is turned on in their phone's settings instead")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Suspension.

_SEPARATORS = re.compile(r"[\s_\-]+")


def _reason_phrase(reason: Any) -> str | None:
    """The policy phrase a reason starts with ("Overdue bill: B2003" -> "overdue bill"), or None."""
    if not isinstance(reason, str):
        return None
    head = _SEPARATORS.sub(" ", reason.split(":", 1)[0]).strip().strip(".").lower()
    return head if head in SUSPENSION_REASONS else None


@predicate(
    id="telecom.suspension_reason_allowed",
    tools=[SUSPEND],
    severity=Verdict.BLOCK,
    policy="Suspend a line only for an overdue bill or an ended contract, and only when the records show it.",
)
def suspension_reason_allowed(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    reason = call.arguments.get("reason")
    phrase = _reason_phrase(reason)
    if phrase is None:
        allowed = " or ".join(repr(r) for r in SUSPENSION_REASONS)
        return Violation(f"reason {reason!r} is not one the policy allows; a line is suspended only for {allowed}")
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass("no customer identified, or not their line (see the identity and ownership rules)")
    customer, line_id = str(ctx.customer_id), str(call.arguments.get("line_id", ""))
    if phrase == "overdue bill":
        overdue = [bill_id for bill_id, bill in _customer_bills(view, customer) if bill.get("status") == "Overdue"]
        if not overdue:
            return Violation(f"{customer} has no Overdue bill (bills.*.status of customers.{customer}.bill_ids)")
        return Pass(f"overdue: {', '.join(overdue)}")
    ends = parse_day(_line(view, line_id).get("contract_end_date"))
    today = _today(ctx)
    if ends is None or ends >= today:
        shown = "no contract end date" if ends is None else f"its contract runs until {ends.isoformat()}"
        return Violation(f"line {line_id} has {shown} (lines.{line_id}.contract_end_date); its contract has not "
                         "ended")
    return Pass()


PREDICATES: tuple[Predicate, ...] = (
    customer_identified,
    line_belongs_to_customer,
    bill_belongs_to_customer,
    payment_request_for_overdue_bill,
    no_payment_already_awaited,
    resume_only_suspended,
    resume_contract_not_ended,
    resume_after_overdue_paid,
    refuel_within_cap,
    refuel_priced_from_plan,
    roaming_not_already_enabled,
    suspension_reason_allowed,
)
