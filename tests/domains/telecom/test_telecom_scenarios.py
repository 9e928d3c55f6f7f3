"""Every shipped telecom scenario runs headless end to end on the real SQLite backend and seed data, the customer
acting on their phone as the script says (dual control)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.agent import AgentConfig
from core.events import EnvironmentSynced, GateDecided, ToolResultEvent
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from domains.registry import load_offline_reader
from domains.telecom import DOMAIN
from mock_backends.telecom import TelecomBackend

SCENARIOS = list_scenarios(DOMAIN.scenarios_dir)
REQUIRED = {"roaming-abroad": ["REVISE", "ALLOW"], "overdue-bill-resume": ["ALLOW", "REVISE", "ALLOW"],
            "refuel-over-cap": ["REVISE", "ALLOW"]}


def test_the_three_shipped_scenarios_exist_with_their_verdicts() -> None:
    assert set(REQUIRED) == set(SCENARIOS)
    for name, verdicts in REQUIRED.items():
        scenario = load_scenario(SCENARIOS[name])
        assert scenario.domain == "telecom" and scenario.name == name
        assert scenario.expect.verdicts == verdicts and scenario.expect.end_reason == "user_stop"


async def run(name: str, folder: Path, config: AgentConfig | None = None) -> tuple[Session, TelecomBackend]:
    scenario = load_scenario(SCENARIOS[name])
    backend = await TelecomBackend.open(folder / "db.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=scenario.build_model(load_offline_reader('telecom')),
                      user=scenario.build_user(),
                      config=config, trace_path=folder / "trace.jsonl", scenario=scenario.name)
    await session.run()
    return session, backend


def _failed(session: Session) -> list[list[str]]:
    return [[r.predicate_id for r in e.results if r.status != "pass"] for e in session.bus.history
            if isinstance(e, GateDecided)]


def _phone_calls(session: Session) -> list[tuple[str, str]]:
    return [(e.call.name, e.content.splitlines()[0]) for e in session.bus.history
            if isinstance(e, ToolResultEvent) and e.call.requestor == "user"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_meets_its_expectations(name: str, tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS[name])
    session, backend = await run(name, tmp_path)
    try:
        assert session.result is not None
        assert session.result.reason == scenario.expect.end_reason, session.result.detail
        assert [e.verdict for e in session.bus.history if isinstance(e, GateDecided)] == scenario.expect.verdicts
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
    assert b'"reference_time":"2025-02-25T12:08:00"' in first  # the domain's fixed clock, not the wall clock


async def test_roaming_abroad_fixes_mobile_data_on_both_sides(tmp_path: Path) -> None:
    session, backend = await run("roaming-abroad", tmp_path)
    try:
        assert _failed(session) == [["telecom.roaming_not_already_enabled"], []]
        assert _phone_calls(session) == [
            ("check_network_status", "Airplane Mode: OFF"), ("toggle_roaming", "Data Roaming is now ON."),
            ("run_speed_test", "Speed Test Result: 275.00 Mbps (Excellent). Connection is very fast.")]
        line = await backend.store.get("lines", "L2001")
        assert line is not None and line["roaming_enabled"] is True
        assert await backend.assert_env("user", "assert_mobile_data_status", {"expected_status": True})
        assert await backend.assert_env("user", "assert_internet_speed",
                                        {"expected_speed": 200, "expected_desc": "excellent"})
        synced = [e.changes for e in session.bus.history if isinstance(e, EnvironmentSynced)]
        assert synced == [["surroundings.roaming_allowed: False -> True"]]
        # the customer's reading reached the agent through the ledger (stale once roaming changed)
        reading = session.ledger.entry("device.network_status")
        assert "Data Roaming Enabled: No" in reading.value and reading.is_stale
        assert session.ledger.get("device.speed_test").startswith("Speed Test Result: 275.00")
    finally:
        await backend.close()


async def test_overdue_bill_is_paid_on_the_phone_and_the_line_resumed(tmp_path: Path) -> None:
    session, backend = await run("overdue-bill-resume", tmp_path)
    try:
        assert _failed(session) == [[], ["telecom.resume_after_overdue_paid"], []]
        bill = await backend.store.get("bills", "B2003")
        line = await backend.store.get("lines", "L2003")
        assert bill is not None and bill["status"] == "Paid"
        assert line is not None and (line["status"], line["suspension_start_date"]) == ("Active", None)
        synced = [change for e in session.bus.history if isinstance(e, EnvironmentSynced) for change in e.changes]
        assert synced == ["surroundings.payment_request: None -> B2003 (15.0 USD)",
                          "bills.B2003.status: Awaiting Payment -> Paid (paid on the phone)",
                          "surroundings.payment_request: B2003 -> None"]
        assert session.ledger.get("bills.B2003")["status"] == "Paid"
    finally:
        await backend.close()


async def test_refuel_over_cap_charges_only_the_allowed_2_gb(tmp_path: Path) -> None:
    session, backend = await run("refuel-over-cap", tmp_path)
    try:
        assert _failed(session) == [["telecom.refuel_within_cap"], []]
        line = await backend.store.get("lines", "L2002")
        draft = await backend.store.get("bills", "B2004")
        assert line is not None and line["data_refueling_gb"] == 2.0
        assert draft is not None and draft["total_due"] == 8.0 and len(draft["line_items"]) == 1
    finally:
        await backend.close()


async def test_without_the_gate_the_5_gb_refuel_reaches_the_tool(tmp_path: Path) -> None:
    """The fc baseline sends the over-cap refuel to the tool, which accepts it (tau2 has no cap in code). The plan
    expected a REVISE; the offline agent reads the usage back and tells the customer the 5 GB were added, and the
    conversation ends cleanly."""
    session, backend = await run("refuel-over-cap", tmp_path, AgentConfig(ledger=False, gate=False))
    try:
        assert session.result is not None and session.result.reason == "user_stop"
        line = await backend.store.get("lines", "L2002")
        assert line is not None and line["data_refueling_gb"] == 5.0  # what only the gate prevents
        said = agent_said(tmp_path)
        assert "Done: I went ahead to add 5.0 GB of data to line L2002." in said
        assert "at most 2 GB" not in said
    finally:
        await backend.close()


def agent_said(folder: Path) -> str:
    """Everything the agent said to the customer, from the trace."""
    events = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    return "\n".join(e["text"] for e in events if e["type"] == "assistant_turn" and e["text"])


async def test_the_overdue_resume_revise_names_the_bill_of_the_story(tmp_path: Path) -> None:
    """After the payment every bill is stale; the REVISE asks to read again the one the resume waits on (B2003,
    the overdue bill just paid), not the first bill of the account."""
    session, backend = await run("overdue-bill-resume", tmp_path)
    await backend.close()
    revise = next(e for e in session.bus.history if isinstance(e, GateDecided) and e.verdict == "REVISE")
    (reason,) = [r.reason for r in revise.results if r.status != "pass"]
    assert reason.startswith("bills.B2003 may have changed since "), reason
    assert "B2001" not in reason


async def test_roaming_is_enabled_only_after_the_customer_agreed(tmp_path: Path) -> None:
    """Consent first: the agent asks before it proposes enable_roaming at all, the REVISE for the unread line
    comes after the customer's yes."""
    session, backend = await run("roaming-abroad", tmp_path)
    await backend.close()
    history = list(session.bus.history)
    first = next(i for i, e in enumerate(history) if e.type == "assistant_turn"
                 and any(c.name == "enable_roaming" for c in e.tool_calls))
    asked = [i for i, e in enumerate(history[:first]) if e.type == "assistant_turn" and e.text
             and "Shall I turn it on?" in e.text]
    assert asked, "enable_roaming proposed before the customer was asked"
    said = [e.text for e in history[asked[-1]:first] if e.type == "message" and e.role == "user"]
    assert said and said[-1].lower().startswith("yes")
