"""The telehealth gate over the real backend (shipped seed), through the one call path (`CallExecutor`, driven by
`Checker`): a parent booking for a child whose record the agent never read is a read to make, which the gate
makes itself and keeps to itself; a medication named with its dosage is the one the tool changes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.events import EventBus, ToolResultEvent
from core.evidence import EvidenceMode
from core.ledger import READ_BY_GATE
from core.replay import Checker, CheckResult, TrajectoryCall
from domains.telehealth import DOMAIN
from domains.telehealth.predicates import _named_prescription
from mock_backends.telehealth import TelehealthBackend

Line = tuple[str, dict[str, Any]]
HANA, KENJI, PRIYA = "hana_sato_4410", "kenji_sato_2017", "priya_raman_6120"
HANA_LOGIN: Line = ("find_patient_by_email", {"email": "hana.sato@example.org"})


def _booking(patient_id: str) -> Line:
    return ("schedule_appointment", {"patient_id": patient_id, "provider_id": "dr_petrov_pediatrics",
                                     "date": "2025-05-29", "time": "08:30", "appointment_type": "sick_visit"})


async def _check(tmp_path: Path, lines: Sequence[Line],
                 evidence: EvidenceMode = EvidenceMode.ASSIST) -> tuple[list[CheckResult], Checker, EventBus]:
    backend = await TelehealthBackend.open(tmp_path / "db.sqlite")
    bus = EventBus()
    try:
        checker = Checker(DOMAIN, backend, bus=bus, evidence=evidence)
        results = [await checker.check(TrajectoryCall(i, i + 1, name, arguments))
                   for i, (name, arguments) in enumerate(lines)]
    finally:
        await backend.close()
    return results, checker, bus


async def test_a_parent_books_for_a_child_whose_record_the_agent_never_read(tmp_path: Path) -> None:
    """Whether Kenji is Hana's child shows only in his record: the gate reads it (and his calendar) as its own
    evidence, shown to nobody, finds Hana named as his parent, and the booking runs."""
    results, checker, bus = await _check(tmp_path, [HANA_LOGIN, _booking(KENJI)])
    booked = results[1]
    assert (booked.verdict, booked.executed) == ("ALLOW", True), booked.reason
    assert f'get_patient_details(patient_id="{KENJI}") (gate only)' in booked.gate_reads
    assert f'list_patient_appointments(patient_id="{KENJI}") (gate only)' in booked.gate_reads
    private = [e for e in bus.history if isinstance(e, ToolResultEvent) and e.by == READ_BY_GATE and e.gate_only]
    assert {e.call.name for e in private} == {"get_patient_details", "list_patient_appointments"}
    assert all(e.content == "" for e in private)
    assert not [path for path in checker.ledger.paths() if KENJI in path]  # nothing of Kenji's reaches the model
    assert "Kenji" not in checker.ledger.render()


async def test_in_ask_mode_the_childs_record_is_a_read_to_make_not_a_block(tmp_path: Path) -> None:
    results, _, _ = await _check(tmp_path, [HANA_LOGIN, _booking(KENJI)], EvidenceMode.ASK)
    refused = results[1]
    assert (refused.verdict, refused.refusal) == ("REVISE", "needs_read"), refused.reason
    assert "telehealth.schedule_for_patient" in refused.predicates
    assert f'get_patient_details(patient_id="{KENJI}")' in refused.reason


async def test_booking_for_someone_who_is_not_a_dependant_is_blocked_on_their_record(tmp_path: Path) -> None:
    """The gate reads the other patient's record to judge, never shows it, and refuses on what it names."""
    results, checker, _ = await _check(tmp_path, [HANA_LOGIN, _booking(PRIYA)])
    refused = results[1]
    assert refused.verdict == "BLOCK" and refused.predicates == ("telehealth.schedule_for_patient",)
    assert "their emergency contact is 'Arjun Raman', not 'Hana Sato'" in refused.reason
    assert checker.ledger.entry(f"patients.{PRIYA}") is None


async def test_a_medication_named_with_its_dosage_is_the_one_the_tool_changes(tmp_path: Path) -> None:
    """REC003 prescribes "Atorvastatin"; the agent names "Atorvastatin 20 mg". tau-Trait's tool matches it (a name
    the record's name starts), so the change is legal: the gate lists the catalogue under the record's name and
    the backend, matching as the tool does, runs it."""
    change = ("update_prescription_supplier", {"record_id": "REC003", "medication": "Atorvastatin 20 mg",
                                               "supplier_company": "Kaveri Generics", "brand_name": "Atorvika",
                                               "price_usd": 3.95, "currency": "USD"})
    results, _, _ = await _check(tmp_path, [("find_patient_by_email", {"email": "marcus.feld@example.org"}),
                                            ("get_medical_record", {"record_id": "REC003"}), change])
    changed = results[2]
    assert (changed.verdict, changed.executed) == ("ALLOW", True), changed.reason
    assert changed.gate_reads == ('list_medication_suppliers(medication="Atorvastatin")',)


@pytest.mark.parametrize(("names", "given"), [
    (["Montelukast"], "Montelukast 10 mg"),
    (["Montelukast"], "  montelukast "),
    (["Lamotrigine"], "lamotrigine 100mg BID"),
    (["Insulin glargine"], "Insulin"),
    (["Insulin glargine", "Insulin lispro"], "Insulin"),
    (["Metformin", "Metformin"], "metformin"),
    (["Atorvastatin", "Warfarin"], "Lisinopril"),
    (["Atorvastatin"], ""),
])
def test_the_rule_resolves_a_name_as_the_tool_does(names: list[str], given: str) -> None:
    """Wherever the rule names one prescription, it is the one the backend's copy of tau-Trait's match changes;
    where that match is a guess between several, the rule names none (the call is refused)."""
    prescriptions = [{"medication": name} for name in names]
    named, candidates = _named_prescription({"prescriptions": prescriptions}, given)
    index = TelehealthBackend._match_prescription(prescriptions, given)
    if named is None:
        assert len(candidates) != 1
    else:
        assert index is not None and prescriptions[index]["medication"] == named
