"""tau-Trait telehealth tasks as `ledgeragent check` trajectories: the gold actions plus a careful agent's reads.

The ten tasks used here (tau-Trait's telehealth `TASKS_TEST`, tau_trait/envs/telehealth/, in tau2-style JSON)
often write without the reads that justify the write: task 0 is a bare `schedule_appointment`, task 6 changes
suppliers of records it never listed appointments for. A gate that asks "what did you observe?" rightly
refuses those, so a trajectory here is what a careful agent does around the same gold writes:

1. authenticate the task's patient (`user_id`): find_patient_by_email with the email on their profile (the
   agent asks the patient for it), or find_patient_by_name_dob when the profile has no email; then read the
   profile (get_patient_details);
2. every gold action in its original order: reads and generic calls are kept as they are;
3. before each gold write, the reads that write's predicates need and that are not fresh in the ledger:
   - schedule: the booked patient's profile, the provider, the patient's calendar listed without a filter;
   - reschedule: the appointment, its provider, its patient's unfiltered calendar;
   - cancel: the appointment;
   - supplier change: the record, and the medication's supplier listing again (unfiltered) unless the
     latest listing the trajectory read for that medication shows the chosen offer;
   - note: the record.
   Freshness follows the domain's stale rules: an appointment write makes every calendar and that
   appointment stale, a booking the booked patient's calendar, a record write that record; a filtered
   listing replaces an unfiltered one at the same ledger path.

Each line is `{"name", "arguments", "expect"?, "note"}`, the `ledgeragent check` JSONL format. Gold writes
expect ALLOW unless the caller names them as expected refusals; gold reads expect ALLOW unless they cannot
succeed (then no expectation: the verdict is ERROR). The `note` says where the line comes from: "gold
<action_id>" for gold actions, "careful read before <action_id>" otherwise.

Everything is built from the task and the raw data folder alone; nothing here runs a backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.tools import ToolKind, validate_arguments
from domains.telehealth import DOMAIN
from domains.telehealth.vocabulary import STATUSES
from mock_backends.telehealth import read_folder
from tests.support.upstream import TAU_TRAIT_TELEHEALTH

DATA_DIR = TAU_TRAIT_TELEHEALTH
TASKS_PATH = DATA_DIR / "tasks.json"

WRITE_TOOLS = frozenset(t.name for t in DOMAIN.tools if t.kind is ToolKind.WRITE)
GOLD_NOTE = "gold "
READ_NOTE = "careful read before "

Line = dict[str, Any]
Task = dict[str, Any]
Data = dict[str, Any]


def shared_present() -> bool:
    return TASKS_PATH.is_file() and (DATA_DIR / "patients.json").is_file()


def load_tasks(path: Path = TASKS_PATH) -> list[Task]:
    tasks: list[Task] = json.loads(path.read_text(encoding="utf-8"))
    return tasks


def load_data(folder: Path = DATA_DIR) -> Data:
    """The raw tau-Trait folder (not normalised): enough to find emails, owners and providers."""
    return read_folder(folder)


def gold_actions(task: Task) -> list[dict[str, Any]]:
    criteria = task.get("evaluation_criteria") or {}
    return list(criteria.get("actions") or [])


def gold_writes(task: Task) -> list[dict[str, Any]]:
    return [a for a in gold_actions(task) if a["name"] in WRITE_TOOLS]


def _catalogue_name(data: Data, medication: str) -> str | None:
    wanted = medication.strip().lower()
    return next((name for name in data["medication_suppliers"] if name.lower() == wanted), None)


def read_would_fail(data: Data, name: str, args: Mapping[str, Any]) -> bool:
    """Whether the read cannot succeed: arguments the tool does not take, or an id the data does not hold."""
    spec = DOMAIN.tool(name)
    if spec is None or validate_arguments(spec, args):
        return True  # e.g. task 18's list_available_providers(min_years_experience=...): tau-Trait has no such argument
    patients, appointments, records = data["patients"], data["appointments"], data["medical_records"]
    if name in ("get_patient_details", "list_patient_appointments", "list_patient_medical_records"):
        if args.get("status_filter") not in (None, *STATUSES):
            return True
        return args.get("patient_id") not in patients
    if name == "get_appointment_details":
        return args.get("appointment_id") not in appointments
    if name == "get_provider_details":
        return args.get("provider_id") not in data["providers"]
    if name == "get_medical_record":
        if args.get("record_id") is not None:
            return args["record_id"] not in records
        return not any(r.get("appointment_id") == args.get("appointment_id") for r in records.values())
    if name == "list_medication_suppliers":
        return _catalogue_name(data, str(args.get("medication", ""))) is None
    if name == "find_patient_by_email":
        email = str(args.get("email", "")).lower()
        return not email or not any(p["demographics"].get("email", "").lower() == email for p in patients.values())
    return False


def _listing(data: Data, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What list_medication_suppliers shows for these arguments (country filter, cheapest first, limit)."""
    name = _catalogue_name(data, str(args.get("medication", "")))
    offers = list(data["medication_suppliers"].get(name, [])) if name else []
    country = args.get("country_filter")
    if country is not None:
        offers = [o for o in offers if str(o.get("country", "")).lower() == str(country).lower()]
    offers.sort(key=lambda o: float(o["price_usd"]))
    limit = args.get("limit")
    return offers[:limit] if isinstance(limit, int) and limit > 0 else offers


def _shows(offers: Iterable[Mapping[str, Any]], args: Mapping[str, Any]) -> bool:
    company = str(args.get("supplier_company", "")).lower()
    for offer in offers:
        names = (str(offer["company"]).lower(), f"{offer['company']} ({offer['country']})".lower())
        if company in names and str(offer["brand_name"]).lower() == str(args.get("brand_name", "")).lower() \
                and abs(float(offer["price_usd"]) - float(args.get("price_usd", -1))) <= 0.005:
            return True
    return False


class _Fresh:
    """What a careful agent knows is fresh in the ledger, following the domain's stale rules."""

    def __init__(self) -> None:
        self.profiles: set[str] = set()
        self.providers: set[str] = set()
        self.appointments: set[str] = set()
        self.calendars: set[str] = set()  # unfiltered listings only
        self.records: set[str] = set()
        self.listings: dict[str, list[dict[str, Any]]] = {}  # catalogue medication -> offers last shown

    def saw(self, data: Data, name: str, args: Mapping[str, Any]) -> None:
        if name == "get_patient_details":
            self.profiles.add(args["patient_id"])
        elif name == "get_provider_details":
            self.providers.add(args["provider_id"])
        elif name == "get_appointment_details":
            self.appointments.add(args["appointment_id"])
        elif name == "list_patient_appointments":
            (self.calendars.add if args.get("status_filter") is None else self.calendars.discard)(args["patient_id"])
        elif name == "get_medical_record":
            record_id = args.get("record_id") or next(r for r, doc in data["medical_records"].items()
                                                      if doc.get("appointment_id") == args["appointment_id"])
            self.records.add(record_id)
        elif name == "list_medication_suppliers":
            medication = _catalogue_name(data, str(args["medication"]))
            if medication is not None:
                self.listings[medication] = _listing(data, args)

    def wrote(self, name: str, args: Mapping[str, Any]) -> None:
        if name == "schedule_appointment":
            self.calendars.discard(args["patient_id"])
        elif name in ("reschedule_appointment", "cancel_appointment"):
            self.appointments.discard(args["appointment_id"])
            self.calendars.clear()
        else:
            self.records.discard(args["record_id"])


def _line(name: str, arguments: Mapping[str, Any], expect: str | None, note: str) -> Line:
    line: Line = {"name": name, "arguments": dict(arguments)}
    if expect is not None:
        line["expect"] = expect
    line["note"] = note
    return line


def _careful_reads(data: Data, fresh: _Fresh, name: str, args: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The reads the write's predicates need that the ledger does not hold fresh, in the order an agent makes them."""
    reads: list[tuple[str, dict[str, Any]]] = []
    if name == "schedule_appointment":
        patient_id, provider_id = args["patient_id"], args["provider_id"]
        if patient_id not in fresh.profiles:
            reads.append(("get_patient_details", {"patient_id": patient_id}))
        if provider_id not in fresh.providers:
            reads.append(("get_provider_details", {"provider_id": provider_id}))
        if patient_id not in fresh.calendars:
            reads.append(("list_patient_appointments", {"patient_id": patient_id}))
    elif name in ("reschedule_appointment", "cancel_appointment"):
        appointment_id = args["appointment_id"]
        if appointment_id not in fresh.appointments:
            reads.append(("get_appointment_details", {"appointment_id": appointment_id}))
        if name == "reschedule_appointment":
            appointment = data["appointments"][appointment_id]
            if appointment["provider_id"] not in fresh.providers:
                reads.append(("get_provider_details", {"provider_id": appointment["provider_id"]}))
            if appointment["patient_id"] not in fresh.calendars:
                reads.append(("list_patient_appointments", {"patient_id": appointment["patient_id"]}))
    else:
        if args["record_id"] not in fresh.records:
            reads.append(("get_medical_record", {"record_id": args["record_id"]}))
        if name == "update_prescription_supplier":
            medication = _catalogue_name(data, str(args["medication"])) or str(args["medication"])
            if not _shows(fresh.listings.get(medication, []), args):
                reads.append(("list_medication_suppliers", {"medication": medication}))
    return reads


def authentication(task: Task, data: Data) -> list[Line]:
    """find_patient_* for the task's patient, then their profile."""
    patient_id = task["user_id"]
    doc = data["patients"][patient_id]
    email = doc["demographics"].get("email", "")
    if email:
        find: Line = _line("find_patient_by_email", {"email": email}, "ALLOW", "authenticate the patient first")
    else:
        find = _line("find_patient_by_name_dob", {"first_name": doc["name"]["first_name"],
                                                  "last_name": doc["name"]["last_name"],
                                                  "date_of_birth": doc["demographics"]["date_of_birth"]},
                     "ALLOW", "authenticate the patient first")
    return [find, _line("get_patient_details", {"patient_id": patient_id}, "ALLOW", "the patient's profile")]


def build_trajectory(task: Task, data: Data, *, expected_refusals: Mapping[str, str] | None = None) -> list[Line]:
    """The careful trajectory of one task. `expected_refusals` maps a gold write's action_id to the verdict
    it should get instead of ALLOW."""
    refusals = dict(expected_refusals or {})
    fresh = _Fresh()
    lines = authentication(task, data)
    fresh.saw(data, "get_patient_details", {"patient_id": task["user_id"]})
    for action in gold_actions(task):
        name, args, action_id = action["name"], action["arguments"], action["action_id"]
        if name not in WRITE_TOOLS:
            fails = DOMAIN.kind_of(name) is ToolKind.READ and read_would_fail(data, name, args)
            lines.append(_line(name, args, None if fails else "ALLOW", GOLD_NOTE + action_id))
            if not fails:
                fresh.saw(data, name, args)
            continue
        for read, arguments in _careful_reads(data, fresh, name, args):
            lines.append(_line(read, arguments, "ALLOW", READ_NOTE + action_id))
            fresh.saw(data, read, arguments)
        lines.append(_line(name, args, refusals.get(action_id, "ALLOW"), GOLD_NOTE + action_id))
        if action_id not in refusals:
            fresh.wrote(name, args)
    return lines


def gold_write_lines(lines: Iterable[Line]) -> dict[int, str]:
    """Position in the trajectory -> action_id, for the gold writes."""
    return {index: line["note"].removeprefix(GOLD_NOTE) for index, line in enumerate(lines)
            if line["name"] in WRITE_TOOLS and line.get("note", "").startswith(GOLD_NOTE)}
