"""Airline tasks on our own seed data (`domains/airline/tasks/tasks.json`) through offline `ledgeragent eval`:
careful scripted agents pass every task in both conditions, the error-prone agent shows what the gate changes,
and refusal tasks are graded on what reached the database."""

from __future__ import annotations

from pathlib import Path

from tests.support.eval_domains import (
    check_careful_run,
    check_error_prone,
    check_refusals_graded,
    check_task_file,
    executed_writes,
)

DOMAIN = "airline"


def test_airline_tasks_cover_every_write_tool_and_refusals() -> None:
    tasks = check_task_file(DOMAIN)
    by = {t.id: t for t in tasks}
    # the story records: the paper's figure 1 (outside the 24 h window), basic economy, an ineligible
    # customer and a partly flown trip are refusals; a two-write task cancels and then compensates
    assert {"a10", "a11", "a12", "a13"} <= {t.id for t in tasks if t.hints.refusal}
    assert [a.name for a in by["a03"].gold_actions][-2:] == ["cancel_reservation", "send_certificate"]


async def test_careful_agents_pass_every_airline_task(tmp_path: Path) -> None:
    results = await check_careful_run(DOMAIN, tmp_path / "run")
    assert "pass_k_airline.svg" in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    booked = next(t for t in results.trials if t.task_id == "a08" and t.agent == "ledger")
    assert executed_writes(DOMAIN, booked) == ["book_reservation"]


async def test_error_prone_agent_shows_what_the_gate_changes(tmp_path: Path) -> None:
    ledger, fc = await check_error_prone(DOMAIN, tmp_path / "run")
    assert ledger.pass_k[1] == 1.0  # every slip is refused by the gate and the right call follows
    assert fc.failures.get("policy violation", 0) > 0
    assert ledger.gate_predicates["airline.reservation_owned_by_customer"]["violation"] > 0


async def test_airline_refusals_are_graded_on_writes(tmp_path: Path) -> None:
    by = await check_refusals_graded(DOMAIN, tmp_path / "run")
    # none of these forbidden writes is refused by the airline tools themselves: only the gate stops them
    assert not any(by[(i, "fc")].success for i in ("a10", "a11", "a12", "a13"))
    assert by[("a10", "ledger")].gate.predicates["airline.cancel_basis"] == {"violation": 1}
    assert by[("a11", "ledger")].gate.predicates["airline.basic_economy_flights_fixed"] == {"violation": 1}
    assert by[("a12", "ledger")].gate.predicates["airline.compensation_eligible"] == {"violation": 1}
    assert by[("a13", "ledger")].gate.predicates["airline.nothing_flown"] == {"violation": 1}
