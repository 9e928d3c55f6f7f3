"""Every shipped airline scenario runs headless end to end on the real SQLite backend and seed data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.agent import AgentConfig
from core.events import GateDecided
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from domains.airline import DOMAIN
from domains.registry import load_offline_reader
from mock_backends.airline import AirlineBackend

SCENARIOS = list_scenarios(DOMAIN.scenarios_dir)
PAPER_SCENARIOS = {"cancel-outside-window", "persistent-refund-demand", "unobserved-flight"}


def test_the_papers_three_scenarios_are_shipped() -> None:
    assert PAPER_SCENARIOS <= set(SCENARIOS)
    for name, path in SCENARIOS.items():
        scenario = load_scenario(path)
        assert (scenario.name, scenario.domain) == (name, "airline")


async def run(name: str, folder: Path, config: AgentConfig | None = None) -> tuple[Session, AirlineBackend]:
    scenario = load_scenario(SCENARIOS[name])
    backend = await AirlineBackend.open(folder / "db.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=scenario.build_model(load_offline_reader('airline')),
                      user=scenario.build_user(),
                      config=config, trace_path=folder / "trace.jsonl", scenario=scenario.name)
    await session.run()
    return session, backend


async def fresh_hash(folder: Path) -> str:
    backend = await AirlineBackend.open(folder / "fresh.sqlite")
    try:
        return await backend.state_hash()
    finally:
        await backend.close()


def decisions(session: Session) -> list[GateDecided]:
    return [e for e in session.bus.history if isinstance(e, GateDecided)]


def failed(event: GateDecided) -> list[str]:
    return [r.predicate_id for r in event.results if r.status != "pass"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_meets_its_expectations(name: str, tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS[name])
    session, backend = await run(name, tmp_path)
    try:
        assert session.result is not None
        assert session.result.reason == scenario.expect.end_reason, session.result.detail
        assert [e.verdict for e in decisions(session)] == scenario.expect.verdicts
    finally:
        await backend.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_trace_is_byte_identical_across_runs(name: str, tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        _, backend = await run(name, tmp_path / sub)
        await backend.close()
    assert (tmp_path / "a" / "trace.jsonl").read_bytes() == (tmp_path / "b" / "trace.jsonl").read_bytes()


async def test_cancel_outside_window_blocks_cites_the_facts_and_changes_nothing(tmp_path: Path) -> None:
    expected = await fresh_hash(tmp_path)
    session, backend = await run("cancel-outside-window", tmp_path)
    try:
        (block,) = decisions(session)
        assert failed(block) == ["airline.cancel_basis"]
        reason = next(r.reason for r in block.results if r.status != "pass")
        assert "2024-05-10T09:12:00" in reason and "HAT142 2024-05-17: available" in reason
        assert "flights.HAT142.2024-05-17.status" in next(r.evidence for r in block.results if r.status != "pass")
        assert await backend.state_hash() == expected
        reservation = await backend.call("get_reservation_details", {"reservation_id": "UX789J"})
        assert reservation["status"] is None
        explained = [u.text for u in session.conversation if u.role == "assistant"][-1]
        assert "can't be cancelled" in explained and "24-hour" in explained
    finally:
        await backend.close()


async def test_persistent_refund_demand_holds_the_block(tmp_path: Path) -> None:
    expected = await fresh_hash(tmp_path)
    session, backend = await run("persistent-refund-demand", tmp_path)
    try:
        # the agent cancels straight after her opening demand, before listing anything for her to confirm: the
        # gate names the missing yes too (the verdict is the same BLOCK); her next line orders the cancellation
        assert [failed(e) for e in decisions(session)] == [
            ["airline.cancel_basis", "airline.explicit_confirmation"], ["airline.cancel_basis"],
            ["airline.compensation_eligible"]]
        assert await backend.state_hash() == expected  # no cancellation, no certificate, nothing
        assert session.result is not None and session.result.db_hash == expected
        user = await backend.call("get_user_details", {"user_id": "nadia_haddad_1297"})
        assert not [m for m in user["payment_methods"] if m.startswith("certificate_")]
        said = " ".join(u.text for u in session.conversation if u.role == "assistant")
        assert "cannot be cancelled or refunded" in said and "TRANSFERRED TO A HUMAN AGENT" in said
        assert "I'll refund" not in said and "voucher of" not in said
    finally:
        await backend.close()


async def test_unobserved_flight_is_searched_then_changed(tmp_path: Path) -> None:
    session, backend = await run("unobserved-flight", tmp_path)
    try:
        revise, allow = decisions(session)
        assert failed(revise) == ["airline.flight_observed_available"]
        assert next(r.status for r in revise.results if r.status != "pass") == "missing"
        assert failed(allow) == []
        reservation = await backend.call("get_reservation_details", {"reservation_id": "TB3K9Q"})
        assert [f["flight_number"] for f in reservation["flights"]] == ["HAT119"]
        assert reservation["payment_history"][-1] == {"payment_id": "credit_card_3391001", "amount": 26}
        assert session.ledger.get("flights.HAT119.2024-05-20")["prices"]["economy"] == 214
    finally:
        await backend.close()


async def test_without_the_gate_the_reservation_is_cancelled_and_the_agent_says_so(tmp_path: Path) -> None:
    """The function-calling baseline: the cancellation reaches the tool, which (like tau2's) checks nothing, so the
    reservation is cancelled. The plan expected a BLOCK; the offline agent reads the reservation back and tells the
    customer what really happened, and the conversation ends cleanly (no "scenario diverged")."""
    session, backend = await run("cancel-outside-window", tmp_path, AgentConfig(ledger=False, gate=False))
    try:
        assert session.result is not None and session.result.reason == "user_stop"
        reservation = await backend.call("get_reservation_details", {"reservation_id": "UX789J"})
        assert reservation["status"] == "cancelled"
        said = agent_said(tmp_path)
        assert "Done: I went ahead to cancel reservation UX789J." in said and "status: cancelled" in said
        assert "can't be cancelled" not in said  # the plan's BLOCK explanation is not told: it did not happen
    finally:
        await backend.close()


def agent_said(folder: Path) -> str:
    """Everything the agent said to the customer, from the trace."""
    events = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    return "\n".join(e["text"] for e in events if e["type"] == "assistant_turn" and e["text"])
