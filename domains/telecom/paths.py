"""Where telecom read results land in the ledger, what each write makes stale, and who the customer is.

Ledger layout (one record per path, exactly as the tool returned it):

    customer                    the identified customer's record (see the identity rule below)
    customers.<customer_id>     every customer record read, the identified customer's included
    lines.<line_id>             line records (get_details_by_id with an L id)
    bills.<bill_id>             bill records: get_details_by_id with a B id, and every bill a
                                get_bills_for_customer listing returned (each bill is a full record)
    plans.<plan_id>             plans (limit, monthly price, refuel price per GB)
    devices.<device_id>         the carrier's device records (model, IMEI, eSIM)
    usage.<line_id>             get_data_usage for that line
    device.<reading>            what the customer's phone showed (dual control, below)

tau2's telecom DB keeps every collection as a list; the path map turns each into keyed paths, so the
gate finds line L1002 with one dictionary lookup however many lines were read.

The phone (`device.*`). A customer's own read, run by the user proxy on their phone, is absorbed when
the proxy runs it (see `core.session.SessionPhone` for why then), under one path per reading; the value
is the phone's text, exactly as the customer saw it:

    device.status_bar  device.network_status  device.network_mode_preference  device.speed_test
    device.sim_status  device.data_restriction  device.apn_settings  device.wifi_status
    device.wifi_calling  device.vpn_status  device.installed_apps  device.mms  device.payment_request
    device.app_status.<app_name>  device.app_permissions.<app_name>

A reading describes the phone at one moment, and almost anything changes what the phone would show next
(a setting, the line's status or roaming flag through the sync, a payment request), so every change to
the phone or to a line makes ALL readings stale: every phone action that changes something, and every
agent write the sync carries to the phone. A stale reading is still shown to the model, marked STALE.

Staleness from the sync. The sync changes records nobody wrote: paying on the phone turns a bill Paid.
`make_payment` therefore makes every bill stale, so the agent reads it again before relying on it, as
the policy asks ("verify the bill is Paid").

Identity rule. A customer is identified by a successful get_customer_by_phone, get_customer_by_id (or
get_details_by_id with a customer id: the same lookup through another tool), or a get_customer_by_name
that found exactly one customer (name AND date of birth). The FIRST one wins for the
whole conversation: a later lookup of someone else is kept at `customers.<id>` but does not change whose
account may be changed. `identify` reads the identified customer's id from `customer`.

Every telecom predicate names the exact read that fills a missing path (`get_details_by_id(id="L1002")`),
so the core's generic suggestion, which guesses argument names from the path template, is never used for
lines, bills or plans (it would name the argument `line_id`; tau2's tool calls it `id`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.ledger import Condition, LedgerReader, PathMap, PathRule, StaleRule
from core.tools import ToolCall

CUSTOMER_PATH = "customer"

# Every phone reading, whatever its depth (`device.mms`, `device.app_status.messaging`).
DEVICE_PATHS = ("device.*", "device.*.*")

# The phone's reads and where each lands.
DEVICE_READINGS: dict[str, str] = {
    "check_status_bar": "device.status_bar",
    "check_network_status": "device.network_status",
    "check_network_mode_preference": "device.network_mode_preference",
    "run_speed_test": "device.speed_test",
    "check_sim_status": "device.sim_status",
    "check_data_restriction_status": "device.data_restriction",
    "check_apn_settings": "device.apn_settings",
    "check_wifi_status": "device.wifi_status",
    "check_wifi_calling_status": "device.wifi_calling",
    "check_vpn_status": "device.vpn_status",
    "check_installed_apps": "device.installed_apps",
    "check_app_status": "device.app_status.{app_name}",
    "check_app_permissions": "device.app_permissions.{app_name}",
    "can_send_mms": "device.mms",
    "check_payment_request": "device.payment_request",
}

# The phone's changes: each makes every reading stale; paying also makes every bill stale (the sync marks
# the paid bill Paid).
PHONE_CHANGES = ("set_network_mode_preference", "toggle_airplane_mode", "reseat_sim_card", "toggle_data",
                 "toggle_roaming", "toggle_data_saver_mode", "set_apn_settings", "reset_apn_settings", "toggle_wifi",
                 "toggle_wifi_calling", "connect_vpn", "disconnect_vpn", "grant_app_permission", "reboot_device",
                 "make_payment")


def identify(ledger: LedgerReader) -> str | None:
    """The identified customer's id, or None before any identifying lookup."""
    record = ledger.get(CUSTOMER_PATH)
    if isinstance(record, Mapping):
        customer_id = record.get("customer_id")
        return customer_id if isinstance(customer_id, str) and customer_id else None
    return None


def _identifies(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """First identifying lookup sets the customer; repeating it for the same customer refreshes the record."""
    return isinstance(result, Mapping) and identify(ledger) in (None, result.get("customer_id"))


def _one_match(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """A name + date-of-birth search identifies only when it found exactly one customer."""
    return (isinstance(result, list) and len(result) == 1 and isinstance(result[0], Mapping)
            and identify(ledger) in (None, result[0].get("customer_id")))


def _id_kind(prefix: str) -> Condition:
    """get_details_by_id returns a line, device, bill, customer or plan depending on the id's first letter."""

    def condition(call: ToolCall, _result: Any, _ledger: LedgerReader) -> bool:
        return str(call.arguments.get("id", "")).startswith(prefix)

    return condition


def _customer_by_id(call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """get_details_by_id with a customer id is the same lookup as get_customer_by_id: it identifies."""
    return _id_kind("C")(call, result, ledger) and _identifies(call, result, ledger)


_LINE_CHANGE = ("lines.{line_id}", *DEVICE_PATHS)

PATH_MAP = PathMap(
    effect_tools=frozenset({"refuel_data"}),  # the writes a rule counts (core.ledger.PathMap)
    rules=(
        # get_customer_by_id first: the core's generic "read X first" suggestion uses the first rule of a path.
        PathRule("get_customer_by_id", "customers.{result.customer_id}"),
        PathRule("get_customer_by_id", CUSTOMER_PATH, when=_identifies, note="identifies the customer"),
        PathRule("get_customer_by_phone", "customers.{result.customer_id}"),
        PathRule("get_customer_by_phone", CUSTOMER_PATH, when=_identifies, note="identifies the customer"),
        PathRule("get_customer_by_name", "customers.{item.customer_id}", each="result"),
        PathRule("get_customer_by_name", CUSTOMER_PATH, each="result", when=_one_match,
                 note="exactly one match identifies the customer"),
        PathRule("get_details_by_id", "lines.{result.line_id}", when=_id_kind("L")),
        PathRule("get_details_by_id", "devices.{result.device_id}", when=_id_kind("D")),
        PathRule("get_details_by_id", "bills.{result.bill_id}", when=_id_kind("B")),
        PathRule("get_details_by_id", "customers.{result.customer_id}", when=_id_kind("C")),
        PathRule("get_details_by_id", CUSTOMER_PATH, when=_customer_by_id,
                 note="a lookup by customer id identifies the customer, whichever tool makes it"),
        PathRule("get_details_by_id", "plans.{result.plan_id}", when=_id_kind("P")),
        PathRule("get_bills_for_customer", "bills.{item.bill_id}", each="result"),
        PathRule("get_data_usage", "usage.{line_id}"),
        *(PathRule(tool, path) for tool, path in DEVICE_READINGS.items()),
    ),
    stale_rules=(
        StaleRule("suspend_line", _LINE_CHANGE),
        StaleRule("resume_line", _LINE_CHANGE),
        StaleRule("enable_roaming", _LINE_CHANGE),
        StaleRule("disable_roaming", _LINE_CHANGE),
        StaleRule("send_payment_request", ("bills.{bill_id}", *DEVICE_PATHS)),
        # A refuel adds GB to the line, a charge to the Draft bill (or a new Draft bill, whose id the
        # customer record then lists) and lifts the phone's "usage exceeded".
        StaleRule("refuel_data", ("lines.{line_id}", "usage.{line_id}", "bills.*", CUSTOMER_PATH,
                                  "customers.{customer_id}", *DEVICE_PATHS)),
        *(StaleRule(tool, DEVICE_PATHS) for tool in PHONE_CHANGES if tool != "make_payment"),
        StaleRule("make_payment", ("bills.*", *DEVICE_PATHS)),
    ),
)
