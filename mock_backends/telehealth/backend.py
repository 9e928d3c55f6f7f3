"""tau-Trait's 23 telehealth tools over the SQLite document store, brought to the tau2 conventions.

Names, arguments and write semantics follow collinear-ai/tau-trait (`tau_trait/envs/telehealth/tools/`):
same checks in the same order, the same new-appointment record (30 minutes, next APPTnnn id, AUTHnnnnnn
authorisation, copay from the insurance tier), the same fuzzy medication match when a supplier is changed.
What differs, and why:

- Failures raise (ToolError via the base class) instead of returning an error sentence that looks like a
  result. A model, the ledger and the gate can then tell "not found" from data, and a failed write is a
  rolled-back transaction, never a half-applied change.
- Results are JSON where tau-Trait formats text, with the same information. Records come back as stored,
  plus the display names the text showed (`patient_name`, `provider_name`, `provider_specialty`), so
  nothing the text said is lost. The two writes tau-Trait already answered with the record's JSON keep
  doing so.
- The clock is fixed (`domains.telehealth.vocabulary.REFERENCE_TIME`): a cancellation is stamped with the
  domain's "today", not the wall clock, so the same calls always give the same database.
- Bad input that tau-Trait let through is refused: an empty email or note, a negative price, a limit
  below 1, an unknown status filter or specialty (with the valid values in the message).
- `check_drug_interactions` looks each pair up in both directions. The catalogue files a pair under one
  of its two drugs; tau-Trait looked only under the primary, so its answer depended on which drug the
  agent happened to call primary. An interaction is a property of the pair.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from domains.telehealth.tools import TOOLS
from domains.telehealth.vocabulary import (
    ACTIONABLE_STATUSES,
    CANCELLATION_REASON,
    NEW_APPOINTMENT_MINUTES,
    REFERENCE_DATE,
    SEVERITY_RANK,
    STATUSES,
    copay_tier,
)
from mock_backends.base import SQLiteToolBackend, generic_tool, read_tool, write_tool
from mock_backends.calculator import calculate as _calculate
from mock_backends.store import JSON, Collection, Index
from mock_backends.telehealth import data as _data
from mock_backends.telehealth.models import (
    APPOINTMENTS,
    DEVICES,
    INTERACTIONS,
    PATIENTS,
    PROVIDERS,
    RECORDS,
    REGIMENS,
    SUPPLIERS,
    UPLOADS,
    Appointment,
    MedicalRecord,
    Patient,
    Provider,
    dump,
    normalise,
    upload_key,
)

Doc = dict[str, Any]
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_APPOINTMENT_NUMBER = re.compile(r"^APPT(\d+)$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")
MEETING_LINK = "https://telehealth.healthcenter.com/room/{appointment_id}"


def _weekday(day: str) -> str:
    """'monday'..'sunday' for a strict YYYY-MM-DD date (tau-Trait's message when it does not parse)."""
    try:
        if not isinstance(day, str) or not _DATE.match(day):
            raise ValueError(day)
        return datetime.strptime(day, "%Y-%m-%d").strftime("%A").lower()
    except ValueError:
        raise ValueError(f"Invalid date format: {day}. Please use YYYY-MM-DD format.") from None


def _check_date(name: str, day: str | None) -> None:
    if day is not None:
        try:
            _weekday(day)
        except ValueError:
            raise ValueError(f"Invalid {name}: {day}. Please use YYYY-MM-DD format.") from None


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer, got {limit!r}")


def _limited(items: list[Any], limit: int | None) -> list[Any]:
    return items if limit is None else items[:limit]


def _canonical(name: str, known: Iterable[str]) -> str | None:
    """The catalogue's spelling of `name`, matched case-insensitively (tau-Trait's lookups ignore case)."""
    wanted = name.strip().lower()
    return next((k for k in known if k.lower() == wanted), None)


class TelehealthBackend(SQLiteToolBackend):
    """The telehealth mock. Reads return stored documents (with display names where tau-Trait showed
    them); writes validate the changed record through the models before storing it."""

    specs = TOOLS  # checked against the tool methods when the class is created
    collections = (
        Collection(PATIENTS, (Index("$.demographics.email", ignore_case=True),
                              Index("$.demographics.date_of_birth"))),
        Collection(PROVIDERS),
        Collection(APPOINTMENTS, (Index("$.patient_id"), Index("$.provider_id"))),
        Collection(RECORDS, (Index("$.patient_id"), Index("$.appointment_id"))),
        Collection(SUPPLIERS),
        Collection(INTERACTIONS),
        Collection(REGIMENS),
        Collection(DEVICES),
        Collection(UPLOADS, (Index("$.device_id"),)),
    )

    @classmethod
    def normalise(cls, data: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
        return normalise(data)

    @classmethod
    def read_source(cls, path: Path) -> Any:
        """`--db` takes a tau-Trait telehealth data folder (or one JSON file in the same layout)."""
        return _data.read_source(path)

    @classmethod
    async def open(cls, db_path: Path | str, data: Mapping[str, Any] | None = None) -> TelehealthBackend:
        """A fresh database file holding `data` in the tau-Trait folder layout (default: our shipped seed)."""
        return await cls.create(db_path, _data.load_seed() if data is None else data)

    # ----------------------------------------------------------------------------------- lookups

    async def _patient(self, patient_id: str) -> Patient:
        doc = await self.store.get(PATIENTS, patient_id)
        if doc is None:
            raise ValueError(f"Patient with ID {patient_id} not found.")
        return Patient.model_validate(doc)

    async def _provider(self, provider_id: str) -> Provider:
        doc = await self.store.get(PROVIDERS, provider_id)
        if doc is None:
            raise ValueError(f"Provider with ID {provider_id} not found.")
        return Provider.model_validate(doc)

    async def _appointment_doc(self, appointment_id: str) -> Doc:
        doc = await self.store.get(APPOINTMENTS, appointment_id)
        if doc is None:
            raise ValueError(f"Appointment with ID {appointment_id} not found.")
        return doc

    async def _record_doc(self, record_id: str) -> Doc:
        doc = await self.store.get(RECORDS, record_id)
        if doc is None:
            raise ValueError(f"Medical record {record_id} not found.")
        return doc

    async def _names(self, patient_id: str, provider_id: str, providers: dict[str, Provider | None]) -> Doc:
        """The display names tau-Trait's text showed next to a record (None for a dangling id)."""
        patient_doc = await self.store.get(PATIENTS, patient_id)
        if provider_id not in providers:
            provider_doc = await self.store.get(PROVIDERS, provider_id)
            providers[provider_id] = None if provider_doc is None else Provider.model_validate(provider_doc)
        provider = providers[provider_id]
        return {
            "patient_name": None if patient_doc is None else Patient.model_validate(patient_doc).full_name,
            "provider_name": None if provider is None else provider.display_name,
            "provider_specialty": None if provider is None else provider.specialty,
        }

    async def _appointment_view(self, doc: Doc, providers: dict[str, Provider | None] | None = None) -> Doc:
        return {**doc, **await self._names(doc["patient_id"], doc["provider_id"], {} if providers is None
                                           else providers)}

    @staticmethod
    def _slot_times(provider: Provider, day: str) -> tuple[str, list[str]]:
        """The provider's slots on that date's weekday; raises tau-Trait's messages when there are none."""
        weekday = _weekday(day)
        if weekday not in provider.schedule:
            raise ValueError(f"Provider {provider.provider_id} does not work on {weekday.title()}.")
        return weekday, list(cast(Mapping[str, list[str]], provider.schedule)[weekday])

    def _check_slot(self, provider: Provider, day: str, time: str) -> None:
        weekday, times = self._slot_times(provider, day)
        if time not in times:
            shown = ", ".join(times) if times else "None"
            raise ValueError(f"Provider {provider.provider_id} is not available at {time} on {weekday.title()}. "
                             f"Available times: {shown}")

    async def _check_provider_free(self, provider_id: str, day: str, time: str, exclude: str | None = None) -> None:
        found = await self.store.find_docs(APPOINTMENTS, equals={"$.provider_id": provider_id, "$.date": day,
                                                                 "$.time": time})
        for key, doc in found:
            if key != exclude and doc.get("status") in ACTIONABLE_STATUSES:
                raise ValueError(f"Provider {provider_id} already has an appointment scheduled at {time} on {day}.")

    async def _next_appointment_number(self) -> int:
        numbers = [int(m.group(1)) for key in await self.store.keys(APPOINTMENTS)
                   if (m := _APPOINTMENT_NUMBER.match(key))]
        return max(numbers) + 1 if numbers else 1

    async def _save_appointment(self, doc: Doc) -> Doc:
        stored = dump(Appointment.model_validate(doc), doc)
        await self.tx.put(APPOINTMENTS, stored["appointment_id"], stored)
        return stored

    async def _save_record(self, doc: Doc) -> Doc:
        stored = dump(MedicalRecord.model_validate(doc), doc)
        await self.tx.put(RECORDS, stored["record_id"], stored)
        return stored

    # ----------------------------------------------------------------------------------- reads: patients

    @read_tool
    async def find_patient_by_email(self, email: str) -> str:
        if not isinstance(email, str) or not email.strip():
            raise ValueError("Email must not be empty.")
        keys = await self.store.find(PATIENTS, iequals={"$.demographics.email": email}, limit=1)
        if not keys:
            raise ValueError(f"No patient found with email {email}.")
        return keys[0]

    @read_tool
    async def find_patient_by_name_dob(self, first_name: str, last_name: str, date_of_birth: str) -> str:
        keys = await self.store.find(
            PATIENTS,
            equals={"$.demographics.date_of_birth": date_of_birth},
            iequals={"$.name.first_name": first_name, "$.name.last_name": last_name},
            limit=1,
        )
        if not keys:
            raise ValueError(f"No patient found with name {first_name} {last_name} and date of birth "
                             f"{date_of_birth}.")
        return keys[0]

    @read_tool
    async def get_patient_details(self, patient_id: str) -> Doc:
        doc = await self.store.get(PATIENTS, patient_id)
        if doc is None:
            raise ValueError(f"Patient with ID {patient_id} not found.")
        return doc

    # ----------------------------------------------------------------------------------- reads: scheduling

    @read_tool
    async def get_provider_details(self, provider_id: str) -> Doc:
        doc = await self.store.get(PROVIDERS, provider_id)
        if doc is None:
            raise ValueError(f"Provider with ID {provider_id} not found.")
        return doc

    @read_tool
    async def list_available_providers(self, specialty: str | None = None) -> Doc:
        providers = [Provider.model_validate(doc) for _, doc in await self.store.scan(PROVIDERS)]
        chosen: str | None = None
        if specialty is not None:
            specialties = list(dict.fromkeys(p.specialty for p in providers))
            chosen = _canonical(specialty, specialties)
            if chosen is None:
                raise ValueError(f"No providers found for specialty {specialty!r}. Specialties: "
                                 f"{', '.join(sorted(specialties))}")
        return {
            "specialty": chosen,
            "providers": [
                {"provider_id": p.provider_id, "name": p.display_name, "specialty": p.specialty,
                 "years_experience": p.years_experience, "languages": list(p.languages),
                 "consultation_fee": p.consultation_fee,
                 "phone": (p.model_extra or {}).get("contact", {}).get("phone")}
                for p in providers if chosen is None or p.specialty == chosen
            ],
        }

    @read_tool
    async def get_appointment_details(self, appointment_id: str) -> Doc:
        return await self._appointment_view(await self._appointment_doc(appointment_id))

    @read_tool
    async def list_patient_appointments(self, patient_id: str, status_filter: str | None = None) -> Doc:
        patient = await self._patient(patient_id)
        equals: dict[str, Any] = {"$.patient_id": patient_id}
        if status_filter is not None:
            if status_filter not in STATUSES:
                raise ValueError(f"Unknown status_filter {status_filter!r}; use one of {', '.join(STATUSES)}.")
            equals["$.status"] = status_filter
        providers: dict[str, Provider | None] = {}
        appointments = [await self._appointment_view(doc, providers)
                        for _, doc in await self.store.find_docs(APPOINTMENTS, equals=equals)]
        return {"patient_id": patient_id, "patient_name": patient.full_name, "status_filter": status_filter,
                "appointments": appointments}

    # ----------------------------------------------------------------------------------- reads: records

    @read_tool
    async def get_medical_record(self, record_id: str | None = None, appointment_id: str | None = None) -> Doc:
        if record_id is None and appointment_id is None:
            raise ValueError("Provide a record_id or an appointment_id.")
        if record_id is not None:
            doc = await self._record_doc(record_id)
            if appointment_id is not None and doc.get("appointment_id") != appointment_id:
                raise ValueError(f"Medical record {record_id} belongs to appointment {doc.get('appointment_id')}, "
                                 f"not {appointment_id}.")
        else:
            found = await self.store.find_docs(RECORDS, equals={"$.appointment_id": appointment_id}, limit=1)
            if not found:
                raise ValueError(f"No medical record found for appointment {appointment_id}.")
            doc = found[0][1]
        names = await self._names(doc["patient_id"], doc["provider_id"], {})
        return {**doc, "patient_name": names["patient_name"], "provider_name": names["provider_name"]}

    @read_tool
    async def list_patient_medical_records(self, patient_id: str, limit: int | None = None) -> Doc:
        _check_limit(limit)
        patient = await self._patient(patient_id)
        docs = [doc for _, doc in await self.store.find_docs(RECORDS, equals={"$.patient_id": patient_id})]
        newest_first = sorted(docs, key=lambda doc: str(doc["date"]), reverse=True)  # stable: ties keep order
        return {
            "patient_id": patient_id,
            "patient_name": patient.full_name,
            "records": [
                {"record_id": doc["record_id"], "date": doc["date"], "type": doc["type"],
                 "appointment_id": doc.get("appointment_id"), "provider_id": doc["provider_id"],
                 "medications": [p.get("medication") for p in doc.get("prescriptions", [])]}
                for doc in _limited(newest_first, limit)
            ],
        }

    # ----------------------------------------------------------------------------------- reads: medications

    @read_tool
    async def list_medication_suppliers(self, medication: str, country_filter: str | None = None,
                                        limit: int | None = None) -> Doc:
        _check_limit(limit)
        key = _canonical(medication, await self.store.keys(SUPPLIERS))
        if key is None:
            raise ValueError(f"No supplier information found for {medication}. (Tip: ensure the medication name "
                             "matches the catalog)")
        doc = await self.store.get(SUPPLIERS, key)
        assert doc is not None
        offers: list[Doc] = list(doc["suppliers"])
        if country_filter is not None:
            offers = [o for o in offers if str(o.get("country", "")).lower() == country_filter.lower()]
        cheapest_first = sorted(offers, key=lambda o: float(o["price_usd"]))  # stable, as tau-Trait's sort
        return {"medication": key, "country_filter": country_filter, "limit": limit,
                "suppliers": _limited(cheapest_first, limit)}

    @read_tool
    async def check_drug_interactions(self, primary_medication: str, current_medications: list[str]) -> Doc:
        if not primary_medication.strip():
            raise ValueError("primary_medication must not be empty.")
        catalogue = {key: doc["interactions"] for key, doc in await self.store.scan(INTERACTIONS)}
        known = [*catalogue, *(other for pairs in catalogue.values() for other in pairs)]
        primary = _canonical(primary_medication, known) or primary_medication
        found: list[Doc] = []
        unknown: list[str] = []
        for other in current_medications:
            if other.strip().lower() == primary.lower():
                continue  # a drug does not interact with itself
            entry, listed_under = self._pair(catalogue, primary, other)
            if entry is None:
                unknown.append(other)
            else:
                found.append({"medication": other, **entry, "listed_under": listed_under})
        hold = list(dict.fromkeys(drug for item in found for drug in item.get("skip", [])))
        worst = max(found, key=lambda i: (SEVERITY_RANK.get(str(i["severity"]).lower(), 0), i["risk_score"]),
                    default=None)
        return {
            "primary_medication": primary,
            "current_medications": list(current_medications),
            "interactions": found,
            "no_documented_interaction": unknown,
            "medications_to_hold": hold,
            "emergency_escalation": any(bool(item.get("emergency")) for item in found),
            "peak_overlap_hours": max((item["time_overlap_hours"] for item in found), default=None),
            "highest_severity": None if worst is None else {
                "medication": worst["medication"], "severity": worst["severity"], "risk_score": worst["risk_score"]},
        }

    @staticmethod
    def _pair(catalogue: Mapping[str, Mapping[str, Doc]], primary: str,
              other: str) -> tuple[Doc | None, str | None]:
        """The catalogue entry for the pair, filed under either drug, and which drug it was filed under."""
        for first, second in ((primary, other), (other, primary)):
            listed = _canonical(first, catalogue)
            if listed is None:
                continue
            partner = _canonical(second, catalogue[listed])
            if partner is not None:
                return dict(catalogue[listed][partner]), listed
        return None, None

    @read_tool
    async def get_regimen_options(self, patient_id: str) -> Doc:
        doc = await self.store.get(REGIMENS, patient_id)
        if doc is None:
            raise ValueError(f"No regimen optimization data available for patient {patient_id}.")
        return doc

    # ----------------------------------------------------------------------------------- reads: telemetry

    @read_tool
    async def list_telemetry_devices(self, status_filter: str | None = None, limit: int | None = None) -> Doc:
        _check_limit(limit)
        devices = [doc for _, doc in await self.store.scan(DEVICES)]
        if status_filter is not None:
            devices = [d for d in devices if str(d.get("status", "")).lower() == status_filter.lower()]
        by_id = sorted(devices, key=lambda d: str(d["device_id"]))
        return {"status_filter": status_filter, "devices": _limited(by_id, limit)}

    @read_tool
    async def list_telemetry_uploads(self, device_id: str, start_date: str | None = None,
                                     end_date: str | None = None, limit: int | None = None) -> list[Doc]:
        _check_limit(limit)
        _check_date("start_date", start_date)
        _check_date("end_date", end_date)
        uploads = [doc for _, doc in await self.store.find_docs(UPLOADS, equals={"$.device_id": device_id})]
        if not uploads and await self.store.get(DEVICES, device_id) is None:
            raise ValueError(f"Telemetry device {device_id} not found.")
        in_window = [u for u in uploads if (start_date is None or u["date"] >= start_date)
                     and (end_date is None or u["date"] <= end_date)]
        return _limited(sorted(in_window, key=lambda u: str(u["date"])), limit)

    @read_tool
    async def get_telemetry_upload(self, device_id: str, date: str) -> Doc:
        doc = await self.store.get(UPLOADS, upload_key(device_id, date))
        if doc is None:
            raise ValueError(f"No telemetry upload found for device {device_id} on {date}.")
        return doc

    # ----------------------------------------------------------------------------------- writes: appointments

    @write_tool
    async def schedule_appointment(self, patient_id: str, provider_id: str, date: str, time: str,
                                   appointment_type: str, bill_insurance: bool | None = True,
                                   voucher_id: str | None = None, payment_notes: str | None = None) -> Doc:
        bill_insurance = True if bill_insurance is None else bill_insurance  # null means "not given"
        patient = await self._patient(patient_id)
        provider = await self._provider(provider_id)
        self._check_slot(provider, date, time)
        await self._check_provider_free(provider_id, date, time)
        if not appointment_type.strip():
            raise ValueError("appointment_type must not be empty.")
        number = await self._next_appointment_number()
        appointment_id = f"APPT{number:03d}"
        if bill_insurance:
            plan = patient.insurance.primary
            if plan is None:
                raise ValueError(f"Patient {patient_id} has no primary insurance on file; schedule with "
                                 "bill_insurance false (self-pay or a telehealth voucher).")
            copay = float(getattr(plan, copay_tier(provider.specialty)))
            payment_method, applied_voucher, authorization = "insurance", None, f"AUTH{number:06d}"
        else:
            copay, applied_voucher, authorization = 0.0, voucher_id, None
            payment_method = "telehealth_voucher" if voucher_id else "self_pay"
        stored = await self._save_appointment({
            "appointment_id": appointment_id,
            "patient_id": patient_id,
            "provider_id": provider_id,
            "date": date,
            "time": time,
            "duration_minutes": NEW_APPOINTMENT_MINUTES,
            "type": appointment_type,
            "status": "scheduled",
            "notes": payment_notes or "",
            "insurance_authorization": authorization,
            "copay_amount": copay,
            "meeting_link": MEETING_LINK.format(appointment_id=appointment_id),
            "payment_method": payment_method,
            "voucher_id": applied_voucher,
            "insurance_billed": bool(bill_insurance),
        })
        return await self._appointment_view(stored)

    @write_tool
    async def reschedule_appointment(self, appointment_id: str, new_date: str, new_time: str) -> Doc:
        doc = await self._appointment_doc(appointment_id)
        if doc["status"] not in ACTIONABLE_STATUSES:
            raise ValueError(f"Appointment {appointment_id} is {doc['status']} and cannot be rescheduled; only "
                             "scheduled or pending_approval appointments can be.")
        if (doc["date"], doc["time"]) == (new_date, new_time):
            raise ValueError(f"Appointment {appointment_id} is already at {new_time} on {new_date}.")
        provider = await self._provider(doc["provider_id"])
        self._check_slot(provider, new_date, new_time)
        await self._check_provider_free(provider.provider_id, new_date, new_time, exclude=appointment_id)
        previous = {"date": doc["date"], "time": doc["time"]}
        stored = await self._save_appointment({**doc, "date": new_date, "time": new_time})
        return {**await self._appointment_view(stored), "rescheduled_from": previous}

    @write_tool
    async def cancel_appointment(self, appointment_id: str) -> Doc:
        doc = await self._appointment_doc(appointment_id)
        if doc["status"] == "cancelled":
            raise ValueError(f"Appointment {appointment_id} is already cancelled.")
        if doc["status"] == "completed":
            raise ValueError(f"Appointment {appointment_id} is completed and cannot be cancelled.")
        stored = await self._save_appointment({**doc, "status": "cancelled",
                                               "cancellation_reason": CANCELLATION_REASON,
                                               "cancellation_date": REFERENCE_DATE.isoformat()})
        return await self._appointment_view(stored)

    # ----------------------------------------------------------------------------------- writes: records

    @write_tool
    async def update_prescription_supplier(self, record_id: str, medication: str, supplier_company: str,
                                           brand_name: str, price_usd: float, currency: str | None = "USD") -> Doc:
        currency = "USD" if currency is None else currency
        if not supplier_company.strip() or not brand_name.strip():
            raise ValueError("supplier_company and brand_name must not be empty.")
        if isinstance(price_usd, bool) or not math.isfinite(price_usd) or price_usd < 0:
            raise ValueError(f"price_usd must be a non-negative number, got {price_usd!r}")
        if not _CURRENCY.match(currency):
            raise ValueError(f"currency must be a three-letter code such as 'USD', got {currency!r}")
        doc = await self._record_doc(record_id)
        prescriptions: list[Doc] = [dict(p) for p in doc.get("prescriptions", [])]
        if not prescriptions:
            raise ValueError(f"Medical record {record_id} has no prescriptions.")
        index = self._match_prescription(prescriptions, medication)
        if index is None:
            raise ValueError(f"Medication {medication} not found in medical record {record_id}.")
        prescriptions[index]["pharmacy"] = f"{supplier_company} ({brand_name})"
        prescriptions[index]["supplier"] = {"company": supplier_company, "brand_name": brand_name,
                                            "price_usd": float(price_usd), "currency": currency}
        return await self._save_record({**doc, "prescriptions": prescriptions})

    @staticmethod
    def _match_prescription(prescriptions: list[Doc], medication: str) -> int | None:
        """tau-Trait's match: the exact name ignoring case, else the first whose name is a prefix of the
        requested one or the other way round ("lamotrigine 100mg BID" finds "Lamotrigine")."""
        wanted = medication.strip().lower()
        # tau-Trait builds a name -> prescription map: with a repeated name the last prescription wins, and
        # the prefix search walks the names in first-seen order.
        last: dict[str, int] = {}
        for index, prescription in enumerate(prescriptions):
            last[str(prescription.get("medication", "")).strip().lower()] = index
        if wanted in last:
            return last[wanted]
        return next((i for name, i in last.items() if wanted.startswith(name) or name.startswith(wanted)), None)

    @write_tool
    async def update_medical_record_note(self, record_id: str, note: str,
                                         metadata: dict[str, Any] | None = None) -> Doc:
        if not note.strip():
            raise ValueError("The note must not be empty.")
        doc = await self._record_doc(record_id)
        entry: Doc = {"note": note}
        if metadata:
            entry["metadata"] = dict(metadata)
        return await self._save_record({**doc, "notes": [*doc.get("notes", []), entry]})

    # ----------------------------------------------------------------------------------- generic

    @generic_tool
    async def calculate(self, expression: str) -> str:
        return _calculate(expression)

    @generic_tool
    async def think(self, note: str) -> str:
        return ""

    @generic_tool
    async def transfer_to_human_support(self, reason: str) -> str:
        return f"Transferring you to a human support representative. Reason for transfer: {reason}"
