"""Telehealth policy as executable predicates over the ledger (tau-Trait had none for this domain).

Each predicate is one sentence of `policy.md`, checked against observed records only. Reading rules:

- `view.get/require` is the only way to see the ledger; every path read becomes the verdict's evidence.
  Stale or absent evidence that a rule needs makes the gate answer REVISE ("read X first").
- Severity follows "can the model fix this by changing the call, or by reading?". A wrong slot, type,
  billing choice, supplier or price is REVISE: another argument fixes it. A fact about the world that no
  argument changes is BLOCK: the appointment or record is someone else's, or the appointment is completed
  or cancelled. Acting for another patient is a BLOCK only on what their record shows (it names someone
  else as emergency contact); before their record is read it is a read to make, never a refusal, and the
  gate makes it itself as its own evidence (never shown to the model).
- House rules (labelled, REVISE at most, switched off with the domain's `house_rules`): the age limits of
  a dependant (a child under 18, a parent 65 or older), the specialised appointment types by specialty,
  and the severe-interaction hold on a supplier change. The hold is a function of observed facts, never of
  the order or number of reads: it judges every check run with the medication as primary (all of them,
  current and superseded, so the order they came in and which ran last do not matter) against the record
  being changed, and a severe partner that record prescribes too is the prescriber's known regimen, which a
  supplier change does not alter. So a legal change stays legal however much the agent checks (tau-Trait
  gold task 10 changes Sertraline's supplier on a record that also prescribes Warfarin, a high-severity
  pair), and a change held for a drug the record does not prescribe stays held whatever else is read. It
  does not demand the check: a mandatory check would hold task 10's gold, which the upstream policy allows.
- Before a patient is authenticated only `telehealth.authenticated` complains; rules that need to know
  the patient pass with a note instead of piling up the same complaint.
- Every lookup is a dictionary access on a path the call (or a record it names) determines, never a scan
  of the whole ledger, so a decision costs the same with 50 or 10,000 observed records. The one exception
  is a fallback: a supplier listing asked for under another spelling than the catalogue's is searched
  among the `suppliers.*` entries.
- The patient's explicit "yes" to an appointment change is read from what they said (core.conversation):
  `telehealth.explicit_confirmation`, for the writes tau-Trait's policy names (schedule, reschedule, cancel).
- What a predicate cannot see (medical advice, one tool call per turn, when to transfer) is not faked here;
  `policy.md` lists it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.conversation_rules import explicitly_confirmed
from core.gate import (
    GateContext,
    LedgerView,
    MissingEvidence,
    Outcome,
    Pass,
    Predicate,
    Verdict,
    Violation,
    predicate,
    requires_customer,
)
from core.money import cents
from core.tools import ToolCall, call_text
from domains.telehealth.paths import AUTH_PATH, PROFILE_PATH
from domains.telehealth.vocabulary import (
    ACTIONABLE_STATUSES,
    ADULT_AGE,
    AGED_PARENT_AGE,
    CHILD_RELATIONSHIPS,
    GENERAL_TYPES,
    NEW_APPOINTMENT_MINUTES,
    PARENT_RELATIONSHIPS,
    REFERENCE_DATE,
    SEVERE_SEVERITIES,
    SPECIALISED_TYPES,
    age_on,
)

SCHEDULE = "schedule_appointment"
RESCHEDULE = "reschedule_appointment"
CANCEL = "cancel_appointment"
SUPPLIER = "update_prescription_supplier"
NOTE = "update_medical_record_note"

APPOINTMENT_CHANGES = (RESCHEDULE, CANCEL)
BOOKINGS = (SCHEDULE, RESCHEDULE)
RECORD_WRITES = (SUPPLIER, NOTE)
ALL_WRITES = (SCHEDULE, RESCHEDULE, CANCEL, SUPPLIER, NOTE)

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^(\d{2}):(\d{2})$")

Record = Mapping[str, Any]


# ---------------------------------------------------------------------------------------------------
# Reading helpers: how a rule gets the records it needs, and what to tell the model when they are missing.


def _patient_id(view: LedgerView, ctx: GateContext) -> str | None:
    """Who is authenticated; reading auth.patient_id through the view makes it part of the evidence."""
    view.get(AUTH_PATH)
    return ctx.customer_id


def _appointment(view: LedgerView, call: ToolCall) -> tuple[str, Record]:
    appointment_id = str(call.arguments.get("appointment_id", ""))
    record: Record = view.need(f"appointments.{appointment_id}",
                           call_text("get_appointment_details", appointment_id=appointment_id))
    return appointment_id, record


def _record(view: LedgerView, call: ToolCall) -> tuple[str, Record]:
    record_id = str(call.arguments.get("record_id", ""))
    record: Record = view.need(f"records.{record_id}", call_text("get_medical_record", record_id=record_id))
    return record_id, record


def _profile(view: LedgerView, patient_id: str) -> Record:
    profile: Record = view.need(f"patients.{patient_id}", call_text("get_patient_details", patient_id=patient_id))
    return profile


def _provider(view: LedgerView, provider_id: str) -> Record:
    provider: Record = view.need(f"providers.{provider_id}",
                             call_text("get_provider_details", provider_id=provider_id))
    return provider


def _mapping(value: Any) -> Record:
    return value if isinstance(value, Mapping) else {}


def _full_name(profile: Record) -> str:
    name = _mapping(profile.get("name"))
    return f"{name.get('first_name', '')} {name.get('last_name', '')}".strip()


def _minutes(time: Any) -> int | None:
    match = _TIME.match(time) if isinstance(time, str) else None
    if match is None:
        return None
    hours, minutes = int(match.group(1)), int(match.group(2))
    return hours * 60 + minutes if hours < 24 and minutes < 60 else None


def _weekday(day: Any) -> str | None:
    if not isinstance(day, str) or not _DATE.match(day):
        return None
    try:
        return datetime.strptime(day, "%Y-%m-%d").strftime("%A").lower()
    except ValueError:
        return None


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


# ---------------------------------------------------------------------------------------------------
# Who may act for whom.


def _dependant_reason(patient: Record, other: Record) -> str | None:
    """None when `other` is a dependant of `patient` (their record names `patient` as emergency contact, as
    parent or as son/daughter), else why not. The ages are the house rule telehealth.dependant_age's."""
    contact = _mapping(other.get("emergency_contact"))
    contact_name = str(contact.get("name", "")).strip().lower()
    relationship = str(contact.get("relationship", "")).strip().lower()
    if not contact_name or contact_name != _full_name(patient).lower():
        return f"their emergency contact is {contact.get('name')!r}, not {_full_name(patient)!r}"
    if relationship in PARENT_RELATIONSHIPS or relationship in CHILD_RELATIONSHIPS:
        return None
    return f"{_full_name(patient)} is their {relationship or 'contact'}, not their parent, son or daughter"


def _in_scope(view: LedgerView, ctx: GateContext, patient_id: str, what: str, where: str) -> Outcome:
    """Pass when `patient_id` is the authenticated patient or their dependant; `what`/`where` name the
    thing being changed and the ledger value that says whose it is, for the reason.

    Whether someone else is a dependant shows only in their own record (it names the patient as emergency
    contact) and the patient's profile (their name): judged on those once read; until then it is unknown, and
    unknown is a read to make (a REVISE that needs a read), never a refusal. The gate reads those records itself
    as its own evidence: another patient's record is never shown to the model (core.evidence, `gate_only`)."""
    customer = _patient_id(view, ctx)
    if customer is None:
        return Pass("no authenticated patient yet (see telehealth.authenticated)")
    if patient_id == customer:
        return Pass()
    own = view.get(PROFILE_PATH)
    other = view.get(f"patients.{patient_id}")
    if not isinstance(own, Mapping) or not isinstance(other, Mapping):
        unread = [path for path, record in ((PROFILE_PATH, own), (f"patients.{patient_id}", other))
                  if not isinstance(record, Mapping)]
        reads = [call_text("get_patient_details", patient_id=customer if path == PROFILE_PATH else patient_id)
                 for path in unread]
        return MissingEvidence(
            paths=tuple(unread),
            reason=f"{what} is for patient {patient_id!r} ({where}), not the authenticated patient {customer!r} "
                   f"(auth.patient_id); whether {patient_id!r} is their child or aged parent shows only in "
                   f"{patient_id!r}'s own record, which names their emergency contact: read {', '.join(reads)}, and "
                   "share nothing from another patient's record unless it names the patient")
    why_not = _dependant_reason(own, other)
    if why_not is None:
        return Pass(f"{patient_id} is a dependant of {customer}")
    return Violation(
        f"{what} is for patient {patient_id!r} ({where}), not the authenticated patient {customer!r} "
        f"(auth.patient_id), and {patient_id!r} is not their dependant: {why_not} "
        f"(patients.{patient_id}.emergency_contact)"
    )


def _outsider(view: LedgerView, ctx: GateContext, patient_id: str) -> bool:
    """True unless `patient_id` is known to be the patient or a dependant (an outsider, or not known yet). Rules
    that read the booked patient's own data (calendar, insurance) then stand aside: the scope rules refuse the
    call or ask for the records that settle it, and asking the agent to read a stranger's calendar would be both
    noise and a privacy breach."""
    return not isinstance(_in_scope(view, ctx, patient_id, "", ""), Pass)


for_patient = requires_customer("telehealth.authenticated", _patient_id, "no authenticated patient yet")
# Rules about a record the call names (a reservation, order, appointment, medical record, a patient's
# calendar or insurance) stand aside until someone is identified: before that the record may be anyone's,
# and a "read it first" hint would ask the agent to read a stranger's data.
# Only ctx is consulted, so the evidence stays the record the rule judges.
once_identified = requires_customer("telehealth.authenticated", lambda view, ctx: ctx.customer_id,
                                    "no authenticated patient yet")


@predicate(
    id="telehealth.authenticated",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="Authenticate the patient with find_patient_by_email or find_patient_by_name_dob before changing "
           "anything, even when they give their patient id.",
)
def authenticated(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _patient_id(view, ctx) is None:
        return Violation(
            "no patient has been authenticated in this conversation (auth.patient_id is not set); find their "
            "id with find_patient_by_email, or find_patient_by_name_dob with their full name and date of birth"
        )
    return Pass()


@predicate(
    id="telehealth.schedule_for_patient",
    tools=[SCHEDULE],
    severity=Verdict.BLOCK,
    policy="Book appointments only for the authenticated patient, or for their child or aged parent whose "
           "record names them as emergency contact.",
)
def schedule_for_patient(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    patient_id = str(call.arguments.get("patient_id", ""))
    return _in_scope(view, ctx, patient_id, "the booking", "patient_id")


@predicate(
    id="telehealth.appointment_belongs_to_patient",
    tools=APPOINTMENT_CHANGES,
    severity=Verdict.BLOCK,
    policy="Only change appointments of the authenticated patient or of their dependants; refuse requests "
           "about anyone else's.",
)
@for_patient
def appointment_belongs_to_patient(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    appointment_id, appointment = _appointment(view, call)
    owner = str(appointment.get("patient_id"))
    return _in_scope(view, ctx, owner, f"appointment {appointment_id}", f"appointments.{appointment_id}.patient_id")


@predicate(
    id="telehealth.record_belongs_to_patient",
    tools=RECORD_WRITES,
    severity=Verdict.BLOCK,
    policy="Only change medical records of the authenticated patient or of their dependants.",
)
@for_patient
def record_belongs_to_patient(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    record_id, record = _record(view, call)
    owner = str(record.get("patient_id"))
    return _in_scope(view, ctx, owner, f"medical record {record_id}", f"records.{record_id}.patient_id")


def _whose(view: LedgerView, call: ToolCall) -> str | None:
    """The patient a write concerns, from its arguments or the (already read) record it names."""
    if call.name == SCHEDULE:
        return str(call.arguments.get("patient_id", ""))
    path = (f"appointments.{call.arguments.get('appointment_id')}" if call.name in APPOINTMENT_CHANGES
            else f"records.{call.arguments.get('record_id')}")
    record = view.get(path)
    return str(record.get("patient_id")) if isinstance(record, Mapping) else None


@predicate(
    id="telehealth.dependant_age",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="A dependant is a child under 18 or a parent aged 65 or older.",
    house_rule=True,
)
@for_patient
def dependant_age(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    other_id = _whose(view, call)
    if other_id is None or other_id == patient:
        return Pass()
    other = view.get(f"patients.{other_id}")
    if not isinstance(other, Mapping) or _outsider(view, ctx, other_id):
        return Pass("not a dependant at all (see the scope rules)")
    relationship = str(_mapping(other.get("emergency_contact")).get("relationship", "")).strip().lower()
    born = _mapping(other.get("demographics")).get("date_of_birth")
    today = ctx.now.date() if ctx.now is not None else REFERENCE_DATE
    age = age_on(str(born), today)
    if age is None:
        return Violation(f"{other_id}'s date of birth {born!r} does not parse (patients.{other_id}.demographics)")
    if relationship in PARENT_RELATIONSHIPS and age >= ADULT_AGE:
        return Violation(f"{other_id} is {age} on {today} (patients.{other_id}.demographics.date_of_birth), an adult; "
                         f"a parent acts for a child under {ADULT_AGE}")
    if relationship in CHILD_RELATIONSHIPS and age < AGED_PARENT_AGE:
        return Violation(f"{other_id} is {age} on {today} (patients.{other_id}.demographics.date_of_birth); a son or "
                         f"daughter acts for a parent aged {AGED_PARENT_AGE} or older")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Appointment status. BLOCK: no argument makes a completed or cancelled appointment changeable.


@predicate(
    id="telehealth.appointment_actionable",
    tools=APPOINTMENT_CHANGES,
    severity=Verdict.BLOCK,
    policy="Only a scheduled or pending_approval appointment can be cancelled or rescheduled; completed and "
           "cancelled appointments cannot.",
)
@once_identified
def appointment_actionable(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    appointment_id, appointment = _appointment(view, call)
    status = appointment.get("status")
    if status not in ACTIONABLE_STATUSES:
        action = "cancelled" if call.name == CANCEL else "rescheduled"
        return Violation(
            f"appointment {appointment_id} has status {status!r} (appointments.{appointment_id}.status); only "
            f"scheduled or pending_approval appointments can be {action}"
        )
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Booking a slot: the provider's schedule, the patient's calendar, the type, the billing.


@dataclass(frozen=True)
class _Slot:
    """The slot a schedule or reschedule call asks for, with what it is judged against."""

    patient_id: str
    provider_id: str
    day: Any
    time: Any
    minutes: int
    moving: str | None  # the appointment being rescheduled (it does not clash with itself)


def _slot(view: LedgerView, call: ToolCall) -> _Slot:
    if call.name == SCHEDULE:
        args = call.arguments
        return _Slot(str(args.get("patient_id", "")), str(args.get("provider_id", "")), args.get("date"),
                     args.get("time"), NEW_APPOINTMENT_MINUTES, None)
    appointment_id, appointment = _appointment(view, call)
    duration = appointment.get("duration_minutes")
    return _Slot(str(appointment.get("patient_id")), str(appointment.get("provider_id")),
                 call.arguments.get("new_date"), call.arguments.get("new_time"),
                 duration if isinstance(duration, int) and duration > 0 else NEW_APPOINTMENT_MINUTES, appointment_id)


@predicate(
    id="telehealth.provider_available",
    tools=BOOKINGS,
    severity=Verdict.REVISE,
    policy="Book or move an appointment only to a time the provider's schedule lists for that weekday; read "
           "the provider's details first.",
)
@once_identified
def provider_available(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    slot = _slot(view, call)
    provider = _provider(view, slot.provider_id)
    weekday = _weekday(slot.day)
    if weekday is None:
        return Violation(f"date {slot.day!r} is not a valid YYYY-MM-DD date")
    schedule = _mapping(provider.get("schedule"))
    where = f"providers.{slot.provider_id}.schedule"
    if weekday not in schedule:
        days = [d for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
                if d in schedule]
        return Violation(f"{slot.provider_id} does not work on {weekday.title()}s ({slot.day}); {where} lists "
                         f"{', '.join(days) or 'no days'}")
    times = [str(t) for t in schedule[weekday]] if isinstance(schedule[weekday], list) else []
    if slot.time not in times:
        return Violation(f"{slot.time!r} is not one of {slot.provider_id}'s {weekday.title()} times {times} "
                         f"({where}.{weekday})")
    return Pass()


def _clashes(listing: Record, slot: _Slot) -> list[str]:
    start = _minutes(slot.time)
    if start is None:
        return []
    end = start + slot.minutes
    found: list[str] = []
    for other in listing.get("appointments", []):
        other = _mapping(other)
        if other.get("appointment_id") == slot.moving or other.get("status") not in ACTIONABLE_STATUSES:
            continue
        if other.get("date") != slot.day:
            continue
        other_start = _minutes(other.get("time"))
        duration = other.get("duration_minutes")
        if other_start is None or not isinstance(duration, int):
            continue
        same_provider_time = other.get("provider_id") == slot.provider_id and other_start == start
        if (other_start < end and start < other_start + duration) or same_provider_time:
            found.append(f"{other.get('appointment_id')} ({other.get('status')}, {other.get('provider_id')}, "
                         f"{slot.day} {_clock(other_start)}-{_clock(other_start + duration)})")
    return found


@predicate(
    id="telehealth.no_conflicting_appointment",
    tools=BOOKINGS,
    severity=Verdict.REVISE,
    policy="Before booking or moving an appointment, list the patient's appointments without a status "
           "filter; the new time must not overlap another scheduled or pending appointment.",
)
@once_identified
def no_conflicting_appointment(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    slot = _slot(view, call)
    if _outsider(view, ctx, slot.patient_id):
        return Pass("not known to be the patient's or a dependant's appointment (see the scope rules)")
    path = f"appointment_lists.{slot.patient_id}"
    read = call_text("list_patient_appointments", patient_id=slot.patient_id)
    listing: Record = view.need(path, read)
    if listing.get("status_filter") is not None:
        return MissingEvidence(
            paths=(path,),
            reason=f"the latest listing was filtered to {listing.get('status_filter')!r} ({path}.status_filter), "
                   f"which can hide a clash; list them all with {read}",
        )
    start = _minutes(slot.time)
    clashes = _clashes(listing, slot)
    if clashes:
        window = f"{slot.day} {slot.time}-{_clock(start + slot.minutes)}" if start is not None else str(slot.time)
        return Violation(f"{window} overlaps {'; '.join(clashes)} ({path}.appointments)")
    return Pass()


def _slots_filled_here(view: LedgerView) -> dict[tuple[str, str, str], str]:
    """(provider, date, time) -> the appointment holding it, over this conversation's executed bookings, moves
    and cancellations in the order they ran (their own returns, `effects.*`): a booking fills its slot, a move
    frees the old one and fills the new, a cancellation frees it."""
    held: dict[str, tuple[str, str, str]] = {}
    for effect in view.effects(SCHEDULE, RESCHEDULE, CANCEL):
        result = _mapping(effect.result)
        appointment_id = str(result.get("appointment_id", ""))
        if effect.tool == CANCEL or result.get("status") not in ACTIONABLE_STATUSES:
            held.pop(appointment_id, None)
        else:
            held[appointment_id] = (str(result.get("provider_id")), str(result.get("date")), str(result.get("time")))
    return {slot: appointment_id for appointment_id, slot in held.items()}


@predicate(
    id="telehealth.provider_slot_free",
    tools=BOOKINGS,
    severity=Verdict.REVISE,
    policy="A provider sees one patient per slot: a time this conversation already booked with that provider, "
           "for anyone, is taken until that appointment is moved or cancelled.",
)
@once_identified
def provider_slot_free(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    slot = _slot(view, call)
    holder = _slots_filled_here(view).get((slot.provider_id, str(slot.day), str(slot.time)))
    if holder is None or holder == slot.moving:
        return Pass()
    return Violation(f"{slot.provider_id}'s {slot.day} {slot.time} slot is taken by {holder}, booked earlier in "
                     f"this conversation (effects.{SCHEDULE} / effects.{RESCHEDULE}); choose another time")


@predicate(
    id="telehealth.appointment_type_allowed",
    tools=[SCHEDULE],
    severity=Verdict.REVISE,
    policy="The appointment type is one of the general types, or a specialised type that the provider's "
           "specialty offers (for example therapy_session with a therapist).",
    house_rule=True,
)
@once_identified
def appointment_type_allowed(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    kind = call.arguments.get("appointment_type")
    if kind in GENERAL_TYPES:
        return Pass()
    provider_id = str(call.arguments.get("provider_id", ""))
    specialty = _provider(view, provider_id).get("specialty")
    offered = [t for t, specialties in SPECIALISED_TYPES.items() if specialty in specialties]
    if kind in offered:
        return Pass()
    return Violation(
        f"appointment type {kind!r} cannot be booked with {provider_id} ({specialty}, "
        f"providers.{provider_id}.specialty); use one of {list(GENERAL_TYPES) + offered}"
    )


@predicate(
    id="telehealth.billing_consistent",
    tools=[SCHEDULE],
    severity=Verdict.REVISE,
    policy="Insurance is billed only for a patient with a primary plan on file, and a voucher only applies "
           "when insurance billing is turned off; read the patient's insurance first.",
)
@once_identified
def billing_consistent(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    patient_id = str(call.arguments.get("patient_id", ""))
    if _outsider(view, ctx, patient_id):
        return Pass("not known to be the patient's or a dependant's booking (see telehealth.schedule_for_patient)")
    profile = _profile(view, patient_id)
    bill_insurance = call.arguments.get("bill_insurance")
    voucher = call.arguments.get("voucher_id")
    if bill_insurance is False:
        return Pass("self-pay" if voucher is None else "telehealth voucher")
    if voucher is not None:
        return Violation(
            f"voucher {voucher!r} is given but insurance would be billed (bill_insurance is "
            f"{'omitted' if bill_insurance is None else bill_insurance}); the voucher is only used with "
            "bill_insurance false, so either turn insurance billing off or drop the voucher"
        )
    plan = _mapping(_mapping(profile.get("insurance")).get("primary"))
    copays = [plan.get("copay_primary"), plan.get("copay_specialist")]
    if not plan or not all(isinstance(c, int | float) and not isinstance(c, bool) for c in copays):
        return Violation(
            f"patient {patient_id} has no primary insurance plan with copays on file "
            f"(patients.{patient_id}.insurance.primary is {plan.get('provider') if plan else None!r}); book it "
            "as self-pay or with a voucher (bill_insurance false)"
        )
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Prescriptions: the record, the supplier catalogue, drug interactions.


def _prescriptions(record: Record) -> list[Record]:
    items = record.get("prescriptions", [])
    return [p for p in items if isinstance(p, Mapping)] if isinstance(items, list) else []


def _named_prescription(record: Record, medication: str) -> tuple[str | None, list[str]]:
    """The record's own name of the prescription a supplier change of `medication` changes, and the names it
    could mean, as the tool resolves it: tau-Trait's `UpdatePrescriptionSupplier.invoke`
    (tau_trait/envs/telehealth/tools/update_prescription_supplier.py) matches the name ignoring case and
    surrounding spaces, else the first prescription whose name starts the given one or that the given one
    starts ("handles appended dosage info like 'lamotrigine 100mg BID'"); with names repeated, the last
    prescription of a name wins. A name that could mean several prescriptions names none of them here (the tool
    would change the first, whichever the agent meant), and a prescription without a name matches nothing."""
    wanted = medication.strip().lower()
    by_key: dict[str, str] = {}
    for item in _prescriptions(record):
        name = str(item.get("medication", ""))
        by_key[name.strip().lower()] = name
    if not wanted:
        return None, []
    if wanted in by_key:
        return by_key[wanted], [by_key[wanted]]
    partial = [name for key, name in by_key.items() if key and (wanted.startswith(key) or key.startswith(wanted))]
    return (partial[0] if len(partial) == 1 else None), partial


@predicate(
    id="telehealth.prescription_in_record",
    tools=[SUPPLIER],
    severity=Verdict.REVISE,
    policy="A supplier change names one medication the record prescribes, as the tool matches it: the record's "
           "name in any case, or that name with a dosage added.",
)
@once_identified
def prescription_in_record(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    """Legal exactly where tau-Trait's tool finds the one prescription meant (see `_named_prescription`):
    "Montelukast 10 mg" changes the record's "Montelukast", as the tool does."""
    record_id, record = _record(view, call)
    medication = str(call.arguments.get("medication", ""))
    names = [str(p.get("medication", "")) for p in _prescriptions(record)]
    named, candidates = _named_prescription(record, medication)
    if named is not None:
        return Pass("" if named == medication else f"{medication!r} is the record's {named!r}, as the tool matches "
                                                    f"it (records.{record_id}.prescriptions)")
    if len(candidates) > 1:
        return Violation(f"{medication!r} could be any of {candidates} (records.{record_id}.prescriptions), and the "
                         f"tool would change the first, {candidates[0]!r}; name the one meant as the record does")
    return Violation(f"record {record_id} prescribes {names} (records.{record_id}.prescriptions), not {medication!r}")


def _spellings(view: LedgerView, call: ToolCall) -> list[str]:
    """The names a supplier change's medication goes by: the record's own name of it first (the catalogue's and
    the interaction checks' spelling), when the record was read and names it, then the name the call gives."""
    medication = str(call.arguments.get("medication", "")).strip()
    record = view.get(f"records.{call.arguments.get('record_id', '')}")
    named = _named_prescription(record, medication)[0] if isinstance(record, Mapping) else None
    return list(dict.fromkeys([*([named.strip()] if named else []), medication]))


def _supplier_listing(view: LedgerView, medication: str) -> tuple[str, Record] | None:
    """The latest listing of the medication, under the catalogue's spelling (case-insensitive)."""
    exact = view.get(f"suppliers.{medication}")
    if isinstance(exact, Mapping):
        return f"suppliers.{medication}", exact
    for path, value in view.glob("suppliers.*").items():  # rare: another spelling than the catalogue's
        if path.split(".", 1)[1].lower() == medication.strip().lower() and isinstance(value, Mapping):
            return path, value
    return None


def _offer_text(offer: Record) -> str:
    price = offer.get("price_usd")
    shown = f"{price:.2f}" if isinstance(price, int | float) else repr(price)
    return f"{offer.get('company')} ({offer.get('country')}) / {offer.get('brand_name')} at {shown}"


def _same_company(given: str, offer: Record) -> bool:
    """The listing's company, or its "Company (Country)" display form (tau-Trait's tasks use both)."""
    company, country = str(offer.get("company", "")), str(offer.get("country", ""))
    return given.strip().lower() in (company.lower(), f"{company} ({country})".lower())


@predicate(
    id="telehealth.supplier_observed",
    tools=[SUPPLIER],
    severity=Verdict.REVISE,
    policy="A prescription's new supplier, brand and price must be one of the offers list_medication_suppliers "
           "showed for that medication, in USD.",
)
@once_identified
def supplier_observed(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    args = call.arguments
    if not isinstance(view.get(f"records.{args.get('record_id', '')}"), Mapping):
        return Pass("which medication the call names shows in its record (see telehealth.prescription_in_record)")
    spellings = _spellings(view, call)
    medication = spellings[0]
    found = next((hit for name in spellings if (hit := _supplier_listing(view, name)) is not None), None)
    if found is None:
        return MissingEvidence(
            paths=(f"suppliers.{medication}",),
            reason=f"Read the catalogue with {call_text('list_medication_suppliers', medication=medication)}",
        )
    path, listing = found
    offers = [_mapping(o) for o in listing.get("suppliers", [])]
    company, brand = str(args.get("supplier_company", "")), str(args.get("brand_name", ""))
    price = args.get("price_usd")
    currency = args.get("currency") or "USD"
    shown = "; ".join(_offer_text(o) for o in offers) or "no offers"
    matching = [o for o in offers if _same_company(company, o)
                and str(o.get("brand_name", "")).strip().lower() == brand.strip().lower()]
    if not matching:
        return Violation(f"{company!r} / {brand!r} is not an offer in the latest {medication} listing ({path}: "
                         f"{shown})")
    offer = matching[0]
    listed = offer.get("price_usd")
    if not isinstance(price, int | float) or not isinstance(listed, int | float) or \
            isinstance(price, bool) or cents(price) != cents(listed):
        return Violation(f"price {price!r} was not observed: {path} lists {_offer_text(offer)} "
                         f"({path}.suppliers[{offers.index(offer)}].price_usd)")
    if str(currency).upper() != "USD":
        return Violation(f"currency {currency!r}: the catalogue's prices are in USD ({path})")
    return Pass()


def _severe_partners(check: Record, medication: str) -> Iterable[tuple[str, str]]:
    """(partner, "primary + partner (severity[, emergency])") for each severe pair of `medication` in one check."""
    primary = str(check.get("primary_medication", ""))
    for item in check.get("interactions", []):
        item = _mapping(item)
        other = str(item.get("medication", ""))
        if medication.lower() == primary.lower():
            partner = other
        elif medication.lower() == other.lower():
            partner = primary
        else:
            continue
        severity = str(item.get("severity", "")).lower()
        if severity in SEVERE_SEVERITIES or item.get("emergency") is True:
            emergency = ", emergency" if item.get("emergency") is True else ""
            yield partner, f"{primary} + {other} ({severity}{emergency})"


def _checks_of(view: LedgerView, medication: str, spellings: Iterable[str]) -> list[tuple[str, Record]]:
    """Every interaction check run with `medication` as primary in this conversation (current and superseded,
    under the argument's or the record's spelling): the hold judges all of them, so neither the order the
    checks came in nor which of them ran last can change the verdict."""
    found: list[tuple[str, Record]] = []
    for name in dict.fromkeys([medication, *spellings]):
        path = f"interactions.{name}"
        found += [(path, check) for check in view.observations(path) if isinstance(check, Mapping)]
    return found


@predicate(
    id="telehealth.no_severe_interaction",
    tools=[SUPPLIER],
    severity=Verdict.REVISE,
    policy="Hold a supplier change when an interaction check of the medication (as primary) shows a "
           "high-severity or emergency interaction with a drug that the record being changed does not "
           "prescribe alongside it.",
    house_rule=True,
)
@once_identified
def no_severe_interaction(call: ToolCall, view: LedgerView, ctx: GateContext, patient: str) -> Outcome:
    """Order-independent and monotone. The verdict is a function of facts, not of reads:
    the pairs every check of the medication showed (all of them, whatever their order), against the record
    being changed (a read this write needs anyway). A pair the record already prescribes together (tau-Trait
    task 10's Warfarin and Sertraline on REC012) is the prescriber's known regimen, which a supplier change
    does not alter, so checking it cannot turn a legal change into a held one; a severe partner the record
    does not prescribe (a drug the patient started elsewhere) holds the change, whenever it was checked."""
    medication = str(call.arguments.get("medication", "")).strip()
    record_id, record = _record(view, call)
    prescribed = [str(p.get("medication", "")) for p in _prescriptions(record)]
    named = _named_prescription(record, medication)[0]
    looked_up = medication if named is None else named.strip()  # the tool's prescription, as the record names it
    spellings = [name for name in prescribed if name.strip().lower() == looked_up.lower()]
    checks = _checks_of(view, looked_up, spellings)
    if not checks:
        return Pass(f"no interaction check of {medication} in this conversation")
    together = {name.strip().lower() for name in prescribed}
    held: dict[str, str] = {}
    for path, check in checks:
        for partner, pair in _severe_partners(check, looked_up):
            if partner.strip().lower() not in together:
                held.setdefault(f"{pair} ({path})", partner)
    if held:
        partners = ", ".join(sorted(dict.fromkeys(held.values())))
        return Violation(f"the interaction check shows {'; '.join(sorted(held))}, and record {record_id} does not "
                         f"prescribe {partners} alongside {medication} (records.{record_id}.prescriptions: "
                         f"{prescribed}); hold the change of {medication} until the patient's provider has "
                         "reviewed it")
    return Pass(f"no severe interaction of {medication} with a drug outside record {record_id}")


# ---------------------------------------------------------------------------------------------------
# What the patient said.


@predicate(
    id="telehealth.explicit_confirmation",
    tools=[SCHEDULE, RESCHEDULE, CANCEL],
    severity=Verdict.REVISE,
    policy="Before booking, moving or cancelling an appointment, tell the patient exactly what you are about to do "
           "and wait for an explicit \"yes\".",
)
def explicit_confirmation(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    """tau-Trait: "Before taking consequential actions that update the system (schedule, reschedule, cancel
    appointments), you must list the action details and obtain explicit patient confirmation (yes) to
    proceed." Supplier changes and notes are not named there, so they are not guarded here."""
    return explicitly_confirmed(call, view)


PREDICATES: tuple[Predicate, ...] = (
    authenticated,
    schedule_for_patient,
    appointment_belongs_to_patient,
    record_belongs_to_patient,
    dependant_age,
    appointment_actionable,
    provider_available,
    no_conflicting_appointment,
    provider_slot_free,
    appointment_type_allowed,
    billing_consistent,
    prescription_in_record,
    supplier_observed,
    no_severe_interaction,
    explicit_confirmation,
)
