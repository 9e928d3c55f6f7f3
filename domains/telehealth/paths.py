"""Where telehealth read results land in the ledger, what each write can change, which reads the gate may make
itself, and who the patient is.

Ledger layout (one record per path, exactly as the tool returned it):

    auth.patient_id                the authenticated patient's id (bare string)
    lookups.<patient_id>           a later find_patient_* naming someone else (recorded, never trusted as auth)
    patient                        the authenticated patient's own profile (only when THAT profile was read)
    patients.<patient_id>          every profile read, the authenticated patient's included
    providers.<provider_id>        provider records, with their weekly schedules
    provider_lists.<specialty>     list_available_providers of one specialty (`provider_lists.all` unfiltered)
    appointments.<appointment_id>  appointment records
    appointment_lists.<patient_id> the patient's latest appointment listing (with the status filter it used)
    records.<record_id>            medical records
    record_lists.<patient_id>      the patient's latest record listing
    suppliers.<medication>         the latest supplier listing of that medication (catalogue spelling)
    interactions.<drug>            the latest interaction check with that drug as the primary medication
    regimens.<patient_id>          regimen options
    devices.<status>               telemetry device listings (`devices.all` unfiltered)
    uploads.<device_id>            a device's upload listing; telemetry.<device_id>.<date> one upload

Listings are stored as one entry, not fanned out into records: a listing's rows are summaries (no schedule
in a provider row, no notes in a record row), and a summary must never overwrite the full record at the
record's own path. A listing is also evidence in itself: "the patient's calendar was looked at, unfiltered"
is what the conflict rule needs, and only the listing as a whole can show it.

Identity rule. Authentication is a successful find_patient_by_email / find_patient_by_name_dob, and the
FIRST one wins for the whole conversation: the policy serves one patient per conversation (plus their
children and aged parents), so a later lookup of someone else must not silently switch whose appointments
may be changed. Such a lookup is kept under `lookups.<id>`; `auth.patient_id` stays as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.evidence import EvidenceReads, GateRead, customer_as, record_of
from core.ledger import LedgerReader, PathMap, PathRule, WriteEffect
from core.tools import ToolCall
from domains.telehealth.conversation import CONVERSATION

AUTH_PATH = "auth.patient_id"
PROFILE_PATH = "patient"


def identify(ledger: LedgerReader) -> str | None:
    """The authenticated patient's id, or None before any successful find_patient_* call."""
    value = ledger.get(AUTH_PATH)
    return value if isinstance(value, str) and value else None


def _authenticates(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """First successful lookup sets the patient; repeating it for the same patient just refreshes it."""
    return isinstance(result, str) and bool(result) and identify(ledger) in (None, result)


def _names_someone_else(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    current = identify(ledger)
    return isinstance(result, str) and bool(result) and current is not None and current != result


def _is_own_profile(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """Only the authenticated patient's profile becomes `patient`; a dependant's stays under patients.*."""
    patient = identify(ledger)
    return patient is not None and isinstance(result, dict) and result.get("patient_id") == patient


def _given(argument: str) -> Any:
    def condition(call: ToolCall, _result: Any, _ledger: LedgerReader) -> bool:
        return call.arguments.get(argument) is not None
    return condition


def _not_given(argument: str) -> Any:
    def condition(call: ToolCall, _result: Any, _ledger: LedgerReader) -> bool:
        return call.arguments.get(argument) is None
    return condition


def _find_patient_rules(tool: str) -> tuple[PathRule, ...]:
    return (
        PathRule(tool, AUTH_PATH, when=_authenticates, note="first successful lookup authenticates the patient"),
        PathRule(tool, "lookups.{result}", when=_names_someone_else,
                 note="a later lookup of a different patient; does not change who is authenticated"),
    )


# ---------------------------------------------------------------------------------------------------
# What each write can change (core.ledger.WriteEffect), from tau-Trait's telehealth tools
# (mock_backends/telehealth):
#
#   schedule_appointment         a new appointment: the booked patient's calendar listing
#   reschedule_appointment       the appointment's date and time; its patient's calendar listing
#   cancel_appointment           the appointment's status and cancellation fields; its patient's listing
#   update_prescription_supplier the record's prescriptions (the record listing names medications only)
#   update_medical_record_note   the record's notes
#
# Providers, schedules, suppliers, interactions, regimens and telemetry never change. Whose calendar an
# appointment write changes: the appointment's patient as observed; unknown, every listing.

SLOT_WRITES = frozenset({"schedule_appointment", "reschedule_appointment", "cancel_appointment"})


def _appointment_lists(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    record = ledger.get(f"appointments.{call.arguments.get('appointment_id')}")
    patient = record.get("patient_id") if isinstance(record, Mapping) else None
    return (f"appointment_lists.{patient}",) if isinstance(patient, str) and patient else ("appointment_lists.*",)


APPOINTMENT = "appointments.{appointment_id}"
WRITE_EFFECTS = (
    WriteEffect("schedule_appointment", ("appointment_lists.{patient_id}",)),
    WriteEffect("reschedule_appointment", (APPOINTMENT,), ("date", "time")),
    WriteEffect("reschedule_appointment", _appointment_lists),
    WriteEffect("cancel_appointment", (APPOINTMENT,), ("status", "cancellation_reason", "cancellation_date")),
    WriteEffect("cancel_appointment", _appointment_lists),
    WriteEffect("update_prescription_supplier", ("records.{record_id}",), ("prescriptions",)),
    WriteEffect("update_medical_record_note", ("records.{record_id}",), ("notes",)),
)


# ---------------------------------------------------------------------------------------------------
# The reads the gate may make itself (core.evidence): never a patient lookup; a record, appointment, profile
# or calendar of anyone but the authenticated patient (a dependant included) is the gate's evidence only.


EVIDENCE_READS = EvidenceReads(
    reads=(
        GateRead(PROFILE_PATH, "get_patient_details", customer_as("patient_id"), record_of("patient_id")),
        GateRead("patients.{patient_id}", "get_patient_details", owner=record_of("patient_id")),
        GateRead("providers.{provider_id}", "get_provider_details"),
        GateRead("appointments.{appointment_id}", "get_appointment_details", owner=record_of("patient_id")),
        GateRead("appointment_lists.{patient_id}", "list_patient_appointments", owner=record_of("patient_id"),
                 note="unfiltered: the listing a clash check needs"),
        GateRead("records.{record_id}", "get_medical_record", owner=record_of("patient_id")),
        GateRead("record_lists.{patient_id}", "list_patient_medical_records", owner=record_of("patient_id")),
        GateRead("suppliers.{medication}", "list_medication_suppliers"),
    ),
    identification=frozenset({"find_patient_by_email", "find_patient_by_name_dob"}),
)

PATH_MAP = PathMap(
    conversation=CONVERSATION,  # what the customer's messages give (domains/telehealth/conversation.py)
    effect_tools=SLOT_WRITES,  # the writes a rule counts (core.ledger.PathMap): the slots this conversation filled
    rules=(
        *_find_patient_rules("find_patient_by_email"),
        *_find_patient_rules("find_patient_by_name_dob"),
        PathRule("get_patient_details", "patients.{result.patient_id}"),
        PathRule("get_patient_details", PROFILE_PATH, when=_is_own_profile,
                 note="the authenticated patient's own profile"),
        PathRule("get_provider_details", "providers.{result.provider_id}"),
        PathRule("list_available_providers", "provider_lists.{result.specialty}", when=_given("specialty")),
        PathRule("list_available_providers", "provider_lists.all", when=_not_given("specialty")),
        PathRule("get_appointment_details", "appointments.{result.appointment_id}"),
        PathRule("list_patient_appointments", "appointment_lists.{result.patient_id}"),
        PathRule("get_medical_record", "records.{result.record_id}"),
        PathRule("list_patient_medical_records", "record_lists.{result.patient_id}"),
        PathRule("list_medication_suppliers", "suppliers.{result.medication}"),
        PathRule("check_drug_interactions", "interactions.{result.primary_medication}"),
        PathRule("get_regimen_options", "regimens.{result.patient_id}"),
        PathRule("list_telemetry_devices", "devices.{status_filter}", when=_given("status_filter")),
        PathRule("list_telemetry_devices", "devices.all", when=_not_given("status_filter")),
        PathRule("list_telemetry_uploads", "uploads.{device_id}"),
        PathRule("get_telemetry_upload", "telemetry.{result.device_id}.{result.date}"),
    ),
    write_effects=WRITE_EFFECTS,
)
