"""Telecom figure: one gate decision for a line resume, all telecom predicates, a 10,000-record ledger.

What is timed: `PolicyGate.evaluate(call, ledger, DOMAIN.context(ledger))` for the telecom DOMAIN, the exact
expression the executor runs before every write, so the identity rule and the fixed clock are in it.

Why this setup is realistic, and the worst reasonable case for the telecom gate:
- the call is `resume_line`, the write with the most rules (five of the twelve run on it: identity, line
  ownership, suspended, contract not ended, every overdue bill paid; the last reads each of the customer's
  bills), and it is ALLOWed, so every one of them runs to completion;
- the trial's own records come from the real TelecomBackend over the shipped seed, after the dual-control
  flow that makes the resume acceptable: Maria is identified, a payment request for her overdue bill is
  sent, she pays it on her phone, the sync marks it Paid, and the agent reads her bills and the line again.
  Her phone's readings (payment request, network status) are in the ledger under `device.*` too;
- the rest of the ledger is ~10,000 other lines, bills, customers, devices and plans, copies of the backend's
  own records under fresh ids absorbed through `Ledger.absorb`, far more than any conversation observes, so a
  rule that scanned the ledger would show here;
- the gate's anti-loop memory is cleared (untimed) before each sample, so no sample is a replayed verdict.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.gate import time_gate
from benchmarks.timing import US, Result
from core.ledger import Ledger
from core.tools import Requestor, ToolCall
from domains.telecom import DOMAIN
from mock_backends.telecom import TelecomBackend

TELECOM_GATE_TARGET_NS = 100 * US

CUSTOMER, LINE = "C2001", "L2003"
RESUME = {"customer_id": CUSTOMER, "line_id": LINE}
# Read, act, read again: (tool, arguments, requestor, absorbed?) in session order.
TRIAL: list[tuple[str, dict[str, Any], Requestor, bool]] = [
    ("get_customer_by_phone", {"phone_number": "555-210-3001"}, Requestor.ASSISTANT, True),
    ("send_payment_request", {"customer_id": CUSTOMER, "bill_id": "B2003"}, Requestor.ASSISTANT, False),
    ("check_payment_request", {}, Requestor.USER, True),
    ("make_payment", {}, Requestor.USER, False),
    ("check_network_status", {}, Requestor.USER, True),
    ("get_bills_for_customer", {"customer_id": CUSTOMER}, Requestor.ASSISTANT, True),
    ("get_details_by_id", {"id": LINE}, Requestor.ASSISTANT, True),
]
# Filler: the record kinds get_details_by_id returns, with the field that holds each one's id.
FILLER = {"lines": "line_id", "bills": "bill_id", "customers": "customer_id", "devices": "device_id",
          "plans": "plan_id"}
PREFIX = {"lines": "L", "bills": "B", "customers": "C", "devices": "D", "plans": "P"}


@dataclass
class TelecomSetup:
    ledger: Ledger
    call: ToolCall


async def _collect() -> tuple[list[tuple[str, dict[str, Any], Requestor, Any]], list[tuple[str, Any]]]:
    """Run the trial on a fresh seed database (a temporary file): its reads' results, and every record to clone."""
    with tempfile.TemporaryDirectory() as folder:
        backend = await TelecomBackend.open(Path(folder) / "bench.sqlite")
        try:
            await backend.sync()
            trial = []
            for tool, arguments, requestor, absorbed in TRIAL:
                result = await backend.call(tool, arguments)
                await backend.sync()  # as the executor does after every call
                if absorbed:
                    trial.append((tool, arguments, requestor, result))
            records = [(collection, doc) for collection in FILLER for _, doc in await backend.store.scan(collection)]
            return trial, records
        finally:
            await backend.close()


def build_telecom_ledger(records: int = 10_000) -> TelecomSetup:
    """A telecom ledger of exactly `records` entries (at least the trial's own), absorbed read by read."""
    trial, templates = asyncio.run(_collect())
    ledger = Ledger(DOMAIN.path_map)
    counter = itertools.count(1)

    def absorb(tool: str, arguments: dict[str, Any], result: Any, requestor: Requestor = Requestor.ASSISTANT) -> None:
        number = next(counter)
        call = ToolCall(id=f"call_{number}", name=tool, arguments=arguments, requestor=requestor)
        outcome = ledger.absorb(call, result, step=number)
        if not outcome.touched:
            raise RuntimeError(f"{tool}{arguments} was not absorbed: {outcome.skipped}")

    for tool, arguments, requestor, result in trial:
        absorb(tool, arguments, copy.deepcopy(result), requestor)
    trial_paths = set(ledger.paths())
    for generation in itertools.count(1):
        for collection, doc in templates:
            if len(ledger) >= records:
                return TelecomSetup(ledger, ToolCall(id="w1", name="resume_line", arguments=RESUME))
            field = FILLER[collection]
            clone = copy.deepcopy(doc)
            clone[field] = fresh = f"{PREFIX[collection]}{doc[field][1:]}x{generation}"
            if f"{collection}.{fresh}" in trial_paths:
                continue
            absorb("get_details_by_id", {"id": fresh}, clone)
    raise AssertionError("unreachable")


def bench_telecom_gate(*, records: int = 10_000, repeat: int = 3000, warmup: int = 200,
                       setup: TelecomSetup | None = None) -> Result:
    """Median/p95 of one telecom gate decision. Pass `setup` to reuse an already built ledger."""
    setup = setup or build_telecom_ledger(records)
    return time_gate(DOMAIN, setup.ledger, setup.call, key="telecom_gate_decision", what="telecom line resume",
                     repeat=repeat, warmup=warmup, target_ns=TELECOM_GATE_TARGET_NS,
                     note="after a payment made on the customer's phone")
