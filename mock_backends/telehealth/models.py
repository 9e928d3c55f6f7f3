"""Pydantic models for the tau-Trait telehealth data, and the mapping between its folder and our store.

tau-Trait keeps its data as plain JSON files with no schema, and the records are not uniform (a
prescription's `supplier` is a dict in one record and a string in another; only some appointments carry
`chief_complaint`). So the models type exactly the fields the tools and the gate rely on (ids, dates,
times, statuses, schedules, insurance copays, prescriptions' medication names, supplier prices) and let
every other field through unchanged (`extra="allow"`). Loading data validates it once, so a broken data
folder fails with a message naming the record, not later inside a tool call. Documents are dumped with
`exclude_unset`, so a stored record has exactly the keys the source had: no invented nulls.

The store holds JSON objects keyed by id, but two tau-Trait files are lists (telemetry inventory and
uploads) and two map a name to a list or map (medication suppliers, drug interactions). `normalise` wraps
them into keyed documents and `denormalise` unwraps them, so the folder layout round-trips exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

DateText = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
TimeText = Annotated[str, StringConstraints(pattern=r"^\d{2}:\d{2}$")]
Status = Literal["scheduled", "pending_approval", "completed", "cancelled"]
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class _Open(BaseModel):
    """Typed where the tools look, permissive everywhere else (tau-Trait records vary)."""

    model_config = ConfigDict(extra="allow")


class PersonName(_Open):
    first_name: str
    last_name: str


class ProviderName(PersonName):
    title: str = ""


class Demographics(_Open):
    date_of_birth: DateText
    email: str = ""


class InsurancePlan(_Open):
    provider: str
    copay_primary: float
    copay_specialist: float


class Insurance(_Open):
    primary: InsurancePlan | None = None


class MedicationEntry(_Open):
    name: str


class MedicalHistory(_Open):
    medications: list[MedicationEntry] = Field(default_factory=list)


class EmergencyContact(_Open):
    name: str = ""
    relationship: str = ""


class Patient(_Open):
    patient_id: str
    name: PersonName
    demographics: Demographics
    insurance: Insurance = Field(default_factory=Insurance)
    medical_history: MedicalHistory = Field(default_factory=MedicalHistory)
    emergency_contact: EmergencyContact | None = None

    @property
    def full_name(self) -> str:
        return f"{self.name.first_name} {self.name.last_name}"


class Provider(_Open):
    provider_id: str
    name: ProviderName
    specialty: str
    schedule: dict[Weekday, list[TimeText]]
    consultation_fee: float = 0.0
    languages: list[str] = Field(default_factory=list)
    years_experience: int = 0

    @property
    def display_name(self) -> str:
        """'Carlos Garcia, MD': tau-Trait prefixes everyone with "Dr.", which is wrong for therapists."""
        base = f"{self.name.first_name} {self.name.last_name}"
        return f"{base}, {self.name.title}" if self.name.title else base


class Appointment(_Open):
    appointment_id: str
    patient_id: str
    provider_id: str
    date: DateText
    time: TimeText
    duration_minutes: int
    type: str
    status: Status
    copay_amount: float = 0.0
    insurance_authorization: str | None = None


class Prescription(_Open):
    medication: str


class MedicalRecord(_Open):
    record_id: str
    appointment_id: str | None = None
    patient_id: str
    provider_id: str
    date: DateText
    type: str
    prescriptions: list[Prescription] = Field(default_factory=list)


class SupplierOffer(_Open):
    company: str
    country: str
    brand_name: str
    price_usd: float


class Interaction(_Open):
    severity: str
    risk_score: int | float
    time_overlap_hours: int | float
    action: str
    skip: list[str] = Field(default_factory=list)
    emergency: bool = False


class RegimenPlan(_Open):
    patient_id: str


class Device(_Open):
    device_id: str
    device_type: str
    status: str
    last_audit: DateText | None = None
    notes: str = ""


class Upload(_Open):
    device_id: str
    date: DateText


# ---------------------------------------------------------------------------------------------------
# Collections: the tau-Trait file names, in the order tau-Trait's data loader lists them.

PATIENTS, PROVIDERS, APPOINTMENTS, RECORDS = "patients", "providers", "appointments", "medical_records"
SUPPLIERS, INTERACTIONS, REGIMENS = "medication_suppliers", "drug_interactions", "regimen_plans"
DEVICES, UPLOADS = "telemetry_inventory", "telemetry_uploads"

COLLECTIONS = (PATIENTS, PROVIDERS, APPOINTMENTS, RECORDS, SUPPLIERS, INTERACTIONS, REGIMENS, DEVICES, UPLOADS)
REQUIRED = (PATIENTS, PROVIDERS, APPOINTMENTS, RECORDS)  # the rest may be absent (then empty)

_KEYED: dict[str, tuple[type[_Open], str]] = {
    PATIENTS: (Patient, "patient_id"),
    PROVIDERS: (Provider, "provider_id"),
    APPOINTMENTS: (Appointment, "appointment_id"),
    RECORDS: (MedicalRecord, "record_id"),
    REGIMENS: (RegimenPlan, "patient_id"),
}


def dump(model: BaseModel, order: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Only the fields the record has (no defaults added), JSON-typed, keys in `order`'s order when given.

    Pydantic puts declared fields before extra ones; keeping the source's key order means a record reads
    the same in a tool result as it does in the data file.
    """
    doc = model.model_dump(mode="json", exclude_unset=True)
    result: dict[str, Any] = doc if order is None else _ordered(doc, order)
    return result


def _ordered(value: Any, order: Any) -> Any:
    """`value` with every object's keys in the order `order` (the same tree, as given) has them."""
    if isinstance(value, dict) and isinstance(order, Mapping):
        first = {key: _ordered(value[key], order[key]) for key in order if key in value}
        return {**first, **{key: item for key, item in value.items() if key not in first}}
    if isinstance(value, list) and isinstance(order, list) and len(value) == len(order):
        return [_ordered(item, template) for item, template in zip(value, order, strict=True)]
    return value


def upload_key(device_id: str, day: str) -> str:
    return f"{device_id}@{day}"


def _mapping(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise ValueError(f"{name}: expected a JSON object keyed by id, got {type(value).__name__}")
    return value


def _sequence(data: Mapping[str, Any], name: str) -> list[Any]:
    value = data.get(name, [])
    if not isinstance(value, list):
        raise ValueError(f"{name}: expected a JSON list, got {type(value).__name__}")
    return value


def normalise(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """tau-Trait folder layout (one entry per file) -> validated store documents, one dict per collection."""
    unknown = sorted(set(data) - set(COLLECTIONS))
    if unknown:
        raise ValueError(f"unknown telehealth collection(s): {', '.join(unknown)}")
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        raise ValueError(f"missing telehealth collection(s): {', '.join(missing)}")
    docs: dict[str, dict[str, Any]] = {name: {} for name in COLLECTIONS}
    for name, (model, id_field) in _KEYED.items():
        for key, raw in _mapping(data, name).items():
            record = model.model_validate(raw)
            if getattr(record, id_field) != key:
                raise ValueError(f"{name}.{key}: its {id_field} is {getattr(record, id_field)!r}, not {key!r}")
            docs[name][key] = dump(record, raw)
    for medication, offers in _mapping(data, SUPPLIERS).items():
        if not isinstance(offers, list):
            raise ValueError(f"{SUPPLIERS}.{medication}: expected a list of supplier offers")
        docs[SUPPLIERS][medication] = {"medication": medication,
                                       "suppliers": [dump(SupplierOffer.model_validate(o), o) for o in offers]}
    for primary, pairs in _mapping(data, INTERACTIONS).items():
        if not isinstance(pairs, Mapping):
            raise ValueError(f"{INTERACTIONS}.{primary}: expected an object keyed by medication")
        docs[INTERACTIONS][primary] = {
            "primary_medication": primary,
            "interactions": {other: dump(Interaction.model_validate(x), x) for other, x in pairs.items()},
        }
    for raw in _sequence(data, DEVICES):
        device = Device.model_validate(raw)
        if device.device_id in docs[DEVICES]:
            raise ValueError(f"{DEVICES}: device {device.device_id!r} is listed twice")
        docs[DEVICES][device.device_id] = dump(device, raw)
    for raw in _sequence(data, UPLOADS):
        upload = Upload.model_validate(raw)
        key = upload_key(upload.device_id, upload.date)
        if key in docs[UPLOADS]:
            raise ValueError(f"{UPLOADS}: device {upload.device_id!r} has two uploads on {upload.date}")
        docs[UPLOADS][key] = dump(upload, raw)
    return docs


def denormalise(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Store documents (e.g. `backend.export()`) -> the tau-Trait folder layout again."""
    data: dict[str, Any] = {name: dict(docs.get(name, {})) for name, _ in _KEYED.items()}
    data[SUPPLIERS] = {key: list(doc["suppliers"]) for key, doc in docs.get(SUPPLIERS, {}).items()}
    data[INTERACTIONS] = {key: dict(doc["interactions"]) for key, doc in docs.get(INTERACTIONS, {}).items()}
    data[DEVICES] = list(docs.get(DEVICES, {}).values())
    data[UPLOADS] = list(docs.get(UPLOADS, {}).values())
    return {name: data[name] for name in COLLECTIONS}
