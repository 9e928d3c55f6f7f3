"""TelecomBackend: tau2's 13 agent tools and 30 phone tools (results, errors, write semantics), the phone's
simulation rules, the line <-> phone sync, task setup functions and assertions, the seed, and loading (and
round-tripping) tau2's db.toml + user_db.toml."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.tools import ToolBackend, ToolError, ToolKind
from mock_backends.registry import BackendSourceError, open_backend
from mock_backends.telecom import TelecomBackend, load_seed, read_source
from mock_backends.telecom.models import (
    PhoneDevice,
    Surroundings,
    UserDB,
    denormalise,
    dump,
    normalise,
)
from mock_backends.telecom.phone import Phone
from mock_backends.telecom.seed import SEED_FILE, generate, render
from tests.support.telecom_records import (
    DANIEL,
    MARIA,
    OTHER_MARIA,
    bill,
    bills_of,
    customer,
    device,
    line,
    plan,
    usage,
)
from tests.support.upstream import TAU2_TELECOM

Data = dict[str, Any]


async def open_backend_with(tmp_path: Path, change: Callable[[Data], None] | None = None) -> TelecomBackend:
    data = load_seed()
    if change is not None:
        change(data)
    return await TelecomBackend.open(tmp_path / "telecom.sqlite", data)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[TelecomBackend]:
    async with await open_backend_with(tmp_path) as opened:
        yield opened


async def call(backend: TelecomBackend, name: str, **arguments: Any) -> Any:
    return await backend.call(name, arguments)


async def fails(backend: TelecomBackend, message: str, name: str, **arguments: Any) -> None:
    """The call raises ToolError with exactly `message`, and the database (both sides) is unchanged."""
    before = await backend.state_hash()
    with pytest.raises(ToolError) as caught:
        await backend.call(name, arguments)
    assert caught.value.message == message
    assert await backend.state_hash() == before


async def surroundings(backend: TelecomBackend) -> Data:
    doc = await backend.store.get("user_db", "surroundings")
    assert doc is not None
    return doc


async def phone_device(backend: TelecomBackend) -> Data:
    doc = await backend.store.get("user_db", "device")
    assert doc is not None
    return doc


# ----------------------------------------------------------------------------------- dispatch


async def test_is_a_tool_backend_with_tau2s_43_tools(backend: TelecomBackend) -> None:
    assert isinstance(backend, ToolBackend)
    assert len(backend.tool_names()) == 43
    assert backend.tool_names(ToolKind.GENERIC) == ["transfer_to_human_agents"]
    assert len(backend.tool_names(ToolKind.READ)) == 6 + 15 and len(backend.tool_names(ToolKind.WRITE)) == 6 + 15


async def test_bad_calls_become_tool_errors(backend: TelecomBackend) -> None:
    await fails(backend, "Tool 'change_plan' not found.", "change_plan", customer_id=MARIA)
    await fails(backend, "get_data_usage: missing required argument 'line_id'", "get_data_usage", customer_id=MARIA)
    await fails(backend, "toggle_roaming: unexpected argument 'on'", "toggle_roaming", on=True)
    assert await backend.call("transfer_to_human_agents", {"summary": "locked SIM"}) == "Transfer successful"


# ----------------------------------------------------------------------------------- agent reads


async def test_record_builders_are_what_the_backend_returns(backend: TelecomBackend) -> None:
    for customer_id in (MARIA, DANIEL, OTHER_MARIA):
        assert await call(backend, "get_customer_by_id", customer_id=customer_id) == customer(customer_id)
        assert await call(backend, "get_bills_for_customer", customer_id=customer_id) == bills_of(customer_id)
    for key, build in (("L2003", line), ("B2003", bill), ("P2001", plan), ("D2003", device), ("C2001", customer)):
        assert await call(backend, "get_details_by_id", id=key) == build(key)
    assert await call(backend, "get_data_usage", customer_id=MARIA, line_id="L2002") == usage("L2002")


@pytest.mark.parametrize(("number", "expected"), [
    ("555-210-3001", MARIA),  # the primary contact number
    ("555-210-3003", MARIA),  # a line's number
    ("5552103002", MARIA),  # punctuation does not matter
    ("(555) 480 2201", OTHER_MARIA),
])
async def test_get_customer_by_phone(backend: TelecomBackend, number: str, expected: str) -> None:
    assert (await call(backend, "get_customer_by_phone", phone_number=number))["customer_id"] == expected


async def test_customer_lookup_errors(backend: TelecomBackend) -> None:
    await fails(backend, "Customer with phone number 555-000-0000 not found", "get_customer_by_phone",
                phone_number="555-000-0000")
    await fails(backend, "Customer with phone number call me not found", "get_customer_by_phone",
                phone_number="call me")
    await fails(backend, "Customer with ID C9999 not found", "get_customer_by_id", customer_id="C9999")


async def test_get_customer_by_name_needs_the_date_of_birth(backend: TelecomBackend) -> None:
    found = await call(backend, "get_customer_by_name", full_name="maria  LOPEZ", dob="1983-04-12")
    assert [c["customer_id"] for c in found] == [MARIA]
    accented = await call(backend, "get_customer_by_name", full_name="María López", dob="1990-07-21")
    assert [c["customer_id"] for c in accented] == [OTHER_MARIA]
    assert await call(backend, "get_customer_by_name", full_name="Maria Lopez", dob="1983-12-04") == []


async def test_get_details_by_id_dispatches_on_the_first_letter(backend: TelecomBackend) -> None:
    await fails(backend, "Unknown ID format or type: X1", "get_details_by_id", id="X1")
    await fails(backend, "Unknown ID format or type: ", "get_details_by_id", id="")
    for key, kind in (("L9", "Line"), ("B9", "Bill"), ("P9", "Plan"), ("D9", "Device"), ("C9", "Customer")):
        await fails(backend, f"{kind} with ID {key} not found", "get_details_by_id", id=key)


async def test_bills_are_newest_first_and_limited(backend: TelecomBackend) -> None:
    bills = await call(backend, "get_bills_for_customer", customer_id=MARIA, limit=2)
    assert [b["bill_id"] for b in bills] == ["B2004", "B2002"]
    all_of_them = await call(backend, "get_bills_for_customer", customer_id=MARIA, limit=None)
    assert [b["bill_id"] for b in all_of_them] == ["B2004", "B2002", "B2001", "B2003"]  # ties keep their order
    await fails(backend, "limit must be a positive integer, got 0", "get_bills_for_customer", customer_id=MARIA,
                limit=0)
    await fails(backend, "Customer with ID C0 not found", "get_bills_for_customer", customer_id="C0")


async def test_data_usage_only_for_the_customers_line(backend: TelecomBackend) -> None:
    await fails(backend, "Line L2004 not found for customer C2001", "get_data_usage", customer_id=MARIA,
                line_id="L2004")


# ----------------------------------------------------------------------------------- agent writes


async def test_suspend_and_resume(backend: TelecomBackend) -> None:
    suspended = await call(backend, "suspend_line", customer_id=MARIA, line_id="L2001", reason="overdue bill")
    assert suspended == {"message": "Line suspended successfully. $5/month holding fee will apply.",
                         "line": line("L2001", status="Suspended", suspension_start_date="2025-02-25")}
    await fails(backend, "Line must be active to suspend", "suspend_line", customer_id=MARIA, line_id="L2001",
                reason="again")
    resumed = await call(backend, "resume_line", customer_id=MARIA, line_id="L2003")
    assert resumed == {"message": "Line resumed successfully",
                       "line": line("L2003", status="Active", suspension_start_date=None)}
    await fails(backend, "Line must be suspended to resume", "resume_line", customer_id=MARIA, line_id="L2003")
    await fails(backend, "Line L2004 not found for customer C2001", "resume_line", customer_id=MARIA,
                line_id="L2004")


async def test_a_pending_activation_line_can_be_resumed_by_the_tool(tmp_path: Path) -> None:
    def pending(data: Data) -> None:
        data["db"]["lines"][1]["status"] = "Pending Activation"

    async with await open_backend_with(tmp_path, pending) as backend:
        assert (await call(backend, "resume_line", customer_id=MARIA, line_id="L2002"))["line"]["status"] == "Active"


async def test_send_payment_request(backend: TelecomBackend) -> None:
    assert await call(backend, "send_payment_request", customer_id=MARIA, bill_id="B2003") == (
        "Payment request sent to the customer for bill B2003")
    assert (await call(backend, "get_details_by_id", id="B2003"))["status"] == "Awaiting Payment"
    await fails(backend, "A bill is already awaiting payment for this customer", "send_payment_request",
                customer_id=MARIA, bill_id="B2002")
    await fails(backend, "A bill is already awaiting payment for this customer", "send_payment_request",
                customer_id=DANIEL, bill_id="B2005")  # Daniel's B2006 awaits payment already
    await fails(backend, "Bill B2005 not found for customer C2004", "send_payment_request", customer_id=OTHER_MARIA,
                bill_id="B2005")


async def test_the_payment_request_tool_does_not_check_the_bill_is_overdue(backend: TelecomBackend) -> None:
    """As in tau2: a Paid bill can be requested again. Only the gate refuses it."""
    await call(backend, "send_payment_request", customer_id=OTHER_MARIA, bill_id="B2007")
    assert (await call(backend, "get_details_by_id", id="B2007"))["status"] == "Awaiting Payment"


async def test_roaming(backend: TelecomBackend) -> None:
    assert await call(backend, "enable_roaming", customer_id=MARIA, line_id="L2001") == "Roaming enabled successfully"
    assert await call(backend, "enable_roaming", customer_id=MARIA, line_id="L2001") == "Roaming was already enabled"
    assert await call(backend, "disable_roaming", customer_id=MARIA, line_id="L2001") == (
        "Roaming disabled successfully")
    assert await call(backend, "disable_roaming", customer_id=MARIA, line_id="L2001") == "Roaming was already disabled"
    await fails(backend, "Line L2006 not found for customer C2001", "enable_roaming", customer_id=MARIA,
                line_id="L2006")


async def test_refuel_charges_the_draft_bill(backend: TelecomBackend) -> None:
    result = await call(backend, "refuel_data", customer_id=MARIA, line_id="L2002", gb_amount=2.0)
    assert result == {"message": "Successfully added 2.0 GB of data for line L2002 for $8.00",
                      "new_data_refueling_gb": 2.0, "charge": 8.0}
    draft = await call(backend, "get_details_by_id", id="B2004")
    assert draft["total_due"] == 8.0 and draft["line_items"] == [
        {"description": "Data refueling: 2.0 GB at $4.0/GB", "amount": 8.0, "date": "2025-02-25",
         "item_type": "Charge"}]
    again = await call(backend, "refuel_data", customer_id=MARIA, line_id="L2002", gb_amount=5)  # no cap in the tool
    assert again["new_data_refueling_gb"] == 7.0 and again["charge"] == 20.0
    assert (await call(backend, "get_details_by_id", id="B2004"))["total_due"] == 28.0
    await fails(backend, "Refuel amount must be positive", "refuel_data", customer_id=MARIA, line_id="L2002",
                gb_amount=-1)
    await fails(backend, "gb_amount must be a number, got '2'", "refuel_data", customer_id=MARIA, line_id="L2002",
                gb_amount="2")


async def test_refuel_without_a_draft_creates_the_next_numbered_one(backend: TelecomBackend) -> None:
    """Deterministic ids: the next B<number> after the largest, instead of tau2's random B<8 hex>."""
    keys = await backend.store.keys("bills")
    expected = f"B{max(int(k[1:]) for k in keys) + 1}"
    assert expected == "B2125"
    await call(backend, "refuel_data", customer_id=DANIEL, line_id="L2004", gb_amount=1.5)
    draft = await call(backend, "get_details_by_id", id=expected)
    assert {k: draft[k] for k in ("customer_id", "period_start", "period_end", "issue_date", "due_date", "status",
                                  "total_due")} == {
        "customer_id": DANIEL, "period_start": "2025-03-01", "period_end": "2025-03-31", "issue_date": "2025-03-01",
        "due_date": "2025-03-15", "status": "Draft", "total_due": 3.0}
    assert (await call(backend, "get_customer_by_id", customer_id=DANIEL))["bill_ids"] == ["B2005", "B2006", expected]
    await call(backend, "refuel_data", customer_id=DANIEL, line_id="L2004", gb_amount=0.5)
    assert (await call(backend, "get_details_by_id", id=expected))["total_due"] == 4.0  # the same draft again


async def test_a_write_that_fails_after_storing_changes_nothing(backend: TelecomBackend,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """refuel_data stores the line, then charges the bill; if that fails the line is rolled back too (tau2 would
    have kept the extra GB without the charge)."""

    async def broken_charge(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("billing system unavailable")

    monkeypatch.setattr(TelecomBackend, "_charge", broken_charge)
    await fails(backend, "billing system unavailable", "refuel_data", customer_id=MARIA, line_id="L2002",
                gb_amount=1.0)
    assert (await call(backend, "get_details_by_id", id="L2002"))["data_refueling_gb"] == 0.0


async def test_restore_covers_both_sides(backend: TelecomBackend) -> None:
    start = await backend.state_hash()
    snap = await backend.snapshot()
    await call(backend, "enable_roaming", customer_id=MARIA, line_id="L2001")
    await backend.sync()
    await call(backend, "toggle_roaming")
    assert await backend.state_hash() != start
    await backend.restore(snap)
    assert await backend.state_hash() == start
    assert (await surroundings(backend))["roaming_allowed"] is False


# ----------------------------------------------------------------------------------- the phone's tools


async def test_phone_reads_on_the_seed_phone(backend: TelecomBackend) -> None:
    assert await call(backend, "check_status_bar") == "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 64%"
    assert await call(backend, "check_network_status") == (
        "Airplane Mode: OFF\nSIM Card Status: active\nCellular Connection: connected\nCellular Signal: excellent\n"
        "Cellular Network Type: 5G\nMobile Data Enabled: Yes\nData Roaming Enabled: No\nWi-Fi Radio: OFF\n"
        "Wi-Fi Connected: No")
    assert await call(backend, "check_network_mode_preference") == "Network Mode Preference: 4g_5g_preferred"
    assert await call(backend, "run_speed_test") == "Speed test failed: No Connection."  # abroad, no roaming
    assert await call(backend, "check_sim_status") == "Your SIM card is active and working."
    assert await call(backend, "check_data_restriction_status") == "Data Saver mode is OFF."
    assert await call(backend, "check_apn_settings") == (
        "Current APN Name: internet\nMMSC URL (for picture messages): http://mms.carrier.com/mms/wapenc\n"
        "(These are technical settings, usually best left unchanged.)")
    assert await call(backend, "check_wifi_status") == "Wi-Fi is turned OFF."
    assert await call(backend, "check_wifi_calling_status") == "Wi-Fi Calling is currently turned OFF."
    assert await call(backend, "check_vpn_status") == "VPN is turned OFF."
    assert await call(backend, "check_installed_apps") == (
        "The following apps are installed on the phone: messaging, browser, maps")
    assert await call(backend, "check_app_status", app_name="messaging") == (
        "Status for App: messaging\n - Permissions Granted:\n   - sms\n   - storage\n   - phone")
    assert await call(backend, "check_app_permissions", app_name="browser") == (
        "App 'browser' has permission for: storage, network.")
    assert await call(backend, "check_app_permissions", app_name="camera") == "App 'camera' not found on this phone."
    assert await call(backend, "can_send_mms") == "Your messaging app cannot send MMS messages."
    assert await call(backend, "check_payment_request") == "No payment request has been made."


async def test_reads_never_change_the_phone(backend: TelecomBackend) -> None:
    before = await backend.state_hash()
    for name in ("check_status_bar", "check_network_status", "run_speed_test", "can_send_mms", "check_vpn_status"):
        await call(backend, name)
    assert await backend.state_hash() == before


async def test_phone_changes_and_their_texts(backend: TelecomBackend) -> None:
    assert await call(backend, "toggle_wifi") == (
        "Wi-Fi is now ON.\nStatus Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 64%")
    assert await call(backend, "toggle_airplane_mode") == (
        "Airplane Mode is now ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 64%")
    assert await call(backend, "toggle_wifi") == (
        "Cannot change Wi-Fi settings while Airplane Mode is ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 64%")
    assert (await call(backend, "toggle_airplane_mode")).startswith("Airplane Mode is now OFF.\nStatus Bar: 📶⁴")
    assert (await call(backend, "toggle_data")).startswith("Mobile Data is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G | "
                                                           "📵 Data Disabled")
    assert (await call(backend, "toggle_data_saver_mode")).startswith("Data Saver Mode is now ON.")
    assert (await call(backend, "toggle_wifi_calling")).startswith("Wi-Fi Calling is now ON.")
    assert (await call(backend, "connect_vpn")).endswith("| 🔒 VPN Connected | 🔋 64%")
    assert await call(backend, "connect_vpn") == "VPN already connected."
    assert await call(backend, "check_vpn_status") == (
        "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', "
        "'server_performance': 'excellent'}")
    assert (await call(backend, "disconnect_vpn")).startswith("VPN disconnected successfully.")
    assert (await call(backend, "disconnect_vpn")).startswith("No active VPN connection to disconnect.")
    assert (await call(backend, "reseat_sim_card")).startswith("SIM card re-seated successfully.")


async def test_soft_errors_are_texts_and_change_nothing(backend: TelecomBackend) -> None:
    before = await backend.state_hash()
    assert (await call(backend, "set_network_mode_preference", mode="6g")).startswith(
        "Failed to set network mode: '6g' is not a valid option. Please use one of: 4g_5g_preferred, 4g_only, "
        "3g_only, 2g_only\nStatus Bar:")
    assert (await call(backend, "grant_app_permission", app_name="camera", permission="storage")).startswith(
        "Error. App 'camera' not found. Cannot grant permission.")
    assert (await call(backend, "grant_app_permission", app_name="messaging", permission="camera")).startswith(
        "Error. Permission 'camera' not tracked for app 'messaging', available permissions: ['sms', 'storage', "
        "'phone', 'network']")
    assert await call(backend, "make_payment") == "You do not have a payment request."
    assert await backend.state_hash() == before
    await fails(backend, "apn_settings must be an object with the APN fields, got str", "set_apn_settings",
                apn_settings="internet")
    with pytest.raises(ToolError, match="apn_name"):
        await call(backend, "set_apn_settings", apn_settings={"apn_name": "wap"})
    assert await backend.state_hash() == before


async def test_apn_reset_takes_effect_at_reboot(tmp_path: Path) -> None:
    def no_mmsc(data: Data) -> None:
        data["user_db"]["device"]["active_apn_settings"]["mmsc_url"] = None

    async with await open_backend_with(tmp_path, no_mmsc) as backend:
        assert (await call(backend, "reset_apn_settings")).startswith("APN settings will reset at reboot.")
        assert "MMSC URL (for picture messages): Not Set" in await call(backend, "check_apn_settings")
        assert (await call(backend, "reboot_device")).startswith(
            "Resetting APN settings...\nRestarting network services...\nStatus Bar:")
        assert "http://mms.carrier.com/mms/wapenc" in await call(backend, "check_apn_settings")
        assert (await call(backend, "reboot_device")).startswith("Restarting network services...\nStatus Bar:")
        assert (await call(backend, "set_apn_settings", apn_settings={"apn_name": "broken"})).startswith(
            "APN settings set to: broken\nStatus Bar: 📵 No Signal | 📵 Data Disabled")


async def test_granting_the_messaging_storage_permission(tmp_path: Path) -> None:
    def no_storage(data: Data) -> None:
        data["user_db"]["device"]["app_statuses"]["messaging"]["permissions"]["storage"] = False

    async with await open_backend_with(tmp_path, no_storage) as backend:
        assert (await call(backend, "grant_app_permission", app_name="messaging", permission="STORAGE")).startswith(
            "Success. Permission 'storage' granted to app 'messaging'.")
        assert (await phone_device(backend))["app_statuses"]["messaging"]["permissions"]["storage"] is True


# ----------------------------------------------------------------------------------- simulation rules


def phone(**device: Any) -> Phone:
    around = device.pop("surroundings", {})
    return Phone(PhoneDevice.model_validate(device), Surroundings.model_validate(around))


@pytest.mark.parametrize(("technology", "signal", "extra", "mbps", "label"), [
    ("5G", "excellent", {}, 275.0, "Excellent"),
    ("5G", "good", {}, 220.0, "Excellent"),
    ("4G", "good", {}, 44.0, "Good"),
    ("4G", "fair", {}, 27.5, "Good"),
    ("3G", "fair", {}, 1.5, "Poor"),
    ("2G", "poor", {}, 0.05, "Very Poor"),
    ("5G", "excellent", {"data_saver_mode": True}, 55.0, "Good"),
    ("5G", "excellent", {"vpn_connected": True, "vpn_details": {"server_performance": "poor"}}, 27.5, "Good"),
    ("5G", "excellent", {"vpn_connected": True, "vpn_details": {"server_performance": "excellent"}}, 275.0,
     "Excellent"),
    ("4G", "good", {"data_saver_mode": True, "vpn_connected": True, "vpn_details": {"server_performance": "poor"}},
     0.88, "Very Poor"),
])
def test_speed_figures(technology: str, signal: str, extra: Data, mbps: float, label: str) -> None:
    assert phone(network_technology_connected=technology, network_signal_strength=signal, **extra).speed() == (
        mbps, label)


@pytest.mark.parametrize(("device", "around", "works"), [
    ({}, {}, True),
    ({"airplane_mode": True}, {}, False),
    ({"network_signal_strength": "none"}, {}, False),
    ({"network_connection_status": "no_service"}, {}, False),
    ({"data_enabled": False}, {}, False),
    ({}, {"mobile_data_usage_exceeded": True}, False),
    ({}, {"is_abroad": True}, False),
    ({"roaming_enabled": True}, {"is_abroad": True}, False),  # the line does not allow roaming
    ({}, {"is_abroad": True, "roaming_allowed": True}, False),  # the phone's setting is off
    ({"roaming_enabled": True}, {"is_abroad": True, "roaming_allowed": True}, True),
])
def test_when_mobile_data_works(device: Data, around: Data, works: bool) -> None:
    assert phone(**device, surroundings=around).mobile_data_working() is works


@pytest.mark.parametrize(("device", "works"), [
    ({}, True),
    ({"network_technology_connected": "2G"}, False),
    ({"wifi_calling_enabled": True}, True),
    ({"wifi_calling_enabled": True, "wifi_calling_mms_over_wifi": True}, False),
    ({"active_apn_settings": {"mmsc_url": None}}, False),
    ({"app_statuses": {"messaging": {"app_name": "messaging", "permissions": {"sms": True}}}}, False),
    ({"app_statuses": {"messaging": {"app_name": "messaging", "permissions": {"sms": True, "storage": True}}}},
     True),  # the phone permission is not needed
    ({"app_statuses": {}}, False),
    ({"data_enabled": False}, False),
])
def test_when_mms_works(device: Data, works: bool) -> None:
    assert phone(**device).mms_working() is works


@pytest.mark.parametrize(("preference", "signal", "technology", "strength"), [
    ("4g_5g_preferred", {}, "5G", "excellent"),
    ("4g_5g_preferred", {"5G": "none"}, "4G", "good"),
    ("4g_only", {}, "4G", "good"),
    ("3g_only", {}, "3G", "fair"),
    ("2g_only", {}, "2G", "poor"),
])
def test_network_search_follows_the_mode_and_the_surroundings(preference: str, signal: Data, technology: str,
                                                              strength: str) -> None:
    table = {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent", **signal}
    found = phone(network_mode_preference=preference, surroundings={"signal_strength": table})
    found.network_search()
    device = found.device
    assert (device.network_connection_status, device.network_technology_connected,
            device.network_signal_strength) == ("connected", technology, strength)


@pytest.mark.parametrize(("device", "around"), [
    ({"sim_card_missing": True}, {}),
    ({"sim_card_status": "locked_pin"}, {}),
    ({"sim_card_status": "locked_puk"}, {}),
    ({"airplane_mode": True}, {}),
    ({"active_apn_settings": {"apn_name": "broken"}}, {}),
    ({}, {"line_active": False}),
])
def test_network_search_finds_no_service(device: Data, around: Data) -> None:
    found = phone(**device, surroundings=around)
    found.network_search()
    assert (found.device.network_connection_status, found.device.network_technology_connected,
            found.device.network_signal_strength) == ("no_service", "none", "none")


def test_turning_a_switch_on_that_is_already_on_toggles_it_twice() -> None:
    """tau2's turn_*_on: an already-on airplane mode is toggled off and on again, dropping Wi-Fi on the way."""
    flying = phone(airplane_mode=True, wifi_enabled=True, wifi_connected=True, wifi_ssid="Hotel")
    flying.turn_airplane_mode_on()
    assert flying.device.airplane_mode and not flying.device.wifi_connected and flying.device.wifi_ssid is None


# ----------------------------------------------------------------------------------- the sync


async def test_sync_on_a_consistent_seed_changes_nothing(backend: TelecomBackend) -> None:
    before = await backend.state_hash()
    assert await backend.sync() == []
    assert await backend.state_hash() == before


async def test_sync_carries_the_lines_roaming_to_the_phone(backend: TelecomBackend) -> None:
    await call(backend, "enable_roaming", customer_id=MARIA, line_id="L2001")
    assert await backend.sync() == ["surroundings.roaming_allowed: False -> True"]
    assert await call(backend, "run_speed_test") == "Speed test failed: No Connection."  # the phone's setting is off
    await call(backend, "toggle_roaming")
    assert await call(backend, "run_speed_test") == (
        "Speed Test Result: 275.00 Mbps (Excellent). Connection is very fast.")


async def test_a_suspended_line_loses_service_at_the_next_network_search(backend: TelecomBackend) -> None:
    await call(backend, "suspend_line", customer_id=MARIA, line_id="L2001", reason="overdue bill")
    assert await backend.sync() == ["surroundings.line_active: True -> False"]
    assert "Cellular Connection: connected" in await call(backend, "check_network_status")  # not searched yet
    await call(backend, "reboot_device")
    assert "Cellular Connection: no_service" in await call(backend, "check_network_status")
    await call(backend, "resume_line", customer_id=MARIA, line_id="L2001")
    assert await backend.sync() == ["surroundings.line_active: False -> True"]
    assert "Cellular Connection: no_service" in await call(backend, "check_network_status")  # until a restart
    await call(backend, "reboot_device")
    assert "Cellular Connection: connected" in await call(backend, "check_network_status")


async def test_usage_exceeded_follows_usage_and_refuel(backend: TelecomBackend) -> None:
    await backend.run_env_function("assistant", "set_data_usage",
                                   {"customer_id": MARIA, "line_id": "L2001", "data_used_gb": 20.0})
    assert (await surroundings(backend))["mobile_data_usage_exceeded"] is True  # run_env_function syncs
    await call(backend, "refuel_data", customer_id=MARIA, line_id="L2001", gb_amount=0.5)
    assert await backend.sync() == ["surroundings.mobile_data_usage_exceeded: True -> False"]


async def test_payments_flow_between_the_line_and_the_phone(backend: TelecomBackend) -> None:
    await call(backend, "send_payment_request", customer_id=MARIA, bill_id="B2003")
    assert await backend.sync() == ["surroundings.payment_request: None -> B2003 (15.0 USD)"]
    assert await call(backend, "check_payment_request") == "You have a payment request for bill B2003 of 15.0 USD."
    assert await call(backend, "make_payment") == "Payment of 15.0 USD has been made for bill B2003."
    assert (await call(backend, "get_details_by_id", id="B2003"))["status"] == "Awaiting Payment"  # until the sync
    assert await backend.sync() == ["bills.B2003.status: Awaiting Payment -> Paid (paid on the phone)",
                                    "surroundings.payment_request: B2003 -> None"]
    assert (await call(backend, "get_details_by_id", id="B2003"))["status"] == "Paid"
    assert await backend.sync() == []


async def test_sync_without_a_phone_number_does_nothing(tmp_path: Path) -> None:
    def nobody(data: Data) -> None:
        data["user_db"]["surroundings"]["phone_number"] = None

    async with await open_backend_with(tmp_path, nobody) as backend:
        await call(backend, "enable_roaming", customer_id=MARIA, line_id="L2001")
        assert await backend.sync() == []


async def test_a_phone_number_without_a_line_fails_the_sync(backend: TelecomBackend) -> None:
    await backend.store.load({"user_db": {"surroundings": {**await surroundings(backend), "phone_number": "1"}}})
    with pytest.raises(ToolError, match="Wrong scenario, line not found for phone number: 1"):
        await backend.sync()


# ----------------------------------------------------------------------------------- task setup and assertions


async def test_suspend_line_for_overdue_bill(backend: TelecomBackend) -> None:
    message = await backend.run_env_function("assistant", "suspend_line_for_overdue_bill", {
        "customer_id": OTHER_MARIA, "line_id": "L2006", "new_bill_id": "B9001", "contract_ended": True})
    assert message == "Line L2006 suspended for unpaid bill B9001. Contract ended: True"
    overdue = await call(backend, "get_details_by_id", id="B9001")
    assert {k: overdue[k] for k in ("period_start", "period_end", "issue_date", "due_date", "total_due", "status")} == {
        "period_start": "2025-01-01", "period_end": "2025-01-31", "issue_date": "2025-01-01",
        "due_date": "2025-01-15", "total_due": 80.0, "status": "Overdue"}
    suspended = await call(backend, "get_details_by_id", id="L2006")
    assert (suspended["status"], suspended["contract_end_date"]) == ("Suspended", "2025-01-31")
    assert await backend.assert_env("assistant", "assert_overdue_bill_exists",
                                    {"customer_id": OTHER_MARIA, "overdue_bill_id": "B9001"})
    assert not await backend.assert_env("assistant", "assert_no_overdue_bill", {"overdue_bill_id": "B9001"})
    assert await backend.assert_env("assistant", "assert_no_overdue_bill", {"overdue_bill_id": "B404"})
    assert await backend.assert_env("assistant", "assert_line_status",
                                    {"customer_id": OTHER_MARIA, "line_id": "L2006", "expected_status": "Suspended"})
    with pytest.raises(ToolError, match="Customer already has an overdue bill"):
        await backend.run_env_function("assistant", "suspend_line_for_overdue_bill", {
            "customer_id": MARIA, "line_id": "L2001", "new_bill_id": "B9002", "contract_ended": False})


async def test_user_setup_functions_and_assertions(backend: TelecomBackend) -> None:
    await backend.run_env_function("user", "break_vpn", {})
    assert await backend.assert_env("user", "assert_internet_not_excellent", {})
    await backend.run_env_function("user", "lock_sim_card", {"mode": "pin"})
    assert await backend.assert_env("user", "assert_service_status", {"expected_status": "no_service"})
    assert await call(backend, "check_sim_status") == "The SIM card is locked with a PIN code."
    with pytest.raises(ToolError, match="Function drop_phone not found in user tools"):
        await backend.run_env_function("user", "drop_phone", {})
    with pytest.raises(ToolError, match="Function enable_roaming not found in user tools"):
        await backend.run_env_function("user", "enable_roaming", {"customer_id": MARIA, "line_id": "L2001"})
    with pytest.raises(ToolError, match="Function toggle_roaming not found in assistant tools"):
        await backend.run_env_function("assistant", "toggle_roaming", {})
    with pytest.raises(ToolError, match="Function assert_nothing not found in assistant tools"):
        await backend.assert_env("assistant", "assert_nothing", {})
    with pytest.raises(ToolError, match="mode must be 'pin' or 'puk'"):
        await backend.run_env_function("user", "lock_sim_card", {"mode": "pun"})


async def test_a_task_may_set_the_scene_with_either_sides_tools(backend: TelecomBackend) -> None:
    """tau2 tasks call tools as setup too (`enable_roaming` as an assistant-side initialization action)."""
    assert await backend.run_env_function("assistant", "enable_roaming",
                                          {"customer_id": MARIA, "line_id": "L2001"}) == "Roaming enabled successfully"
    assert (await surroundings(backend))["roaming_allowed"] is True  # followed by a sync
    assert (await backend.run_env_function("user", "toggle_roaming", {})).startswith("Data Roaming is now ON.")
    assert await backend.assert_env("user", "assert_mobile_data_status", {"expected_status": True})


async def test_set_user_info_to_an_unknown_number_breaks_the_sync(backend: TelecomBackend) -> None:
    with pytest.raises(ToolError, match="Wrong scenario"):
        await backend.run_env_function("user", "set_user_info", {"name": "X", "phone_number": "555-000-0000"})


# ----------------------------------------------------------------------------------- seed and sources


def test_seed_file_is_what_the_generator_writes() -> None:
    assert SEED_FILE.read_text(encoding="utf-8") == render(generate())
    assert render(generate()) == render(generate())


def test_seed_referential_integrity() -> None:
    data = load_seed()
    docs = normalise(data)  # validates every record
    assert denormalise(docs) == data
    db = data["db"]
    lines = {doc["line_id"]: doc for doc in db["lines"]}
    bills = {doc["bill_id"]: doc for doc in db["bills"]}
    devices = {doc["device_id"] for doc in db["devices"]}
    owners: dict[str, str] = {}
    for record in db["customers"]:
        for line_id in record["line_ids"]:
            assert line_id in lines and line_id not in owners, line_id
            owners[line_id] = record["customer_id"]
        for bill_id in record["bill_ids"]:
            assert bills[bill_id]["customer_id"] == record["customer_id"], bill_id
    assert set(owners) == set(lines) and all(doc["device_id"] in devices for doc in lines.values())
    for doc in bills.values():
        assert abs(doc["total_due"] - sum(item["amount"] for item in doc["line_items"])) < 1e-9, doc["bill_id"]
    assert 10 <= len(db["customers"]) <= 20


async def test_the_registry_opens_the_seed_tau2_files_and_rejects_bad_sources(tmp_path: Path) -> None:
    seeded = await open_backend("telecom", tmp_path / "a.sqlite")
    assert (await seeded.call("get_customer_by_phone", {"phone_number": "555-210-3001"}))["customer_id"] == MARIA
    seed_hash = await seeded.state_hash()
    tau2_layout = await seeded.export_tau2()
    await seeded.close()
    async with await open_backend("telecom", tmp_path / "b.sqlite", source=SEED_FILE) as from_file:
        assert await from_file.state_hash() == seed_hash
    assert tau2_layout == load_seed()
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "db.toml").write_text('[[plans]]\nplan_id = "P1"\nname = "x"\ndata_limit_gb = 1\n'
                                    'price_per_month = 5\ndata_refueling_price_per_gb = 1\n', encoding="utf-8")
    with pytest.raises(BackendSourceError, match="no user_db.toml beside db.toml"):
        await open_backend("telecom", tmp_path / "c.sqlite", source=folder / "db.toml")
    (folder / "user_db.toml").write_text("[device]\nbattery_level = 12\n", encoding="utf-8")
    async with await open_backend("telecom", tmp_path / "d.sqlite", source=folder) as tiny:
        assert await tiny.call("get_details_by_id", {"id": "P1"}) == {
            "plan_id": "P1", "name": "x", "data_limit_gb": 1.0, "price_per_month": 5.0,
            "data_refueling_price_per_gb": 1.0}
        assert (await tiny.call("check_status_bar", {})).endswith("🔋 12%")
    with pytest.raises(BackendSourceError, match="give the agent DB"):
        await open_backend("telecom", tmp_path / "e.sqlite", source=folder / "user_db.toml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendSourceError, match="no db.toml"):
        await open_backend("telecom", tmp_path / "f.sqlite", source=tmp_path / "empty")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"db": {"lines": [{"line_id": "L1"}]}, "user_db": {}}), encoding="utf-8")
    with pytest.raises(BackendSourceError, match="not a tau2 telecom database"):
        await open_backend("telecom", tmp_path / "g.sqlite", source=broken)
    bad_toml = tmp_path / "bad" / "db.toml"
    bad_toml.parent.mkdir()
    bad_toml.write_text("[[plans]\n", encoding="utf-8")
    (bad_toml.parent / "user_db.toml").write_text("", encoding="utf-8")
    with pytest.raises(BackendSourceError, match="cannot read it as a telecom database"):
        await open_backend("telecom", tmp_path / "h.sqlite", source=bad_toml)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["db"].update(routers=[]), "unknown telecom collection"),
    (lambda d: d["db"]["plans"].append(dict(d["db"]["plans"][0])), "plans: plan_id 'P2001' is listed twice"),
    (lambda d: d["db"]["lines"][0].update(plan_id="P0"), "line L2001 has plan 'P0', which is not in plans"),
    (lambda d: d["user_db"]["surroundings"].update(phone_number="555-999-9999"), "is not a line in db"),
    (lambda d: d["db"]["lines"][0].update(colour="red"), "colour"),
    (lambda d: d.update(extra={}), "expected {'db'"),
])
def test_normalise_refuses_broken_data(change: Callable[[Data], None], message: str) -> None:
    data = load_seed()
    change(data)
    with pytest.raises(ValueError, match=message):
        normalise(data)


@pytest.mark.shared
@pytest.mark.skipif(not (TAU2_TELECOM / "db.toml").is_file(), reason=f"tau2 telecom data not found at {TAU2_TELECOM}")
async def test_tau2s_db_toml_and_user_db_toml_load_and_round_trip(tmp_path: Path) -> None:
    data = read_source(TAU2_TELECOM / "db.toml")
    assert read_source(TAU2_TELECOM) == data
    db = data["db"]
    assert [len(db[n]) for n in ("plans", "customers", "lines", "bills", "devices")] == [5, 4, 9, 6, 9]
    copied = tmp_path / "copy"
    shutil.copytree(TAU2_TELECOM, copied)
    async with await open_backend("telecom", tmp_path / "tau2.sqlite", source=copied / "db.toml") as backend:
        exported = await backend.export_tau2()
        expected_user = dump(UserDB.model_validate(data["user_db"]))
        assert exported["user_db"] == expected_user  # defaults filled in (surroundings), as tau2's model has them
        assert [c["customer_id"] for c in exported["db"]["customers"]] == ["C1001", "C1002", "C1003", "C1004"]
        b1003 = next(b for b in exported["db"]["bills"] if b["bill_id"] == "B1003")
        assert b1003["total_due"] == 0.0 and b1003["line_items"] == [] and b1003["status"] == "Draft"
        assert (await call(backend, "get_customer_by_phone", phone_number="555-123-2002"))["customer_id"] == "C1001"
        assert await backend.sync() == []  # tau2's user_db.toml names no phone number: nothing to sync yet
        await backend.run_env_function("user", "set_user_info", {"name": "John Smith", "phone_number": "555-123-2002"})
        assert (await surroundings(backend))["roaming_allowed"] is True  # L1002 has roaming on
        refuel = await call(backend, "refuel_data", customer_id="C1002", line_id="L1004", gb_amount=2.0)
        assert refuel["charge"] == 0.2 and (await call(backend, "get_details_by_id", id="B1007"))["status"] == "Draft"
