"""At a gift card balance equal to the charge, the gate and the real tool give one answer.

989.7 - 549.99 is 439.71000000000004 in floats. The gate used to round the difference (439.71, allowed) while
the tool compared the raw float (refused), so the gate allowed a write the tool then failed. Both now compare
whole cents through `core.money`. Real SQLite backend, real ledger, real gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.gate import PolicyGate, Verdict
from core.ledger import Ledger
from core.tools import ToolCall, ToolError
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend, load_seed
from tests.support.retail_records import MIA, MIA_DELIVERED, MIA_EMAIL, MIA_GIFT_CARD

BLACK_64, GOLD_128, TABLET = "2000000012", "2000000011", "1000000001"


async def _judge_and_run(tmp_path: Path, balance: float) -> tuple[Verdict, bool]:
    data = load_seed()
    data["users"][MIA]["payment_methods"][MIA_GIFT_CARD]["balance"] = balance
    ledger = Ledger(DOMAIN.path_map)
    async with await RetailBackend.open(tmp_path / "retail.sqlite", data) as backend:
        reads: list[tuple[str, dict[str, Any]]] = [
            ("find_user_id_by_email", {"email": MIA_EMAIL}), ("get_user_details", {"user_id": MIA}),
            ("get_order_details", {"order_id": MIA_DELIVERED}), ("get_product_details", {"product_id": TABLET})]
        for step, (tool, arguments) in enumerate(reads, start=1):
            call = ToolCall(id=f"r{step}", name=tool, arguments=arguments)
            ledger.absorb(call, await backend.call(tool, arguments), step)
        write = ToolCall(id="w", name="exchange_delivered_order_items", arguments={
            "order_id": MIA_DELIVERED, "item_ids": [BLACK_64], "new_item_ids": [GOLD_128],
            "payment_method_id": MIA_GIFT_CARD})
        verdict = PolicyGate(DOMAIN.predicates, path_map=DOMAIN.path_map).evaluate(
            write, ledger, DOMAIN.context(ledger)).verdict
        try:
            await backend.call(write.name, write.arguments)
        except ToolError:
            return verdict, False
        return verdict, True


@pytest.mark.parametrize(("balance", "verdict", "runs"), [
    (439.71, Verdict.ALLOW, True),  # exactly the difference: both say yes
    (439.70, Verdict.REVISE, False),  # one cent short: both say no
    (439.72, Verdict.ALLOW, True),
])
async def test_gate_and_tool_agree_at_the_exact_cent(tmp_path: Path, balance: float, verdict: Verdict,
                                                      runs: bool) -> None:
    assert 989.7 - 549.99 > 439.71  # the float noise this test is about
    assert await _judge_and_run(tmp_path, balance) == (verdict, runs)
