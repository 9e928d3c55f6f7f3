"""Every telehealth predicate, judged through the real gate over a real ledger filled by absorbed reads.

Two tables drive most of the file: REJECTED cases (exactly one rule fails, with the expected verdict, the
ledger values its reason must cite and the evidence paths it read) and ALLOWED cases (the whole gate says
ALLOW while that rule ran and passed). A meta-test makes sure every predicate appears in both tables. The
tests below them cover missing, filtered and stale evidence, who may act for whom, and identity.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.gate import GateDecision, PolicyGate, PredicateResult, RefusalKind, Status, Verdict
from core.tools import ToolCall
from domains.telehealth import DOMAIN, PREDICATES
from tests.support.telehealth_records import (
    BRENNAN,
    CASTELLANO,
    EMIKO,
    HADDAD,
    HANA,
    KENJI,
    LINDQVIST,
    MARCUS,
    PETROV,
    PRIYA,
    TOMAS,
    YUKI,
    TelehealthSession,
    appointment,
    booking_session,
    calendar,
    hana_family_session,
    interaction_check,
    marcus_supplier_session,
    patient,
    provider,
    record,
    suppliers,
)

Call = tuple[str, dict[str, Any]]

# ---------------------------------------------------------------------------------------------------
# Calls.


def schedule(patient_id: str = PRIYA, provider_id: str = LINDQVIST, date: str = "2025-05-29", time: str = "11:00",
             appointment_type: str = "follow_up", **extra: Any) -> Call:
    return "schedule_appointment", {"patient_id": patient_id, "provider_id": provider_id, "date": date, "time": time,
                                    "appointment_type": appointment_type, **extra}


def reschedule(appointment_id: str = "APPT002", new_date: str = "2025-06-13", new_time: str = "10:30") -> Call:
    return "reschedule_appointment", {"appointment_id": appointment_id, "new_date": new_date, "new_time": new_time}


def cancel(appointment_id: str = "APPT002") -> Call:
    return "cancel_appointment", {"appointment_id": appointment_id}


def change_supplier(medication: str = "Atorvastatin", company: str = "Kaveri Generics", brand: str = "Atorvika",
                    price: float = 3.95, record_id: str = "REC003", **extra: Any) -> Call:
    return "update_prescription_supplier", {"record_id": record_id, "medication": medication,
                                            "supplier_company": company, "brand_name": brand, "price_usd": price,
                                            **extra}


def add_note(record_id: str = "REC003", note: str = "Supplier review done.") -> Call:
    return "update_medical_record_note", {"record_id": record_id, "note": note}


# ---------------------------------------------------------------------------------------------------
# Sessions.


def priya_appointments() -> TelehealthSession:
    """Priya with her profile, APPT002 (cardiology), Dr. Haddad and her calendar read."""
    session = booking_session(PRIYA, HADDAD)
    session.read_appointment(appointment("APPT002"))
    return session


def unauthenticated() -> TelehealthSession:
    session = TelehealthSession()
    session.read_appointment(appointment("APPT002"))
    session.read_patient(patient(PRIYA))  # the patient gave their id: that is not authentication
    return session


def priya_reads_tomas() -> TelehealthSession:
    """Priya is the patient; the agent also (wrongly) read Tomas's appointment and profile."""
    session = priya_appointments()
    session.read_appointment(appointment("APPT004"))
    session.read_patient(patient(TOMAS))
    return session


def priya_reads_marcus_record() -> TelehealthSession:
    session = booking_session()
    session.read_record(record("REC003"))
    session.read_patient(patient(MARCUS))
    return session


def tomas_appointments() -> TelehealthSession:
    """Tomas with APPT003 (completed), APPT010 (cancelled), Dr. Moreau, Dr. Lindqvist and his calendar."""
    session = booking_session(TOMAS, MOREAU_ID)
    session.read_provider(provider(LINDQVIST))
    session.read_appointment(appointment("APPT003"))
    session.read_appointment(appointment("APPT010"))
    return session


MOREAU_ID = "dr_moreau_dermatology"


def hana_books_for(relative: str, provider_id: str) -> Callable[[], TelehealthSession]:
    def build() -> TelehealthSession:
        session = hana_family_session(relative)
        session.read_provider(provider(provider_id))
        return session
    return build


def hana_with_kenji_appointment() -> TelehealthSession:
    session = hana_family_session(KENJI)
    session.read_appointment(appointment("APPT007"))
    return session


SLOT = {"provider_id": PETROV, "date": "2025-05-29", "time": "08:30"}


def booked_here(patient_id: str = KENJI, appointment_id: str = "APPT031", **slot: str) -> dict[str, Any]:
    """What schedule_appointment returned for a booking made in this conversation (its effect)."""
    return {**appointment("APPT007"), "appointment_id": appointment_id, "patient_id": patient_id,
            **{**SLOT, **slot}, "status": "scheduled"}


def hana_booked_kenji_at_petrovs_0830() -> TelehealthSession:
    """Hana booked Kenji with Dr. Petrov on 2025-05-29 08:30 (the write ran); her own calendar is read too."""
    session = hana_books_for(KENJI, PETROV)()
    session.read_calendar(calendar(HANA))
    session.executed("schedule_appointment", booked_here(), patient_id=KENJI, provider_id=PETROV,
                     date=SLOT["date"], time=SLOT["time"], appointment_type="sick_visit")
    return session


def hana_booked_then_cancelled() -> TelehealthSession:
    session = hana_booked_kenji_at_petrovs_0830()
    session.read_appointment(booked_here())  # whose it is: only Kenji's calendar goes stale with the cancel
    session.executed("cancel_appointment", {**booked_here(), "status": "cancelled"}, appointment_id="APPT031")
    return session


def uninsured_priya() -> TelehealthSession:
    profile = patient(PRIYA)
    profile["insurance"] = {}
    return booking_session(profile=profile)


def marcus_with_lisinopril_listing() -> TelehealthSession:
    session = marcus_supplier_session()
    session.read_suppliers(suppliers("Lisinopril", "India"))
    return session


def marcus_checked(primary: str, severity: str, other: str, *, emergency: bool = False,
                   listing: str = "Warfarin") -> Callable[[], TelehealthSession]:
    def build() -> TelehealthSession:
        session = marcus_supplier_session()
        session.read_suppliers(suppliers(listing))
        session.read_interactions(interaction_check(primary, severity, other, emergency=emergency))
        return session
    return build


def marcus_pharmacy() -> TelehealthSession:
    return booking_session(MARCUS, BRENNAN)


def priya_therapy() -> TelehealthSession:
    return booking_session(PRIYA, CASTELLANO)


def marcus_unfiltered_listing() -> TelehealthSession:
    return marcus_supplier_session(country_filter=None)


# ---------------------------------------------------------------------------------------------------
# The tables.


@dataclass(frozen=True)
class Rejected:
    label: str
    predicate_id: str
    verdict: Verdict
    session: Callable[[], TelehealthSession]
    call: Call
    cites: tuple[str, ...]  # ledger values and paths the reason must name
    evidence: tuple[str, ...]  # exactly what the failing rule read


@dataclass(frozen=True)
class Allowed:
    label: str
    predicate_id: str
    session: Callable[[], TelehealthSession]
    call: Call
    also: tuple[str, ...] = field(default=())  # other predicates this case exercises (documentation)


REJECTED: list[Rejected] = [
    Rejected("write before authentication", "telehealth.authenticated", Verdict.REVISE, unauthenticated, cancel(),
             ("auth.patient_id is not set", "find_patient_by_email", "find_patient_by_name_dob"), ("auth.patient_id",)),
    Rejected("book for an adult daughter (house rule)", "telehealth.dependant_age", Verdict.REVISE,
             hana_books_for(YUKI, LINDQVIST), schedule(YUKI),
             ("yuki_sato_2001 is 23 on 2025-05-20", "an adult", "under 18",
              "patients.yuki_sato_2001.demographics.date_of_birth"),
             ("auth.patient_id", "patients.yuki_sato_2001", "patient")),
    Rejected("book for a stranger", "telehealth.schedule_for_patient", Verdict.BLOCK, priya_reads_tomas,
             schedule(TOMAS, HADDAD, "2025-06-13", "10:30", "specialist_consultation"),
             ("their emergency contact is 'Elena Herrera', not 'Priya Raman'",),
             ("auth.patient_id", "patient", "patients.tomas_herrera_3391")),
    Rejected("cancel another patient's appointment", "telehealth.appointment_belongs_to_patient", Verdict.BLOCK,
             priya_reads_tomas, cancel("APPT004"),
             ("appointment APPT004 is for patient 'tomas_herrera_3391'", "appointments.APPT004.patient_id",
              "'priya_raman_6120' (auth.patient_id)"),
             ("auth.patient_id", "appointments.APPT004", "patient", "patients.tomas_herrera_3391")),
    Rejected("note on another patient's record", "telehealth.record_belongs_to_patient", Verdict.BLOCK,
             priya_reads_marcus_record, add_note(),
             ("medical record REC003 is for patient 'marcus_feld_7702'", "records.REC003.patient_id"),
             ("auth.patient_id", "records.REC003", "patient", "patients.marcus_feld_7702")),
    Rejected("cancel a completed appointment", "telehealth.appointment_actionable", Verdict.BLOCK,
             tomas_appointments, cancel("APPT003"),
             ("appointment APPT003 has status 'completed'", "appointments.APPT003.status",
              "can be cancelled"), ("appointments.APPT003",)),
    Rejected("reschedule a cancelled appointment", "telehealth.appointment_actionable", Verdict.BLOCK,
             tomas_appointments, reschedule("APPT010", "2025-05-29", "14:00"),
             ("'cancelled'", "can be rescheduled"), ("appointments.APPT010",)),
    Rejected("book a time the schedule does not list", "telehealth.provider_available", Verdict.REVISE,
             booking_session, schedule(time="10:00"),
             ("'10:00' is not one of dr_lindqvist_primary's Thursday times ['08:00', '09:00', '11:00', '14:00']",
              "providers.dr_lindqvist_primary.schedule.thursday"), ("providers.dr_lindqvist_primary",)),
    Rejected("book on a day off", "telehealth.provider_available", Verdict.REVISE, booking_session,
             schedule(date="2025-05-31", time="09:00"),
             ("does not work on Saturdays (2025-05-31)", "monday, tuesday, wednesday, thursday, friday"),
             ("providers.dr_lindqvist_primary",)),
    Rejected("book an impossible date", "telehealth.provider_available", Verdict.REVISE, booking_session,
             schedule(date="2025-02-30"), ("'2025-02-30' is not a valid YYYY-MM-DD date",),
             ("providers.dr_lindqvist_primary",)),
    Rejected("move to a weekday the provider does not work", "telehealth.provider_available", Verdict.REVISE,
             priya_appointments, reschedule(new_date="2025-06-11"), ("does not work on Wednesdays",),
             ("appointments.APPT002", "providers.dr_haddad_cardiology")),
    Rejected("book over the patient's own cardiology visit", "telehealth.no_conflicting_appointment",
             Verdict.REVISE, booking_session, schedule(date="2025-06-12", time="11:00"),
             ("2025-06-12 11:00-11:30 overlaps APPT002 (scheduled, dr_haddad_cardiology, 2025-06-12 10:30-11:15)",
              "appointment_lists.priya_raman_6120.appointments"),
             ("auth.patient_id", "appointment_lists.priya_raman_6120")),
    Rejected("an invented appointment type", "telehealth.appointment_type_allowed", Verdict.REVISE,
             booking_session, schedule(appointment_type="urgent_care"),
             ("'urgent_care' cannot be booked with dr_lindqvist_primary (Primary Care", "providers.dr_lindqvist_primary"
              ".specialty", "'medication_review'"), ("providers.dr_lindqvist_primary",)),
    Rejected("a therapy session with a family doctor", "telehealth.appointment_type_allowed", Verdict.REVISE,
             booking_session, schedule(appointment_type="therapy_session"), ("'therapy_session'",),
             ("providers.dr_lindqvist_primary",)),
    Rejected("surgery is never booked by the agent", "telehealth.appointment_type_allowed", Verdict.REVISE,
             priya_appointments, schedule(provider_id=HADDAD, date="2025-06-13", time="13:00",
                                          appointment_type="surgery"), ("'surgery'", "Cardiology"),
             ("providers.dr_haddad_cardiology",)),
    Rejected("a voucher while insurance is billed", "telehealth.billing_consistent", Verdict.REVISE,
             booking_session, schedule(voucher_id="THV-224"),
             ("voucher 'THV-224' is given but insurance would be billed", "bill_insurance is omitted",
              "bill_insurance false"), ("auth.patient_id", "patients.priya_raman_6120")),
    Rejected("insurance billed without a plan on file", "telehealth.billing_consistent", Verdict.REVISE,
             uninsured_priya, schedule(bill_insurance=True),
             ("no primary insurance plan", "patients.priya_raman_6120.insurance.primary"),
             ("auth.patient_id", "patients.priya_raman_6120")),
    Rejected("a medication the record does not prescribe", "telehealth.prescription_in_record", Verdict.REVISE,
             marcus_with_lisinopril_listing, change_supplier("Lisinopril", "Kaveri Generics", "Lisikav", 2.1),
             ("record REC003 prescribes ['Atorvastatin', 'Warfarin']", "records.REC003.prescriptions",
              "not 'Lisinopril'"), ("records.REC003",)),
    Rejected("a price nobody listed", "telehealth.supplier_observed", Verdict.REVISE, marcus_supplier_session,
             change_supplier(price=3.49),
             ("price 3.49 was not observed", "Kaveri Generics (India) / Atorvika at 3.95",
              "suppliers.Atorvastatin.suppliers[0].price_usd"), ("records.REC003", "suppliers.Atorvastatin")),
    Rejected("a supplier outside the listing that was read", "telehealth.supplier_observed", Verdict.REVISE,
             marcus_supplier_session, change_supplier(company="Northwind Generics", brand="StatinOne", price=6.4),
             ("'Northwind Generics' / 'StatinOne' is not an offer in the latest Atorvastatin listing",
              "Deccan Pharma (India) / Lipidax at 4.20"), ("records.REC003", "suppliers.Atorvastatin")),
    Rejected("a brand of another company", "telehealth.supplier_observed", Verdict.REVISE, marcus_supplier_session,
             change_supplier(company="Deccan Pharma", brand="Atorvika"), ("'Deccan Pharma' / 'Atorvika'",),
             ("records.REC003", "suppliers.Atorvastatin")),
    Rejected("a price in another currency", "telehealth.supplier_observed", Verdict.REVISE, marcus_supplier_session,
             change_supplier(currency="EUR"), ("currency 'EUR'", "in USD"),
             ("records.REC003", "suppliers.Atorvastatin")),
]

REJECTED.append(
    Rejected("book the slot this conversation booked for a dependant", "telehealth.provider_slot_free",
             Verdict.REVISE, hana_booked_kenji_at_petrovs_0830,
             schedule(HANA, PETROV, SLOT["date"], SLOT["time"], "sick_visit"),
             ("dr_petrov_pediatrics's 2025-05-29 08:30 slot is taken by APPT031",),
             ("effects.schedule_appointment", "effects.reschedule_appointment", "effects.cancel_appointment")))
REJECTED.append(
    Rejected("Warfarin after a high-severity Warfarin check", "telehealth.no_severe_interaction", Verdict.REVISE,
             marcus_checked("Warfarin", "high", "Ibuprofen", emergency=True),
             change_supplier("Warfarin", "Deccan Pharma", "Warfadex", 4.1),
             ("Warfarin + Ibuprofen (high, emergency) (interactions.Warfarin)", "provider has reviewed it"),
             ("records.REC003", "interactions.Warfarin")))

def priya_answered(answer: str) -> Callable[[], TelehealthSession]:
    """Priya's records read; the agent described cancelling APPT002 and she answered."""
    def build() -> TelehealthSession:
        session = priya_appointments()
        session.confirmed("I'll cancel APPT002, your cardiology follow-up with Dr. Haddad. Shall I?", answer)
        return session
    return build


REJECTED.append(
    Rejected("cancel after the patient said no", "telehealth.explicit_confirmation", Verdict.REVISE,
             priya_answered("No, keep it for now."), cancel(),
             ("'no', no yes", '"No, keep it for now."', "conversation.confirmation"), ("conversation.confirmation",)))

ALLOWED: list[Allowed] = [
    Allowed("a slot this conversation booked, then cancelled, is free again", "telehealth.provider_slot_free",
            hana_booked_then_cancelled, schedule(HANA, PETROV, SLOT["date"], SLOT["time"], "sick_visit")),
    Allowed("cancel own scheduled appointment", "telehealth.authenticated", priya_appointments, cancel(),
            also=("telehealth.appointment_belongs_to_patient", "telehealth.appointment_actionable")),
    Allowed("book for oneself", "telehealth.schedule_for_patient", booking_session, schedule()),
    Allowed("no interaction check of the medication was run", "telehealth.no_severe_interaction",
            marcus_supplier_session, change_supplier()),
    Allowed("a mother books for her 8-year-old (age house rule)", "telehealth.dependant_age",
            hana_books_for(KENJI, PETROV), schedule(KENJI, PETROV)),
    Allowed("a mother books for her 8-year-old", "telehealth.schedule_for_patient", hana_books_for(KENJI, PETROV),
            schedule(KENJI, PETROV, "2025-05-29", "08:30", "sick_visit")),
    Allowed("a daughter books for her 75-year-old mother", "telehealth.schedule_for_patient",
            hana_books_for(EMIKO, LINDQVIST), schedule(EMIKO, LINDQVIST, "2025-05-29", "14:00", "routine_checkup")),
    Allowed("cancel own appointment", "telehealth.appointment_belongs_to_patient", priya_appointments, cancel()),
    Allowed("cancel a dependant child's appointment", "telehealth.appointment_belongs_to_patient",
            hana_with_kenji_appointment, cancel("APPT007")),
    Allowed("note on own record", "telehealth.record_belongs_to_patient", marcus_supplier_session, add_note()),
    Allowed("supplier change on own record", "telehealth.record_belongs_to_patient", marcus_supplier_session,
            change_supplier()),
    Allowed("cancel a scheduled appointment", "telehealth.appointment_actionable", priya_appointments, cancel()),
    Allowed("move a scheduled appointment", "telehealth.appointment_actionable", priya_appointments, reschedule()),
    Allowed("book a listed Thursday time", "telehealth.provider_available", booking_session, schedule()),
    Allowed("move to a listed Friday time", "telehealth.provider_available", priya_appointments, reschedule()),
    Allowed("book a free time", "telehealth.no_conflicting_appointment", booking_session, schedule()),
    Allowed("book right after another appointment ends", "telehealth.no_conflicting_appointment", priya_appointments,
            schedule(provider_id=HADDAD, date="2025-06-12", time="13:00", appointment_type="specialist_consultation")),
    Allowed("move an appointment later the same day (it does not clash with itself)",
            "telehealth.no_conflicting_appointment", priya_appointments, reschedule(new_date="2025-06-12",
                                                                                    new_time="13:00")),
    Allowed("a general type", "telehealth.appointment_type_allowed", booking_session, schedule()),
    Allowed("a medication review with the pharmacist", "telehealth.appointment_type_allowed", marcus_pharmacy,
            schedule(MARCUS, BRENNAN, "2025-05-28", "12:00", "medication_review")),
    Allowed("a therapy session with an occupational therapist", "telehealth.appointment_type_allowed",
            priya_therapy, schedule(PRIYA, CASTELLANO, "2025-05-29", "09:00", "therapy_session")),
    Allowed("insurance billed by default", "telehealth.billing_consistent", booking_session, schedule()),
    Allowed("self-pay", "telehealth.billing_consistent", uninsured_priya, schedule(bill_insurance=False)),
    Allowed("a voucher with insurance billing off", "telehealth.billing_consistent", booking_session,
            schedule(bill_insurance=False, voucher_id="THV-224", payment_notes="voucher ending 224")),
    Allowed("the record's own spelling", "telehealth.prescription_in_record", marcus_supplier_session,
            change_supplier()),
    Allowed("the same name in another case", "telehealth.prescription_in_record", marcus_supplier_session,
            change_supplier(medication="atorvastatin")),
    Allowed("the cheapest listed offer at its price", "telehealth.supplier_observed", marcus_supplier_session,
            change_supplier()),
    Allowed("the company in its 'Company (Country)' display form", "telehealth.supplier_observed",
            marcus_supplier_session, change_supplier(company="Kaveri Generics (India)")),
    Allowed("another listed offer of an unfiltered listing", "telehealth.supplier_observed",
            marcus_unfiltered_listing, change_supplier(company="Northwind Generics", brand="StatinOne", price=6.4,
                                                       currency="USD")),
    Allowed("cancel once the patient said yes", "telehealth.explicit_confirmation", priya_answered("Yes, cancel it."),
            cancel()),
]


def result_of(decision: GateDecision, predicate_id: str) -> PredicateResult:
    [result] = [r for r in decision.results if r.predicate_id == predicate_id]
    return result


def failed_ids(decision: GateDecision) -> set[str]:
    return {r.predicate_id for r in decision.failed}


def propose(session: TelehealthSession, call: Call) -> GateDecision:
    tool, arguments = call
    return session.propose(tool, **arguments)


def wrote(session: TelehealthSession, call: Call) -> list[str]:
    """The write ran (the gate allowed it and the backend succeeded): its paths are now stale."""
    tool, arguments = call
    return session.wrote(tool, **arguments)


@pytest.mark.parametrize("case", REJECTED, ids=[c.label for c in REJECTED])
def test_rejected(case: Rejected) -> None:
    decision = propose(case.session(), case.call)
    assert decision.verdict is case.verdict, decision.feedback
    assert failed_ids(decision) == {case.predicate_id}, decision.feedback
    result = result_of(decision, case.predicate_id)
    assert result.status is Status.VIOLATION
    for cited in case.cites:
        assert cited in result.reason, f"{cited!r} not in {result.reason!r}"
    assert result.evidence == case.evidence
    assert case.predicate_id in decision.feedback and result.reason in decision.feedback


@pytest.mark.parametrize("case", ALLOWED, ids=[f"{c.predicate_id}: {c.label}" for c in ALLOWED])
def test_allowed(case: Allowed) -> None:
    decision = propose(case.session(), case.call)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert result_of(decision, case.predicate_id).status is Status.PASS


def test_every_predicate_has_an_allowed_and_a_rejected_case() -> None:
    """Rules gates start with switched off have their own tests below (the tables judge with default gates)."""
    ids = {p.id for p in PREDICATES if not p.switched_off}
    assert {c.predicate_id for c in REJECTED} == ids
    assert {c.predicate_id for c in ALLOWED} == ids
    guards = {p.id: p.tools for p in PREDICATES}
    cases: list[Rejected | Allowed] = [*REJECTED, *ALLOWED]
    for case in cases:
        assert case.call[0] in guards[case.predicate_id], case.label


# ---------------------------------------------------------------------------------------------------
# Missing, filtered and stale evidence: always REVISE with the exact read, never BLOCK.


def test_booking_before_checking_asks_for_the_schedule_and_the_calendar() -> None:
    session = TelehealthSession()
    session.authenticate(PRIYA)
    session.read_patient(patient(PRIYA))
    decision = propose(session, schedule(time="10:00"))
    assert decision.verdict is Verdict.REVISE
    assert failed_ids(decision) == {"telehealth.provider_available", "telehealth.no_conflicting_appointment"}
    available = result_of(decision, "telehealth.provider_available")
    assert available.status is Status.MISSING
    assert 'get_provider_details(provider_id="dr_lindqvist_primary")' in available.reason
    conflicts = result_of(decision, "telehealth.no_conflicting_appointment")
    assert conflicts.status is Status.MISSING
    assert 'list_patient_appointments(patient_id="priya_raman_6120")' in conflicts.reason


def test_a_filtered_calendar_is_not_enough_to_rule_out_a_clash() -> None:
    session = booking_session(calendar_filter="scheduled")
    decision = propose(session, schedule())
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "telehealth.no_conflicting_appointment")
    assert result.status is Status.MISSING
    assert "filtered to 'scheduled'" in result.reason and "list them all" in result.reason
    session.read_calendar(calendar(PRIYA))
    assert propose(session, schedule()).verdict is Verdict.ALLOW


def test_the_calendar_is_stale_after_a_booking_until_listed_again() -> None:
    session = booking_session()
    wrote(session, schedule())
    again = propose(session, schedule(time="14:00"))
    assert again.verdict is Verdict.REVISE
    result = result_of(again, "telehealth.no_conflicting_appointment")
    assert result.status is Status.MISSING and "may have changed since schedule_appointment" in result.reason
    booked = appointment("APPT002", appointment_id="APPT031", provider_id=LINDQVIST, date="2025-05-29",
                         time="11:00", duration_minutes=30, type="follow_up")
    session.read_calendar(calendar(PRIYA, extra=[booked]))
    assert propose(session, schedule(time="14:00")).verdict is Verdict.ALLOW
    clash = propose(session, schedule(provider_id=LINDQVIST, time="11:00"))
    assert clash.verdict is Verdict.REVISE and "APPT031" in result_of(
        clash, "telehealth.no_conflicting_appointment").reason


def test_a_cancelled_appointment_is_refused_only_once_its_new_status_was_read() -> None:
    session = priya_appointments()
    wrote(session, cancel())
    again = propose(session, cancel())
    assert again.verdict is Verdict.REVISE  # stale, not BLOCK: the cancel may have failed
    assert result_of(again, "telehealth.appointment_actionable").status is Status.MISSING
    session.read_appointment(appointment("APPT002", status="cancelled"))
    refused = propose(session, cancel())
    assert refused.verdict is Verdict.BLOCK
    assert "'cancelled'" in result_of(refused, "telehealth.appointment_actionable").reason


def test_a_record_is_stale_after_a_supplier_change() -> None:
    """A supplier change can change only the record's prescriptions: a second one reads the record again, a
    note (its rules read whose record it is, never the prescriptions) does not."""
    session = marcus_supplier_session()
    assert wrote(session, change_supplier()) == ["records.REC003"]
    decision = propose(session, change_supplier(company="Deccan Pharma"))
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "telehealth.prescription_in_record")
    assert result.status is Status.MISSING and 'get_medical_record(record_id="REC003")' in result.reason
    assert propose(session, add_note()).verdict is Verdict.ALLOW


def test_a_slot_booked_earlier_here_is_not_free_for_a_reschedule() -> None:
    """Kenji's APPT007 moved into the slot this conversation booked for Hana: refused; once Hana's booking is
    moved away (its effect: the new time), the slot is free again for the move."""
    session = hana_with_kenji_appointment()
    session.read_provider(provider(PETROV))
    session.read_calendar(calendar(HANA))
    session.executed("schedule_appointment", booked_here(HANA), patient_id=HANA, provider_id=PETROV,
                     date=SLOT["date"], time=SLOT["time"], appointment_type="sick_visit")
    move = reschedule("APPT007", SLOT["date"], SLOT["time"])
    refused = propose(session, move)
    assert refused.verdict is Verdict.REVISE and failed_ids(refused) == {"telehealth.provider_slot_free"}
    assert "taken by APPT031" in result_of(refused, "telehealth.provider_slot_free").reason
    session.executed("reschedule_appointment", {**booked_here(HANA), "time": "11:00",
                                                "rescheduled_from": {"date": SLOT["date"], "time": SLOT["time"]}},
                     appointment_id="APPT031", new_date=SLOT["date"], new_time="11:00")
    assert result_of(propose(session, move), "telehealth.provider_slot_free").status is Status.PASS


def test_an_appointment_moved_within_its_own_slot_is_not_its_own_clash() -> None:
    session = hana_booked_kenji_at_petrovs_0830()
    session.read_appointment(booked_here())
    result = result_of(propose(session, reschedule("APPT031", SLOT["date"], SLOT["time"])),
                       "telehealth.provider_slot_free")
    assert result.status is Status.PASS


def test_an_unread_catalogue_asks_for_the_supplier_listing() -> None:
    session = TelehealthSession()
    session.authenticate(MARCUS)
    session.read_record(record("REC003"))
    decision = propose(session, change_supplier(price=3.49))
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "telehealth.supplier_observed")
    assert result.status is Status.MISSING
    assert 'list_medication_suppliers(medication="Atorvastatin")' in result.reason


def test_the_listing_is_found_whatever_the_case_of_the_medication() -> None:
    session = marcus_supplier_session()
    decision = propose(session, change_supplier(medication="ATORVASTATIN"))
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert "suppliers.Atorvastatin" in result_of(decision, "telehealth.supplier_observed").evidence


def test_someone_elses_appointment_needs_their_record_then_is_blocked_on_what_it_shows() -> None:
    """Whose dependant a patient is shows only in their own record: before it is read, a read to make (needs a
    read, never a BLOCK on absent evidence); once read and naming someone else, a BLOCK citing it."""
    session = priya_appointments()
    session.read_appointment(appointment("APPT004"))
    decision = propose(session, cancel("APPT004"))
    assert (decision.verdict, decision.refusal) == (Verdict.REVISE, RefusalKind.NEEDS_READ), decision.feedback
    result = result_of(decision, "telehealth.appointment_belongs_to_patient")
    assert result.status is Status.MISSING and result.missing == (f"patients.{TOMAS}",)
    assert "shows only in" in result.reason and "share nothing from another patient's record" in result.reason
    session.read_patient(patient(TOMAS))
    again = propose(session, cancel("APPT004"))
    assert again.verdict is Verdict.BLOCK, again.feedback
    blocked = result_of(again, "telehealth.appointment_belongs_to_patient")
    assert blocked.status is Status.VIOLATION and f"patients.{TOMAS}.emergency_contact" in blocked.reason


def test_another_patients_record_needs_their_profile_then_is_blocked() -> None:
    session = priya_appointments()
    session.read_record(record("REC003"))  # Marcus Feld's
    decision = propose(session, add_note("REC003"))
    assert (decision.verdict, decision.refusal) == (Verdict.REVISE, RefusalKind.NEEDS_READ), decision.feedback
    assert failed_ids(decision) == {"telehealth.record_belongs_to_patient"}
    session.read_patient(patient(MARCUS))
    assert propose(session, add_note("REC003")).verdict is Verdict.BLOCK


# ---------------------------------------------------------------------------------------------------
# Identity and dependants.


def test_first_authentication_wins() -> None:
    session = TelehealthSession()
    session.authenticate(PRIYA)
    other = session.authenticate(MARCUS)
    assert other.added == ("lookups.marcus_feld_7702",)
    assert session.context().customer_id == PRIYA
    session.read_patient(patient(PRIYA))
    session.read_record(record("REC003"))
    session.read_patient(patient(MARCUS))
    decision = propose(session, add_note())
    assert decision.verdict is Verdict.BLOCK
    assert failed_ids(decision) == {"telehealth.record_belongs_to_patient"}


def test_name_and_date_of_birth_authenticate_a_child_without_email() -> None:
    session = TelehealthSession()
    absorbed = session.authenticate(KENJI)
    assert absorbed.added == ("auth.patient_id",)
    assert session.context().customer_id == KENJI


@pytest.mark.parametrize(("relative", "relationship", "verdict"), [
    (KENJI, "Guardian", Verdict.ALLOW),
    (KENJI, "Aunt", Verdict.BLOCK),
    (EMIKO, "Son", Verdict.ALLOW),
    (EMIKO, "Spouse", Verdict.BLOCK),
])
def test_only_a_parent_or_a_child_relationship_makes_a_dependant(relative: str, relationship: str,
                                                                  verdict: Verdict) -> None:
    session = TelehealthSession()
    session.authenticate(HANA)
    session.read_patient(patient(HANA))
    profile = patient(relative)
    profile["emergency_contact"]["relationship"] = relationship
    session.read_patient(profile)
    session.read_calendar(calendar(relative))
    session.read_provider(provider(LINDQVIST))
    decision = propose(session, schedule(relative, time="14:00"))
    assert decision.verdict is verdict, decision.feedback


def test_a_young_parent_is_not_an_aged_parent() -> None:
    session = TelehealthSession()
    session.authenticate(HANA)
    session.read_patient(patient(HANA))
    profile = patient(EMIKO)
    profile["demographics"]["date_of_birth"] = "1961-05-21"  # 63 on the domain's clock, 2025-05-20
    session.read_patient(profile)
    session.read_calendar(calendar(EMIKO))
    session.read_provider(provider(LINDQVIST))
    decision = propose(session, schedule(EMIKO, time="14:00"))
    assert decision.verdict is Verdict.REVISE  # the age limit is a house rule: REVISE at most
    assert failed_ids(decision) == {"telehealth.dependant_age"}
    assert "is 63 on 2025-05-20" in result_of(decision, "telehealth.dependant_age").reason
    assert "house rule:" in decision.feedback
    off = DOMAIN.without_house_rules()
    gate = PolicyGate(off.predicates, path_map=off.path_map)
    call = ToolCall(id="p", name="schedule_appointment", arguments=schedule(EMIKO, time="14:00")[1])
    assert gate.evaluate(call, session.ledger, session.context()).verdict is Verdict.ALLOW


def test_a_dependants_profile_does_not_become_the_patient() -> None:
    session = hana_family_session(KENJI)
    assert session.ledger.get("patient")["patient_id"] == HANA
    assert session.context().customer_id == HANA
    assert session.ledger.has(f"patients.{KENJI}")


# ---------------------------------------------------------------------------------------------------
# The severe-interaction house rule judges one check, so the order of reads does not matter.


WARFARIN_SWITCH = change_supplier("Warfarin", "Deccan Pharma", "Warfadex", 4.1)


def test_the_interaction_hold_is_a_house_rule_that_revises() -> None:
    [rule] = [p for p in PREDICATES if p.id == "telehealth.no_severe_interaction"]
    assert rule.house_rule and not rule.switched_off and rule.severity is Verdict.REVISE
    decision = propose(marcus_checked("Warfarin", "high", "Ibuprofen", emergency=True)(), WARFARIN_SWITCH)
    assert decision.verdict is Verdict.REVISE and not decision.escalated
    reason = result_of(decision, "telehealth.no_severe_interaction").reason
    assert "Warfarin + Ibuprofen (high, emergency) (interactions.Warfarin)" in reason
    assert "house rule:" in decision.feedback


def test_without_house_rules_the_switch_is_allowed() -> None:
    session = marcus_checked("Warfarin", "high", "Ibuprofen", emergency=True)()
    off = DOMAIN.without_house_rules()
    tool, arguments = WARFARIN_SWITCH
    decision = PolicyGate(off.predicates, path_map=off.path_map).evaluate(
        ToolCall(id="p", name=tool, arguments=arguments), session.ledger, session.context())
    assert decision.verdict is Verdict.ALLOW


@pytest.mark.parametrize("other_first", [True, False])
def test_reading_another_drugs_check_does_not_change_the_verdict(other_first: bool) -> None:
    """Metformin's check names Warfarin as an emergency partner; the switch of Warfarin is
    judged by Warfarin's own check only, so it stays legal whatever else was read, in either order."""
    session = marcus_supplier_session()
    session.read_suppliers(suppliers("Warfarin"))
    checks = [interaction_check("Metformin", "moderate", "Warfarin", emergency=True),
              interaction_check("Warfarin", "moderate", "Atorvastatin")]
    for check in (checks if other_first else list(reversed(checks))):
        session.read_interactions(check)
    assert propose(session, WARFARIN_SWITCH).verdict is Verdict.ALLOW
    only_other = marcus_supplier_session()
    only_other.read_suppliers(suppliers("Warfarin"))
    only_other.read_interactions(checks[0])
    assert propose(only_other, WARFARIN_SWITCH).verdict is Verdict.ALLOW


# ---------------------------------------------------------------------------------------------------
# The hold is a function of the observed facts, so every order of the same
# reads gives the same verdict, and reading more never turns a legal change into a held one.

WARFARIN_VS_ATORVASTATIN = interaction_check("Warfarin", "high", "Atorvastatin")  # both on REC003
WARFARIN_VS_IBUPROFEN = interaction_check("Warfarin", "high", "Ibuprofen", emergency=True)  # not on REC003
WARFARIN_VS_METFORMIN = interaction_check("Warfarin", "moderate", "Metformin")
METFORMIN_VS_WARFARIN = interaction_check("Metformin", "high", "Warfarin", emergency=True)
LEGAL_READS = (WARFARIN_VS_ATORVASTATIN, WARFARIN_VS_METFORMIN, METFORMIN_VS_WARFARIN)


def marcus_after(checks: tuple[dict[str, Any], ...]) -> TelehealthSession:
    session = marcus_supplier_session()
    session.read_suppliers(suppliers("Warfarin"))
    for check in checks:
        session.read_interactions(check)
    return session


def test_a_severe_pair_the_record_prescribes_together_does_not_hold_the_change() -> None:
    """Legal boundary: REC003 prescribes Warfarin and Atorvastatin; a high-severity check of that very pair is
    the prescriber's known regimen, and a supplier change does not alter it (tau-Trait task 10's case)."""
    decision = propose(marcus_after((WARFARIN_VS_ATORVASTATIN,)), WARFARIN_SWITCH)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    result = result_of(decision, "telehealth.no_severe_interaction")
    assert result.status is Status.PASS and "outside record REC003" in result.reason


def test_a_moderate_pair_outside_the_record_does_not_hold_the_change() -> None:
    """Legal boundary on severity: only high (or worse) or an emergency flag holds."""
    moderate = interaction_check("Warfarin", "moderate", "Ibuprofen")
    assert propose(marcus_after((moderate,)), WARFARIN_SWITCH).verdict is Verdict.ALLOW


def test_a_severe_partner_outside_the_record_holds_the_change_and_says_why() -> None:
    decision = propose(marcus_after((WARFARIN_VS_IBUPROFEN,)), WARFARIN_SWITCH)
    assert decision.verdict is Verdict.REVISE and failed_ids(decision) == {"telehealth.no_severe_interaction"}
    reason = result_of(decision, "telehealth.no_severe_interaction").reason
    assert reason == (
        "the interaction check shows Warfarin + Ibuprofen (high, emergency) (interactions.Warfarin), and record "
        "REC003 does not prescribe Ibuprofen alongside Warfarin (records.REC003.prescriptions: ['Atorvastatin', "
        "'Warfarin']); hold the change of Warfarin until the patient's provider has reviewed it")


@pytest.mark.parametrize("order", list(itertools.permutations(range(len(LEGAL_READS)))))
def test_every_order_of_more_reads_keeps_a_legal_change_legal(order: tuple[int, ...]) -> None:
    for count in range(len(order) + 1):
        checks = tuple(LEGAL_READS[i] for i in order[:count])
        assert propose(marcus_after(checks), WARFARIN_SWITCH).verdict is Verdict.ALLOW, checks


@pytest.mark.parametrize("order", list(itertools.permutations(range(len(LEGAL_READS) + 1))))
def test_every_order_of_the_same_reads_holds_with_the_same_reason(order: tuple[int, ...]) -> None:
    """The severe check is held against whatever clean checks of Warfarin came after it (the latest check
    used to decide alone), in every order, with a byte-identical reason."""
    reads = (*LEGAL_READS, WARFARIN_VS_IBUPROFEN)
    decision = propose(marcus_after(tuple(reads[i] for i in order)), WARFARIN_SWITCH)
    assert decision.verdict is Verdict.REVISE
    reason = result_of(decision, "telehealth.no_severe_interaction").reason
    canonical = propose(marcus_after(reads), WARFARIN_SWITCH)
    assert reason == result_of(canonical, "telehealth.no_severe_interaction").reason


def test_a_severe_check_is_found_whatever_the_arguments_spelling() -> None:
    """Violating boundary on spelling: the tool files its check under the catalogue's name
    (interactions.Warfarin); a change naming "warfarin" is judged against that check too, as the record's
    spelling, instead of passing because interactions.warfarin was never read."""
    lower = change_supplier("warfarin", "Deccan Pharma", "Warfadex", 4.1)
    result = result_of(propose(marcus_after((WARFARIN_VS_IBUPROFEN,)), lower), "telehealth.no_severe_interaction")
    assert result.status is Status.VIOLATION
    assert "Warfarin + Ibuprofen (high, emergency) (interactions.Warfarin)" in result.reason
    assert "record REC003 does not prescribe Ibuprofen alongside warfarin" in result.reason


def test_an_emergency_flag_holds_even_at_a_lower_severity() -> None:
    """Violating boundary on severity: below "high" the emergency flag alone holds the change."""
    flagged = interaction_check("Warfarin", "moderate", "Ibuprofen", emergency=True)
    result = result_of(propose(marcus_after((flagged,)), WARFARIN_SWITCH), "telehealth.no_severe_interaction")
    assert result.status is Status.VIOLATION and "Warfarin + Ibuprofen (moderate, emergency)" in result.reason
