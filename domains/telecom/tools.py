"""The telecom tools: tau2-bench's 13 agent tools and the 30 tools of the customer's phone (dual control).

Names and arguments are tau2-bench's (API.md §3.3, §3.4), so its tasks replay as they are. Descriptions
are our own. The agent's tools say what each id looks like and what a write expects; the phone's tools
are written for the customer (the user simulator reads them), in plain words about what they do on the
phone.

Requestor. The phone's tools carry `Requestor.USER`: `Domain.agent_tools()` leaves them out, so the agent's
model is never offered them and can only ask the customer to act (the failure tau2 issue #472 describes
is an agent told to call user-only tools). The executor refuses a call whose requestor does not match.

Policy limits stricter than the tools (the 2 GB refuel cap, which bills a payment request may name, the
suspension reasons) are deliberately NOT schema constraints: the gate rejects them with the rule and the
observed records, which tells the model why, not just that it was wrong. The phone's `mode` and
`permission` arguments are plain strings too, because the phone itself answers a bad value with a
"Failed to ..." / "Error. ..." text, as tau2's does.
"""

from __future__ import annotations

from typing import Any

from core.tools import Requestor, ToolKind, ToolSpec, closed_object
from core.tools import string_arg as _string
from domains.telecom.vocabulary import MAX_REFUEL_GB, SUSPENSION_REASONS

_CUSTOMER_ID = _string("The customer id, e.g. 'C1001' (from a customer lookup).")
_LINE_ID = _string("The line id, e.g. 'L1002' (from the customer's line_ids).")
_BILL_ID = _string("The bill id, e.g. 'B1005' (from the customer's bill_ids).")
_NO_ARGUMENTS = closed_object({})


def _agent(name: str, description: str, parameters: dict[str, Any], kind: ToolKind) -> ToolSpec:
    return ToolSpec(name=name, description=description, parameters=parameters, kind=kind)


def _phone(name: str, description: str, kind: ToolKind, parameters: dict[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(name=name, description=description, parameters=parameters or _NO_ARGUMENTS, kind=kind,
                    requestor=Requestor.USER)


AGENT_TOOLS: tuple[ToolSpec, ...] = (
    # ----------------------------------------------------------------------------------- identify
    _agent("get_customer_by_phone",
           "Find a customer by a phone number: their primary contact number or the number of any of their "
           "lines (punctuation is ignored). A successful lookup identifies the customer for this conversation.",
           closed_object({"phone_number": _string("The phone number, e.g. '555-123-2002'.")}), ToolKind.READ),
    _agent("get_customer_by_id",
           "Read a customer by id: name, date of birth, contact details, address, account status, payment "
           "methods, line_ids and bill_ids. A successful lookup identifies the customer for this conversation.",
           closed_object({"customer_id": _CUSTOMER_ID}), ToolKind.READ),
    _agent("get_customer_by_name",
           "Search customers by full name (not case-sensitive) AND date of birth. Returns a list (possibly "
           "empty); exactly one match identifies the customer for this conversation.",
           closed_object({"full_name": _string("The customer's full name, e.g. 'John Smith'."),
                        "dob": _string("Date of birth as YYYY-MM-DD, e.g. '1985-06-15'.")}), ToolKind.READ),
    # ----------------------------------------------------------------------------------- records
    _agent("get_details_by_id",
           "Read one record by id; the first letter says which kind: L line (status, plan, data used and "
           "refuelled, roaming, contract end), D device, B bill (status, amount, due date, line items), "
           "C customer, P plan (data limit, monthly price, refuel price per GB).",
           closed_object({"id": _string("A line, device, bill, customer or plan id, e.g. 'L1002' or 'P1002'.")}),
           ToolKind.READ),
    _agent("get_bills_for_customer",
           "List a customer's bills, newest issue date first, with their status (Draft, Issued, Awaiting "
           "Payment, Paid, Overdue, Disputed), amounts and due dates.",
           closed_object({"customer_id": _CUSTOMER_ID},
                       {"limit": {"type": "integer", "description": "At most this many bills; 12 when omitted."}}),
           ToolKind.READ),
    _agent("get_data_usage",
           "Read a line's data usage this billing cycle: GB used, the plan's GB limit, GB refuelled this cycle "
           "and the cycle's end date. Mobile data stops once usage reaches limit plus refuel.",
           closed_object({"customer_id": _CUSTOMER_ID, "line_id": _LINE_ID}), ToolKind.READ),
    # ----------------------------------------------------------------------------------- writes
    _agent("suspend_line",
           "Suspend an Active line (a $5/month holding fee applies while suspended). Give the reason as one of "
           f"{', '.join(repr(r) for r in SUSPENSION_REASONS)}, optionally followed by ':' and details.",
           closed_object({"customer_id": _CUSTOMER_ID, "line_id": _LINE_ID,
                        "reason": _string("Why the line is suspended, e.g. 'overdue bill: B1005'.")}),
           ToolKind.WRITE),
    _agent("resume_line",
           "Resume a Suspended line. Only when the customer's overdue bills are paid and the line's contract "
           "has not ended. The customer must restart their phone afterwards.",
           closed_object({"customer_id": _CUSTOMER_ID, "line_id": _LINE_ID}), ToolKind.WRITE),
    _agent("send_payment_request",
           "Send the customer a payment request for one bill; the bill becomes 'Awaiting Payment' and the "
           "customer pays it on their phone (check_payment_request, make_payment). It does not check that the "
           "bill is overdue: read it first. Refused while another bill of theirs is awaiting payment.",
           closed_object({"customer_id": _CUSTOMER_ID, "bill_id": _BILL_ID}), ToolKind.WRITE),
    _agent("enable_roaming",
           "Turn on international roaming for a line (free of charge). The customer must also turn on Data "
           "Roaming in their phone's settings.",
           closed_object({"customer_id": _CUSTOMER_ID, "line_id": _LINE_ID}), ToolKind.WRITE),
    _agent("disable_roaming",
           "Turn off international roaming for a line.",
           closed_object({"customer_id": _CUSTOMER_ID, "line_id": _LINE_ID}), ToolKind.WRITE),
    _agent("refuel_data",
           f"Add data to a line for this billing cycle, at most {MAX_REFUEL_GB} GB at a time. The charge (GB "
           "times the plan's refuel price per GB) goes on the customer's next (Draft) bill. Only after the "
           "customer confirmed the amount and the price.",
           closed_object({"customer_id": _CUSTOMER_ID, "line_id": _LINE_ID,
                        "gb_amount": {"type": "number", "description": "GB to add, e.g. 2.0."}}), ToolKind.WRITE),
    _agent("transfer_to_human_agents",
           "Hand the customer to a human agent with a summary. Only when they ask for one, or when the issue "
           "cannot be solved with these tools within the policy after troubleshooting.",
           closed_object({"summary": _string("Who the customer is, what is wrong and what was tried.")}),
           ToolKind.GENERIC),
)

_APP_NAME = _string("The app's name as the phone lists it, e.g. 'messaging'.")

USER_TOOLS: tuple[ToolSpec, ...] = (
    # ----------------------------------------------------------------------------------- look (15)
    _phone("check_status_bar",
           "Look at the icons at the top of your screen: signal bars, network type, mobile data, data saver, "
           "Wi-Fi, VPN, airplane mode and battery.", ToolKind.READ),
    _phone("check_network_status",
           "Open your phone's network status: airplane mode, SIM, cellular connection, signal, network type, "
           "whether mobile data and data roaming are turned on, and Wi-Fi.", ToolKind.READ),
    _phone("check_network_mode_preference",
           "See which kind of cellular network your phone prefers (e.g. 4G/5G, or 3G only).", ToolKind.READ),
    _phone("run_speed_test",
           "Run an internet speed test over mobile data; shows the download speed and what it is good for.",
           ToolKind.READ),
    _phone("check_sim_status",
           "Check your SIM card: working, missing, or locked with a PIN or PUK code.", ToolKind.READ),
    _phone("check_data_restriction_status",
           "See whether Data Saver mode is limiting your data.", ToolKind.READ),
    _phone("check_apn_settings",
           "Look at your phone's APN settings (the carrier's data settings, including the picture-message "
           "server address).", ToolKind.READ),
    _phone("check_wifi_status",
           "See whether Wi-Fi is on, which network you are connected to and how strong it is.", ToolKind.READ),
    _phone("check_wifi_calling_status",
           "See whether Wi-Fi Calling is turned on.", ToolKind.READ),
    _phone("check_vpn_status",
           "See whether a VPN is turned on or connected, with its details.", ToolKind.READ),
    _phone("check_installed_apps",
           "List the apps installed on your phone.", ToolKind.READ),
    _phone("check_app_status",
           "Look at one app's details, including the permissions it has.", ToolKind.READ,
           closed_object({"app_name": _APP_NAME})),
    _phone("check_app_permissions",
           "See which permissions one app has (e.g. sms, storage, phone, network).", ToolKind.READ,
           closed_object({"app_name": _APP_NAME})),
    _phone("can_send_mms",
           "Check whether your messaging app can send picture messages (MMS).", ToolKind.READ),
    _phone("check_payment_request",
           "See whether the carrier has sent you a payment request, for which bill and how much.", ToolKind.READ),
    # ----------------------------------------------------------------------------------- change (15)
    _phone("set_network_mode_preference",
           "Choose which kind of cellular network your phone prefers: '4g_5g_preferred', '4g_only', "
           "'3g_only' or '2g_only'.", ToolKind.WRITE,
           closed_object({"mode": _string("One of '4g_5g_preferred', '4g_only', '3g_only', '2g_only'.")})),
    _phone("toggle_airplane_mode",
           "Turn airplane mode on or off (on cuts every radio: cellular, Wi-Fi, Bluetooth).", ToolKind.WRITE),
    _phone("reseat_sim_card",
           "Take your SIM card out and put it back in.", ToolKind.WRITE),
    _phone("toggle_data",
           "Turn mobile data on or off.", ToolKind.WRITE),
    _phone("toggle_roaming",
           "Turn Data Roaming on or off in your phone's settings (needed for mobile data abroad).",
           ToolKind.WRITE),
    _phone("toggle_data_saver_mode",
           "Turn Data Saver mode on or off (on uses less data and makes it slower).", ToolKind.WRITE),
    _phone("set_apn_settings",
           "Type in new APN settings (only when the carrier tells you exactly what to enter).", ToolKind.WRITE,
           closed_object({"apn_settings": {
               "type": "object",
               "description": ("The settings: apn_name ('internet'), and optionally reset_at_reboot, mms_apn, "
                               "mmsc_url, mms_proxy, mms_port."),
           }})),
    _phone("reset_apn_settings",
           "Reset your APN settings to the carrier's defaults; this takes effect when you restart the phone.",
           ToolKind.WRITE),
    _phone("toggle_wifi",
           "Turn Wi-Fi on or off.", ToolKind.WRITE),
    _phone("toggle_wifi_calling",
           "Turn Wi-Fi Calling on or off.", ToolKind.WRITE),
    _phone("connect_vpn",
           "Connect your VPN.", ToolKind.WRITE),
    _phone("disconnect_vpn",
           "Disconnect your VPN.", ToolKind.WRITE),
    _phone("grant_app_permission",
           "Give one app a permission (e.g. storage or sms).", ToolKind.WRITE,
           closed_object({"app_name": _APP_NAME,
                        "permission": _string("The permission, in lowercase, e.g. 'storage'.")})),
    _phone("reboot_device",
           "Restart your phone.", ToolKind.WRITE),
    _phone("make_payment",
           "Pay the bill the carrier's payment request is for.", ToolKind.WRITE),
)

TOOLS: tuple[ToolSpec, ...] = AGENT_TOOLS + USER_TOOLS
