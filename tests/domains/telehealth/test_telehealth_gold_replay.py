"""tau-Trait telehealth tasks through `ledgeragent check` over the REAL TelehealthBackend loaded from the shared
tau-Trait data folder.

1. Every task's gold writes, with the reads a careful agent makes before them
   (tests/support/tau_trait_telehealth_trajectories.py), are allowed by the gate and executed by the backend; the end
   state equals the state reached by applying only the gold writes directly (backend.call, no gate): for
   correct trajectories the gate changes nothing. No gold write needs an exception.
2. Deliberately violating variants, each derived from a real task and real records, are rejected with the
   expected verdict and predicate, and leave the database exactly as it was.
3. The real CLI (`ledgeragent check --domain telehealth --db <folder> --json`) on one task plus a violation.

Two gold READS cannot succeed, here as in tau-Trait, and carry no expectation (their verdict is ERROR):
task 10's get_appointment_details("APPT032") (the task's author expected the new booking to be APPT032;
with the data's highest id APPT058 it is APPT059, and no APPT032 exists) and task 18's
list_available_providers(min_years_experience=10) (tau-Trait's tool takes only `specialty`).

The scaffolding (one backend per module, restored before each test; the line builders; the CLI's shared
assertions) is tests/support/gold_replay.py: this module holds telehealth's tables and variants. Skipped when
tau-Trait's telehealth data is absent (tests/support/upstream.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.replay import Checker
from core.tools import ToolError
from domains.telehealth import DOMAIN
from mock_backends.telehealth import TelehealthBackend
from tests.support.gold_replay import (
    Lines,
    Template,
    apply_gold_writes,
    assert_refused_when_assisted,
    assert_rejected,
    calls,
    cli_check,
    fresh_fixture,
    module_loop,
    replay_group,
    show,
    template_fixture,
    write_jsonl,
)
from tests.support.tau_trait_telehealth_trajectories import (
    DATA_DIR,
    GOLD_NOTE,
    READ_NOTE,
    Line,
    Task,
    authentication,
    build_trajectory,
    gold_actions,
    gold_write_lines,
    gold_writes,
    load_data,
    load_tasks,
    shared_present,
)

HAVE_SHARED = shared_present()

pytestmark = [
    pytest.mark.shared,
    replay_group("tau-trait-telehealth"),
    pytest.mark.skipif(not HAVE_SHARED, reason=f"tau-Trait telehealth data not found at {DATA_DIR}"),
]

TASKS: dict[str, Task] = {t["id"]: t for t in load_tasks()} if HAVE_SHARED else {}
RAW: dict[str, Any] = load_data() if HAVE_SHARED else {}
FAILING_GOLD_READS = {("10", "get_appointment_details"), ("18", "list_available_providers")}


template = template_fixture("tau_trait_telehealth",
                            lambda path: TelehealthBackend.create(path, TelehealthBackend.read_source(DATA_DIR)))
fresh = fresh_fixture()
LINES = Lines(TASKS, lambda task: build_trajectory(task, RAW), gold_actions)
_read, _bad, _prefix, _gold, _gold_with, _without_reads = (LINES.read, LINES.bad, LINES.prefix, LINES.gold,
                                                          LINES.gold_with, LINES.without_reads)


# ---------------------------------------------------------------------------------------------------
# 1. Gold trajectories.


def test_every_gold_action_is_in_its_trajectory_once() -> None:
    assert len(TASKS) == 10
    writes = 0
    for task in TASKS.values():
        lines = build_trajectory(task, RAW)
        notes = [line["note"] for line in lines if line["note"].startswith(GOLD_NOTE)]
        assert notes == [GOLD_NOTE + a["action_id"] for a in gold_actions(task)]
        written_at = gold_write_lines(lines)
        writes += len(written_at)
        assert lines[0]["name"].startswith("find_patient_by_") and min(written_at, default=2) > 1
        unexpected = [(task["id"], line["name"]) for line in lines if "expect" not in line]
        assert set(unexpected) <= FAILING_GOLD_READS, unexpected
    assert writes == sum(len(gold_writes(t)) for t in TASKS.values()) == 21


@module_loop
@pytest.mark.parametrize("task_id", list(TASKS) or ["no-shared-data"])
async def test_gold_trajectory_passes_and_reaches_the_gold_state(task_id: str, fresh: Template) -> None:
    task, backend = TASKS[task_id], fresh.backend
    lines = build_trajectory(task, RAW)
    results = await Checker(DOMAIN, backend).run(calls(lines))
    assert all(r.met is not False for r in results), show(results, lines)
    gold = gold_write_lines(lines)
    for index in gold:
        assert (results[index].kind, results[index].verdict, results[index].executed) == ("write", "ALLOW", True)
    gated_hash = await backend.state_hash()
    if not gold:  # task 2 ends in a transfer: nothing may be written
        assert gated_hash == fresh.base_hash
        return
    assert gated_hash != fresh.base_hash

    # The same gold writes straight into a fresh DB, no gate: what the tau2 evaluator builds as the gold env.
    await backend.restore(fresh.base)
    await apply_gold_writes(backend, gold_writes(task))
    assert await backend.state_hash() == gated_hash


@module_loop
async def test_careful_reads_are_what_the_gate_needs(fresh: Template) -> None:
    """Task 0 is a bare booking: without the careful reads the gate asks for exactly those reads."""
    bare = [*authentication(TASKS["0"], RAW),
            {"name": "schedule_appointment", "arguments": gold_writes(TASKS["0"])[0]["arguments"], "expect": "REVISE"}]
    [*_, result] = await Checker(DOMAIN, fresh.backend).run(calls(bare))
    assert result.met and set(result.predicates) == {"telehealth.provider_available",
                                                     "telehealth.no_conflicting_appointment"}
    careful = [line for line in build_trajectory(TASKS["0"], RAW) if line["note"].startswith(READ_NOTE)]
    assert [(line["name"], line["arguments"]) for line in careful] == [
        ("get_provider_details", {"provider_id": "dr_garcia_primary"}),
        ("list_patient_appointments", {"patient_id": "sarah_johnson_1234"}),
    ]


# ---------------------------------------------------------------------------------------------------
# 2. Violating variants of real tasks. Each ends with the one violating call.


def _login(task_id: str) -> list[Line]:
    return [{**line, "note": "variant read"} for line in authentication(TASKS[task_id], RAW)]


@dataclass(frozen=True)
class Variant:
    id: str
    verdict: str
    predicate: str
    build: Callable[[], list[Line]]
    why: str
    tool_would_accept: bool  # True: only the gate stands between the call and a wrong database
    only: bool = True  # the predicate is the only one that fails (False: others fail with it, by design)


VARIANTS = [
    Variant("book-a-slot-the-provider-does-not-offer", "REVISE", "telehealth.provider_available",
            lambda: _gold_with("0", "0_0", "REVISE", time="10:30"),
            "task 0: Dr. Garcia's Tuesday times are 06:00, 08:00-11:00 on the hour, 14:00-16:00; not 10:30", False),
    Variant("cancel-a-completed-visit", "BLOCK", "telehealth.appointment_actionable",
            lambda: [*_login("6"), _read("get_appointment_details", appointment_id="APPT023"),
                     _bad("cancel_appointment", "BLOCK", appointment_id="APPT023")],
            "task 6: Heather Collins's APPT023 (2025-03-18) is completed", False),
    Variant("cancel-another-patients-appointment", "BLOCK", "telehealth.appointment_belongs_to_patient",
            lambda: [*_prefix("8", "8_2"), _read("get_appointment_details", appointment_id="APPT029"),
                     _read("get_patient_details", patient_id="yumi_tanaka_7410"),
                     _bad("cancel_appointment", "BLOCK", appointment_id="APPT029")],
            "task 8: Mira Desai cancels APPT029, Yumi Tanaka's pending cardiology slot (task 10's gold cancel)", True),
    Variant("move-a-child-into-her-own-therapy-session", "REVISE", "telehealth.no_conflicting_appointment",
            lambda: _gold_with("14", "14_15", "REVISE", new_date="2025-10-24", new_time="10:30"),
            "task 14: SLP APPT046 moved to Friday 10-24 10:30-11:15 overlaps Maya's ABA session APPT053 at 11:00 "
            "(another provider, so the tool itself would double-book her)", True),
    Variant("book-surgery-as-the-agent", "REVISE", "telehealth.appointment_type_allowed",
            lambda: _gold_with("18", "18_9", "REVISE", appointment_type="surgery"),
            "task 18: the post-op visit with the cardiac surgeon booked as 'surgery'", True),
    Variant("voucher-while-billing-insurance", "REVISE", "telehealth.billing_consistent",
            lambda: [*_prefix("8", "8_5"), _bad("schedule_appointment", "REVISE", **{
                k: v for k, v in _gold("8", "8_5")["arguments"].items() if k != "bill_insurance"})],
            "task 8: the voucher THV-224 sent without bill_insurance false; the tool would bill insurance and "
            "silently drop the voucher", True),
    Variant("supplier-price-nobody-listed", "REVISE", "telehealth.supplier_observed",
            lambda: _gold_with("6", "6_7", "REVISE", price_usd=6.99),
            "task 6: Lotus Respiratory's Flohale is listed at 7.10, not 6.99", True),
    Variant("supplier-outside-the-listing-read", "REVISE", "telehealth.supplier_observed",
            lambda: _gold_with("6", "6_7", "REVISE", supplier_company="IndiAir Therapeutics", brand_name="Fluticair",
                               price_usd=7.4),
            "task 6: the agent listed one Indian supplier (limit 1); IndiAir is in the catalogue but was never shown",
            True),
    Variant("a-medication-the-record-does-not-prescribe", "REVISE", "telehealth.prescription_in_record",
            lambda: [*_prefix("10", "10_21"), _read("get_medical_record", record_id="REC012"),
                     _bad("update_prescription_supplier", "REVISE", **{**_gold("10", "10_21")["arguments"],
                                                                       "record_id": "REC012"})],
            "task 10: Rosuvastatin's supplier set on REC012, which prescribes Warfarin and Sertraline", False),
    Variant("note-on-another-patients-record", "BLOCK", "telehealth.record_belongs_to_patient",
            lambda: [*_prefix("18", "18_11"), _read("get_medical_record", record_id="REC027"),
                     _read("get_patient_details", patient_id="carlos_mendez_4521"),
                     _bad("update_medical_record_note", "BLOCK", record_id="REC027",
                          note=_gold("18", "18_11")["arguments"]["note"])],
            "task 18: Robert Martinez's checklist note written on Carlos Mendez's record REC027", True),
    Variant("book-for-someone-elses-family", "BLOCK", "telehealth.schedule_for_patient",
            lambda: [*_prefix("4", "4_7"), _read("get_patient_details", patient_id="david_martinez_5678"),
                     _read("list_patient_appointments", patient_id="david_martinez_5678"),
                     _bad("schedule_appointment", "BLOCK", **{**_gold("4", "4_7")["arguments"],
                                                             "patient_id": "david_martinez_5678"})],
            "task 4: Carlos Martinez books the sick visit for David Martinez, whose record does not name him", True),
    Variant("reschedule-before-authentication", "REVISE", "telehealth.authenticated",
            lambda: [_read("get_appointment_details", appointment_id="APPT056"),
                     _read("get_provider_details", provider_id="dr_chen_primary_care"),
                     _read("list_patient_appointments", patient_id="carlos_mendez_4521"),
                     _bad("reschedule_appointment", "REVISE", **_gold("16", "16_4")["arguments"])],
            "task 16: the reschedule with appointment, provider and calendar read but nobody authenticated", True),
    Variant("book-a-slot-this-conversation-filled", "REVISE", "telehealth.provider_slot_free",
            lambda: [*build_trajectory(TASKS["0"], RAW),
                     _bad("schedule_appointment", "REVISE", **_gold("0", "0_0")["arguments"])],
            "task 0: Dr. Garcia's slot booked a second time right after the gold booking filled it (the patient's "
            "calendar is stale after that booking too, so the clash rule asks for a re-read as well)", True,
            only=False),
    Variant("book-on-a-stale-calendar", "REVISE", "telehealth.no_conflicting_appointment",
            lambda: _without_reads([*_prefix("12", "12_13"), _bad("schedule_appointment", "REVISE",
                                                                   **_gold("12", "12_13")["arguments"])],
                                   "12_13", ("list_patient_appointments",)),
            "task 12: the neurology booking right after cancelling APPT036, without listing the calendar again", True),
]


# With evidence assist (`--evidence assist`, the default of the console and of check) the gate reads what a rule
# lacks itself: a violation stays refused by its rule. A variant whose only fault is a read the agent skipped is
# legal once the gate has read (LEGAL_ONCE_READ); a stale record the gate re-reads may show a fact another rule
# refuses (ASSISTED: that verdict and rule instead).
LEGAL_ONCE_READ = frozenset({"book-on-a-stale-calendar"})  # task 12's gold booking itself
ASSISTED: dict[str, tuple[str, str]] = {}


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_refused_when_the_gate_reads_itself(variant: Variant, fresh: Template) -> None:
    verdict, predicate = ASSISTED.get(variant.id, (variant.verdict, variant.predicate))
    await assert_refused_when_assisted(DOMAIN, fresh.backend, variant.build(), verdict, predicate, variant.why,
                                       legal_once_read=variant.id in LEGAL_ONCE_READ)


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_rejected_and_changes_nothing(variant: Variant, fresh: Template) -> None:
    await assert_rejected(DOMAIN, fresh.backend, variant.build(), variant.verdict, variant.predicate, variant.why,
                          only=variant.only)


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_what_the_tool_alone_would_have_done(variant: Variant, fresh: Template) -> None:
    """Sent straight to the backend (no gate): most variants are accepted by the tool itself, so the gate is the
    only defence; the others the tool refuses too, and the gate refuses them earlier, with the rule."""
    *_, violation = variant.build()
    if variant.tool_would_accept:
        await fresh.backend.call(violation["name"], violation["arguments"])
        assert await fresh.backend.state_hash() != fresh.base_hash
    else:
        with pytest.raises(ToolError):
            await fresh.backend.call(violation["name"], violation["arguments"])
        assert await fresh.backend.state_hash() == fresh.base_hash


def test_variants_cover_every_predicate() -> None:
    """Every rule the policy states has a violating variant of a real task. House rules may have one: the
    severe-interaction hold has none, because tau-Trait's own gold (task 10) changes Sertraline's supplier for
    a patient on Warfarin, so the upstream policy allows what it would hold (it is off by default)."""
    assert len(VARIANTS) >= 6
    covered = {v.predicate for v in VARIANTS}
    # A variant is check lines, which carry no customer message: the confirmation rule passes there ("no customer
    # messages recorded"), so its violations are tested with the customer's words (telehealth's predicate tests).
    stated = {p.id for p in DOMAIN.predicates if not p.house_rule and p.id != "telehealth.explicit_confirmation"}
    assert stated <= covered <= {p.id for p in DOMAIN.predicates}


@module_loop
async def test_booking_for_a_dependant_child_instead_is_allowed(fresh: Template) -> None:
    """Task 4's Carlos Martinez is named as parent on his children's records: booking for one of them passes."""
    lines = [*_prefix("4", "4_7"), _read("list_patient_appointments", patient_id="sofia_martinez_2019"),
             {"name": "schedule_appointment", "arguments": {**_gold("4", "4_7")["arguments"],
                                                            "patient_id": "sofia_martinez_2019"},
              "expect": "ALLOW", "note": "dependant"}]
    results = await Checker(DOMAIN, fresh.backend).run(calls(lines))
    assert all(r.met is not False for r in results), show(results, lines)
    assert results[-1].executed


# ---------------------------------------------------------------------------------------------------
# 3. The real CLI, with the tau-Trait data folder as --db.

CLI_TASK = "8"


@pytest.mark.parametrize("violation_expect, exit_code", [("BLOCK", 0), ("ALLOW", 1)])
def test_cli_check_replays_a_task_and_flags_the_violation(
        violation_expect: str, exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    violation = [_read("get_appointment_details", appointment_id="APPT027"),
                 {"name": "cancel_appointment", "arguments": {"appointment_id": "APPT027"}, "expect": violation_expect,
                  "note": "the slot the gold trajectory already cancelled, cancelled again"}]
    lines = [*build_trajectory(TASKS[CLI_TASK], RAW), *violation]
    path = write_jsonl(lines, tmp_path / "task8.jsonl")
    replayed, last = cli_check(["--domain", "telehealth", "--db", str(DATA_DIR), "--json"], lines, path,
                               violation_expect, exit_code, capsys)
    writes = [(row["name"], row["verdict"], row["executed"]) for row in replayed if row["kind"] == "write"]
    assert writes == [("cancel_appointment", "ALLOW", True), ("schedule_appointment", "ALLOW", True)]
    assert (last["kind"], last["verdict"], last["executed"]) == ("write", "BLOCK", False)
    assert last["predicates"] == ["telehealth.appointment_actionable"]
    assert "appointment APPT027 has status 'cancelled'" in last["reason"]
    sessions = list((tmp_path / "home" / "sessions").iterdir())  # the session copy lives under LEDGERAGENT_HOME
    assert len(sessions) == 1 and (sessions[0] / "db.sqlite").is_file()
