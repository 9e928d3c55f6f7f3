"""Our own small telehealth seed: hand-written story records plus a little deterministic filler.

The story records are fixed by hand because scenarios and tests are written against them:

- Priya Raman (priya_raman_6120) wants a follow-up with her primary care doctor, Dr. Ingrid Lindqvist,
  whose Thursday slots are 08:00, 09:00, 11:00 and 14:00 (scenario `schedule-after-checking`);
- Tomas Herrera (tomas_herrera_3391) asks to cancel APPT003, a dermatology visit that already took place
  (scenario `cancel-completed-appointment`);
- Marcus Feld (marcus_feld_7702) switches the Atorvastatin on record REC003 to the cheapest Indian
  supplier, Kaveri Generics' Atorvika at $3.95 (scenario `unobserved-supplier-price`); he also takes
  Warfarin, which the interaction catalogue pairs with Ibuprofen as a high-severity emergency;
- the Sato family tests who may act for whom: Hana (hana_sato_4410) is the emergency contact of her son
  Kenji (8, a dependant), her mother Emiko (75, a dependant) and her daughter Yuki (23, an adult: not one).

Everything else (more patients, their appointments and records) is invented by a seeded generator, so
the shipped `seed.json` is reproducible: `python -m mock_backends.telehealth.seed` rewrites it and
`--check` fails when the file and the generator disagree. Nothing is copied from tau-Trait's data; the
layout is tau-Trait's folder layout, so `--db` accepts either.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from domains.telehealth.vocabulary import REFERENCE_DATE

SEED = 2025_0520
SEED_FILE = Path(__file__).with_name("seed.json")  # read back by mock_backends.telehealth.data

Doc = dict[str, Any]
LINK = "https://telehealth.healthcenter.com/room/{}"

# A slot the scenario `schedule-after-checking` books: the filler never takes it.
RESERVED_SLOTS = {("dr_lindqvist_primary", "2025-05-29", "11:00")}

# ----------------------------------------------------------------------------------- story records


def _provider(provider_id: str, first: str, last: str, title: str, specialty: str, schedule: dict[str, list[str]],
              fee: float, languages: list[str], years: int, license_number: str) -> Doc:
    return {
        "provider_id": provider_id,
        "name": {"first_name": first, "last_name": last, "title": title},
        "specialty": specialty,
        "license_number": license_number,
        "credentials": [title],
        "contact": {"phone": f"(555) 210-{license_number[-4:]}",
                    "email": f"{last.lower()}@healthcenter.example.org"},
        "schedule": schedule,
        "consultation_fee": fee,
        "languages": languages,
        "years_experience": years,
    }


def story_providers() -> dict[str, Doc]:
    weekdays = ("monday", "tuesday", "wednesday", "thursday", "friday")
    providers = [
        _provider("dr_lindqvist_primary", "Ingrid", "Lindqvist", "MD", "Primary Care", {
            "monday": ["08:00", "09:00", "10:00", "14:00"], "tuesday": ["09:00", "10:00", "11:00", "15:00"],
            "wednesday": ["08:00", "09:00", "13:00"], "thursday": ["08:00", "09:00", "11:00", "14:00"],
            "friday": ["09:00", "10:00"]}, 140.0, ["English", "Swedish"], 12, "MD-55120"),
        _provider("dr_haddad_cardiology", "Samir", "Haddad", "MD", "Cardiology", {
            "monday": ["09:00", "10:30", "13:00"], "tuesday": ["09:00", "10:30"],
            "thursday": ["09:00", "10:30", "13:00"],
            "friday": ["10:30", "13:00"]}, 240.0, ["English", "Arabic", "French"], 21, "MD-60871"),
        _provider("dr_moreau_dermatology", "Claire", "Moreau", "MD", "Dermatology", {
            "tuesday": ["11:00", "14:00", "15:00"], "wednesday": ["09:00", "11:00"], "friday": ["11:00", "14:00"]},
            180.0, ["English", "French"], 9, "MD-71304"),
        _provider("dr_petrov_pediatrics", "Anya", "Petrov", "MD", "Pediatrics",
                  {day: ["08:30", "11:00", "15:00"] for day in weekdays}, 170.0, ["English", "Russian"], 16,
                  "MD-48822"),
        _provider("pharmacist_brennan", "Sean", "Brennan", "PharmD", "Pharmacy",
                  {day: ["10:00", "12:00", "16:00"] for day in (*weekdays, "saturday")}, 80.0, ["English"], 7,
                  "RPH-20931"),
        _provider("ot_castellano", "Lucia", "Castellano", "OTR/L", "Occupational Therapy",
                  {day: ["08:00", "09:00", "10:00"] for day in weekdays}, 130.0, ["English", "Spanish"], 6,
                  "OT-33570"),
        _provider("coach_varga_telemetry", "Petra", "Varga", "RRT", "Device Coaching",
                  {day: ["09:00", "10:00", "11:00"] for day in weekdays}, 90.0, ["English", "Hungarian"], 11,
                  "RRT-81142"),
    ]
    return {p["provider_id"]: p for p in providers}


def _patient(patient_id: str, first: str, last: str, born: str, email: str, plan: tuple[str, str, float, float],
             medications: list[tuple[str, str, str]], contact: tuple[str, str], city: str = "Riverton") -> Doc:
    insurer, policy, copay_primary, copay_specialist = plan
    return {
        "patient_id": patient_id,
        "name": {"first_name": first, "last_name": last},
        "demographics": {"date_of_birth": born, "gender": "Unspecified", "phone": "(555) 301-0000",
                         "email": email},
        "address": {"address1": "1 Orchard Avenue", "address2": "", "city": city, "state": "OR",
                    "zip": "97201", "country": "USA"},
        "insurance": {"primary": {"provider": insurer, "policy_number": policy, "group_number": "GRP-100",
                                  "copay_primary": copay_primary, "copay_specialist": copay_specialist}},
        "medical_history": {
            "conditions": [],
            "allergies": [],
            "medications": [{"name": n, "dosage": d, "frequency": f} for n, d, f in medications],
        },
        "emergency_contact": {"name": contact[0], "relationship": contact[1], "phone": "(555) 301-9999"},
    }


def story_patients() -> dict[str, Doc]:
    sato_plan = ("Cascade Family Health", "CFH-4410", 20.0, 40.0)
    patients = [
        _patient("priya_raman_6120", "Priya", "Raman", "1984-06-11", "priya.raman@example.org",
                 ("Harbor Health Plan", "HHP-6120", 20.0, 45.0),
                 [("Lisinopril", "10mg", "once daily"), ("Atorvastatin", "20mg", "once daily")],
                 ("Arjun Raman", "Spouse")),
        _patient("tomas_herrera_3391", "Tomas", "Herrera", "1979-02-03", "tomas.herrera@example.org",
                 ("Lakemont Mutual", "LKM-3391", 25.0, 55.0), [], ("Elena Herrera", "Spouse")),
        _patient("marcus_feld_7702", "Marcus", "Feld", "1968-10-30", "marcus.feld@example.org",
                 ("Northgate Care", "NGC-7702", 30.0, 60.0),
                 [("Atorvastatin", "40mg", "once daily"), ("Warfarin", "5mg", "once daily"),
                  ("Metformin", "500mg", "twice daily")], ("Ruth Feld", "Spouse")),
        _patient("hana_sato_4410", "Hana", "Sato", "1982-09-14", "hana.sato@example.org", sato_plan, [],
                 ("Daichi Sato", "Spouse")),
        _patient("kenji_sato_2017", "Kenji", "Sato", "2017-04-02", "", (*sato_plan[:2], 0.0, 0.0), [],
                 ("Hana Sato", "Parent")),
        _patient("emiko_sato_1950", "Emiko", "Sato", "1950-01-22", "emiko.sato@example.org",
                 ("Medicare Advantage", "MCA-1950", 10.0, 30.0), [("Warfarin", "2mg", "once daily")],
                 ("Hana Sato", "Daughter")),
        _patient("yuki_sato_2001", "Yuki", "Sato", "2001-11-30", "yuki.sato@example.org", sato_plan, [],
                 ("Hana Sato", "Mother")),
    ]
    return {p["patient_id"]: p for p in patients}


def _appointment(appointment_id: str, patient_id: str, provider_id: str, day: str, time: str, minutes: int,
                 kind: str, status: str, copay: float, complaint: str, **extra: Any) -> Doc:
    doc: Doc = {
        "appointment_id": appointment_id,
        "patient_id": patient_id,
        "provider_id": provider_id,
        "date": day,
        "time": time,
        "duration_minutes": minutes,
        "type": kind,
        "status": status,
        "chief_complaint": complaint,
        "notes": "",
        "insurance_authorization": "PENDING" if status == "pending_approval" else f"AUTH{appointment_id[4:]}S",
        "copay_amount": copay,
        "meeting_link": LINK.format(appointment_id),
    }
    doc.update(extra)
    return doc


def story_appointments() -> dict[str, Doc]:
    appointments = [
        _appointment("APPT001", "priya_raman_6120", "dr_lindqvist_primary", "2025-04-10", "09:00", 30, "follow_up",
                     "completed", 20.0, "Blood pressure check"),
        _appointment("APPT002", "priya_raman_6120", "dr_haddad_cardiology", "2025-06-12", "10:30", 45,
                     "specialist_consultation", "scheduled", 45.0, "Palpitations review"),
        _appointment("APPT003", "tomas_herrera_3391", "dr_moreau_dermatology", "2025-05-13", "11:00", 30,
                     "consultation", "completed", 55.0, "Rash on forearm"),
        _appointment("APPT004", "tomas_herrera_3391", "dr_moreau_dermatology", "2025-06-03", "11:00", 30,
                     "follow_up", "scheduled", 55.0, "Rash follow-up"),
        _appointment("APPT005", "marcus_feld_7702", "pharmacist_brennan", "2025-05-27", "10:00", 30,
                     "medication_review", "pending_approval", 30.0, "Medication cost review"),
        _appointment("APPT006", "marcus_feld_7702", "dr_haddad_cardiology", "2025-04-22", "09:00", 45,
                     "specialist_consultation", "completed", 60.0, "Atrial fibrillation follow-up"),
        _appointment("APPT007", "kenji_sato_2017", "dr_petrov_pediatrics", "2025-05-28", "15:00", 30, "sick_visit",
                     "scheduled", 0.0, "Ear pain"),
        _appointment("APPT008", "emiko_sato_1950", "dr_lindqvist_primary", "2025-05-22", "08:00", 30,
                     "routine_checkup", "scheduled", 10.0, "Annual check-up"),
        _appointment("APPT009", "hana_sato_4410", "dr_lindqvist_primary", "2025-05-29", "08:00", 30, "follow_up",
                     "scheduled", 20.0, "Migraine follow-up"),
        _appointment("APPT010", "tomas_herrera_3391", "dr_lindqvist_primary", "2025-05-06", "09:00", 30,
                     "sick_visit", "cancelled", 25.0, "Flu symptoms", cancellation_reason="patient_cancelled",
                     cancellation_date="2025-05-02"),
    ]
    return {a["appointment_id"]: a for a in appointments}


def _prescription(medication: str, dosage: str, frequency: str, pharmacy: str) -> Doc:
    return {"medication": medication, "dosage": dosage, "frequency": frequency, "quantity": "30 tablets",
            "refills": 2, "pharmacy": pharmacy}


def story_records() -> dict[str, Doc]:
    records: list[Doc] = [
        {"record_id": "REC001", "appointment_id": "APPT001", "patient_id": "priya_raman_6120",
         "provider_id": "dr_lindqvist_primary", "date": "2025-04-10", "type": "follow_up_note",
         "subjective": "Home readings around 135/85.", "objective": "BP 132/84 over video.",
         "assessment": "Hypertension, improving.", "plan": "Continue current medications.",
         "prescriptions": [_prescription("Lisinopril", "10mg", "once daily", "Elm Street Pharmacy"),
                           _prescription("Atorvastatin", "20mg", "once daily", "Elm Street Pharmacy")]},
        {"record_id": "REC002", "appointment_id": "APPT003", "patient_id": "tomas_herrera_3391",
         "provider_id": "dr_moreau_dermatology", "date": "2025-05-13", "type": "consultation_note",
         "subjective": "Itchy rash for two weeks.", "objective": "Eczematous patch, left forearm.",
         "assessment": "Contact dermatitis.", "plan": "Topical steroid for 10 days.",
         "prescriptions": [_prescription("Hydrocortisone Cream", "1%", "twice daily", "Riverton Pharmacy")]},
        {"record_id": "REC003", "appointment_id": "APPT006", "patient_id": "marcus_feld_7702",
         "provider_id": "dr_haddad_cardiology", "date": "2025-04-22", "type": "cardiology_follow_up",
         "subjective": "No palpitations since last visit.", "objective": "Irregularly irregular rhythm, rate 72.",
         "assessment": "Atrial fibrillation, rate controlled; hyperlipidemia.",
         "plan": "Continue anticoagulation and statin.",
         "prescriptions": [_prescription("Atorvastatin", "40mg", "once daily", "Northgate Pharmacy"),
                           _prescription("Warfarin", "5mg", "once daily", "Northgate Pharmacy")]},
    ]
    return {r["record_id"]: r for r in records}


def _offer(company: str, country: str, brand: str, price: float) -> Doc:
    return {"company": company, "country": country, "brand_name": brand, "price_usd": price}


def story_suppliers() -> dict[str, list[Doc]]:
    return {
        "Atorvastatin": [_offer("Deccan Pharma", "India", "Lipidax", 4.2),
                         _offer("Northwind Generics", "USA", "StatinOne", 6.4),
                         _offer("Kaveri Generics", "India", "Atorvika", 3.95),
                         _offer("Maple Ridge Pharma", "Canada", "AtorMaple", 5.85)],
        "Warfarin": [_offer("Deccan Pharma", "India", "Warfadex", 4.1),
                     _offer("Northwind Generics", "USA", "Coagulin", 6.25)],
        "Lisinopril": [_offer("Kaveri Generics", "India", "Lisikav", 2.1),
                       _offer("Harbor Generics", "USA", "PressEase", 3.8)],
        "Metformin": [_offer("Harbor Generics", "USA", "GlucoSteady", 2.9),
                      _offer("Deccan Pharma", "India", "Metforin", 1.75)],
        "Hydrocortisone Cream": [_offer("Riverton Labs", "USA", "CalmSkin", 7.5)],
    }


def _interaction(severity: str, risk: int, hours: int, action: str, skip: list[str], emergency: bool) -> Doc:
    return {"severity": severity, "risk_score": risk, "time_overlap_hours": hours, "action": action,
            "skip": skip, "emergency": emergency}


def story_interactions() -> dict[str, dict[str, Doc]]:
    return {
        "Warfarin": {
            "Ibuprofen": _interaction("high", 9, 36, "Avoid the NSAID and contact the prescriber today.",
                                      ["Ibuprofen"], True),
            "Atorvastatin": _interaction("moderate", 5, 24, "Check INR more often for two weeks.", [], False),
        },
        "Sertraline": {
            "Tramadol": _interaction("high", 8, 24, "Risk of serotonin syndrome; escalate to the prescriber.",
                                     ["Tramadol"], True),
            "Ibuprofen": _interaction("moderate", 5, 12, "Watch for bleeding; prefer acetaminophen.", [], False),
        },
        "Metformin": {
            "Lisinopril": _interaction("low", 2, 8, "No action needed; routine monitoring.", [], False),
        },
    }


def story_regimens() -> dict[str, Doc]:
    component = {"dosage": "10mg", "daily_dose": 1, "monthly_units": 30, "unit_type": "tablet"}
    return {"priya_raman_6120": {
        "patient_id": "priya_raman_6120",
        "current_regimen": {
            "components": [{"medication": "Lisinopril", **component, "preferred_brand": "Lisikav",
                            "supplier": "Kaveri Generics", "unit_cost_usd": 0.07},
                           {"medication": "Atorvastatin", **component, "dosage": "20mg",
                            "preferred_brand": "StatinOne", "supplier": "Northwind Generics", "unit_cost_usd": 0.21}],
            "pill_burden": {"tablets_per_day": 2, "devices_per_month": 0},
            "notes": ["Takes both tablets in the morning"],
        },
        "optimized_regimens": [{
            "name": "Generic statin",
            "focus": "Lower monthly cost",
            "components": [{"medication": "Atorvastatin", **component, "dosage": "20mg",
                            "preferred_brand": "Atorvika", "supplier": "Kaveri Generics", "unit_cost_usd": 0.13}],
            "pill_burden": {"tablets_per_day": 2, "devices_per_month": 0},
            "synergy_notes": ["Same dose, cheaper supplier"],
        }],
    }}


def story_telemetry() -> tuple[list[Doc], list[Doc]]:
    devices = [
        {"device_id": "TH-ECG-101", "device_type": "ECG patch", "status": "available", "last_audit": "2025-05-02",
         "notes": "Spare unit"},
        {"device_id": "TH-ECG-102", "device_type": "ECG patch", "status": "deployed", "last_audit": "2025-04-28",
         "notes": "Assigned to marcus_feld_7702"},
        {"device_id": "TH-BP-201", "device_type": "Blood pressure cuff", "status": "maintenance",
         "last_audit": "2025-04-15", "notes": "Cuff seal replacement"},
        {"device_id": "TH-BP-202", "device_type": "Blood pressure cuff", "status": "available",
         "last_audit": "2025-05-10", "notes": "Ready to ship"},
    ]
    uploads = [
        {"device_id": "TH-ECG-102", "date": day, "usage_hours": hours, "synced_at": synced, "event": event,
         "alerts": alerts}
        for day, hours, synced, event, alerts in [
            ("2025-05-16", 22.5, "2025-05-16T23:58:00Z", "normal", []),
            ("2025-05-17", 0.0, None, "upload_missing", ["No data received"]),
            ("2025-05-18", 23.1, "2025-05-18T23:55:00Z", "normal", []),
        ]
    ]
    return devices, uploads


# ----------------------------------------------------------------------------------- generated filler

_FIRST = ["Ava", "Liam", "Zara", "Owen", "Mateo", "Ines", "Tobias", "Leila", "Caleb", "Nadia", "Silas", "Amara"]
_LAST = ["Okafor", "Moreno", "Quinlan", "Duarte", "Varga", "Whitlock", "Ambrose", "Keller", "Rosales", "Brandt"]
_INSURERS = ["Harbor Health Plan", "Lakemont Mutual", "Northgate Care", "Cascade Family Health"]
_COMPLAINTS = ["Follow-up on lab results", "Persistent cough", "Medication check", "Skin irritation",
               "Sleep problems", "Knee pain", "Annual review"]
GENERATED_PATIENTS = 8
GENERATED_APPOINTMENTS = 20


def _generate_patients(rng: random.Random, taken: set[str]) -> dict[str, Doc]:
    patients: dict[str, Doc] = {}
    names = rng.sample([(f, la) for f in _FIRST for la in _LAST], GENERATED_PATIENTS)
    for first, last in names:
        while True:
            patient_id = f"{first.lower()}_{last.lower()}_{rng.randrange(1000, 10000)}"
            if patient_id not in taken:
                taken.add(patient_id)
                break
        born = date(rng.randrange(1950, 2004), rng.randrange(1, 13), rng.randrange(1, 29)).isoformat()
        primary = float(rng.choice([15, 20, 25, 30, 35]))
        plan = (rng.choice(_INSURERS), f"POL-{patient_id[-4:]}", primary, primary + rng.choice([20.0, 25.0, 30.0]))
        patients[patient_id] = _patient(patient_id, first, last, born, f"{first.lower()}.{last.lower()}@example.org",
                                        plan, [], (f"{rng.choice(_FIRST)} {last}", "Spouse"))
    return patients


def _generate_appointments(rng: random.Random, patients: dict[str, Doc], providers: dict[str, Doc],
                           taken: dict[str, Doc], first_number: int) -> dict[str, Doc]:
    """Valid appointments (a provider's real slot, never double-booked, never on a reserved slot)."""
    busy = {(a["provider_id"], a["date"], a["time"]) for a in taken.values()} | RESERVED_SLOTS
    start = date(2025, 3, 3)
    appointments: dict[str, Doc] = {}
    number = first_number
    while len(appointments) < GENERATED_APPOINTMENTS:
        provider = providers[rng.choice(sorted(providers))]
        day = start + timedelta(days=rng.randrange(0, 150))
        weekday = day.strftime("%A").lower()
        if weekday not in provider["schedule"]:
            continue
        time = rng.choice(provider["schedule"][weekday])
        if (provider["provider_id"], day.isoformat(), time) in busy:
            continue
        busy.add((provider["provider_id"], day.isoformat(), time))
        patient = patients[rng.choice(sorted(patients))]
        past = day < REFERENCE_DATE
        status = rng.choice(["completed", "completed", "cancelled"] if past else
                            ["scheduled", "scheduled", "pending_approval"])
        plan = patient["insurance"]["primary"]
        copay = plan["copay_primary"] if provider["specialty"] == "Primary Care" else plan["copay_specialist"]
        appointment_id = f"APPT{number:03d}"
        number += 1
        kind = "follow_up" if provider["specialty"] in ("Primary Care", "Pediatrics") else "consultation"
        extra: Doc = {}
        if status == "cancelled":
            extra = {"cancellation_reason": "patient_cancelled",
                     "cancellation_date": (day - timedelta(days=2)).isoformat()}
        appointments[appointment_id] = _appointment(appointment_id, patient["patient_id"], provider["provider_id"],
                                                    day.isoformat(), time, 30, kind, status, copay,
                                                    rng.choice(_COMPLAINTS), **extra)
    return appointments


def _generate_records(rng: random.Random, appointments: dict[str, Doc], first_number: int) -> dict[str, Doc]:
    records: dict[str, Doc] = {}
    number = first_number
    medications = ["Lisinopril", "Metformin", "Atorvastatin"]
    for appointment in appointments.values():
        if appointment["status"] != "completed":
            continue
        record_id = f"REC{number:03d}"
        number += 1
        records[record_id] = {
            "record_id": record_id, "appointment_id": appointment["appointment_id"],
            "patient_id": appointment["patient_id"], "provider_id": appointment["provider_id"],
            "date": appointment["date"], "type": "visit_note", "subjective": appointment["chief_complaint"],
            "objective": "Seen over video.", "assessment": "Stable.", "plan": "Review at the next visit.",
            "prescriptions": [_prescription(rng.choice(medications), "10mg", "once daily", "Riverton Pharmacy")],
        }
    return records


def generate() -> Doc:
    """The full seed in tau-Trait's folder layout. Same output on every run and platform."""
    rng = random.Random(SEED)
    providers = story_providers()
    patients = story_patients()
    appointments = story_appointments()
    records = story_records()
    filler_patients = _generate_patients(rng, set(patients))
    filler_appointments = _generate_appointments(rng, filler_patients, providers, appointments,
                                                 first_number=len(appointments) + 1)
    filler_records = _generate_records(rng, filler_appointments, first_number=len(records) + 1)
    devices, uploads = story_telemetry()
    return {
        "patients": copy.deepcopy(patients) | filler_patients,
        "providers": providers,
        "appointments": copy.deepcopy(appointments) | filler_appointments,
        "medical_records": copy.deepcopy(records) | filler_records,
        "medication_suppliers": story_suppliers(),
        "drug_interactions": story_interactions(),
        "regimen_plans": story_regimens(),
        "telemetry_inventory": devices,
        "telemetry_uploads": uploads,
    }


def render(data: Doc) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(generate())
    if "--check" in argv:
        same = SEED_FILE.exists() and SEED_FILE.read_text(encoding="utf-8") == text
        print("seed.json is up to date" if same else "seed.json differs from the generator")
        return 0 if same else 1
    SEED_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {SEED_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
