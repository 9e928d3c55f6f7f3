"""Every shipped retail scenario runs headless end to end on the real SQLite backend and seed data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.agent import AgentConfig
from core.events import GateDecided
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from domains.registry import load_offline_reader
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend

SCENARIOS = list_scenarios(DOMAIN.scenarios_dir)


def test_at_least_three_scenarios_including_the_paper_case() -> None:
    assert len(SCENARIOS) >= 3
    assert "refund-to-original-payment" in SCENARIOS


async def run(name: str, folder: Path, config: AgentConfig | None = None) -> tuple[Session, RetailBackend]:
    scenario = load_scenario(SCENARIOS[name])
    backend = await RetailBackend.open(folder / "db.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=scenario.build_model(load_offline_reader('retail')),
                      user=scenario.build_user(),
                      config=config, trace_path=folder / "trace.jsonl", scenario=scenario.name)
    await session.run()
    return session, backend


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_meets_its_expectations(name: str, tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS[name])
    session, backend = await run(name, tmp_path)
    try:
        assert session.result is not None
        assert session.result.reason == scenario.expect.end_reason, session.result.detail
        verdicts = [e.verdict for e in session.bus.history if isinstance(e, GateDecided)]
        assert verdicts == scenario.expect.verdicts
    finally:
        await backend.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_trace_is_byte_identical_across_runs(name: str, tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        _, backend = await run(name, tmp_path / sub)
        await backend.close()
    assert (tmp_path / "a" / "trace.jsonl").read_bytes() == (tmp_path / "b" / "trace.jsonl").read_bytes()


async def test_refund_scenario_ends_with_the_return_on_the_gift_card(tmp_path: Path) -> None:
    session, backend = await run("refund-to-original-payment", tmp_path)
    try:
        order = await backend.store.get("orders", "#W4821001")
        assert order is not None
        assert order["status"] == "return requested"
        assert order["return_items"] == ["2000000011"]
        assert order["return_payment_method_id"] == "gift_card_4821001"
        revise = next(e for e in session.bus.history if isinstance(e, GateDecided))
        failed = [r for r in revise.results if r.status != "pass"]
        assert [r.predicate_id for r in failed] == ["retail.refund_to_original_or_gift_card"]
        assert "credit_card_4821002" in failed[0].reason and "gift_card_4821001" in failed[0].reason
        assert "orders.#W4821001" in failed[0].evidence
    finally:
        await backend.close()


async def test_blocked_cancellation_leaves_the_database_unchanged(tmp_path: Path) -> None:
    fresh = await RetailBackend.open(tmp_path / "fresh.sqlite")
    expected = await fresh.state_hash()
    await fresh.close()
    session, backend = await run("other-customers-order", tmp_path)
    try:
        assert await backend.state_hash() == expected
        assert session.result is not None and session.result.db_hash == expected
    finally:
        await backend.close()


async def test_against_the_fc_baseline_the_agent_relays_the_tools_refusal(tmp_path: Path) -> None:
    """Without the gate the Mastercard refund reaches the tool, which refuses it with tau2's own error. The plan
    expected a REVISE; the offline agent tells the customer what the tool said, asks how to go on, and when the
    customer accepts the gift card it makes the plan's corrected return: the session ends cleanly."""
    session, backend = await run("refund-to-original-payment", tmp_path, AgentConfig(ledger=False, gate=False))
    try:
        assert session.result is not None and session.result.reason == "user_stop"
        said = agent_said(tmp_path)
        assert ("I could not return the Tablet (gold, 128GB, $989.70) from order #W4821001 with the refund to your "
                "Mastercard ending 2732: Payment method should be the original payment method. Nothing was changed."
                ) in said
        order = await backend.call("get_order_details", {"order_id": "#W4821001"})
        assert order["status"] == "return requested" and order["return_payment_method_id"] == "gift_card_4821001"
    finally:
        await backend.close()


def agent_said(folder: Path) -> str:
    """Everything the agent said to the customer, from the trace."""
    events = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    return "\n".join(e["text"] for e in events if e["type"] == "assistant_turn" and e["text"])
