"""The customer's phone: tau2-bench's phone simulation rules, as plain Python over the user DB models.

No I/O here: the backend loads a `Phone` from the store, runs one action, and stores it back when the
action changed something. Every rule below is deterministic (no randomness, no clock).

The rules (API.md §3.4):

- Network search. With an active SIM the phone connects with the technology its mode preference picks
  (4G/5G preferred: 5G when the surroundings have any 5G signal, else 4G; otherwise the one technology the
  mode allows) at the surroundings' signal for that technology. A missing or locked SIM, airplane mode, a
  broken APN or an inactive line (the sync's `line_active`) leave it with no service, no technology and no
  signal. A search runs after every change that affects the radio (airplane mode, SIM, mobile data,
  roaming, mode, APN, reboot), never by itself: a line resumed on the carrier's side shows service only
  after the customer restarts the phone (or makes another such change), as in tau2.
- Mobile data works only when: airplane mode is off, there is signal and service, (abroad) both the
  phone's Data Roaming setting and the line's roaming (`roaming_allowed`, from the sync) are on, mobile
  data is on, and the line has not used up its data (`mobile_data_usage_exceeded`, from the sync).
- Speed (Mbps) = mid-point of the technology's range (2G 0.1-0.4, 3G 1-5, 4G 10-100, 5G 50-500) x the
  signal factor (poor 0.2, fair 0.5, good 0.8, excellent 1.0) x 0.1 with a poorly performing VPN connected
  x 0.2 with Data Saver on, rounded to 2 decimals. Labels: < 1 Very Poor, < 5 Poor, < 25 Fair, < 100 Good,
  else Excellent.
- MMS works only when mobile data works, the technology is not 2G, Wi-Fi Calling does not carry MMS over
  Wi-Fi, the APN has an MMSC URL, and the messaging app is installed with its SMS and storage permissions.

The texts the phone shows are tau2's (tools' returns are part of the API tasks and simulators rely on),
with one deliberate difference: `check_vpn_status` shows the VPN details with plain values, where tau2
printed a Python enum repr (`<PerformanceLevel.EXCELLENT: 'excellent'>`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mock_backends.telecom.models import (
    NETWORK_MODES,
    APNSettings,
    AppPermissions,
    NetworkTechnology,
    PhoneDevice,
    Surroundings,
    VpnDetails,
)

SPEED_RANGES: dict[str, tuple[float, float]] = {
    "2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
SIGNAL_FACTORS: dict[str, float] = {"none": 0.0, "poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}
SPEED_LABELS: tuple[tuple[float, str], ...] = ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good"))
SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}
SIGNAL_ICONS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                "excellent": "📶⁴ Excellent"}
SIM_TEXT = {
    "active": "Your SIM card is active and working.",
    "missing": "No SIM card detected in the phone.",
    "locked_pin": "The SIM card is locked with a PIN code.",
    "locked_puk": "The SIM card is locked with a PUK code.",
}
# What `connect_vpn` connects to (tau2's default VPN profile).
DEFAULT_VPN = VpnDetails(server_address="192.168.1.1", protocol="OpenVPN", server_performance="excellent")
MODE_BY_PREFERENCE: dict[str, NetworkTechnology] = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}


def _on(flag: bool) -> str:
    return "ON" if flag else "OFF"


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


class Phone:
    """One phone and its surroundings, mutated in place by the actions below."""

    def __init__(self, device: PhoneDevice, surroundings: Surroundings) -> None:
        self.device = device
        self.surroundings = surroundings

    # ------------------------------------------------------------------------------------------ rules

    @property
    def sim_status(self) -> str:
        return "missing" if self.device.sim_card_missing else self.device.sim_card_status

    def network_search(self) -> None:
        """Re-evaluate the cellular connection (see the module docstring)."""
        device, signal = self.device, self.surroundings.signal_strength
        connected = (self.sim_status == "active" and not device.airplane_mode
                     and device.active_apn_settings.apn_name != "broken" and self.surroundings.line_active)
        if not connected:
            device.network_connection_status = "no_service"
            device.network_technology_connected = "none"
            device.network_signal_strength = "none"
            return
        preference = device.network_mode_preference
        technology: NetworkTechnology
        if preference == "4g_5g_preferred":
            technology = "4G" if signal.get("5G", "none") == "none" else "5G"
        else:
            technology = MODE_BY_PREFERENCE.get(preference, "4G")
        device.network_connection_status = "connected"
        device.network_technology_connected = technology
        device.network_signal_strength = signal.get(technology, "none")

    def mobile_data_working(self) -> bool:
        device, around = self.device, self.surroundings
        if device.airplane_mode or device.network_signal_strength == "none":
            return False
        if device.network_connection_status == "no_service":
            return False
        if around.is_abroad and not (device.roaming_enabled and around.roaming_allowed):
            return False
        return device.data_enabled and not around.mobile_data_usage_exceeded

    def speed(self) -> tuple[float | None, str]:
        """(Mbps, label), or (None, "No Connection") when mobile data does not work."""
        if not self.mobile_data_working():
            return None, "No Connection"
        device = self.device
        factor = 1.0
        if device.vpn_connected and device.vpn_details is not None and device.vpn_details.server_performance == "poor":
            factor = 0.1
        if device.data_saver_mode:
            factor *= 0.2
        low, high = SPEED_RANGES.get(device.network_technology_connected, (0.0, 0.0))
        mbps = round((low + high) / 2.0 * SIGNAL_FACTORS.get(device.network_signal_strength, 0.0) * factor, 2)
        label = next((name for bound, name in SPEED_LABELS if mbps < bound), "Excellent")
        return mbps, label

    def mms_working(self) -> bool:
        device = self.device
        if not self.mobile_data_working() or device.network_technology_connected == "2G":
            return False
        if device.wifi_calling_enabled and device.wifi_calling_mms_over_wifi:
            return False
        if device.active_apn_settings.mmsc_url is None:
            return False
        messaging = device.app_statuses.get("messaging")
        return messaging is not None and messaging.permissions.sms and messaging.permissions.storage

    def status_bar(self) -> str:
        device = self.device
        shown: list[str] = []
        if device.airplane_mode:
            shown.append("✈️ Airplane Mode")
        else:
            shown.append(SIGNAL_ICONS.get(device.network_signal_strength, SIGNAL_ICONS["none"]))
            if device.network_technology_connected != "none":
                shown.append(device.network_technology_connected)
            if device.data_enabled and device.network_technology_connected != "none":
                shown.append("📱 Data Enabled")
                if device.data_saver_mode:
                    shown.append("🔽 Data Saver")
            else:
                shown.append("📵 Data Disabled")
        if device.wifi_enabled and device.wifi_connected:
            shown.append(f"📡 Connected to {device.wifi_ssid}" if device.wifi_ssid else "📡 Enabled")
        if device.vpn_connected:
            shown.append("🔒 VPN Connected")
        shown.append(f"🔋 {device.battery_level}%")
        return " | ".join(shown)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self.status_bar()}"

    def _wifi_off(self) -> None:
        self.device.wifi_connected = False
        self.device.wifi_ssid = None
        self.device.wifi_signal_strength = "none"

    def _disconnect_vpn(self) -> bool:
        if not self.device.vpn_connected:
            return False
        self.device.vpn_connected = False
        self.device.vpn_details = None
        return True

    # ------------------------------------------------------------------------------------------ reads

    def check_status_bar(self) -> str:
        return f"Status Bar: {self.status_bar()}"

    def check_network_status(self) -> str:
        device = self.device
        lines = [
            f"Airplane Mode: {_on(device.airplane_mode)}",
            f"SIM Card Status: {self.sim_status}",
            f"Cellular Connection: {device.network_connection_status}",
            f"Cellular Signal: {device.network_signal_strength}",
            f"Cellular Network Type: {device.network_technology_connected}",
            f"Mobile Data Enabled: {_yes(device.data_enabled)}",
            f"Data Roaming Enabled: {_yes(device.roaming_enabled)}",
            f"Wi-Fi Radio: {_on(device.wifi_enabled)}",
            f"Wi-Fi Connected: {_yes(device.wifi_connected)}",
        ]
        if device.wifi_connected:
            lines.append(f"Connected Wi-Fi Network: {device.wifi_ssid}")
        return "\n".join(lines)

    def check_network_mode_preference(self) -> str:
        return f"Network Mode Preference: {self.device.network_mode_preference}"

    def run_speed_test(self) -> str:
        mbps, label = self.speed()
        if mbps is None:
            return f"Speed test failed: {label}."
        return f"Speed Test Result: {mbps:.2f} Mbps ({label}). {SPEED_ADVICE[label]}"

    def check_sim_status(self) -> str:
        return SIM_TEXT[self.sim_status]

    def check_data_restriction_status(self) -> str:
        if self.device.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    def check_apn_settings(self) -> str:
        apn = self.device.active_apn_settings
        return (f"Current APN Name: {apn.apn_name or 'Not Set'}\n"
                f"MMSC URL (for picture messages): {apn.mmsc_url or 'Not Set'}\n"
                "(These are technical settings, usually best left unchanged.)")

    def check_wifi_status(self) -> str:
        device = self.device
        if not device.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if device.wifi_connected:
            return f"Wi-Fi is ON and connected to '{device.wifi_ssid}'. Signal strength: {device.wifi_signal_strength}."
        return "Wi-Fi is ON but not connected to any network."

    def check_wifi_calling_status(self) -> str:
        return f"Wi-Fi Calling is currently turned {_on(self.device.wifi_calling_enabled)}."

    def check_vpn_status(self) -> str:
        device = self.device
        if device.vpn_connected:
            if device.vpn_details is not None:
                return f"VPN is ON and connected. Details: {device.vpn_details.model_dump()}"
            return "VPN is ON and connected (no specific details available)."
        if device.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    def check_installed_apps(self) -> str:
        return f"The following apps are installed on the phone: {', '.join(self.device.app_statuses)}"

    @staticmethod
    def _granted(permissions: AppPermissions) -> list[str]:
        return [name for name, allowed in permissions.model_dump().items() if allowed]

    def check_app_status(self, app_name: str) -> str:
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app.permissions)
        lines = [f"Status for App: {app_name}"]
        if granted:
            lines += [" - Permissions Granted:", *(f"   - {name}" for name in granted)]
        else:
            lines.append(" - Permissions: None granted.")
        return "\n".join(lines)

    def check_app_permissions(self, app_name: str) -> str:
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app.permissions)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    def can_send_mms(self) -> str:
        able = "can" if self.mms_working() else "cannot"
        return f"Your messaging app {able} send MMS messages."

    def check_payment_request(self) -> str:
        request = self.surroundings.payment_request
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."

    # ------------------------------------------------------------------------------------------ changes

    def set_network_mode_preference(self, mode: Any) -> str:
        if mode not in NETWORK_MODES:
            return self._with_bar(f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: "
                                  f"{', '.join(NETWORK_MODES)}")
        self.device.network_mode_preference = mode
        self.network_search()
        return self._with_bar(f"Preferred Network Mode set to: {mode}")

    def toggle_airplane_mode(self) -> str:
        device = self.device
        turning_on = not device.airplane_mode
        device.airplane_mode = turning_on
        if turning_on:
            self._wifi_off()
            self._disconnect_vpn()
        else:
            device.network_connection_status = "searching"
            if device.wifi_enabled:
                self._wifi_off()
        self.network_search()
        return self._with_bar(f"Airplane Mode is now {_on(turning_on)}.")

    def reseat_sim_card(self) -> str:
        self.device.sim_card_missing = False
        self.network_search()
        return self._with_bar("SIM card re-seated successfully.")

    def toggle_data(self) -> str:
        self.device.data_enabled = not self.device.data_enabled
        self.network_search()
        return self._with_bar(f"Mobile Data is now {_on(self.device.data_enabled)}.")

    def toggle_roaming(self) -> str:
        self.device.roaming_enabled = not self.device.roaming_enabled
        self.network_search()
        return self._with_bar(f"Data Roaming is now {_on(self.device.roaming_enabled)}.")

    def toggle_data_saver_mode(self) -> str:
        self.device.data_saver_mode = not self.device.data_saver_mode
        return self._with_bar(f"Data Saver Mode is now {_on(self.device.data_saver_mode)}.")

    def set_apn_settings(self, apn_settings: Any) -> str:
        """Raises on malformed settings (tau2 raises too; the caller sees "Error: ...")."""
        if not isinstance(apn_settings, dict):
            raise ValueError(f"apn_settings must be an object with the APN fields, got {type(apn_settings).__name__}")
        settings = APNSettings.model_validate(apn_settings)
        self.device.active_apn_settings = settings
        self.network_search()
        return self._with_bar(f"APN settings set to: {settings.apn_name}")

    def reset_apn_settings(self) -> str:
        self.device.active_apn_settings.reset_at_reboot = True
        self.network_search()
        return self._with_bar("APN settings will reset at reboot.")

    def toggle_wifi(self) -> str:
        device = self.device
        if device.airplane_mode:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        device.wifi_enabled = not device.wifi_enabled
        if not device.wifi_enabled:
            self._wifi_off()
        return self._with_bar(f"Wi-Fi is now {_on(device.wifi_enabled)}.")

    def toggle_wifi_calling(self) -> str:
        self.device.wifi_calling_enabled = not self.device.wifi_calling_enabled
        return self._with_bar(f"Wi-Fi Calling is now {_on(self.device.wifi_calling_enabled)}.")

    def connect_vpn(self) -> str:
        if self.device.vpn_connected:
            return "VPN already connected."
        self.device.vpn_connected = True
        self.device.vpn_details = DEFAULT_VPN.model_copy(deep=True)
        return self._with_bar("VPN connected successfully.")

    def disconnect_vpn(self) -> str:
        done = self._disconnect_vpn()
        return self._with_bar("VPN disconnected successfully." if done else "No active VPN connection to disconnect.")

    def grant_app_permission(self, app_name: str, permission: str) -> str:
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            return self._with_bar(f"Error. App '{app_name}' not found. Cannot grant permission.")
        known = list(AppPermissions.model_fields)
        if permission not in known:
            return self._with_bar(f"Error. Permission '{permission}' not tracked for app '{app_name}', available "
                                  f"permissions: {known}")
        setattr(app.permissions, permission, True)
        return self._with_bar(f"Success. Permission '{permission}' granted to app '{app_name}'.")

    def reboot_device(self) -> str:
        lines: list[str] = []
        if self.device.active_apn_settings.reset_at_reboot:
            lines.append("Resetting APN settings...")
            self.device.active_apn_settings = APNSettings()
        lines.append("Restarting network services...")
        self.device.network_connection_status = "searching"
        self.network_search()
        return self._with_bar("\n".join(lines))

    def make_payment(self) -> str:
        request = self.surroundings.payment_request
        if request is None:
            return "You do not have a payment request."
        request.paid = True
        return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."

    # ------------------------------------------------------------------------------------------ task setup
    # tau2's hidden user-side environment functions: tasks use them to set up a scenario (never tools).

    def set_user_info(self, name: str, phone_number: str) -> str:
        self.surroundings.name = name
        self.surroundings.phone_number = phone_number
        return f"User info set: {name}, {phone_number}."

    def set_user_location(self, abroad: bool) -> str:
        self.surroundings.is_abroad = abroad
        return f"User is now {'abroad' if abroad else 'at home'}."

    def _force(self, toggle: Callable[[], str], state: Callable[[], bool], wanted: bool) -> None:
        """tau2's "turn X on/off": toggle once, and once more if that went the wrong way. An already-set switch
        is therefore toggled twice, with the side effects of both toggles (network searches, Wi-Fi dropped)."""
        toggle()
        if state() != wanted:
            toggle()

    def turn_data_on(self) -> str:
        self.device.data_enabled = True  # no network search, as in tau2
        return "Data connection restored."

    def turn_data_off(self) -> str:
        self._force(self.toggle_data, lambda: self.device.data_enabled, False)
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        self._force(self.toggle_roaming, lambda: self.device.roaming_enabled, True)
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        self._force(self.toggle_roaming, lambda: self.device.roaming_enabled, False)
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        self.device.data_saver_mode = True  # the data saver toggle has no side effects
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        self.device.data_saver_mode = False
        return "Data Saver Mode is now OFF."

    def turn_airplane_mode_on(self) -> str:
        self._force(self.toggle_airplane_mode, lambda: self.device.airplane_mode, True)
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        self._force(self.toggle_airplane_mode, lambda: self.device.airplane_mode, False)
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.device.sim_card_missing = True
        self.network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: Literal["pin", "puk"]) -> str:
        if mode not in ("pin", "puk"):
            raise ValueError(f"mode must be 'pin' or 'puk', got {mode!r}")
        self.device.sim_card_status = "locked_pin" if mode == "pin" else "locked_puk"
        self.network_search()
        return f"SIM card locked successfully in {mode} mode."

    def break_apn_settings(self) -> str:
        self.device.active_apn_settings.apn_name = "broken"
        self.network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device.active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def break_vpn(self) -> str:
        self.connect_vpn()
        assert self.device.vpn_details is not None
        self.device.vpn_details.server_performance = "poor"
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> str:
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            raise ValueError(f"App '{app_name}' not found. Cannot remove permission.")
        if permission not in AppPermissions.model_fields:
            raise ValueError(f"Permission '{permission}' not tracked for app '{app_name}'.")
        setattr(app.permissions, permission, False)
        return f"Permission '{permission}' removed from app '{app_name}'."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        self.device.wifi_calling_enabled = enabled
        text = f"Wi-Fi Calling is now {_on(enabled)}."
        if mms_over_wifi is not None:
            self.device.wifi_calling_mms_over_wifi = mms_over_wifi
            text += f"\nMMS over Wi-Fi is now {_on(mms_over_wifi)}."
        return text

    def simulate_network_search(self) -> str:
        self.network_search()
        return f"Network search done: {self.device.network_connection_status}."

    # ------------------------------------------------------------------------------------------ assertions
    # tau2's user-side env assertions (a task's expected end state); read-only.

    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device.airplane_mode == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        return self.device.network_connection_status == expected_status

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self.mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device.roaming_enabled == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device.data_saver_mode == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        mbps, label = self.speed()
        fast_enough = (mbps or 0.0) >= expected_speed
        return fast_enough and (expected_desc is None or label.lower() == expected_desc.lower())

    def assert_internet_not_excellent(self) -> bool:
        return self.speed()[1].lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self.mms_working() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings.mobile_data_usage_exceeded == expected_status


# The phone's tools, by kind (the 30 user tools; the backend registers one method per name).
READS = ("check_status_bar", "check_network_status", "check_network_mode_preference", "run_speed_test",
         "check_sim_status", "check_data_restriction_status", "check_apn_settings", "check_wifi_status",
         "check_wifi_calling_status", "check_vpn_status", "check_installed_apps", "check_app_status",
         "check_app_permissions", "can_send_mms", "check_payment_request")
CHANGES = ("set_network_mode_preference", "toggle_airplane_mode", "reseat_sim_card", "toggle_data", "toggle_roaming",
           "toggle_data_saver_mode", "set_apn_settings", "reset_apn_settings", "toggle_wifi", "toggle_wifi_calling",
           "connect_vpn", "disconnect_vpn", "grant_app_permission", "reboot_device", "make_payment")
SETUP = ("set_user_info", "set_user_location", "turn_data_on", "turn_data_off", "turn_roaming_on", "turn_roaming_off",
         "turn_data_saver_mode_on", "turn_data_saver_mode_off", "turn_airplane_mode_on", "turn_airplane_mode_off",
         "unseat_sim_card", "lock_sim_card", "break_apn_settings", "break_apn_mms_setting", "break_vpn",
         "remove_app_permission", "set_wifi_calling", "simulate_network_search", "set_network_mode_preference")
ASSERTIONS = ("assert_airplane_mode_status", "assert_service_status", "assert_mobile_data_status",
              "assert_mobile_roaming_status", "assert_mobile_data_saver_mode_status", "assert_internet_speed",
              "assert_internet_not_excellent", "assert_can_send_mms", "assert_mobile_data_usage_exceeded")
