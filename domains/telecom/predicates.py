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
  the customer say so with `@for_customer` and pass with a note instead of piling up the same complaint.
  Rules about a line or bill that
  is known NOT to be the customer's stand aside too: the ownership rules refuse the call, and asking the
  agent to read a stranger's records would be noise and a privacy breach.
- Every lookup is a dictionary access on a path the call (or a record it names) determines, never a scan
  of the whole ledger: a customer's bills are found through `customers.<id>.bill_ids`, so a decision
  costs the same with 50 or 10,000 observed records.
- Free text is never judged by its wording: a suspension is legal when the records show an overdue bill or
  an ended contract, however the reason is phrased.
- Limits are per line per conversation, not per call: a refuel counts the GB this session's executed
  refuels already added to the line (`effects.refuel_data`, fed only by the writes' own returns).
- House rules (labelled, REVISE at most, switched off with the domain's `house_rules`): resuming a line
  that is Pending Activation rather than Suspended, and enabling roaming that is already on.
- The customer's "yes" to a refuel is read from what they said (core.conversation):
  `telecom.explicit_confirmation`. Upstream asks for it there only ("Confirm the price"); the other writes
  (roaming, a resumed line, a payment request) it lets the agent do without one.
- What a predicate cannot see (the customer abroad, that the price was quoted, the troubleshooting done
  before a transfer) is not faked here; `policy.md` lists it.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from core.conversation_rules import explicitly_confirmed
from core.gate import (
    EvidenceUnavailable,
    GateContext,
    LedgerView,
    Outcome,
    Pass,
    Predicate,
    Verdict,
    Violation,
    predicate,
    requires_customer,
)
from core.tools import ToolCall, call_text
from domains.telecom.paths import CUSTOMER_PATH
from domains.telecom.vocabulary import (
    MAX_REFUEL_GB,
    REFERENCE_DATE,
    UNPAID_STATUSES,
    parse_day,
)

PENDING_ACTIVATION = "Pending Activation"

SUSPEND, RESUME, PAYMENT_REQUEST = "suspend_line", "resume_line", "send_payment_request"
ENABLE_ROAMING, DISABLE_ROAMING, REFUEL = "enable_roaming", "disable_roaming", "refuel_data"

LINE_WRITES = (SUSPEND, RESUME, ENABLE_ROAMING, DISABLE_ROAMING, REFUEL)
ALL_WRITES = (*LINE_WRITES, PAYMENT_REQUEST)

Record = Mapping[str, Any]

# A rule about a line or bill stands aside until it is known to be the identified customer's: before anyone
# is identified it could be a stranger's, and its "read it first" hint would ask for a stranger's record.
NOT_THEIR_LINE = "no customer identified, or not their line (see the identity and ownership rules)"
NOT_THEIR_BILL = "no customer identified, or not their bill (see the identity and ownership rules)"


# ---------------------------------------------------------------------------------------------------
# Reading helpers: how a rule gets the records it needs, and what to tell the model when they are missing.


def _mapping(value: Any) -> Record:
    return value if isinstance(value, Mapping) else {}


def _customer(view: LedgerView, ctx: GateContext) -> str | None:
    """Who is identified; looking at `customer` through the view makes it part of the evidence."""
    view.has(CUSTOMER_PATH)
    return ctx.customer_id


for_customer = requires_customer("telecom.customer_identified", _customer, "no customer identified yet")


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
    return _owned_by(view, customer, call, field, argument)


def _owned_by(view: LedgerView, customer: str, call: ToolCall, field: str, argument: str) -> bool:
    if call.arguments.get("customer_id") != customer:
        return False
    return str(call.arguments.get(argument, "")) in _ids(_customer_record(view, customer), field)


def _customer_bills(view: LedgerView, customer_id: str) -> list[tuple[str, Record]]:
    """Every bill the customer's record lists, each observed and fresh (else: read the customer's bills).

    The bills last seen unpaid come first: after a payment every bill is stale, and the REVISE then names the
    bill the call waits on (the overdue one just paid), not the account's first bill."""
    record = _customer_record(view, customer_id)
    read = call_text("get_bills_for_customer", customer_id=customer_id)

    def last_seen_unpaid(bill_id: str) -> bool:
        seen = view.observations(f"bills.{bill_id}")
        return bool(seen) and isinstance(seen[-1], Mapping) and seen[-1].get("status") in UNPAID_STATUSES

    ids = sorted(_ids(record, "bill_ids"), key=lambda bill_id: not last_seen_unpaid(bill_id))  # stable
    return [(bill_id, _mapping(view.need(f"bills.{bill_id}", read))) for bill_id in ids]


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
            "get_customer_by_phone, get_customer_by_id (or get_details_by_id with their customer id), or "
            "get_customer_by_name with their full name and date of birth"
        )
    return Pass()


@predicate(
    id="telecom.line_belongs_to_customer",
    tools=LINE_WRITES,
    severity=Verdict.BLOCK,
    policy="Only change lines of the identified customer: the line must be one of their line_ids.",
)
@for_customer
def line_belongs_to_customer(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    if _owned_by(view, customer, call, "line_ids", "line_id"):
        return Pass()
    given = call.arguments.get("customer_id")
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
@for_customer
def bill_belongs_to_customer(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    if _owned_by(view, customer, call, "bill_ids", "bill_id"):
        return Pass()
    given = call.arguments.get("customer_id")
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
    if _owned(view, ctx, call, "bill_ids", "bill_id") is not True:
        return Pass(NOT_THEIR_BILL)
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
        return Pass(NOT_THEIR_BILL)
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
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass(NOT_THEIR_LINE)
    line_id = str(call.arguments.get("line_id", ""))
    status = _line(view, line_id).get("status")
    if status == PENDING_ACTIVATION:
        return Pass(f"{PENDING_ACTIVATION}: see the house rule telecom.resume_pending_activation")
    if status != "Suspended":
        return Violation(f"line {line_id} is {status!r} (lines.{line_id}.status); only a Suspended line can be "
                         "resumed")
    return Pass()


@predicate(
    id="telecom.resume_pending_activation",
    tools=[RESUME],
    severity=Verdict.REVISE,
    policy="A line that is Pending Activation has never been active: do not resume it as if it were suspended; "
           "ask the customer what they need first.",
    house_rule=True,
)
def resume_pending_activation(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass(NOT_THEIR_LINE)
    line_id = str(call.arguments.get("line_id", ""))
    status = _line(view, line_id).get("status")
    if status == PENDING_ACTIVATION:
        return Violation(f"line {line_id} is {status!r} (lines.{line_id}.status), not Suspended; the upstream "
                         "policy does not cover activating a line, so confirm with the customer before resuming it")
    return Pass()


@predicate(
    id="telecom.resume_contract_not_ended",
    tools=[RESUME],
    severity=Verdict.BLOCK,
    policy="Never resume a line whose contract has ended, even after the customer paid.",
)
def resume_contract_not_ended(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass(NOT_THEIR_LINE)
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
        return Pass(NOT_THEIR_LINE)
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
    policy=f"Refuel a line with at most {MAX_REFUEL_GB} GB in a conversation, counting the refuels already "
           "made on it.",
)
def refuel_within_cap(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    amount = call.arguments.get("gb_amount")
    if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
        return Violation(f"gb_amount {amount!r} is not a positive number of GB")
    line_id = str(call.arguments.get("line_id", ""))
    done = [e for e in view.effects(REFUEL) if str(e.arguments.get("line_id")) == line_id
            and isinstance(e.arguments.get("gb_amount"), int | float)]
    already = sum((_gb(e.arguments["gb_amount"]) for e in done), Decimal(0))
    cap = _gb(MAX_REFUEL_GB)
    if already + _gb(amount) > cap:
        steps = ", ".join(f"{e.arguments['gb_amount']} GB at step {e.provenance.step}" for e in done)
        history = f"; this conversation already refuelled line {line_id} with {already} GB ({steps}, " \
                  f"effects.{REFUEL})" if done else ""
        left = max(cap - already, Decimal(0))
        return Violation(f"{amount} GB would bring line {line_id} to {already + _gb(amount)} GB of refuel, over the "
                         f"{MAX_REFUEL_GB} GB cap{history}; at most {left} GB more can be offered")
    return Pass()


def _gb(amount: float | int) -> Decimal:
    """A GB amount as an exact decimal, so 1.1 + 0.9 is exactly the 2 GB cap."""
    return Decimal(repr(amount))


@predicate(
    id="telecom.refuel_priced_from_plan",
    tools=[REFUEL],
    severity=Verdict.REVISE,
    policy="Before a refuel, read the line and its plan: the price you quote is the GB amount times the plan's "
           "refuel price per GB.",
)
def refuel_priced_from_plan(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass(NOT_THEIR_LINE)
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
    house_rule=True,
)
def roaming_not_already_enabled(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass(NOT_THEIR_LINE)
    line_id = str(call.arguments.get("line_id", ""))
    if _line(view, line_id).get("roaming_enabled") is True:
        return Violation(f"roaming is already enabled on line {line_id} (lines.{line_id}.roaming_enabled); ask the "
                         "customer to check that Data Roaming is turned on in their phone's settings instead")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Suspension.


@predicate(
    id="telecom.suspension_reason_stated",
    tools=[SUSPEND],
    severity=Verdict.REVISE,
    policy="Give the reason for a suspension.",
)
def suspension_reason_stated(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    reason = call.arguments.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return Violation(f"reason {reason!r} is empty; say why the line is suspended (the overdue bill, or the "
                         "contract's end)")
    return Pass()


@predicate(
    id="telecom.suspension_reason_allowed",
    tools=[SUSPEND],
    severity=Verdict.BLOCK,
    policy="Suspend a line only for an overdue bill or an ended contract, and only when the records show it.",
)
def suspension_reason_allowed(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    """Judged by the facts, never by how the reason is worded: either fact observed makes it legal."""
    if _owned(view, ctx, call, "line_ids", "line_id") is not True:
        return Pass(NOT_THEIR_LINE)
    customer, line_id = str(ctx.customer_id), str(call.arguments.get("line_id", ""))
    unread: EvidenceUnavailable | None = None
    today = _today(ctx)
    ends = None
    try:
        ends = parse_day(_line(view, line_id).get("contract_end_date"))
        if ends is not None and ends < today:
            return Pass(f"the contract ended on {ends.isoformat()} (lines.{line_id}.contract_end_date), before "
                        f"today {today.isoformat()}")
    except EvidenceUnavailable as missing:
        unread = missing
    try:
        bills = _customer_bills(view, customer)
    except EvidenceUnavailable as missing:
        raise unread or missing from None
    overdue = [bill_id for bill_id, bill in bills if bill.get("status") == "Overdue"]
    if overdue:
        return Pass(f"overdue: {', '.join(f'{b} (bills.{b}.status)' for b in overdue)}")
    if unread is not None:
        raise unread
    contract = ("has no contract end date" if ends is None
                else f"has a contract running until {ends.isoformat()}")
    seen = ", ".join(f"{bill_id} {bill.get('status')!r} (bills.{bill_id}.status)" for bill_id, bill in bills)
    return Violation(f"{customer} has no Overdue bill (customers.{customer}.bill_ids: {seen or 'none'}) and line "
                     f"{line_id} {contract} (lines.{line_id}.contract_end_date, today is {today.isoformat()}); the "
                     "policy allows a suspension only for an overdue bill or an ended contract")


# ---------------------------------------------------------------------------------------------------
# What the customer said.


@predicate(
    id="telecom.explicit_confirmation",
    tools=[REFUEL],
    severity=Verdict.REVISE,
    policy="Tell the customer the amount and the price of a data refuel and wait for their \"yes\".",
)
def explicit_confirmation(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    """Upstream, Data Refueling: "Ask them how much data they want to refuel; Confirm the price; Apply the
    refueled data"."""
    return explicitly_confirmed(call, view)


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
    suspension_reason_stated,
    suspension_reason_allowed,
    resume_pending_activation,
    explicit_confirmation,
)
