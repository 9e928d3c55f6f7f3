"""TelehealthBackend: every tau-Trait telehealth tool's results, errors and write semantics, on our seed data;
the seed generator; loading (and round-tripping) a tau-Trait data folder."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from core.tools import ToolBackend, ToolError, ToolKind
from domains.telehealth.vocabulary import REFERENCE_DATE
from mock_backends.registry import BackendSourceError, open_backend
from mock_backends.telehealth import TelehealthBackend, load_seed, read_folder, read_source
from mock_backends.telehealth.models import COLLECTIONS, denormalise, normalise
from mock_backends.telehealth.seed import SEED_FILE, generate, render
from tests.support.telehealth_records import (
    HANA,
    KENJI,
    LINDQVIST,
    MARCUS,
    NEXT_APPOINTMENT,
    PRIYA,
    TOMAS,
    appointment,
    calendar,
    patient,
    provider,
    record,
    suppliers,
)
from tests.support.upstream import TAU_TRAIT_TELEHEALTH

TAU_TRAIT = TAU_TRAIT_TELEHEALTH

Data = dict[str, Any]


async def open_backend_with(tmp_path: Path, change: Callable[[Data], None] | None = None) -> TelehealthBackend:
    data = load_seed()
    if change is not None:
        change(data)
    return await TelehealthBackend.open(tmp_path / "telehealth.sqlite", data)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[TelehealthBackend]:
    async with await open_backend_with(tmp_path) as opened:
        yield opened


async def call(backend: TelehealthBackend, name: str, **arguments: Any) -> Any:
    return await backend.call(name, arguments)


async def fails(backend: TelehealthBackend, message: str, name: str, **arguments: Any) -> None:
    """The call raises ToolError with exactly `message`, and the database is unchanged."""
    before = await backend.state_hash()
    with pytest.raises(ToolError) as caught:
        await backend.call(name, arguments)
    assert caught.value.message == message
    assert await backend.state_hash() == before


# ----------------------------------------------------------------------------------- dispatch


async def test_is_a_tool_backend_with_the_23_tau_trait_tools(backend: TelehealthBackend) -> None:
    assert isinstance(backend, ToolBackend)
    assert len(backend.tool_names()) == 23
    assert backend.tool_names(ToolKind.WRITE) == [
        "cancel_appointment", "reschedule_appointment", "schedule_appointment", "update_medical_record_note",
        "update_prescription_supplier"]
    assert backend.tool_names(ToolKind.GENERIC) == ["calculate", "think", "transfer_to_human_support"]
    assert len(backend.tool_names(ToolKind.READ)) == 15


async def test_bad_calls_become_tool_errors(backend: TelehealthBackend) -> None:
    await fails(backend, "Tool 'book_surgery' not found.", "book_surgery")
    await fails(backend, "get_patient_details: missing required argument 'patient_id'", "get_patient_details")
    await fails(backend, "cancel_appointment: unexpected argument 'force'", "cancel_appointment",
                appointment_id="APPT002", force=True)
    with pytest.raises(ToolError):  # a wrong type fails inside the tool, never as a bare TypeError
        await call(backend, "find_patient_by_email", email=["priya.raman@example.org"])


# ----------------------------------------------------------------------------------- reads


async def test_find_patient(backend: TelehealthBackend) -> None:
    assert await call(backend, "find_patient_by_email", email="PRIYA.Raman@example.org") == PRIYA
    assert await call(backend, "find_patient_by_name_dob", first_name="kenji", last_name="SATO",
                      date_of_birth="2017-04-02") == KENJI
    await fails(backend, "No patient found with email nobody@example.org.", "find_patient_by_email",
                email="nobody@example.org")
    await fails(backend, "Email must not be empty.", "find_patient_by_email", email=" ")  # Kenji has no email
    await fails(backend, "No patient found with name Kenji Sato and date of birth 2017-04-03.",
                "find_patient_by_name_dob", first_name="Kenji", last_name="Sato", date_of_birth="2017-04-03")


async def test_records_builders_are_what_the_backend_returns(backend: TelehealthBackend) -> None:
    """tests/support/telehealth_records.py builds tool results by hand; they must be the real ones."""
    assert await call(backend, "get_patient_details", patient_id=PRIYA) == patient(PRIYA)
    assert await call(backend, "get_provider_details", provider_id=LINDQVIST) == provider(LINDQVIST)
    assert await call(backend, "get_appointment_details", appointment_id="APPT002") == appointment("APPT002")
    for patient_id in (PRIYA, TOMAS, MARCUS, HANA, KENJI):
        assert await call(backend, "list_patient_appointments", patient_id=patient_id) == calendar(patient_id)
    assert await call(backend, "list_patient_appointments", patient_id=TOMAS, status_filter="completed") == \
        calendar(TOMAS, "completed")
    assert await call(backend, "get_medical_record", record_id="REC003") == record("REC003")
    for country, limit in ((None, None), ("india", None), (None, 1)):
        expected = suppliers("Atorvastatin", country, limit)
        assert await call(backend, "list_medication_suppliers", medication="Atorvastatin", country_filter=country,
                          limit=limit) == expected


async def test_get_details_errors(backend: TelehealthBackend) -> None:
    await fails(backend, "Patient with ID ghost not found.", "get_patient_details", patient_id="ghost")
    await fails(backend, "Provider with ID dr_who not found.", "get_provider_details", provider_id="dr_who")
    await fails(backend, "Appointment with ID APPT999 not found.", "get_appointment_details",
                appointment_id="APPT999")


async def test_get_appointment_details_adds_the_names_the_text_showed(backend: TelehealthBackend) -> None:
    shown = await call(backend, "get_appointment_details", appointment_id="APPT003")
    assert (shown["patient_name"], shown["provider_name"], shown["provider_specialty"]) == (
        "Tomas Herrera", "Claire Moreau, MD", "Dermatology")
    assert shown["status"] == "completed" and shown["duration_minutes"] == 30
    stored = await backend.store.get("appointments", "APPT003")
    assert stored is not None and "patient_name" not in stored  # names are shown, never stored


async def test_list_available_providers(backend: TelehealthBackend) -> None:
    everyone = await call(backend, "list_available_providers")
    assert everyone["specialty"] is None and len(everyone["providers"]) == 7
    cardiology = await call(backend, "list_available_providers", specialty="CARDIOLOGY")
    assert cardiology == {"specialty": "Cardiology", "providers": [
        {"provider_id": "dr_haddad_cardiology", "name": "Samir Haddad, MD", "specialty": "Cardiology",
         "years_experience": 21, "languages": ["English", "Arabic", "French"], "consultation_fee": 240.0,
         "phone": "(555) 210-0871"}]}
    assert "schedule" not in cardiology["providers"][0]  # as tau-Trait: read get_provider_details for that
    with pytest.raises(ToolError, match=r"No providers found for specialty 'Cardiologist'\. Specialties: "
                                        r"Cardiology, Dermatology, Device Coaching"):
        await call(backend, "list_available_providers", specialty="Cardiologist")


async def test_list_patient_appointments(backend: TelehealthBackend) -> None:
    tomas = await call(backend, "list_patient_appointments", patient_id=TOMAS)
    assert tomas["patient_name"] == "Tomas Herrera" and tomas["status_filter"] is None
    assert [a["appointment_id"] for a in tomas["appointments"]] == ["APPT003", "APPT004", "APPT010"]
    cancelled = await call(backend, "list_patient_appointments", patient_id=TOMAS, status_filter="cancelled")
    assert [a["appointment_id"] for a in cancelled["appointments"]] == ["APPT010"]
    nothing = await call(backend, "list_patient_appointments", patient_id="yuki_sato_2001")
    assert nothing["appointments"] == []
    await fails(backend, "Patient with ID ghost not found.", "list_patient_appointments", patient_id="ghost")
    await fails(backend, "Unknown status_filter 'done'; use one of scheduled, pending_approval, completed, "
                         "cancelled.", "list_patient_appointments", patient_id=TOMAS, status_filter="done")


async def test_medical_records(backend: TelehealthBackend) -> None:
    by_appointment = await call(backend, "get_medical_record", appointment_id="APPT006")
    assert by_appointment["record_id"] == "REC003" and by_appointment["patient_name"] == "Marcus Feld"
    assert await call(backend, "get_medical_record", record_id="REC003", appointment_id="APPT006") == by_appointment
    await fails(backend, "Provide a record_id or an appointment_id.", "get_medical_record")
    await fails(backend, "Medical record REC999 not found.", "get_medical_record", record_id="REC999")
    await fails(backend, "No medical record found for appointment APPT002.", "get_medical_record",
                appointment_id="APPT002")
    await fails(backend, "Medical record REC003 belongs to appointment APPT006, not APPT001.", "get_medical_record",
                record_id="REC003", appointment_id="APPT001")
    await fails(backend, "Patient with ID ghost not found.", "list_patient_medical_records", patient_id="ghost")
    listing = await call(backend, "list_patient_medical_records", patient_id=MARCUS)
    assert listing["records"] == [{"record_id": "REC003", "date": "2025-04-22", "type": "cardiology_follow_up",
                                   "appointment_id": "APPT006", "provider_id": "dr_haddad_cardiology",
                                   "medications": ["Atorvastatin", "Warfarin"]}]


async def test_medical_records_are_newest_first_and_limited(tmp_path: Path) -> None:
    def second_record(data: Data) -> None:
        data["medical_records"]["REC100"] = {**data["medical_records"]["REC003"], "record_id": "REC100",
                                             "appointment_id": None, "date": "2025-05-02"}

    async with await open_backend_with(tmp_path, second_record) as backend:
        listing = await call(backend, "list_patient_medical_records", patient_id=MARCUS)
        assert [r["record_id"] for r in listing["records"]] == ["REC100", "REC003"]
        newest = await call(backend, "list_patient_medical_records", patient_id=MARCUS, limit=1)
        assert [r["record_id"] for r in newest["records"]] == ["REC100"]
        await fails(backend, "limit must be a positive integer, got 0", "list_patient_medical_records",
                    patient_id=MARCUS, limit=0)


async def test_list_medication_suppliers(backend: TelehealthBackend) -> None:
    india = await call(backend, "list_medication_suppliers", medication="atorvastatin", country_filter="India")
    assert india["medication"] == "Atorvastatin"  # the catalogue's spelling, whatever was asked
    assert [(o["company"], o["price_usd"]) for o in india["suppliers"]] == [("Kaveri Generics", 3.95),
                                                                           ("Deccan Pharma", 4.2)]
    none = await call(backend, "list_medication_suppliers", medication="Warfarin", country_filter="Japan")
    assert none["suppliers"] == []
    await fails(backend, "No supplier information found for Aspirin. (Tip: ensure the medication name matches the "
                         "catalog)", "list_medication_suppliers", medication="Aspirin")


async def test_check_drug_interactions_looks_both_ways(backend: TelehealthBackend) -> None:
    forward = await call(backend, "check_drug_interactions", primary_medication="warfarin",
                         current_medications=["Ibuprofen", "Atorvastatin", "Vitamin D", "Warfarin"])
    assert forward["primary_medication"] == "Warfarin"
    assert [(i["medication"], i["severity"], i["emergency"]) for i in forward["interactions"]] == [
        ("Ibuprofen", "high", True), ("Atorvastatin", "moderate", False)]
    assert forward["no_documented_interaction"] == ["Vitamin D"]  # Warfarin itself is skipped
    assert forward["medications_to_hold"] == ["Ibuprofen"]
    assert forward["emergency_escalation"] is True and forward["peak_overlap_hours"] == 36
    assert forward["highest_severity"] == {"medication": "Ibuprofen", "severity": "high", "risk_score": 9}
    backward = await call(backend, "check_drug_interactions", primary_medication="ibuprofen",
                          current_medications=["Warfarin"])
    assert backward["primary_medication"] == "Ibuprofen"
    assert [(i["medication"], i["severity"], i["listed_under"]) for i in backward["interactions"]] == [
        ("Warfarin", "high", "Warfarin")]
    quiet = await call(backend, "check_drug_interactions", primary_medication="Propofol",
                       current_medications=["Metformin"])
    assert quiet["interactions"] == [] and quiet["highest_severity"] is None and quiet["peak_overlap_hours"] is None
    await fails(backend, "primary_medication must not be empty.", "check_drug_interactions",
                primary_medication=" ", current_medications=[])


async def test_regimen_and_telemetry(backend: TelehealthBackend) -> None:
    regimen = await call(backend, "get_regimen_options", patient_id=PRIYA)
    assert regimen["optimized_regimens"][0]["name"] == "Generic statin"
    await fails(backend, "No regimen optimization data available for patient marcus_feld_7702.",
                "get_regimen_options", patient_id=MARCUS)
    devices = await call(backend, "list_telemetry_devices", status_filter="AVAILABLE", limit=1)
    assert devices == {"status_filter": "AVAILABLE", "devices": [
        {"device_id": "TH-BP-202", "device_type": "Blood pressure cuff", "status": "available",
         "last_audit": "2025-05-10", "notes": "Ready to ship"}]}
    assert (await call(backend, "list_telemetry_devices", status_filter="lost"))["devices"] == []
    assert [d["device_id"] for d in (await call(backend, "list_telemetry_devices"))["devices"]] == [
        "TH-BP-201", "TH-BP-202", "TH-ECG-101", "TH-ECG-102"]
    await fails(backend, "limit must be a positive integer, got -2", "list_telemetry_devices", limit=-2)
    uploads = await call(backend, "list_telemetry_uploads", device_id="TH-ECG-102", start_date="2025-05-17")
    assert [u["date"] for u in uploads] == ["2025-05-17", "2025-05-18"]
    assert await call(backend, "list_telemetry_uploads", device_id="TH-BP-202") == []
    one = await call(backend, "get_telemetry_upload", device_id="TH-ECG-102", date="2025-05-17")
    assert one["event"] == "upload_missing"
    await fails(backend, "Telemetry device XX-1 not found.", "list_telemetry_uploads", device_id="XX-1")
    await fails(backend, "Invalid start_date: 17/05/2025. Please use YYYY-MM-DD format.", "list_telemetry_uploads",
                device_id="TH-ECG-102", start_date="17/05/2025")
    await fails(backend, "No telemetry upload found for device TH-ECG-102 on 2025-05-19.", "get_telemetry_upload",
                device_id="TH-ECG-102", date="2025-05-19")


# ----------------------------------------------------------------------------------- schedule


async def test_schedule_appointment_with_insurance(backend: TelehealthBackend) -> None:
    booked = await call(backend, "schedule_appointment", patient_id=PRIYA, provider_id=LINDQVIST,
                        date="2025-05-29", time="11:00", appointment_type="follow_up")
    assert booked["appointment_id"] == NEXT_APPOINTMENT
    stored = await backend.store.get("appointments", NEXT_APPOINTMENT)
    assert stored == {
        "appointment_id": "APPT031", "patient_id": PRIYA, "provider_id": LINDQVIST, "date": "2025-05-29",
        "time": "11:00", "duration_minutes": 30, "type": "follow_up", "status": "scheduled", "notes": "",
        "insurance_authorization": "AUTH000031", "copay_amount": 20.0,
        "meeting_link": "https://telehealth.healthcenter.com/room/APPT031", "payment_method": "insurance",
        "voucher_id": None, "insurance_billed": True}
    assert booked == {**stored, "patient_name": "Priya Raman", "provider_name": "Ingrid Lindqvist, MD",
                      "provider_specialty": "Primary Care"}
    specialist = await call(backend, "schedule_appointment", patient_id=PRIYA, provider_id="dr_haddad_cardiology",
                            date="2025-06-13", time="13:00", appointment_type="specialist_consultation",
                            bill_insurance=None)  # null means "not given": insurance is billed
    assert (specialist["appointment_id"], specialist["copay_amount"]) == ("APPT032", 45.0)


async def test_schedule_appointment_self_pay_and_voucher(backend: TelehealthBackend) -> None:
    self_pay = await call(backend, "schedule_appointment", patient_id=TOMAS, provider_id=LINDQVIST,
                          date="2025-05-29", time="14:00", appointment_type="sick_visit", bill_insurance=False,
                          payment_notes="family fund")
    assert (self_pay["payment_method"], self_pay["copay_amount"], self_pay["insurance_authorization"],
            self_pay["voucher_id"], self_pay["notes"]) == ("self_pay", 0.0, None, None, "family fund")
    voucher = await call(backend, "schedule_appointment", patient_id=TOMAS, provider_id=LINDQVIST,
                         date="2025-05-30", time="09:00", appointment_type="sick_visit", bill_insurance=False,
                         voucher_id="THV-224")
    assert (voucher["payment_method"], voucher["voucher_id"]) == ("telehealth_voucher", "THV-224")
    ignored = await call(backend, "schedule_appointment", patient_id=TOMAS, provider_id=LINDQVIST,
                         date="2025-05-30", time="10:00", appointment_type="sick_visit", voucher_id="THV-9")
    assert (ignored["payment_method"], ignored["voucher_id"]) == ("insurance", None)  # tau-Trait ignores it


async def test_schedule_appointment_errors(backend: TelehealthBackend) -> None:
    args: dict[str, Any] = {"patient_id": PRIYA, "provider_id": LINDQVIST, "appointment_type": "follow_up"}
    await fails(backend, "Patient with ID ghost not found.", "schedule_appointment",
                **{**args, "patient_id": "ghost"}, date="2025-05-29", time="11:00")
    await fails(backend, "Provider with ID dr_who not found.", "schedule_appointment",
                **{**args, "provider_id": "dr_who"}, date="2025-05-29", time="11:00")
    await fails(backend, "Invalid date format: 29/05/2025. Please use YYYY-MM-DD format.", "schedule_appointment",
                **args, date="29/05/2025", time="11:00")
    await fails(backend, "Invalid date format: 2025-02-30. Please use YYYY-MM-DD format.", "schedule_appointment",
                **args, date="2025-02-30", time="11:00")
    await fails(backend, "Provider dr_lindqvist_primary does not work on Saturday.", "schedule_appointment",
                **args, date="2025-05-31", time="11:00")
    await fails(backend, "Provider dr_lindqvist_primary is not available at 10:00 on Thursday. Available times: "
                         "08:00, 09:00, 11:00, 14:00", "schedule_appointment", **args, date="2025-05-29", time="10:00")
    await fails(backend, "Provider dr_lindqvist_primary already has an appointment scheduled at 08:00 on "
                         "2025-05-29.", "schedule_appointment", **args, date="2025-05-29", time="08:00")
    await fails(backend, "appointment_type must not be empty.", "schedule_appointment",
                **{**args, "appointment_type": " "}, date="2025-05-29", time="11:00")


async def test_a_cancelled_slot_can_be_booked_again(backend: TelehealthBackend) -> None:
    await call(backend, "cancel_appointment", appointment_id="APPT009")  # Hana's Thursday 08:00
    booked = await call(backend, "schedule_appointment", patient_id=PRIYA, provider_id=LINDQVIST,
                        date="2025-05-29", time="08:00", appointment_type="follow_up")
    assert booked["appointment_id"] == NEXT_APPOINTMENT


async def test_schedule_without_insurance_on_file(tmp_path: Path) -> None:
    def uninsured(data: Data) -> None:
        data["patients"][TOMAS]["insurance"] = {}

    async with await open_backend_with(tmp_path, uninsured) as backend:
        await fails(backend, "Patient tomas_herrera_3391 has no primary insurance on file; schedule with "
                             "bill_insurance false (self-pay or a telehealth voucher).", "schedule_appointment",
                    patient_id=TOMAS, provider_id=LINDQVIST, date="2025-05-29", time="11:00",
                    appointment_type="follow_up")


# ----------------------------------------------------------------------------------- reschedule and cancel


async def test_reschedule_appointment(backend: TelehealthBackend) -> None:
    moved = await call(backend, "reschedule_appointment", appointment_id="APPT002", new_date="2025-06-13",
                       new_time="10:30")
    assert moved["rescheduled_from"] == {"date": "2025-06-12", "time": "10:30"}
    stored = await backend.store.get("appointments", "APPT002")
    assert stored is not None
    assert (stored["date"], stored["time"], stored["status"], stored["duration_minutes"]) == (
        "2025-06-13", "10:30", "scheduled", 45)
    pending = await call(backend, "reschedule_appointment", appointment_id="APPT005", new_date="2025-05-28",
                         new_time="12:00")
    assert pending["status"] == "pending_approval"  # moving does not approve it


async def test_reschedule_errors(backend: TelehealthBackend) -> None:
    await fails(backend, "Appointment with ID APPT999 not found.", "reschedule_appointment",
                appointment_id="APPT999", new_date="2025-06-13", new_time="10:30")
    await fails(backend, "Appointment APPT003 is completed and cannot be rescheduled; only scheduled or "
                         "pending_approval appointments can be.", "reschedule_appointment", appointment_id="APPT003",
                new_date="2025-06-03", new_time="14:00")
    await fails(backend, "Appointment APPT010 is cancelled and cannot be rescheduled; only scheduled or "
                         "pending_approval appointments can be.", "reschedule_appointment", appointment_id="APPT010",
                new_date="2025-05-29", new_time="14:00")
    await fails(backend, "Appointment APPT002 is already at 10:30 on 2025-06-12.", "reschedule_appointment",
                appointment_id="APPT002", new_date="2025-06-12", new_time="10:30")
    await fails(backend, "Provider dr_haddad_cardiology does not work on Wednesday.", "reschedule_appointment",
                appointment_id="APPT002", new_date="2025-06-11", new_time="10:30")
    await fails(backend, "Provider dr_lindqvist_primary already has an appointment scheduled at 08:00 on "
                         "2025-05-29.", "reschedule_appointment", appointment_id="APPT008", new_date="2025-05-29",
                new_time="08:00")


async def test_cancel_appointment_uses_the_domains_clock(backend: TelehealthBackend) -> None:
    cancelled = await call(backend, "cancel_appointment", appointment_id="APPT005")
    assert (cancelled["status"], cancelled["cancellation_reason"], cancelled["cancellation_date"]) == (
        "cancelled", "patient_cancelled", "2025-05-20")
    assert REFERENCE_DATE.isoformat() == "2025-05-20"
    await fails(backend, "Appointment APPT005 is already cancelled.", "cancel_appointment", appointment_id="APPT005")
    await fails(backend, "Appointment APPT003 is completed and cannot be cancelled.", "cancel_appointment",
                appointment_id="APPT003")
    await fails(backend, "Appointment with ID APPT999 not found.", "cancel_appointment", appointment_id="APPT999")


# ----------------------------------------------------------------------------------- records


async def test_update_prescription_supplier(backend: TelehealthBackend) -> None:
    updated = await call(backend, "update_prescription_supplier", record_id="REC003", medication="warfarin",
                         supplier_company="Deccan Pharma", brand_name="Warfadex", price_usd=4)
    warfarin = updated["prescriptions"][1]
    assert warfarin["pharmacy"] == "Deccan Pharma (Warfadex)"
    assert warfarin["supplier"] == {"company": "Deccan Pharma", "brand_name": "Warfadex", "price_usd": 4.0,
                                    "currency": "USD"}
    assert updated == await backend.store.get("medical_records", "REC003")  # the record as stored, as tau-Trait
    # tau-Trait's loose match: a name that starts the same finds the prescription
    loose = await call(backend, "update_prescription_supplier", record_id="REC003", medication="Atorvastatin 40mg",
                       supplier_company="Kaveri Generics", brand_name="Atorvika", price_usd=3.95, currency=None)
    assert loose["prescriptions"][0]["supplier"]["brand_name"] == "Atorvika"


async def test_update_prescription_supplier_errors(backend: TelehealthBackend) -> None:
    args: dict[str, Any] = {"supplier_company": "Deccan Pharma", "brand_name": "Warfadex", "price_usd": 4.1}
    await fails(backend, "Medical record REC999 not found.", "update_prescription_supplier", record_id="REC999",
                medication="Warfarin", **args)
    await fails(backend, "Medication Lisinopril not found in medical record REC003.", "update_prescription_supplier",
                record_id="REC003", medication="Lisinopril", **args)
    await fails(backend, "price_usd must be a non-negative number, got -1", "update_prescription_supplier",
                record_id="REC003", medication="Warfarin", **{**args, "price_usd": -1})
    await fails(backend, "supplier_company and brand_name must not be empty.", "update_prescription_supplier",
                record_id="REC003", medication="Warfarin", **{**args, "brand_name": ""})
    await fails(backend, "currency must be a three-letter code such as 'USD', got 'dollars'",
                "update_prescription_supplier", record_id="REC003", medication="Warfarin", **args, currency="dollars")


async def test_update_prescription_supplier_on_a_record_without_prescriptions(tmp_path: Path) -> None:
    def empty(data: Data) -> None:
        data["medical_records"]["REC002"]["prescriptions"] = []

    async with await open_backend_with(tmp_path, empty) as backend:
        await fails(backend, "Medical record REC002 has no prescriptions.", "update_prescription_supplier",
                    record_id="REC002", medication="Hydrocortisone Cream", supplier_company="Riverton Labs",
                    brand_name="CalmSkin", price_usd=7.5)


async def test_update_medical_record_note_appends(backend: TelehealthBackend) -> None:
    first = await call(backend, "update_medical_record_note", record_id="REC001", note="Checklist done.")
    assert first["notes"] == [{"note": "Checklist done."}]
    second = await call(backend, "update_medical_record_note", record_id="REC001", note="Reviewed.",
                        metadata={"by": "agent"})
    assert second["notes"] == [{"note": "Checklist done."}, {"note": "Reviewed.", "metadata": {"by": "agent"}}]
    await fails(backend, "The note must not be empty.", "update_medical_record_note", record_id="REC001", note="  ")
    await fails(backend, "Medical record REC999 not found.", "update_medical_record_note", record_id="REC999",
                note="x")


async def test_a_write_that_fails_after_storing_changes_nothing(backend: TelehealthBackend,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """schedule_appointment stores the new appointment, then builds its answer; if that fails, the stored
    appointment is rolled back with the rest (tau-Trait would have kept a half-made booking)."""

    async def broken_view(*_args: Any, **_kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("display names unavailable")

    monkeypatch.setattr(TelehealthBackend, "_appointment_view", broken_view)
    await fails(backend, "display names unavailable", "schedule_appointment", patient_id=PRIYA,
                provider_id=LINDQVIST, date="2025-05-29", time="11:00", appointment_type="follow_up")
    assert await backend.store.get("appointments", NEXT_APPOINTMENT) is None
    await fails(backend, "price_usd must be a non-negative number, got inf", "update_prescription_supplier",
                record_id="REC003", medication="Warfarin", supplier_company="X", brand_name="Y",
                price_usd=float("inf"))


async def test_generic_tools(backend: TelehealthBackend) -> None:
    assert await call(backend, "calculate", expression="500 + 250 + 350") == "1100.0"
    await fails(backend, "division by zero", "calculate", expression="1 / 0")
    assert await call(backend, "think", note="plan") == ""
    await fails(backend, "think: missing required argument 'note'", "think")
    await fails(backend, "transfer_to_human_support: missing required argument 'reason'", "transfer_to_human_support")
    assert await call(backend, "transfer_to_human_support", reason="platform down") == (
        "Transferring you to a human support representative. Reason for transfer: platform down")


async def test_writes_roll_back_and_restore_works(backend: TelehealthBackend) -> None:
    start = await backend.state_hash()
    snap = await backend.snapshot()
    await call(backend, "cancel_appointment", appointment_id="APPT002")
    await call(backend, "update_medical_record_note", record_id="REC001", note="x")
    assert await backend.state_hash() != start
    await backend.restore(snap)
    assert await backend.state_hash() == start


# ----------------------------------------------------------------------------------- seed and sources


def test_seed_file_is_what_the_generator_writes() -> None:
    assert SEED_FILE.read_text(encoding="utf-8") == render(generate())
    assert render(generate()) == render(generate())


def test_seed_referential_integrity_and_valid_slots() -> None:
    data = load_seed()
    docs = normalise(data)  # validates every record
    assert denormalise(docs) == data
    assert 10 <= len(data["patients"]) <= 20 and len(data["appointments"]) == 30
    taken: set[tuple[str, str, str]] = set()
    for appointment_id, doc in data["appointments"].items():
        assert doc["patient_id"] in data["patients"] and doc["provider_id"] in data["providers"], appointment_id
        weekday = date.fromisoformat(doc["date"]).strftime("%A").lower()
        assert doc["time"] in data["providers"][doc["provider_id"]]["schedule"][weekday], appointment_id
        if doc["status"] in ("scheduled", "pending_approval"):
            slot = (doc["provider_id"], doc["date"], doc["time"])
            assert slot not in taken, appointment_id
            taken.add(slot)
    assert ("dr_lindqvist_primary", "2025-05-29", "11:00") not in taken  # the scenario's slot is free
    for record_id, doc in data["medical_records"].items():
        assert doc["patient_id"] in data["patients"], record_id
        assert doc["appointment_id"] is None or data["appointments"][doc["appointment_id"]]["patient_id"] == \
            doc["patient_id"]


async def test_the_registry_opens_the_seed_a_seed_file_and_rejects_bad_sources(tmp_path: Path) -> None:
    seeded = await open_backend("telehealth", tmp_path / "a.sqlite")
    assert await seeded.call("find_patient_by_email", {"email": "marcus.feld@example.org"}) == MARCUS
    await seeded.close()
    from_file = await open_backend("telehealth", tmp_path / "b.sqlite", source=SEED_FILE)
    await from_file.close()
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendSourceError, match="missing patients.json, providers.json, appointments.json, "
                                                 "medical_records.json"):
        await open_backend("telehealth", tmp_path / "c.sqlite", source=tmp_path / "empty")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"patients": {"p1": {"patient_id": "p2"}}, "providers": {}, "appointments": {},
                                  "medical_records": {}}), encoding="utf-8")
    with pytest.raises(BackendSourceError, match="not a tau2 telehealth database"):
        await open_backend("telehealth", tmp_path / "d.sqlite", source=broken)
    with pytest.raises(ValueError, match="unknown telehealth collection"):
        normalise({**load_seed(), "users": {}})
    with pytest.raises(ValueError, match=r"patients\.priya_raman_6120: its patient_id is 'x'"):
        normalise({**load_seed(), "patients": {PRIYA: {**patient(PRIYA), "patient_id": "x"}}})


@pytest.mark.shared
@pytest.mark.skipif(not TAU_TRAIT.is_dir(), reason=f"tau-Trait telehealth data not found at {TAU_TRAIT}")
async def test_the_tau_trait_folder_loads_and_round_trips_byte_for_byte(tmp_path: Path) -> None:
    data = read_folder(TAU_TRAIT)
    assert set(data) == set(COLLECTIONS)  # tasks.json is ignored
    original = {name: json.loads((TAU_TRAIT / f"{name}.json").read_text(encoding="utf-8")) for name in COLLECTIONS}
    assert read_source(TAU_TRAIT) == original
    async with await TelehealthBackend.create(tmp_path / "tau.sqlite", data) as backend:
        exported = denormalise(await backend.export())
        assert json.dumps(exported) == json.dumps(original)  # same records, same key order, same numbers
        assert [len(original[n]) for n in ("patients", "providers", "appointments", "medical_records")] == \
            [27, 26, 49, 27]
        booked = await call(backend, "schedule_appointment", patient_id="sarah_johnson_1234",
                            provider_id="dr_garcia_primary", date="2025-09-23", time="10:00",
                            appointment_type="follow_up")
        assert (booked["appointment_id"], booked["insurance_authorization"]) == ("APPT059", "AUTH000059")
        cancelled = await call(backend, "cancel_appointment", appointment_id="APPT027")
        assert cancelled["cancellation_date"] == "2025-05-20"
