"""Every shipped telehealth scenario runs headless end to end on the real SQLite backend and seed data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.agent import AgentConfig
from core.events import GateDecided
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from domains.registry import load_offline_reader
from domains.telehealth import DOMAIN
from mock_backends.telehealth import TelehealthBackend

SCENARIOS = list_scenarios(DOMAIN.scenarios_dir)
REQUIRED = {"schedule-after-checking": ["REVISE", "ALLOW"], "cancel-completed-appointment": ["BLOCK"],
            "unobserved-supplier-price": ["REVISE", "ALLOW"]}


def test_the_three_required_scenarios_exist_with_their_verdicts() -> None:
    assert set(REQUIRED) <= set(SCENARIOS)
    for name, verdicts in REQUIRED.items():
        scenario = load_scenario(SCENARIOS[name])
        assert scenario.domain == "telehealth" and scenario.name == name
        assert scenario.expect.verdicts == verdicts and scenario.expect.end_reason == "user_stop"


async def run(name: str, folder: Path, config: AgentConfig | None = None) -> tuple[Session, TelehealthBackend]:
    scenario = load_scenario(SCENARIOS[name])
    backend = await TelehealthBackend.open(folder / "db.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=scenario.build_model(load_offline_reader('telehealth')),
                      user=scenario.build_user(),
                      config=config, trace_path=folder / "trace.jsonl", scenario=scenario.name)
    await session.run()
    return session, backend


def _failed(session: Session) -> list[list[str]]:
    return [[r.predicate_id for r in e.results if r.status not in ("pass", "disabled")] for e in session.bus.history
            if isinstance(e, GateDecided)]


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
    first = (tmp_path / "a" / "trace.jsonl").read_bytes()
    assert first == (tmp_path / "b" / "trace.jsonl").read_bytes()
    assert b'"reference_time":"2025-05-20T05:00:00"' in first  # the domain's fixed clock, not the wall clock


async def test_schedule_after_checking_books_the_checked_slot(tmp_path: Path) -> None:
    session, backend = await run("schedule-after-checking", tmp_path)
    try:
        assert _failed(session) == [["telehealth.provider_available", "telehealth.no_conflicting_appointment"], []]
        booked = await backend.store.get("appointments", "APPT031")
        assert booked is not None
        assert (booked["patient_id"], booked["provider_id"], booked["date"], booked["time"], booked["type"]) == (
            "priya_raman_6120", "dr_lindqvist_primary", "2025-05-29", "11:00", "follow_up")
        assert (booked["copay_amount"], booked["insurance_authorization"]) == (20.0, "AUTH000031")
        revise = next(e for e in session.bus.history if isinstance(e, GateDecided))
        evidence = {path for result in revise.results for path in result.evidence}
        assert {"providers.dr_lindqvist_primary", "appointment_lists.priya_raman_6120"} <= evidence
    finally:
        await backend.close()


async def test_blocked_cancellation_leaves_the_database_unchanged(tmp_path: Path) -> None:
    fresh = await TelehealthBackend.open(tmp_path / "fresh.sqlite")
    expected = await fresh.state_hash()
    await fresh.close()
    session, backend = await run("cancel-completed-appointment", tmp_path)
    try:
        assert _failed(session) == [["telehealth.appointment_actionable"]]
        assert await backend.state_hash() == expected
        assert session.result is not None and session.result.db_hash == expected
        appointment = await backend.store.get("appointments", "APPT003")
        assert appointment is not None and appointment["status"] == "completed"
    finally:
        await backend.close()


async def test_supplier_switch_records_only_the_listed_price(tmp_path: Path) -> None:
    session, backend = await run("unobserved-supplier-price", tmp_path)
    try:
        assert _failed(session) == [["telehealth.supplier_observed"], []]
        record = await backend.store.get("medical_records", "REC003")
        assert record is not None
        atorvastatin = record["prescriptions"][0]
        assert atorvastatin["supplier"] == {"company": "Kaveri Generics", "brand_name": "Atorvika", "price_usd": 3.95,
                                            "currency": "USD"}
        assert atorvastatin["pharmacy"] == "Kaveri Generics (Atorvika)"
        assert record["prescriptions"][1]["pharmacy"] == "Northgate Pharmacy"  # Warfarin untouched
    finally:
        await backend.close()


async def test_without_the_gate_the_completed_visit_reaches_the_tool(tmp_path: Path) -> None:
    """The fc baseline sends the cancel to the tool, which refuses it with its own error. The plan expected a
    BLOCK; the offline agent relays the tool's own refusal and the conversation ends cleanly."""
    session, backend = await run("cancel-completed-appointment", tmp_path, AgentConfig(ledger=False, gate=False))
    try:
        assert session.result is not None and session.result.reason == "user_stop"
        said = agent_said(tmp_path)
        assert ("I could not cancel appointment APPT003: Appointment APPT003 is completed and cannot be cancelled. "
                "Nothing was changed. How would you like to go on?") in said
    finally:
        await backend.close()


def agent_said(folder: Path) -> str:
    """Everything the agent said to the customer, from the trace."""
    events = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    return "\n".join(e["text"] for e in events if e["type"] == "assistant_turn" and e["text"])
