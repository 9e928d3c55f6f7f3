"""Telecom tool results built from the shipped seed's story records, and a small gate session helper.

The story is the one in mock_backends/telecom/seed.py (a test checks that every builder here returns exactly
what the real backend returns for the same call):

- Maria Lopez (C2001, 555-210-3001; the phone in the user DB is hers, abroad): L2001 her phone (Plus 20,
  roaming off), L2002 her son's phone (Essentials 5 = P2001 at $4.00/GB refuel, 5.0 of 5.0 GB used), L2003
  her tablet (Suspended, contract to 2026-03-31); bills B2001 Paid, B2002 Issued, B2003 Overdue (the tablet's
  January bill, $15.00), B2004 the March Draft.
- Daniel Okafor (C2002): L2004 Active with roaming on, L2005 Suspended with a contract that ended 2025-01-31;
  B2005 Overdue, B2006 Awaiting Payment.
- Another Maria Lopez (C2004, born 1990-07-21): L2006 with roaming on, B2007 Paid.

Every builder returns a fresh dict, so a test may change a record (a status, a date) freely.
"""

from __future__ import annotations

import copy
from typing import Any

from core.gate import GateContext, GateDecision, PolicyGate
from core.ledger import AbsorbResult, Ledger
from core.tools import Requestor, ToolCall
from domains.telecom import DOMAIN, PATH_MAP, PREDICATES
from mock_backends.telecom import seed
from mock_backends.telecom.models import Bill, Customer, Device, Line, Plan, dump

Record = dict[str, Any]

MARIA, DANIEL, AISHA, OTHER_MARIA = seed.MARIA, seed.DANIEL, seed.AISHA, seed.OTHER_MARIA
MARIA_PHONE = seed.MARIA_PHONE

_CUSTOMERS = {doc["customer_id"]: dump(Customer.model_validate(doc)) for doc in seed.story_customers()}
_LINES = {doc["line_id"]: dump(Line.model_validate(doc)) for doc in seed.story_lines()}
_BILLS = {doc["bill_id"]: dump(Bill.model_validate(doc)) for doc in seed.story_bills()}
_PLANS = {doc["plan_id"]: dump(Plan.model_validate(doc)) for doc in seed.story_plans()}
_DEVICES = {doc["device_id"]: dump(Device.model_validate(doc)) for doc in seed.story_devices()}


def customer(customer_id: str) -> Record:
    """get_customer_by_id / get_customer_by_phone / get_details_by_id('C...')."""
    return copy.deepcopy(_CUSTOMERS[customer_id])


def line(line_id: str, **changes: Any) -> Record:
    """get_details_by_id('L...') of story line `line_id` (with `changes`)."""
    return {**copy.deepcopy(_LINES[line_id]), **changes}


def bill(bill_id: str, **changes: Any) -> Record:
    """get_details_by_id('B...') of story bill `bill_id` (with `changes`)."""
    return {**copy.deepcopy(_BILLS[bill_id]), **changes}


def plan(plan_id: str) -> Record:
    return copy.deepcopy(_PLANS[plan_id])


def device(device_id: str) -> Record:
    return copy.deepcopy(_DEVICES[device_id])


def bills_of(customer_id: str, **statuses: str) -> list[Record]:
    """get_bills_for_customer: newest issue date first (stable), with some statuses changed (`B2003="Paid"`)."""
    bills = [bill(b, **({"status": statuses[b]} if b in statuses else {})) for b in _CUSTOMERS[customer_id]["bill_ids"]]
    return sorted(bills, key=lambda b: b["issue_date"], reverse=True)


def usage(line_id: str, refuelled: float = 0.0) -> Record:
    """get_data_usage (the domain's billing cycle ends 2025-02-28)."""
    record = _LINES[line_id]
    return {"line_id": line_id, "data_used_gb": record["data_used_gb"],
            "data_limit_gb": _PLANS[record["plan_id"]]["data_limit_gb"], "data_refueling_gb": refuelled,
            "cycle_end_date": "2025-02-28"}


class TelecomSession:
    """A ledger filled the way the agent loop fills it: successful reads absorbed in order, one step each.

    `propose` judges a write with a fresh gate (no anti-loop memory carried between assertions) and the
    domain's own context (fixed clock, identity rule), exactly as the agent loop would. `phone` absorbs what
    a user-side read showed, as the session's phone does.
    """

    def __init__(self) -> None:
        self.ledger = Ledger(PATH_MAP)
        self.step = 0

    def _next_call(self, tool: str, arguments: dict[str, Any], requestor: Requestor = Requestor.ASSISTANT
                   ) -> ToolCall:
        self.step += 1
        return ToolCall(id=f"call_{self.step}", name=tool, arguments=arguments, requestor=requestor)

    def read(self, tool: str, result: Any, **arguments: Any) -> AbsorbResult:
        return self.ledger.absorb(self._next_call(tool, arguments), copy.deepcopy(result), self.step)

    def phone(self, tool: str, shown: str, **arguments: Any) -> AbsorbResult:
        return self.ledger.absorb(self._next_call(tool, arguments, Requestor.USER), shown, self.step)

    def wrote(self, tool: str, requestor: Requestor = Requestor.ASSISTANT, **arguments: Any) -> list[str]:
        """A write succeeded (the agent's, or the customer's on the phone): what it touched is now stale."""
        return self.ledger.mark_stale(self._next_call(tool, arguments, requestor), self.step)

    def executed(self, tool: str, result: Any, **arguments: Any) -> list[str]:
        """A write ran and returned `result`: its paths go stale and the return joins the session's effects."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step, result=copy.deepcopy(result))

    def identify(self, customer_id: str = MARIA) -> AbsorbResult:
        """get_customer_by_phone with the customer's primary number."""
        record = customer(customer_id)
        return self.read("get_customer_by_phone", record, phone_number=record["phone_number"])

    def read_line(self, record: Record) -> AbsorbResult:
        return self.read("get_details_by_id", record, id=record["line_id"])

    def read_bill(self, record: Record) -> AbsorbResult:
        return self.read("get_details_by_id", record, id=record["bill_id"])

    def read_plan(self, record: Record) -> AbsorbResult:
        return self.read("get_details_by_id", record, id=record["plan_id"])

    def read_customer(self, customer_id: str) -> AbsorbResult:
        return self.read("get_customer_by_id", customer(customer_id), customer_id=customer_id)

    def read_bills(self, customer_id: str, **statuses: str) -> AbsorbResult:
        return self.read("get_bills_for_customer", bills_of(customer_id, **statuses), customer_id=customer_id)

    def said(self, role: str, text: str) -> AbsorbResult:
        """A message of the conversation ("user": the customer's, "assistant": the agent's), heard by the ledger
        as a session hears it (core.ledger.Ledger.hear)."""
        return self.ledger.hear(role, text, self.step)

    def confirmed(self, described: str, answer: str = "Yes, please go ahead.") -> None:
        """The agent described the action and the customer answered (by default an explicit yes)."""
        self.said("assistant", described)
        self.said("user", answer)

    def context(self) -> GateContext:
        return DOMAIN.context(self.ledger)

    def propose(self, tool: str, **arguments: Any) -> GateDecision:
        call = ToolCall(id=f"proposal_{self.step}", name=tool, arguments=arguments)
        return PolicyGate(PREDICATES, path_map=PATH_MAP).evaluate(call, self.ledger, self.context())


def maria(*lines: str, bills: bool = True, **statuses: str) -> TelecomSession:
    """Maria identified by phone, the given lines read, and (by default) all her bills listed."""
    session = TelecomSession()
    session.identify(MARIA)
    for line_id in lines:
        session.read_line(line(line_id))
    if bills:
        session.read_bills(MARIA, **statuses)
    return session
