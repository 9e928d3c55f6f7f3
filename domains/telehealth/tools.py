"""The 23 telehealth tools, with tau-Trait's exact names and arguments so its tasks replay as they are.

Descriptions are our own and written for the model. They say what each id looks like, what a result
holds and which state a write expects, because the common failures in this domain are acting on the
wrong appointment status, booking a slot the provider does not offer, and quoting a price nobody looked
up. Policy limits that are stricter than the tools (which appointment types, which supplier and price)
are deliberately NOT schema enums: the gate rejects them with the rule and the observed records, which
tells the model why, not just that it was wrong.

Optional arguments accept null as well as a value: models often send `null` for "not given", and
tau-Trait's Python signatures default every optional argument to None.
"""

from __future__ import annotations

from typing import Any

from core.tools import ToolKind, ToolSpec, closed_object
from core.tools import string_arg as _string


def _optional(kind: str, description: str) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description}


_PATIENT_ID = _string("The patient id returned by find_patient_by_email or find_patient_by_name_dob, e.g. "
                      "'sarah_johnson_1234'.")
_PROVIDER_ID = _string("The provider id, e.g. 'dr_garcia_primary' (from list_available_providers or an "
                       "appointment).")
_APPOINTMENT_ID = _string("The appointment id, e.g. 'APPT012'.")
_RECORD_ID = _string("The medical record id, e.g. 'REC008'.")
_DATE = _string("A date in YYYY-MM-DD format, e.g. '2025-05-22'.")
_TIME = _string("A start time in 24-hour HH:MM format, exactly as listed in the provider's weekly schedule, "
                "e.g. '14:30'.")
_LIMIT = _optional("integer", "Return at most this many entries (a positive integer); all when omitted.")


TOOLS: tuple[ToolSpec, ...] = (
    # ----------------------------------------------------------------------------------- identity
    ToolSpec(
        name="find_patient_by_email",
        description=("Find a patient's id from the email address on their profile (not case-sensitive). A "
                     "successful lookup authenticates the patient for this conversation."),
        parameters=closed_object({"email": _string("The patient's email address.")}),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="find_patient_by_name_dob",
        description=("Find a patient's id from their first name, last name and date of birth, when they "
                     "cannot give their email. A successful lookup authenticates the patient for this "
                     "conversation."),
        parameters=closed_object({
            "first_name": _string("First name, e.g. 'Sarah'."),
            "last_name": _string("Last name, e.g. 'Johnson'."),
            "date_of_birth": _string("Date of birth in YYYY-MM-DD format, e.g. '1985-03-15'."),
        }),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_patient_details",
        description=("Read a patient's profile: name, date of birth, contact details, address, insurance "
                     "(primary care and specialist copays), medical history with current medications, and "
                     "emergency contact."),
        parameters=closed_object({"patient_id": _PATIENT_ID}),
        kind=ToolKind.READ,
    ),
    # ----------------------------------------------------------------------------------- scheduling
    ToolSpec(
        name="get_provider_details",
        description=("Read one provider: name and credentials, specialty, years of experience, languages, "
                     "consultation fee, contact, and the weekly schedule (weekday -> bookable start times). "
                     "A provider can only be booked at a listed time on a listed weekday."),
        parameters=closed_object({"provider_id": _PROVIDER_ID}),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_available_providers",
        description=("List providers, optionally of one specialty (e.g. 'Cardiology', 'Primary Care'): id, "
                     "name, specialty, experience, languages, fee and phone. It does not show schedules; "
                     "read get_provider_details for that."),
        parameters=closed_object({}, {"specialty": _optional("string", "A specialty name; all providers when "
                                                                     "omitted.")}),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_appointment_details",
        description=("Read one appointment: patient, provider, date, time, duration, type, status "
                     "(scheduled, pending_approval, completed or cancelled), billing (copay, authorization) "
                     "and meeting link. Read it again after changing it."),
        parameters=closed_object({"appointment_id": _APPOINTMENT_ID}),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_patient_appointments",
        description=("List a patient's appointments with their dates, times, durations, providers, types and "
                     "statuses, optionally only those of one status. List them without a status filter "
                     "before booking or moving an appointment, to see every possible clash."),
        parameters=closed_object({"patient_id": _PATIENT_ID}, {
            "status_filter": _optional("string", "Only appointments with this status: 'scheduled', "
                                                 "'pending_approval', 'completed' or 'cancelled'."),
        }),
        kind=ToolKind.READ,
    ),
    # ----------------------------------------------------------------------------------- records
    ToolSpec(
        name="get_medical_record",
        description=("Read one medical record by its id or by the appointment it documents: visit notes "
                     "(subjective, objective, assessment, plan) and prescriptions with their pharmacy and "
                     "supplier. Do not interpret it for the patient."),
        parameters=closed_object({}, {
            "record_id": _optional("string", "The record id, e.g. 'REC008'."),
            "appointment_id": _optional("string", "The appointment the record documents, e.g. 'APPT023'."),
        }),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_patient_medical_records",
        description=("List a patient's medical records, newest first: record id, date, type, appointment, "
                     "provider and the medications prescribed."),
        parameters=closed_object({"patient_id": _PATIENT_ID}, {"limit": _LIMIT}),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_medication_suppliers",
        description=("List the catalogue's suppliers of one medication, cheapest first: company, country, "
                     "brand and price in USD; optionally only one country's, and at most `limit` of them. "
                     "A supplier change must use a company, brand and price from this list."),
        parameters=closed_object({"medication": _string("The medication name as in the catalogue, e.g. "
                                                      "'Atorvastatin'.")}, {
            "country_filter": _optional("string", "Only suppliers from this country, e.g. 'India'."),
            "limit": _LIMIT,
        }),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="check_drug_interactions",
        description=("Check one medication against a list of others: each documented interaction with its "
                     "severity, risk score, overlap window, recommended action, medications to hold and "
                     "whether it needs emergency escalation. Do not give medical advice from it; a "
                     "high-severity result goes to the patient's provider."),
        parameters=closed_object({
            "primary_medication": _string("The medication to check, e.g. 'Warfarin'."),
            "current_medications": {"type": "array", "items": {"type": "string"},
                                    "description": "The other medications, e.g. ['Aspirin', 'Sertraline']."},
        }),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_regimen_options",
        description=("Read a patient's current medication regimen (doses, brands, suppliers, unit costs, pill "
                     "burden) and the optimized alternatives on file."),
        parameters=closed_object({"patient_id": _PATIENT_ID}),
        kind=ToolKind.READ,
    ),
    # ----------------------------------------------------------------------------------- telemetry
    ToolSpec(
        name="list_telemetry_devices",
        description=("List telemetry devices (device id, type, status, last audit date, notes), sorted by id, "
                     "optionally only those with one status such as 'available' or 'missing_overdue'."),
        parameters=closed_object({}, {
            "status_filter": _optional("string", "Only devices with this status, e.g. 'available'."),
            "limit": _LIMIT,
        }),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_telemetry_uploads",
        description="List a device's daily telemetry uploads, oldest first, optionally within a date window.",
        parameters=closed_object({"device_id": _string("The device id, e.g. 'VC-449'.")}, {
            "start_date": _optional("string", "First day to include, YYYY-MM-DD."),
            "end_date": _optional("string", "Last day to include, YYYY-MM-DD."),
            "limit": _LIMIT,
        }),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_telemetry_upload",
        description="Read one device's telemetry upload for one day.",
        parameters=closed_object({"device_id": _string("The device id, e.g. 'VC-449'."), "date": _DATE}),
        kind=ToolKind.READ,
    ),
    # ----------------------------------------------------------------------------------- writes
    ToolSpec(
        name="schedule_appointment",
        description=(
            "Book a new telehealth appointment (30 minutes) at a time listed in the provider's schedule for "
            "that weekday. By default insurance is billed and the copay follows the patient's plan (primary "
            "care copay for Primary Care, specialist copay otherwise). With bill_insurance false the visit "
            "is self-pay, or paid by a telehealth voucher when voucher_id is given. Only after the patient "
            "explicitly confirmed the details."),
        parameters=closed_object({
            "patient_id": _PATIENT_ID,
            "provider_id": _PROVIDER_ID,
            "date": _DATE,
            "time": _TIME,
            "appointment_type": _string("The visit type, e.g. 'follow_up' (see the policy for the types each "
                                        "provider can be booked for)."),
        }, {
            "bill_insurance": _optional("boolean", "False to skip insurance billing (self-pay or voucher); "
                                                   "true when omitted."),
            "voucher_id": _optional("string", "A telehealth voucher to pay with; used only when bill_insurance "
                                              "is false."),
            "payment_notes": _optional("string", "Notes on how the visit is paid, kept on the appointment."),
        }),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="reschedule_appointment",
        description=("Move a scheduled or pending_approval appointment to another date and time listed in the "
                     "same provider's schedule. Only after the patient explicitly confirmed the new time."),
        parameters=closed_object({"appointment_id": _APPOINTMENT_ID, "new_date": _DATE, "new_time": _TIME}),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="cancel_appointment",
        description=("Cancel a scheduled or pending_approval appointment; completed and already cancelled "
                     "appointments cannot be cancelled. Only after the patient explicitly confirmed."),
        parameters=closed_object({"appointment_id": _APPOINTMENT_ID}),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="update_prescription_supplier",
        description=("Set the supplier of one prescription in a medical record: the company, brand and USD "
                     "price exactly as list_medication_suppliers shows them for that medication. Returns "
                     "the updated record. Only after the patient explicitly confirmed."),
        parameters=closed_object({
            "record_id": _RECORD_ID,
            "medication": _string("The prescription's medication, exactly as named in the record."),
            "supplier_company": _string("The supplier company as listed, e.g. 'Lotus Respiratory'."),
            "brand_name": _string("The supplier's brand name as listed, e.g. 'Flohale'."),
            "price_usd": {"type": "number", "description": "The listed price in USD, e.g. 7.1."},
        }, {"currency": _optional("string", "Currency of the price; 'USD' when omitted.")}),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="update_medical_record_note",
        description=("Append a note (and optional structured metadata) to a medical record, e.g. to document "
                     "a completed checklist. Returns the updated record."),
        parameters=closed_object({"record_id": _RECORD_ID, "note": _string("The note text to append.")},
                               {"metadata": {"type": ["object", "null"],
                                             "description": "Optional structured data kept with the note."}}),
        kind=ToolKind.WRITE,
    ),
    # ----------------------------------------------------------------------------------- generic
    ToolSpec(
        name="calculate",
        description=("Evaluate an arithmetic expression (numbers, + - * / and parentheses), e.g. to add up "
                     "copays. Returns the result rounded to 2 decimals."),
        parameters=closed_object({"expression": _string("The expression, e.g. '45 + 20'.")}),
        kind=ToolKind.GENERIC,
    ),
    ToolSpec(
        name="think",
        description=("Write down your reasoning (for example a plan for a multi-step request). Changes nothing "
                     "and returns nothing."),
        parameters=closed_object({"note": _string("Your reasoning.")}),
        kind=ToolKind.GENERIC,
    ),
    ToolSpec(
        name="transfer_to_human_support",
        description=("Hand the conversation to a human support agent, with the reason. Use it only when the "
                     "request cannot be handled with these tools within the policy (including technical "
                     "problems with the telehealth platform), or when the policy says to escalate."),
        parameters=closed_object({"reason": _string("Who the patient is and what they need.")}),
        kind=ToolKind.GENERIC,
    ),
)
