"""Telecom tools (tau2 names and arguments, both sides), requestors, path map, identity rule, stale rules, DOMAIN."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.ledger import Ledger
from core.tools import Requestor, ToolCall, ToolKind, validate_arguments
from domains.registry import DOMAINS, load_domain
from domains.telecom import AGENT_TOOLS, DOMAIN, PATH_MAP, POLICY, POLICY_NOTES, PREDICATES, TOOLS, USER_TOOLS, identify
from domains.telecom.paths import DEVICE_READINGS, PHONE_CHANGES
from domains.telecom.vocabulary import REFERENCE_TIME
from mock_backends.telecom import TelecomBackend
from tests.support.telecom_records import (
    MARIA,
    TelecomSession,
    bill,
    bills_of,
    customer,
    device,
    line,
    maria,
    plan,
    usage,
)

# tau2-bench's telecom agent tools and their arguments (API.md §3.3), required ones first.
TAU2_AGENT_TOOLS: dict[str, tuple[str, ...]] = {
    "get_customer_by_phone": ("phone_number",),
    "get_customer_by_id": ("customer_id",),
    "get_customer_by_name": ("full_name", "dob"),
    "get_details_by_id": ("id",),
    "get_bills_for_customer": ("customer_id", "limit"),
    "get_data_usage": ("customer_id", "line_id"),
    "suspend_line": ("customer_id", "line_id", "reason"),
    "resume_line": ("customer_id", "line_id"),
    "send_payment_request": ("customer_id", "bill_id"),
    "enable_roaming": ("customer_id", "line_id"),
    "disable_roaming": ("customer_id", "line_id"),
    "refuel_data": ("customer_id", "line_id", "gb_amount"),
    "transfer_to_human_agents": ("summary",),
}
AGENT_WRITES = {"suspend_line", "resume_line", "send_payment_request", "enable_roaming", "disable_roaming",
                "refuel_data"}

# The phone's 30 tools (API.md §3.4): 15 reads, 15 changes.
TAU2_USER_READS: dict[str, tuple[str, ...]] = {
    "check_status_bar": (), "check_network_status": (), "check_network_mode_preference": (), "run_speed_test": (),
    "check_sim_status": (), "check_data_restriction_status": (), "check_apn_settings": (), "check_wifi_status": (),
    "check_wifi_calling_status": (), "check_vpn_status": (), "check_installed_apps": (),
    "check_app_status": ("app_name",), "check_app_permissions": ("app_name",), "can_send_mms": (),
    "check_payment_request": (),
}
TAU2_USER_WRITES: dict[str, tuple[str, ...]] = {
    "set_network_mode_preference": ("mode",), "toggle_airplane_mode": (), "reseat_sim_card": (), "toggle_data": (),
    "toggle_roaming": (), "toggle_data_saver_mode": (), "set_apn_settings": ("apn_settings",),
    "reset_apn_settings": (), "toggle_wifi": (), "toggle_wifi_calling": (), "connect_vpn": (), "disconnect_vpn": (),
    "grant_app_permission": ("app_name", "permission"), "reboot_device": (), "make_payment": (),
}


# ---------------------------------------------------------------------------------------------------
# Tools.


def test_the_13_agent_tools_match_tau2_names_and_arguments() -> None:
    assert [t.name for t in AGENT_TOOLS] == list(TAU2_AGENT_TOOLS)
    for spec in AGENT_TOOLS:
        assert spec.requestor is Requestor.ASSISTANT
        assert tuple(spec.parameters["properties"]) == TAU2_AGENT_TOOLS[spec.name], spec.name
        assert spec.parameters["additionalProperties"] is False
        assert spec.description and all(p.get("description") for p in spec.parameters["properties"].values())
        expected = ToolKind.WRITE if spec.name in AGENT_WRITES else (
            ToolKind.GENERIC if spec.name == "transfer_to_human_agents" else ToolKind.READ)
        assert spec.kind is expected, spec.name
        json.dumps(spec.openai_schema())


def test_the_30_phone_tools_match_tau2_and_belong_to_the_user() -> None:
    assert len(USER_TOOLS) == 30
    assert {t.name for t in USER_TOOLS if t.kind is ToolKind.READ} == set(TAU2_USER_READS)
    assert {t.name for t in USER_TOOLS if t.kind is ToolKind.WRITE} == set(TAU2_USER_WRITES)
    for spec in USER_TOOLS:
        assert spec.requestor is Requestor.USER
        assert tuple(spec.parameters["properties"]) == {**TAU2_USER_READS, **TAU2_USER_WRITES}[spec.name]
        assert spec.description
    assert not {t.name for t in AGENT_TOOLS} & {t.name for t in USER_TOOLS}  # tau2 requires no overlap


def test_the_agent_is_never_offered_a_phone_tool() -> None:
    assert DOMAIN.agent_tools() == AGENT_TOOLS and DOMAIN.user_tools() == USER_TOOLS
    assert TOOLS == AGENT_TOOLS + USER_TOOLS


def test_specs_and_backend_agree_on_every_argument() -> None:
    """Each side is offered exactly the arguments the backend accepts, with the same ones required."""
    assert sorted(TelecomBackend.tool_names()) == sorted(t.name for t in TOOLS)
    for spec in TOOLS:
        entry = TelecomBackend._tools[spec.name]
        assert entry.parameters == tuple(spec.parameters["properties"]), spec.name
        assert entry.required == frozenset(spec.parameters["required"]), spec.name
        assert entry.kind is spec.kind, spec.name


def test_policy_limits_are_not_schema_constraints() -> None:
    refuel = DOMAIN.tool("refuel_data")
    assert refuel is not None and "maximum" not in refuel.parameters["properties"]["gb_amount"]
    assert validate_arguments(refuel, {"customer_id": MARIA, "line_id": "L2002", "gb_amount": 5}) == []
    mode = DOMAIN.tool("set_network_mode_preference")
    assert mode is not None and "enum" not in mode.parameters["properties"]["mode"]  # the phone answers a bad mode
    errors = validate_arguments(refuel, {"customer_id": MARIA, "gb_amount": "2", "extra": 1})
    assert "missing required argument 'line_id'" in errors and "unexpected argument 'extra'" in errors
    assert any(e.startswith("argument 'gb_amount' must be number") for e in errors)


# ---------------------------------------------------------------------------------------------------
# Path map and identity.


@pytest.mark.parametrize(
    ("tool", "arguments", "result", "paths"),
    [
        ("get_customer_by_phone", {"phone_number": "555-210-3001"}, customer(MARIA), ("customers.C2001", "customer")),
        ("get_customer_by_id", {"customer_id": MARIA}, customer(MARIA), ("customers.C2001", "customer")),
        ("get_details_by_id", {"id": "C2001"}, customer(MARIA), ("customers.C2001", "customer")),
        ("get_details_by_id", {"id": "L2003"}, line("L2003"), ("lines.L2003",)),
        ("get_details_by_id", {"id": "B2003"}, bill("B2003"), ("bills.B2003",)),
        ("get_details_by_id", {"id": "P2001"}, plan("P2001"), ("plans.P2001",)),
        ("get_details_by_id", {"id": "D2003"}, device("D2003"), ("devices.D2003",)),
        ("get_bills_for_customer", {"customer_id": MARIA}, bills_of(MARIA),
         ("bills.B2004", "bills.B2002", "bills.B2001", "bills.B2003")),
        ("get_data_usage", {"customer_id": MARIA, "line_id": "L2002"}, usage("L2002"), ("usage.L2002",)),
        ("check_network_status", {}, "Airplane Mode: OFF", ("device.network_status",)),
        ("check_app_status", {"app_name": "messaging"}, "Status for App: messaging", ("device.app_status.messaging",)),
        ("check_payment_request", {}, "No payment request has been made.", ("device.payment_request",)),
    ],
)
def test_read_paths(tool: str, arguments: dict[str, Any], result: Any, paths: tuple[str, ...]) -> None:
    ledger = Ledger(PATH_MAP)
    absorbed = ledger.absorb(ToolCall(id="c1", name=tool, arguments=arguments), result, step=1)
    assert absorbed.added == paths
    if len(paths) == 1 and not isinstance(result, list):
        assert ledger.get(paths[0]) == result


def test_every_phone_reading_has_a_device_path_and_every_change_a_write_effect() -> None:
    reads = {t.name for t in USER_TOOLS if t.kind is ToolKind.READ}
    assert set(DEVICE_READINGS) == reads
    assert all(path.startswith("device.") for path in DEVICE_READINGS.values())
    changes = {t.name for t in USER_TOOLS if t.kind is ToolKind.WRITE}
    assert set(PHONE_CHANGES) == changes
    assert {effect.tool for effect in PATH_MAP.write_effects} == changes | AGENT_WRITES


def test_a_failed_lookup_result_does_not_identify() -> None:
    session = TelecomSession()
    session.read("get_customer_by_name", [], full_name="Nobody", dob="2000-01-01")
    assert identify(session.ledger) is None and session.ledger.paths() == []


def test_missing_customer_records_suggest_the_read_by_id() -> None:
    assert PATH_MAP.suggest_read("customers.C2001") == 'get_customer_by_id(customer_id="C2001")'


def _full_ledger() -> TelecomSession:
    session = maria("L2001", "L2002", "L2003")
    session.read_plan(plan("P2001"))
    session.read("get_data_usage", usage("L2002"), customer_id=MARIA, line_id="L2002")
    session.phone("check_network_status", "Airplane Mode: OFF")
    session.phone("check_app_permissions", "App 'messaging' has permission for: sms.", app_name="messaging")
    return session


DEVICE = {"device.network_status", "device.app_permissions.messaging"}
ALL_BILLS = {"bills.B2001", "bills.B2002", "bills.B2003", "bills.B2004"}


@pytest.mark.parametrize(
    ("tool", "arguments", "staled"),
    [
        ("suspend_line", {"customer_id": MARIA, "line_id": "L2001"}, {"lines.L2001"} | DEVICE),
        ("resume_line", {"customer_id": MARIA, "line_id": "L2003"}, {"lines.L2003"} | DEVICE),
        ("enable_roaming", {"customer_id": MARIA, "line_id": "L2001"}, {"lines.L2001"} | DEVICE),
        ("disable_roaming", {"customer_id": MARIA, "line_id": "L2001"}, {"lines.L2001"} | DEVICE),
        ("send_payment_request", {"customer_id": MARIA, "bill_id": "B2003"}, {"bills.B2003"} | DEVICE),
        # Maria's March Draft B2004 was read: the charge lands there, no new bill, her record's bill list holds
        ("refuel_data", {"customer_id": MARIA, "line_id": "L2002"},
         {"lines.L2002", "usage.L2002", "bills.B2004"} | DEVICE),
        ("toggle_roaming", {}, DEVICE),
        ("grant_app_permission", {"app_name": "messaging", "permission": "storage"}, DEVICE),
        ("make_payment", {}, ALL_BILLS | DEVICE),
    ],
)
def test_writes_mark_what_they_may_change_stale(tool: str, arguments: dict[str, Any], staled: set[str]) -> None:
    session = _full_ledger()
    requestor = Requestor.USER if tool in PHONE_CHANGES else Requestor.ASSISTANT
    assert set(session.wrote(tool, requestor, **arguments)) == staled
    for path in ("plans.P2001",):  # plans never change
        entry = session.ledger.entry(path)
        assert entry is not None and not entry.is_stale, path


# ---------------------------------------------------------------------------------------------------
# The DOMAIN value and the policy text.


def test_domain_wiring() -> None:
    assert "telecom" in DOMAINS and load_domain("telecom") is DOMAIN
    assert DOMAIN.tools is TOOLS and DOMAIN.path_map is PATH_MAP and DOMAIN.predicates is PREDICATES
    assert DOMAIN.reference_time == REFERENCE_TIME and REFERENCE_TIME.isoformat() == "2025-02-25T12:08:00"
    assert DOMAIN.context(Ledger(PATH_MAP)).now == REFERENCE_TIME
    assert DOMAIN.scenarios_dir is not None and DOMAIN.scenarios_dir.name == "scenarios"


def test_predicates_are_unique_argued_and_guard_only_agent_writes() -> None:
    ids = [p.id for p in PREDICATES]
    assert len(ids) >= 6 and len(set(ids)) == len(ids)
    assert all(i.startswith("telecom.") for i in ids)
    for pred in PREDICATES:
        assert pred.tools and pred.tools <= AGENT_WRITES, pred.id
        assert pred.policy.endswith("."), pred.id
    assert set().union(*(p.tools for p in PREDICATES)) == AGENT_WRITES


def test_policy_for_the_model_does_not_mention_the_gate() -> None:
    assert POLICY == DOMAIN.policy and POLICY_NOTES == DOMAIN.policy_notes
    assert "telecom." not in POLICY and "gate" not in POLICY.lower()
    assert "2025-02-25" in POLICY  # the model is told the domain's "today"
    assert POLICY_NOTES.startswith("## What the gate checks and what it cannot")
    for pred in PREDICATES:
        assert f"| `{pred.id}` | {pred.severity.value} |" in POLICY_NOTES, pred.id
    assert "Why these severities" in POLICY_NOTES and "abroad" in POLICY_NOTES
    for tool in ("check_payment_request", "make_payment", "refuel_data", "enable_roaming"):
        assert f"`{tool}`" in POLICY, tool
