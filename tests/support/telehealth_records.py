"""Telehealth tool results built from the shipped seed's story records, and a small session helper.

The story is the one in mock_backends/telehealth/seed.py (a test checks that every builder here returns
exactly what the real backend returns for the same call):

- Priya Raman (priya_raman_6120) sees Dr. Lindqvist (Primary Care; Thursdays 08:00, 09:00, 11:00, 14:00);
  APPT001 is completed, APPT002 (cardiology, 2025-06-12 10:30, 45 min) is scheduled; record REC001
  prescribes Lisinopril and Atorvastatin.
- Tomas Herrera (tomas_herrera_3391): APPT003 completed, APPT004 scheduled, APPT010 cancelled.
- Marcus Feld (marcus_feld_7702): APPT005 pending_approval; record REC003 prescribes Atorvastatin and
  Warfarin; the catalogue lists Kaveri Generics / Atorvika at 3.95 as the cheapest Indian Atorvastatin.
- The Satos: Hana (hana_sato_4410) is the emergency contact of Kenji (8, "Parent"), Emiko (75, "Daughter")
  and Yuki (23, "Mother"). Kenji and Emiko are her dependants; Yuki is an adult, so she is not.

Every builder returns a fresh dict, so a test may change a record (a status, a schedule) freely.
"""

from __future__ import annotations

import copy
from typing import Any

from core.gate import GateContext, GateDecision, PolicyGate
from core.ledger import AbsorbResult, Ledger
from core.tools import ToolCall
from domains.telehealth import DOMAIN, PATH_MAP, PREDICATES
from mock_backends.telehealth import seed

Record = dict[str, Any]

PRIYA, TOMAS, MARCUS = "priya_raman_6120", "tomas_herrera_3391", "marcus_feld_7702"
HANA, KENJI, EMIKO, YUKI = "hana_sato_4410", "kenji_sato_2017", "emiko_sato_1950", "yuki_sato_2001"
LINDQVIST, HADDAD, MOREAU = "dr_lindqvist_primary", "dr_haddad_cardiology", "dr_moreau_dermatology"
PETROV, BRENNAN, CASTELLANO, VARGA = "dr_petrov_pediatrics", "pharmacist_brennan", "ot_castellano", \
    "coach_varga_telemetry"
NEXT_APPOINTMENT = "APPT031"  # what the seed's next booking is called

_PATIENTS = seed.story_patients()
_PROVIDERS = seed.story_providers()
_APPOINTMENTS = seed.story_appointments()
_RECORDS = seed.story_records()


def patient(patient_id: str) -> Record:
    """get_patient_details."""
    return copy.deepcopy(_PATIENTS[patient_id])


def provider(provider_id: str) -> Record:
    """get_provider_details."""
    return copy.deepcopy(_PROVIDERS[provider_id])


def _full_name(patient_id: str) -> str:
    name = _PATIENTS[patient_id]["name"]
    return f"{name['first_name']} {name['last_name']}"


def _provider_name(provider_id: str) -> str:
    name = _PROVIDERS[provider_id]["name"]
    return f"{name['first_name']} {name['last_name']}, {name['title']}"


def appointment(source_id: str, **changes: Any) -> Record:
    """get_appointment_details of story appointment `source_id` (with `changes`), plus the display names."""
    doc = {**copy.deepcopy(_APPOINTMENTS[source_id]), **changes}
    return {**doc, "patient_name": _full_name(doc["patient_id"]), "provider_name": _provider_name(doc["provider_id"]),
            "provider_specialty": _PROVIDERS[doc["provider_id"]]["specialty"]}


def calendar(patient_id: str, status_filter: str | None = None, extra: list[Record] | None = None) -> Record:
    """list_patient_appointments over the story appointments (plus `extra` appointment views)."""
    rows = [appointment(a) for a, doc in _APPOINTMENTS.items() if doc["patient_id"] == patient_id
            and (status_filter is None or doc["status"] == status_filter)]
    return {"patient_id": patient_id, "patient_name": _full_name(patient_id), "status_filter": status_filter,
            "appointments": rows + list(extra or [])}


def record(record_id: str) -> Record:
    """get_medical_record: the stored record plus patient and provider names."""
    doc = copy.deepcopy(_RECORDS[record_id])
    return {**doc, "patient_name": _full_name(doc["patient_id"]), "provider_name": _provider_name(doc["provider_id"])}


def suppliers(medication: str, country_filter: str | None = None, limit: int | None = None) -> Record:
    """list_medication_suppliers: cheapest first, optionally one country's, at most `limit`."""
    offers = [o for o in seed.story_suppliers()[medication]
              if country_filter is None or o["country"].lower() == country_filter.lower()]
    ordered = sorted(offers, key=lambda o: o["price_usd"])
    return {"medication": medication, "country_filter": country_filter, "limit": limit,
            "suppliers": ordered if limit is None else ordered[:limit]}


def interaction_check(primary: str, severity: str, other: str, *, emergency: bool = False) -> Record:
    """A check_drug_interactions result with one documented interaction (shape of the real tool)."""
    item: Record = {"medication": other, "severity": severity, "risk_score": 9 if severity == "high" else 4,
            "time_overlap_hours": 24, "action": "See the prescriber.", "skip": [], "emergency": emergency,
            "listed_under": primary}
    return {"primary_medication": primary, "current_medications": [other], "interactions": [item],
            "no_documented_interaction": [], "medications_to_hold": [], "emergency_escalation": emergency,
            "peak_overlap_hours": 24, "highest_severity": {"medication": other, "severity": severity,
                                                           "risk_score": item["risk_score"]}}


class TelehealthSession:
    """A ledger filled the way the agent loop fills it: successful reads absorbed in order, one step each.

    `propose` judges a write with a fresh gate (no anti-loop memory carried between assertions) and the
    domain's own context (fixed clock, identity rule), exactly as the agent loop would.
    """

    def __init__(self) -> None:
        self.ledger = Ledger(PATH_MAP)
        self.step = 0

    def _next_call(self, tool: str, arguments: dict[str, Any]) -> ToolCall:
        self.step += 1
        return ToolCall(id=f"call_{self.step}", name=tool, arguments=arguments)

    def read(self, tool: str, result: Any, **arguments: Any) -> AbsorbResult:
        return self.ledger.absorb(self._next_call(tool, arguments), copy.deepcopy(result), self.step)

    def wrote(self, tool: str, **arguments: Any) -> list[str]:
        """A write succeeded: mark what it touched stale (the backend itself is not simulated)."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step)

    def executed(self, tool: str, result: Any, **arguments: Any) -> list[str]:
        """A write ran and returned `result`: its paths go stale and the return joins the session's effects."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step, result=copy.deepcopy(result))

    def authenticate(self, patient_id: str = PRIYA) -> AbsorbResult:
        """find_patient_by_email when the patient has an email, else find_patient_by_name_dob."""
        doc = _PATIENTS[patient_id]
        if doc["demographics"]["email"]:
            return self.read("find_patient_by_email", patient_id, email=doc["demographics"]["email"])
        return self.read("find_patient_by_name_dob", patient_id, first_name=doc["name"]["first_name"],
                         last_name=doc["name"]["last_name"], date_of_birth=doc["demographics"]["date_of_birth"])

    def read_patient(self, record: Record) -> AbsorbResult:
        return self.read("get_patient_details", record, patient_id=record["patient_id"])

    def read_provider(self, record: Record) -> AbsorbResult:
        return self.read("get_provider_details", record, provider_id=record["provider_id"])

    def read_appointment(self, record: Record) -> AbsorbResult:
        return self.read("get_appointment_details", record, appointment_id=record["appointment_id"])

    def read_calendar(self, listing: Record) -> AbsorbResult:
        arguments: dict[str, Any] = {"patient_id": listing["patient_id"]}
        if listing["status_filter"] is not None:
            arguments["status_filter"] = listing["status_filter"]
        return self.read("list_patient_appointments", listing, **arguments)

    def read_record(self, doc: Record) -> AbsorbResult:
        return self.read("get_medical_record", doc, record_id=doc["record_id"])

    def read_suppliers(self, listing: Record) -> AbsorbResult:
        arguments = {k: listing[k] for k in ("country_filter", "limit") if listing[k] is not None}
        return self.read("list_medication_suppliers", listing, medication=listing["medication"], **arguments)

    def read_interactions(self, check: Record) -> AbsorbResult:
        return self.read("check_drug_interactions", check, primary_medication=check["primary_medication"],
                         current_medications=check["current_medications"])

    def said(self, role: str, text: str) -> AbsorbResult:
        """A message of the conversation ("user": the customer's, "assistant": the agent's), heard by the ledger
        as a session hears it (core.ledger.Ledger.hear)."""
        return self.ledger.hear(role, text, self.step)

    def confirmed(self, described: str, answer: str = "Yes, please go ahead.") -> None:
        """The agent described the action and the customer answered (by default an explicit yes)."""
        self.said("assistant", described)
        self.said("user", answer)

    def context(self) -> GateContext:
        return DOMAIN.context(self.ledger)

    def propose(self, tool: str, **arguments: Any) -> GateDecision:
        call = ToolCall(id=f"proposal_{self.step}", name=tool, arguments=arguments)
        return PolicyGate(PREDICATES, path_map=PATH_MAP).evaluate(call, self.ledger, self.context())


def booking_session(patient_id: str = PRIYA, provider_id: str = LINDQVIST, *, calendar_filter: str | None = None,
                    profile: Record | None = None, provider_record: Record | None = None) -> TelehealthSession:
    """Authenticated, own profile, the provider and the patient's unfiltered calendar read: ready to book."""
    session = TelehealthSession()
    session.authenticate(patient_id)
    session.read_patient(profile if profile is not None else patient(patient_id))
    session.read_provider(provider_record if provider_record is not None else provider(provider_id))
    session.read_calendar(calendar(patient_id, calendar_filter))
    return session


def marcus_supplier_session(*, country_filter: str | None = "India") -> TelehealthSession:
    """Marcus authenticated, his profile, record REC003 and the Atorvastatin listing read."""
    session = TelehealthSession()
    session.authenticate(MARCUS)
    session.read_patient(patient(MARCUS))
    session.read_record(record("REC003"))
    session.read_suppliers(suppliers("Atorvastatin", country_filter))
    return session


def hana_family_session(*others: str) -> TelehealthSession:
    """Hana authenticated with her own profile, plus the profiles (and calendars) of the given relatives."""
    session = TelehealthSession()
    session.authenticate(HANA)
    session.read_patient(patient(HANA))
    for other in others:
        session.read_patient(patient(other))
        session.read_calendar(calendar(other))
    return session
