"""Telehealth tools (tau-Trait names and arguments), path map, identity rule, stale rules and the DOMAIN value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.ledger import Ledger
from core.tools import ToolCall, ToolKind, validate_arguments
from domains.registry import DOMAINS, load_domain
from domains.telehealth import DOMAIN, PATH_MAP, POLICY, POLICY_NOTES, PREDICATES, TOOLS, identify
from domains.telehealth.vocabulary import GENERAL_TYPES, REFERENCE_TIME, SPECIALISED_TYPES
from mock_backends.telehealth import TelehealthBackend
from tests.support.telehealth_records import (
    HANA,
    KENJI,
    LINDQVIST,
    MARCUS,
    PRIYA,
    TelehealthSession,
    appointment,
    calendar,
    hana_family_session,
    interaction_check,
    patient,
    provider,
    record,
    suppliers,
)

# tau-Trait's telehealth tools and their arguments (API.md §9), required ones first.
TAU_TRAIT_TOOLS: dict[str, tuple[str, ...]] = {
    "find_patient_by_email": ("email",),
    "find_patient_by_name_dob": ("first_name", "last_name", "date_of_birth"),
    "get_patient_details": ("patient_id",),
    "get_provider_details": ("provider_id",),
    "list_available_providers": ("specialty",),
    "get_appointment_details": ("appointment_id",),
    "list_patient_appointments": ("patient_id", "status_filter"),
    "get_medical_record": ("record_id", "appointment_id"),
    "list_patient_medical_records": ("patient_id", "limit"),
    "list_medication_suppliers": ("medication", "country_filter", "limit"),
    "check_drug_interactions": ("primary_medication", "current_medications"),
    "get_regimen_options": ("patient_id",),
    "list_telemetry_devices": ("status_filter", "limit"),
    "list_telemetry_uploads": ("device_id", "start_date", "end_date", "limit"),
    "get_telemetry_upload": ("device_id", "date"),
    "schedule_appointment": ("patient_id", "provider_id", "date", "time", "appointment_type", "bill_insurance",
                             "voucher_id", "payment_notes"),
    "reschedule_appointment": ("appointment_id", "new_date", "new_time"),
    "cancel_appointment": ("appointment_id",),
    "update_prescription_supplier": ("record_id", "medication", "supplier_company", "brand_name", "price_usd",
                                     "currency"),
    "update_medical_record_note": ("record_id", "note", "metadata"),
    "calculate": ("expression",),
    "think": ("note",),
    "transfer_to_human_support": ("reason",),
}
WRITES = {"schedule_appointment", "reschedule_appointment", "cancel_appointment", "update_prescription_supplier",
          "update_medical_record_note"}
GENERIC = {"calculate", "think", "transfer_to_human_support"}


# ---------------------------------------------------------------------------------------------------
# Tools.


def test_the_23_tools_match_tau_trait_names_and_arguments() -> None:
    assert len(TOOLS) == 23
    assert [t.name for t in TOOLS] == list(TAU_TRAIT_TOOLS)
    for spec in TOOLS:
        params = spec.parameters
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert tuple(params["properties"]) == TAU_TRAIT_TOOLS[spec.name], spec.name
        assert spec.description and all(p.get("description") for p in params["properties"].values())
        json.dumps(spec.openai_schema())


def test_specs_and_backend_agree_on_every_argument() -> None:
    """The model is offered exactly the arguments the backend accepts, with the same ones required."""
    assert sorted(TelehealthBackend.tool_names()) == sorted(TAU_TRAIT_TOOLS)
    for spec in TOOLS:
        entry = TelehealthBackend._tools[spec.name]
        assert entry.parameters == tuple(spec.parameters["properties"]), spec.name
        assert entry.required == frozenset(spec.parameters["required"]), spec.name
        assert entry.kind is spec.kind, spec.name


def test_tool_kinds() -> None:
    for spec in TOOLS:
        if spec.name in WRITES:
            assert spec.kind is ToolKind.WRITE, spec.name
        elif spec.name in GENERIC:
            assert spec.kind is ToolKind.GENERIC, spec.name
        else:
            assert spec.name.startswith(("find_", "get_", "list_", "check_")) and spec.kind is ToolKind.READ


def test_optional_arguments_accept_null_and_policy_limits_are_not_enums() -> None:
    spec = DOMAIN.tool("schedule_appointment")
    assert spec is not None
    good: dict[str, Any] = {"patient_id": PRIYA, "provider_id": LINDQVIST, "date": "2025-05-29", "time": "11:00",
                            "appointment_type": "follow_up", "bill_insurance": None, "voucher_id": None}
    assert validate_arguments(spec, good) == []
    assert "enum" not in spec.parameters["properties"]["appointment_type"]
    errors = validate_arguments(spec, {"patient_id": PRIYA, "date": 20250529, "bill_insurance": "no", "room": 1})
    assert "missing required argument 'provider_id'" in errors
    assert "unexpected argument 'room'" in errors
    assert any(e.startswith("argument 'date' must be string") for e in errors)
    assert any(e.startswith("argument 'bill_insurance' must be boolean or null") for e in errors)
    interactions = DOMAIN.tool("check_drug_interactions")
    assert interactions is not None
    assert validate_arguments(interactions, {"primary_medication": "Warfarin", "current_medications": "Aspirin"}) \
        == ["argument 'current_medications' must be array, got string \"Aspirin\""]


# ---------------------------------------------------------------------------------------------------
# Path map and identity.


def test_authentication_records_the_bare_patient_id() -> None:
    session = TelehealthSession()
    absorbed = session.authenticate(PRIYA)
    assert absorbed.added == ("auth.patient_id",)
    assert session.ledger.get("auth.patient_id") == PRIYA
    assert identify(session.ledger) == PRIYA and session.context().customer_id == PRIYA


def test_own_profile_lands_at_patient_and_patients() -> None:
    session = TelehealthSession()
    session.authenticate(PRIYA)
    absorbed = session.read_patient(patient(PRIYA))
    assert set(absorbed.added) == {"patients.priya_raman_6120", "patient"}
    assert session.ledger.get("patient") == session.ledger.get("patients.priya_raman_6120") == patient(PRIYA)


def test_a_profile_read_before_authentication_is_not_the_patient() -> None:
    session = TelehealthSession()
    session.read_patient(patient(PRIYA))
    assert session.ledger.paths() == ["patients.priya_raman_6120"]
    assert session.context().customer_id is None


def test_first_authentication_wins_and_later_lookups_are_kept_apart() -> None:
    session = TelehealthSession()
    session.authenticate(PRIYA)
    assert session.authenticate(MARCUS).added == ("lookups.marcus_feld_7702",)
    assert session.ledger.get("auth.patient_id") == PRIYA
    again = session.authenticate(PRIYA)
    assert again.refreshed == ("auth.patient_id",) and not again.added


def test_a_dependants_profile_stays_under_patients() -> None:
    session = hana_family_session(KENJI)
    assert session.ledger.get("patient")["patient_id"] == HANA
    assert session.ledger.get(f"patients.{KENJI}") == patient(KENJI)


LISTING: dict[str, Any] = {"specialty": "Primary Care", "providers": []}


@pytest.mark.parametrize(
    ("tool", "arguments", "result", "path"),
    [
        ("get_provider_details", {"provider_id": LINDQVIST}, provider(LINDQVIST), "providers.dr_lindqvist_primary"),
        ("list_available_providers", {"specialty": "primary care"}, LISTING, "provider_lists.Primary Care"),
        ("list_available_providers", {}, {"specialty": None, "providers": []}, "provider_lists.all"),
        ("list_available_providers", {"specialty": None}, {"specialty": None, "providers": []}, "provider_lists.all"),
        ("get_appointment_details", {"appointment_id": "APPT002"}, appointment("APPT002"), "appointments.APPT002"),
        ("list_patient_appointments", {"patient_id": PRIYA}, calendar(PRIYA), "appointment_lists.priya_raman_6120"),
        ("get_medical_record", {"appointment_id": "APPT006"}, record("REC003"), "records.REC003"),
        ("list_patient_medical_records", {"patient_id": MARCUS}, {"patient_id": MARCUS, "records": []},
         "record_lists.marcus_feld_7702"),
        ("list_medication_suppliers", {"medication": "atorvastatin"}, suppliers("Atorvastatin"),
         "suppliers.Atorvastatin"),
        ("check_drug_interactions", {"primary_medication": "warfarin", "current_medications": ["Ibuprofen"]},
         interaction_check("Warfarin", "high", "Ibuprofen"), "interactions.Warfarin"),
        ("get_regimen_options", {"patient_id": PRIYA}, {"patient_id": PRIYA}, "regimens.priya_raman_6120"),
        ("list_telemetry_devices", {"status_filter": "available"}, {"status_filter": "available", "devices": []},
         "devices.available"),
        ("list_telemetry_devices", {}, {"status_filter": None, "devices": []}, "devices.all"),
        ("list_telemetry_uploads", {"device_id": "TH-ECG-102"}, [], "uploads.TH-ECG-102"),
        ("get_telemetry_upload", {"device_id": "TH-ECG-102", "date": "2025-05-16"},
         {"device_id": "TH-ECG-102", "date": "2025-05-16"}, "telemetry.TH-ECG-102.2025-05-16"),
    ],
)
def test_read_paths(tool: str, arguments: dict[str, Any], result: Any, path: str) -> None:
    ledger = Ledger(PATH_MAP)
    absorbed = ledger.absorb(ToolCall(id="c1", name=tool, arguments=arguments), result, step=1)
    assert absorbed.added == (path,)
    assert ledger.get(path) == result


@pytest.mark.parametrize(("path", "read"), [
    ("appointments.APPT002", 'get_appointment_details(appointment_id="APPT002")'),
    ("appointment_lists.priya_raman_6120", 'list_patient_appointments(patient_id="priya_raman_6120")'),
    ("providers.dr_lindqvist_primary", 'get_provider_details(provider_id="dr_lindqvist_primary")'),
    ("records.REC003", 'get_medical_record(record_id="REC003")'),
    ("patients.kenji_sato_2017", 'get_patient_details(patient_id="kenji_sato_2017")'),
    ("suppliers.Warfarin", 'list_medication_suppliers(medication="Warfarin")'),
])
def test_paths_suggest_the_exact_read(path: str, read: str) -> None:
    assert PATH_MAP.suggest_read(path) == read


def _full_ledger() -> TelehealthSession:
    session = hana_family_session(KENJI)
    session.read_calendar(calendar(HANA))
    session.read_appointment(appointment("APPT007"))
    session.read_appointment(appointment("APPT009"))
    session.read_provider(provider(LINDQVIST))
    session.read_record(record("REC003"))
    session.read_suppliers(suppliers("Atorvastatin"))
    return session


@pytest.mark.parametrize(
    ("tool", "arguments", "staled"),
    [
        ("schedule_appointment", {"patient_id": KENJI}, {"appointment_lists.kenji_sato_2017"}),
        # only the calendar of the appointment's own patient, as its record shows
        ("reschedule_appointment", {"appointment_id": "APPT007"},
         {"appointments.APPT007", "appointment_lists.kenji_sato_2017"}),
        ("cancel_appointment", {"appointment_id": "APPT009"},
         {"appointments.APPT009", "appointment_lists.hana_sato_4410"}),
        ("update_prescription_supplier", {"record_id": "REC003"}, {"records.REC003"}),
        ("update_medical_record_note", {"record_id": "REC003"}, {"records.REC003"}),
    ],
)
def test_writes_mark_what_they_may_change_stale(tool: str, arguments: dict[str, Any], staled: set[str]) -> None:
    session = _full_ledger()
    assert set(session.wrote(tool, **arguments)) == staled
    # identity, profiles, providers and the catalogue are never made stale by a write
    for path in ("auth.patient_id", "patient", "patients.kenji_sato_2017", "providers.dr_lindqvist_primary",
                 "suppliers.Atorvastatin"):
        entry = session.ledger.entry(path)
        assert entry is not None and not entry.is_stale, path


# ---------------------------------------------------------------------------------------------------
# The DOMAIN value and the policy text.


def test_domain_wiring() -> None:
    assert "telehealth" in DOMAINS and load_domain("telehealth") is DOMAIN
    assert DOMAIN.name == "telehealth"
    assert DOMAIN.tools is TOOLS and DOMAIN.path_map is PATH_MAP and DOMAIN.predicates is PREDICATES
    assert DOMAIN.reference_time == REFERENCE_TIME and REFERENCE_TIME.isoformat() == "2025-05-20T05:00:00"
    assert DOMAIN.context(Ledger(PATH_MAP)).now == REFERENCE_TIME
    assert DOMAIN.scenarios_dir is not None and DOMAIN.scenarios_dir.name == "scenarios"
    assert {DOMAIN.kind_of(name) for name in WRITES} == {ToolKind.WRITE}


def test_predicates_are_unique_argued_and_guard_only_writes() -> None:
    ids = [p.id for p in PREDICATES]
    assert len(ids) >= 6 and len(set(ids)) == len(ids)
    assert all(i.startswith("telehealth.") for i in ids)
    for pred in PREDICATES:
        assert pred.tools and pred.tools <= WRITES, pred.id
        assert pred.policy.endswith("."), pred.id
    assert set().union(*(p.tools for p in PREDICATES)) == WRITES


def test_policy_for_the_model_does_not_mention_the_gate() -> None:
    assert POLICY == DOMAIN.policy and POLICY_NOTES == DOMAIN.policy_notes
    assert "telehealth." not in POLICY and "gate" not in POLICY.lower()
    assert "2025-05-20" in POLICY  # the model is told the domain's "today"
    assert POLICY_NOTES.startswith("## What the gate checks and what it cannot")
    for pred in PREDICATES:
        assert f"| `{pred.id}` | {pred.severity.value} |" in POLICY_NOTES, pred.id
    assert "Why these severities" in POLICY_NOTES and "explicit" in POLICY_NOTES


def test_the_policy_lists_every_appointment_type_the_predicate_accepts() -> None:
    for kind in (*GENERAL_TYPES, *SPECIALISED_TYPES):
        assert f"`{kind}`" in POLICY, kind
    for specialties in SPECIALISED_TYPES.values():
        for specialty in specialties:
            assert specialty in POLICY, specialty
