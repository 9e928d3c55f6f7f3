"""A gate decision that reads 3 records itself (evidence assist), on the full retail DB.

What is timed, per sample: the executor's judgement of one proposed write (`CallExecutor._judge`, the code the
agent loop, `check` and re-gating run before a write), with `EvidenceMode.ASSIST`, on a real `RetailBackend`
over tau2's retail db.json (500 users, 1,000 orders, 50 products; a synthetic DB of the same size when the
file is absent). The write is an exchange of one delivered item for another available variant of the same
product, judged on a ledger that holds only the customer's authentication, as when a model skipped every read:

1. the first judgement lacks the order and the customer's profile (needs a read);
2. the gate reads both (`get_order_details`, `get_user_details`), absorbs them with their events, and judges
   again: now it lacks the product the order line names;
3. it reads the product (`get_product_details`) and judges a third time: ALLOW.

So three reads through the real SQLite backend, three judgements with every retail predicate, and the events of
each read. Each sample starts from the same ledger (restored from a snapshot, untimed) and a fresh gate memory.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from benchmarks.data import Doc, RetailData
from benchmarks.gate import make_gate
from benchmarks.timing import MS, Result, summarise, time_async
from core.events import EventBus
from core.evidence import EvidenceMode
from core.executor import CallExecutor
from core.gate import Verdict
from core.ledger import Ledger
from core.tools import ToolCall
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend

ASSIST_TARGET_NS = 2 * MS
READS = 3


def exchangeable(data: RetailData) -> tuple[Doc, str, str, str]:
    """A delivered order, one of its items, an available other variant of that product, and a card to pay the
    difference with (a credit card or PayPal: no balance to check)."""
    docs = data.docs
    for order in docs["orders"].values():
        if order["status"] != "delivered":
            continue
        methods = docs["users"][order["user_id"]]["payment_methods"]
        card = next((m for m, v in methods.items() if v["source"] in ("credit_card", "paypal")), None)
        if card is None:
            continue
        item = order["items"][0]
        variants = docs["products"][item["product_id"]]["variants"]
        other = next((v for v, doc in sorted(variants.items()) if v != item["item_id"] and doc["available"]), None)
        if other is not None:
            return order, item["item_id"], other, card
    raise ValueError("the DB has no delivered order with an item that can be exchanged")


async def _run(data: RetailData, repeat: int, warmup: int, folder: Path) -> tuple[list[int], list[str]]:
    order, old, new, card = exchangeable(data)
    customer = order["user_id"]
    backend = await RetailBackend.open(folder / "retail.sqlite", data.raw)
    try:
        ledger = Ledger(DOMAIN.path_map)
        email = data.docs["users"][customer]["email"]
        ledger.absorb(ToolCall("login", "find_user_id_by_email", {"email": email}), customer, 1)
        start = ledger.snapshot()
        gate = make_gate()
        executor = CallExecutor(DOMAIN, backend, EventBus(keep_history=False), ledger=ledger, gate=gate,
                                evidence=EvidenceMode.ASSIST)
        call = ToolCall("w1", "exchange_delivered_order_items", {
            "order_id": order["order_id"], "item_ids": [old], "new_item_ids": [new], "payment_method_id": card})
        reads: list[str] = []

        async def decide() -> None:
            decision = await executor._judge(call, 2)
            if decision is None or decision.verdict is not Verdict.ALLOW or len(decision.gate_reads) != READS:
                raise RuntimeError(f"the benchmark decision is not an ALLOW after {READS} gate reads: "
                                   f"{decision and decision.feedback}")
            reads[:] = [r.text for r in decision.gate_reads]

        async def reset() -> None:
            ledger.restore(start)
            gate.reset()

        samples = await time_async(decide, repeat=repeat, warmup=warmup, setup=reset)
        return samples, reads
    finally:
        await backend.close()


def bench_assist(data: RetailData, *, repeat: int = 500, warmup: int = 30) -> Result:
    """Median/p95 of one assisted gate decision that reads 3 records through the real retail backend."""
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-") as folder:
        samples, reads = asyncio.run(_run(data, repeat, warmup, Path(folder)))
    return summarise("gate_assist_3_reads", f"gate with evidence assist: 1 retail exchange, {READS} reads by the "
                     f"gate, {data.label}", samples, ASSIST_TARGET_NS, note="; ".join(reads))
