"""Where telecom read results land in the ledger, what each write can change, which reads the gate may make
itself, and who the customer is.

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

from core.evidence import EvidenceReads, GateRead, record_of
from core.gate import GateContext
from core.ledger import Condition, LedgerReader, PathMap, PathRule, WriteEffect
from core.tools import ToolCall
from domains.telecom.conversation import CONVERSATION

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


# ---------------------------------------------------------------------------------------------------
# What each write can change (core.ledger.WriteEffect), from tau2's telecom tools (mock_backends/telecom) and
# the sync that runs after every call:
#
#   suspend_line / resume_line    the line's status and suspension date; the phone (the sync carries the
#                                 line's status to it)
#   enable_ / disable_roaming     the line's roaming flag; the phone
#   send_payment_request          the bill's status; the phone (the sync turns the request into one on it)
#   refuel_data                   the line's refuelled GB (also in its usage reading); the customer's Draft bill
#                                 (a charge and its total); when the customer has no Draft bill yet, a new one,
#                                 whose id the customer record's bill list then holds; the phone (data no
#                                 longer used up). Never which lines the customer owns, nor any plan's price.
#   the phone's changes           every phone reading; paying also turns its bill Paid (the sync)
#
# Which bill is the Draft comes from the bills observed (a bill's customer never changes); when no fresh
# Draft bill of the customer was observed, every bill of theirs is taken as charged and the bill list as
# grown.


def _customer_bills(call: ToolCall, ledger: LedgerReader) -> list[tuple[str, Mapping[str, Any], bool]]:
    """(path, bill, status known) of every observed bill of the write's customer."""
    customer = call.arguments.get("customer_id")
    found: list[tuple[str, Mapping[str, Any], bool]] = []
    for path in ledger.observed_paths("bills.*"):
        entry = ledger.entry(path)
        if entry is not None and isinstance(entry.value, Mapping) and entry.value.get("customer_id") == customer:
            found.append((path, entry.value, entry.fresh_at("status")))
    return found


def _known_draft(call: ToolCall, ledger: LedgerReader) -> str | None:
    return next((path for path, bill, known in _customer_bills(call, ledger)
                 if known and bill.get("status") == "Draft"), None)


def _charged_bills(call: ToolCall, ledger: LedgerReader) -> list[str]:
    draft = _known_draft(call, ledger)
    if draft is not None:
        return [draft]
    return [path for path, _bill, _known in _customer_bills(call, ledger)]


def _no_known_draft(call: ToolCall, ledger: LedgerReader) -> bool:
    return _known_draft(call, ledger) is None


def _customer_records(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    customer = str(call.arguments.get("customer_id", ""))
    return (f"customers.{customer}", CUSTOMER_PATH) if customer == identify(ledger) else (f"customers.{customer}",)


_LINE = "lines.{line_id}"
_STATUS_CHANGE = ("status", "suspension_start_date")

WRITE_EFFECTS = (
    WriteEffect("suspend_line", (_LINE,), _STATUS_CHANGE),
    WriteEffect("resume_line", (_LINE,), _STATUS_CHANGE),
    WriteEffect("enable_roaming", (_LINE,), ("roaming_enabled",)),
    WriteEffect("disable_roaming", (_LINE,), ("roaming_enabled",)),
    WriteEffect("send_payment_request", ("bills.{bill_id}",), ("status",)),
    WriteEffect("refuel_data", (_LINE, "usage.{line_id}"), ("data_refueling_gb",)),
    WriteEffect("refuel_data", _charged_bills, ("line_items", "total_due"), note="a charge on the Draft bill"),
    WriteEffect("refuel_data", _customer_records, ("bill_ids",), when=_no_known_draft,
                note="a new Draft bill when there was none"),
    *(WriteEffect(tool, DEVICE_PATHS, note="the sync carries the change to the phone")
      for tool in ("suspend_line", "resume_line", "enable_roaming", "disable_roaming", "send_payment_request",
                   "refuel_data")),
    WriteEffect("make_payment", ("bills.*",), ("status",), note="the sync marks the paid bill Paid"),
    *(WriteEffect(tool, DEVICE_PATHS) for tool in PHONE_CHANGES),
)


# ---------------------------------------------------------------------------------------------------
# The reads the gate may make itself (core.evidence): records by id, once the customer is identified; never
# the lookups by phone number or by name (they identify), never the customer's phone (only they can look).


def _line_owner(result: Any, ledger: LedgerReader) -> str | None:
    """A line record names no customer: it is the identified customer's when their record lists it."""
    customer = identify(ledger)
    record = ledger.get(CUSTOMER_PATH)
    lines = record.get("line_ids") if isinstance(record, Mapping) else None
    line_id = result.get("line_id") if isinstance(result, Mapping) else None
    return customer if customer is not None and isinstance(lines, list) and line_id in lines else "?"


def _customers_bill(names: Mapping[str, str], _call: ToolCall, ledger: LedgerReader,
                    ctx: GateContext) -> Mapping[str, Any] | None:
    """A bill the identified customer's record lists: their bill listing refreshes it and every other bill of
    theirs in one read (a rule that walks the bills finds them all fresh, not one per round)."""
    record = ledger.get(CUSTOMER_PATH)
    bills = record.get("bill_ids") if isinstance(record, Mapping) else None
    if ctx.customer_id is None or not isinstance(bills, list) or names["bill_id"] not in bills:
        return None
    return {"customer_id": ctx.customer_id}


def _bills_owner(result: Any, _ledger: LedgerReader) -> str | None:
    owners = {b.get("customer_id") for b in result if isinstance(b, Mapping)} if isinstance(result, list) else set()
    return owners.pop() if len(owners) == 1 and isinstance(next(iter(owners)), str) else "?"


def _by_id(names: Mapping[str, str], _call: ToolCall, _ledger: LedgerReader,
           _ctx: GateContext) -> Mapping[str, Any]:
    return {"id": next(iter(names.values()))}


def _own_record(names: Mapping[str, str], _call: ToolCall, _ledger: LedgerReader,
                ctx: GateContext) -> Mapping[str, Any] | None:
    return {"customer_id": ctx.customer_id} if names.get("customer_id", ctx.customer_id) == ctx.customer_id \
        else None


def _usage(names: Mapping[str, str], _call: ToolCall, _ledger: LedgerReader,
           ctx: GateContext) -> Mapping[str, Any] | None:
    return None if ctx.customer_id is None else {"customer_id": ctx.customer_id, "line_id": names["line_id"]}


EVIDENCE_READS = EvidenceReads(
    reads=(
        GateRead(CUSTOMER_PATH, "get_customer_by_id", _own_record, record_of("customer_id")),
        GateRead("customers.{customer_id}", "get_customer_by_id", _own_record, record_of("customer_id")),
        GateRead("lines.{line_id}", "get_details_by_id", _by_id, _line_owner),
        GateRead("bills.{bill_id}", "get_bills_for_customer", _customers_bill, _bills_owner),
        GateRead("bills.{bill_id}", "get_details_by_id", _by_id, record_of("customer_id")),
        GateRead("plans.{plan_id}", "get_details_by_id", _by_id),
        GateRead("usage.{line_id}", "get_data_usage", _usage, note="the tool itself refuses another's line"),
    ),
    identification=frozenset({"get_customer_by_phone", "get_customer_by_name"}),
)

PATH_MAP = PathMap(
    conversation=CONVERSATION,  # what the customer's messages give (domains/telecom/conversation.py)
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
    write_effects=WRITE_EFFECTS,
)
