"""Telehealth tasks on our own seed data (`domains/telehealth/tasks/tasks.json`) through offline
`ledgeragent eval`: careful scripted agents pass every task in both conditions, the error-prone agent shows
what the gate changes, and refusal tasks are graded on what reached the database."""

from __future__ import annotations

from pathlib import Path

from tests.support.eval_domains import (
    check_careful_run,
    check_error_prone,
    check_refusals_graded,
    check_task_file,
    executed_writes,
)

DOMAIN = "telehealth"


def test_telehealth_tasks_cover_every_write_tool_and_refusals() -> None:
    tasks = check_task_file(DOMAIN)
    by = {t.id: t for t in tasks}
    assert {"t10", "t11", "t12", "t13"} <= {t.id for t in tasks if t.hints.refusal}
    # booking outside the provider's schedule: the right outcome is the listed slot, not a refusal
    booking = next(a for a in by["t01"].gold_actions if a.name == "schedule_appointment")
    assert booking.arguments["time"] == "11:00" and "10:00" in by["t01"].user_scenario.model_dump_json()


async def test_careful_agents_pass_every_telehealth_task(tmp_path: Path) -> None:
    results = await check_careful_run(DOMAIN, tmp_path / "run")
    two = next(t for t in results.trials if t.task_id == "t09" and t.agent == "ledger")
    assert executed_writes(DOMAIN, two) == ["update_prescription_supplier", "update_medical_record_note"]


async def test_error_prone_agent_shows_what_the_gate_changes(tmp_path: Path) -> None:
    ledger, fc = await check_error_prone(DOMAIN, tmp_path / "run")
    assert ledger.pass_k[1] == 1.0
    assert fc.failures.get("policy violation", 0) > 0


async def test_telehealth_refusals_are_graded_on_writes(tmp_path: Path) -> None:
    by = await check_refusals_graded(DOMAIN, tmp_path / "run")
    # the tool itself refuses to cancel a completed appointment, so FC passes t10 too; the other forbidden
    # writes (a non-dependant's booking, an unlisted price, a drug under a severe interaction) reach the database
    assert by[("t10", "fc")].success
    assert not any(by[(i, "fc")].success for i in ("t11", "t12", "t13"))
    assert by[("t10", "ledger")].gate.predicates["telehealth.appointment_actionable"] == {"violation": 1}
    assert by[("t13", "ledger")].gate.predicates["telehealth.no_severe_interaction"] == {"violation": 1}
