"""Pydantic mirror of tau2-bench's telecom `TelecomDB` (db.toml) and `TelecomUserDB` (user_db.toml).

Data goes through these models on the way in and every write goes through them on the way back, so a
stored document is exactly tau2's record: every field present (defaults and nulls included, as tau2's
`model_dump` has them), dates as ISO text, amounts as floats (`total_due = 0` in a file becomes 0.0).
Unknown fields are refused (tau2's models forbid extras), so a misspelt field in a hand-written
db.toml fails at load with the record and field named, not later inside a tool.

Where the data lives in the store. tau2 keeps every agent-side collection as a LIST; we key each record
by its id (`lines/L1002`) and keep the list order in the store's insertion order, so `denormalise` gives
tau2's lists back in their original order. The user's phone state is two documents of one collection,
`user_db/device` and `user_db/surroundings`: both sides are in one SQLite file, so one transaction covers
a change that touches both (the sync), one snapshot restores both, and `state_hash()` covers both.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# ----------------------------------------------------------------------------------------------------
# Agent side (db.toml)

LineStatus = Literal["Active", "Suspended", "Pending Activation", "Closed"]
BillStatus = Literal["Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed"]
AccountStatus = Literal["Active", "Suspended", "Pending Verification", "Closed"]
DeviceType = Literal["phone", "router", "tablet", "watch", "other"]
PaymentMethodType = Literal["Credit Card", "Debit Card", "PayPal"]

DEFAULT_CREATED_AT = dt.datetime(2025, 1, 1)  # tau2's default account creation time


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Address(_Model):
    street: str
    city: str
    state: str
    zip_code: str


class Plan(_Model):
    plan_id: str
    name: str
    data_limit_gb: float
    price_per_month: float
    data_refueling_price_per_gb: float


class Device(_Model):
    device_id: str
    device_type: DeviceType
    model: str
    imei: str | None = None
    is_esim_capable: bool
    activated: bool = False
    activation_date: dt.datetime | None = None
    last_esim_transfer_date: dt.datetime | None = None


class Line(_Model):
    line_id: str
    phone_number: str
    status: LineStatus = "Pending Activation"
    plan_id: str
    device_id: str | None = None
    data_used_gb: float = 0.0
    data_refueling_gb: float = 0.0
    roaming_enabled: bool = False
    contract_end_date: dt.date | None = None
    last_plan_change_date: dt.date | None = None
    last_sim_replacement_date: dt.date | None = None
    suspension_start_date: dt.date | None = None


class LineItem(_Model):
    description: str
    amount: float
    date: dt.date
    item_type: str


class Bill(_Model):
    bill_id: str
    customer_id: str
    period_start: dt.date
    period_end: dt.date
    issue_date: dt.date
    total_due: float
    due_date: dt.date
    line_items: list[LineItem] = Field(default_factory=list)
    status: BillStatus = "Draft"


class PaymentMethod(_Model):
    method_type: PaymentMethodType
    account_number_last_4: str
    expiration_date: str


class Customer(_Model):
    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str
    address: Address
    account_status: AccountStatus = "Pending Verification"
    payment_methods: list[PaymentMethod] = Field(default_factory=list)
    line_ids: list[str] = Field(default_factory=list)
    bill_ids: list[str] = Field(default_factory=list)
    created_at: dt.datetime = DEFAULT_CREATED_AT
    last_extension_date: dt.date | None = None
    goodwill_credit_used_this_year: float = 0.0


# ----------------------------------------------------------------------------------------------------
# User side (user_db.toml): the customer's phone and where they are.

SimStatus = Literal["active", "missing", "locked_pin", "locked_puk"]
NetworkTechnology = Literal["none", "2G", "3G", "4G", "5G"]
NetworkModePreference = Literal["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]
SignalStrength = Literal["none", "poor", "fair", "good", "excellent"]
PerformanceLevel = Literal["unknown", "poor", "fair", "good", "excellent"]
NetworkStatus = Literal["connected", "searching", "no_service", "emergency_only"]
APNName = Literal["internet", "broken"]

NETWORK_MODES: tuple[NetworkModePreference, ...] = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
DEFAULT_MMSC_URL = "http://mms.carrier.com/mms/wapenc"


class APNSettings(_Model):
    apn_name: APNName = "internet"
    reset_at_reboot: bool = False
    mms_apn: str | None = "mms"
    mmsc_url: str | None = DEFAULT_MMSC_URL
    mms_proxy: str | None = None
    mms_port: int | None = None


class VpnDetails(_Model):
    server_address: str | None = None
    protocol: str | None = None
    server_performance: PerformanceLevel = "unknown"


class AppPermissions(_Model):
    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


class AppStatus(_Model):
    app_name: str
    permissions: AppPermissions = Field(default_factory=AppPermissions)


def _default_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus(app_name="messaging", permissions=AppPermissions(sms=True, storage=True, phone=True)),
        "browser": AppStatus(app_name="browser", permissions=AppPermissions(network=True, storage=True)),
    }


class PhoneDevice(_Model):
    """tau2's `MockPhoneAttributes`: the phone's settings and what it is connected to."""

    sim_card_status: SimStatus = "active"
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: SignalStrength = "good"
    network_technology_connected: NetworkTechnology = "5G"
    network_connection_status: NetworkStatus = "connected"
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: NetworkModePreference = "4g_5g_preferred"
    active_apn_settings: APNSettings = Field(default_factory=APNSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_ssid: str | None = None
    wifi_signal_strength: SignalStrength = "none"
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = Field(default_factory=_default_apps)


class PaymentRequest(_Model):
    bill_id: str
    amount_due: float
    paid: bool = False


def _default_signal() -> dict[NetworkTechnology, SignalStrength]:
    return {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}


class Surroundings(_Model):
    """tau2's `UserSurroundings`: who the user is, where, and what the carrier's side lets their line do
    (the last four are written by the sync from the agent DB)."""

    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    roaming_allowed: bool = False
    signal_strength: dict[NetworkTechnology, SignalStrength] = Field(default_factory=_default_signal)
    mobile_data_usage_exceeded: bool = False
    line_active: bool = True
    payment_request: PaymentRequest | None = None


class UserDB(_Model):
    device: PhoneDevice = Field(default_factory=PhoneDevice)
    surroundings: Surroundings = Field(default_factory=Surroundings)


# ----------------------------------------------------------------------------------------------------
# Collections and the tau2 layout <-> store documents mapping.

PLANS, CUSTOMERS, LINES, BILLS, DEVICES, USER_DB = "plans", "customers", "lines", "bills", "devices", "user_db"
AGENT_COLLECTIONS = (PLANS, CUSTOMERS, LINES, BILLS, DEVICES)  # tau2's TelecomDB field order
DEVICE_DOC, SURROUNDINGS_DOC = "device", "surroundings"

RECORDS: dict[str, tuple[type[_Model], str]] = {
    PLANS: (Plan, "plan_id"),
    CUSTOMERS: (Customer, "customer_id"),
    LINES: (Line, "line_id"),
    BILLS: (Bill, "bill_id"),
    DEVICES: (Device, "device_id"),
}


def dump(model: BaseModel) -> dict[str, Any]:
    """A stored document: every field, JSON-typed (dates as ISO text)."""
    doc: dict[str, Any] = model.model_dump(mode="json")
    return doc


def digits(phone_number: str) -> str:
    """The digits of a phone number: '555-123-2002', '5551232002' and '555 123 2002' are the same number."""
    return "".join(ch for ch in phone_number if ch.isdigit())


def normalise(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """`{"db": <db.toml>, "user_db": <user_db.toml>}` -> validated store documents, one dict per collection.

    Besides each record's own fields, checks the references a tool would otherwise trip over later: ids are
    unique, every line's plan exists, and the phone's number (when set) is one of the lines, which is
    what the sync looks up after every call.
    """
    unknown = sorted(set(data) - {"db", "user_db"})
    if unknown or "db" not in data:
        raise ValueError("expected {'db': <db.toml contents>, 'user_db': <user_db.toml contents>}, got keys "
                         f"{sorted(data)}")
    db, user = data["db"], data.get("user_db") or {}
    if not isinstance(db, Mapping) or not isinstance(user, Mapping):
        raise ValueError("'db' and 'user_db' must be tables (JSON objects)")
    extra = sorted(set(db) - set(AGENT_COLLECTIONS))
    if extra:
        raise ValueError(f"unknown telecom collection(s) in db: {', '.join(extra)}")
    docs: dict[str, dict[str, Any]] = {name: {} for name in (*AGENT_COLLECTIONS, USER_DB)}
    for name, (model, id_field) in RECORDS.items():
        records = db.get(name, [])
        if not isinstance(records, list):
            raise ValueError(f"{name}: expected a list of records (an array of tables), got {type(records).__name__}")
        for raw in records:
            record = model.model_validate(raw)
            key = getattr(record, id_field)
            if key in docs[name]:
                raise ValueError(f"{name}: {id_field} {key!r} is listed twice")
            docs[name][key] = dump(record)
    user_db = UserDB.model_validate(user)
    docs[USER_DB] = {DEVICE_DOC: dump(user_db.device), SURROUNDINGS_DOC: dump(user_db.surroundings)}
    for line in docs[LINES].values():
        if line["plan_id"] not in docs[PLANS]:
            raise ValueError(f"lines: line {line['line_id']} has plan {line['plan_id']!r}, which is not in plans")
    number = user_db.surroundings.phone_number
    if number is not None and not any(digits(line["phone_number"]) == digits(number) for line in docs[LINES].values()):
        raise ValueError(f"user_db: the phone's number {number!r} (surroundings.phone_number) is not a line in db")
    return docs


def denormalise(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Store documents (e.g. `backend.export()`) -> tau2's layout again: `{"db": {...lists}, "user_db": {...}}`."""
    user = docs.get(USER_DB, {})
    return {
        "db": {name: list(docs.get(name, {}).values()) for name in AGENT_COLLECTIONS},
        "user_db": {DEVICE_DOC: user.get(DEVICE_DOC, dump(PhoneDevice())),
                    SURROUNDINGS_DOC: user.get(SURROUNDINGS_DOC, dump(Surroundings()))},
    }
