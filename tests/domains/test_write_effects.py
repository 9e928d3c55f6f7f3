"""Every write tool of every domain, run on the domain's data, changes only what its declaration says.

The declarations (`WriteEffect`, next to each path map) decide what a successful write makes stale; what they
leave out stays fresh and the gate judges with it. So each one is checked against the real backend
(tests/support/write_effects.py): the database diff of the write, read back through the path map, must be
covered field by field by the staleness the declaration gave. Each case runs informed (the careful reads made:
conditions such as "paid by credit card" may rule changes out) and blind (they were not: a condition must then
assume the change). Cases are picked from the data itself, so the same builders run on the shipped seed and,
when /work/shared is present, on the upstream data; every write tool must have run at least once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.tools import ToolKind
from domains.airline import DOMAIN as AIRLINE
from domains.retail import DOMAIN as RETAIL
from domains.telecom import DOMAIN as TELECOM
from domains.telecom.paths import DEVICE_READINGS
from domains.telehealth import DOMAIN as TELEHEALTH
from domains.telehealth.vocabulary import ACTIONABLE_STATUSES, REFERENCE_DATE, STATUSES
from mock_backends.airline import AirlineBackend
from mock_backends.airline import load_tau2_db as load_airline
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import open_backend
from mock_backends.retail import RetailBackend
from mock_backends.retail import load_tau2_db as load_retail
from mock_backends.telecom import TelecomBackend, read_tau2_files
from mock_backends.telehealth import TelehealthBackend, read_folder
from tests.support.upstream import TAU2_AIRLINE, TAU2_RETAIL, TAU2_TELECOM, TAU_TRAIT_TELEHEALTH
from tests.support.write_effects import Case, Data, Finding, Probe, Read, changed_fields, first, probe, read

# ---------------------------------------------------------------------------------------------------
# Retail.


def _retail_identification(user_id: str, db: Data) -> list[Read]:
    return [read("find_user_id_by_email", email=db["users"][user_id]["email"]),
            read("get_user_details", user_id=user_id)]


def _retail_row_reads(collection: str, key: str, before: Data, after: Data) -> list[Read]:
    if collection == "users":
        return [read("get_user_details", user_id=key)]
    if collection == "orders":
        return [read("get_order_details", order_id=key)]
    if collection == "products":
        variants = {*(before.get("products", {}).get(key, {}).get("variants", {})),
                    *(after.get("products", {}).get(key, {}).get("variants", {}))}
        return [read("get_product_details", product_id=key), read("list_all_product_types"),
                *(read("get_item_details", item_id=v) for v in sorted(variants))]
    return []


def _retail_cases(db: Data) -> list[Case]:
    users, orders, products = db["users"], db["orders"], db["products"]

    def source(user_id: str, method: str) -> str:
        return str(users[user_id]["payment_methods"][method]["source"])

    def methods(user_id: str, kind: str) -> list[str]:
        return [m for m in sorted(users[user_id]["payment_methods"]) if source(user_id, m) == kind]

    def context(order: dict[str, Any]) -> tuple[Read, ...]:
        return (read("get_order_details", order_id=order["order_id"]),)

    def swap(order: dict[str, Any]) -> tuple[str, str, float] | None:
        for item in order["items"]:
            for variant_id, variant in sorted(products[item["product_id"]]["variants"].items()):
                if variant_id != item["item_id"] and variant["available"]:
                    return item["item_id"], variant_id, variant["price"] - item["price"]
        return None

    pending = [o for o in orders.values() if o["status"] == "pending" and len(o["payment_history"]) == 1]
    delivered = [o for o in orders.values() if o["status"] == "delivered"]
    cases: list[Case] = []
    for paid_by in ("gift_card", "credit_card", "paypal"):
        order = first(o for o in pending
                      if source(o["user_id"], o["payment_history"][0]["payment_method_id"]) == paid_by)
        if order is not None:
            cases.append(Case(f"cancel, paid by {paid_by}", "cancel_pending_order",
                              {"order_id": order["order_id"], "reason": "no longer needed"}, order["user_id"],
                              context(order)))
    for pay_with in ("gift_card", "credit_card", "paypal"):
        for order in pending:
            found = swap(order)
            owner = order["user_id"]
            usable = [m for m in methods(owner, pay_with)
                      if pay_with != "gift_card" or found is None
                      or users[owner]["payment_methods"][m]["balance"] >= found[2]]
            if found is not None and usable:
                cases.append(Case(f"modify items, {pay_with} pays the difference", "modify_pending_order_items",
                                  {"order_id": order["order_id"], "item_ids": [found[0]], "new_item_ids": [found[1]],
                                   "payment_method_id": usable[0]}, owner, context(order)))
                break
    for new_kind in ("gift_card", "credit_card", "paypal"):
        for old_kind in ("gift_card", "credit_card", "paypal"):
            for order in pending:
                owner, paid = order["user_id"], order["payment_history"][0]
                if source(owner, paid["payment_method_id"]) != old_kind:
                    continue
                usable = [m for m in methods(owner, new_kind) if m != paid["payment_method_id"]
                          and (new_kind != "gift_card"
                               or users[owner]["payment_methods"][m]["balance"] >= paid["amount"])]
                if usable:
                    cases.append(Case(f"payment {old_kind} -> {new_kind}", "modify_pending_order_payment",
                                      {"order_id": order["order_id"], "payment_method_id": usable[0]}, owner,
                                      context(order)))
                    break
    address = {"address1": "1 Test Street", "address2": "", "city": "Austin", "state": "TX", "country": "USA",
               "zip": "78701"}
    if pending:
        cases.append(Case("order address", "modify_pending_order_address",
                          {"order_id": pending[0]["order_id"], **address}, pending[0]["user_id"], context(pending[0])))
    for refund_to in ("original", "gift_card"):
        for order in delivered:
            owner, paid = order["user_id"], order["payment_history"][0]["payment_method_id"]
            method = paid if refund_to == "original" else first(methods(owner, "gift_card"))
            if method is not None:
                cases.append(Case(f"return, refund to {refund_to}", "return_delivered_order_items",
                                  {"order_id": order["order_id"], "item_ids": [order["items"][0]["item_id"]],
                                   "payment_method_id": method}, owner, context(order)))
                break
    for order in delivered:
        found = swap(order)
        owner = order["user_id"]
        card = first(methods(owner, "credit_card") + methods(owner, "paypal"))
        if found is not None and card is not None:
            cases.append(Case("exchange", "exchange_delivered_order_items",
                              {"order_id": order["order_id"], "item_ids": [found[0]], "new_item_ids": [found[1]],
                               "payment_method_id": card}, owner, context(order)))
            break
    some_user = sorted(users)[0]
    cases.append(Case("profile address", "modify_user_address", {"user_id": some_user, **address}, some_user))
    other = sorted(users)[1]
    cases.append(Case("another profile's address", "modify_user_address", {"user_id": other, **address}, some_user))
    return cases


RETAIL_PROBE = Probe(RETAIL, _retail_cases, _retail_row_reads, _retail_identification)


# ---------------------------------------------------------------------------------------------------
# Airline.

AIRPORTS = ("SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX", "IAH", "LAS", "MCO", "EWR",
            "CLT", "MSP", "DTW", "PHL", "LGA")


def _airline_identification(user_id: str, _db: Data) -> list[Read]:
    return [read("get_user_details", user_id=user_id)]


def _airline_row_reads(collection: str, key: str, before: Data, after: Data) -> list[Read]:
    if collection == "users":
        return [read("get_user_details", user_id=key)]
    if collection == "reservations":
        return [read("get_reservation_details", reservation_id=key)]
    if collection != "flights":
        return []
    old, new = before["flights"][key], after["flights"][key]
    days = [d for d in sorted(set(old["dates"]) | set(new["dates"])) if old["dates"].get(d) != new["dates"].get(d)]
    origin, destination = old["origin"], old["destination"]
    reads: list[Read] = []
    for day in days:
        previous = (date.fromisoformat(day) - timedelta(days=1)).isoformat()
        reads += [read("get_flight_status", flight_number=key, date=day),
                  read("search_direct_flight", origin=origin, destination=destination, date=day)]
        for airport in AIRPORTS:
            reads += [read("search_onestop_flight", origin=origin, destination=airport, date=day),
                      read("search_onestop_flight", origin=airport, destination=destination, date=day),
                      read("search_onestop_flight", origin=airport, destination=destination, date=previous)]
    return reads


def _airline_cases(db: Data) -> list[Case]:
    users, reservations, flights = db["users"], db["reservations"], db["flights"]

    def methods(user_id: str, kind: str) -> list[str]:
        return [m for m, v in sorted(users[user_id]["payment_methods"].items()) if v["source"] == kind]

    def bookable(cabin: str, after: str = "2024-05-16") -> Iterator[tuple[str, str, int]]:
        for number, flight in sorted(flights.items()):
            for day, instance in sorted(flight["dates"].items()):
                if day >= after and instance["status"] == "available" and instance["available_seats"][cabin] > 0:
                    yield number, day, instance["prices"][cabin]

    def booking(user_id: str, segments: list[tuple[str, str, int]], payment: str) -> dict[str, Any]:
        first_flight, last_flight = flights[segments[0][0]], flights[segments[-1][0]]
        total = sum(price for _, _, price in segments)
        return {"user_id": user_id, "origin": first_flight["origin"], "destination": last_flight["destination"],
                "flight_type": "one_way", "cabin": "economy",
                "flights": [{"flight_number": n, "date": d} for n, d, _ in segments],
                "passengers": [{"first_name": "Test", "last_name": "Traveller", "dob": "1990-01-01"}],
                "payment_methods": [{"payment_id": payment, "amount": total}], "total_baggages": 0,
                "nonfree_baggages": 0, "insurance": "no"}

    offers = list(bookable("economy"))[:2]
    cases: list[Case] = []
    for kind in ("credit_card", "gift_card", "certificate"):
        for user_id in sorted(users):
            usable = [m for m in methods(user_id, kind)
                      if kind == "credit_card" or users[user_id]["payment_methods"][m]["amount"] >= offers[0][2]]
            if usable:
                cases.append(Case(f"book, {kind}", "book_reservation", booking(user_id, offers[:1], usable[0]),
                                  user_id, (read("search_direct_flight", origin=flights[offers[0][0]]["origin"],
                                                 destination=flights[offers[0][0]]["destination"],
                                                 date=offers[0][1]),)))
                break
    card_user = first(u for u in sorted(users) if methods(u, "credit_card"))
    if card_user is not None and len(offers) == 2:
        cases.append(Case("book two flights", "book_reservation",
                          booking(card_user, offers, methods(card_user, "credit_card")[0]), card_user))

    def context(record: dict[str, Any]) -> tuple[Read, ...]:
        return (read("get_reservation_details", reservation_id=record["reservation_id"]),)

    active = [r for r in reservations.values() if r.get("status") != "cancelled"]
    if active:
        cases.append(Case("cancel", "cancel_reservation", {"reservation_id": active[0]["reservation_id"]},
                          active[0]["user_id"], context(active[0])))
    for kind in ("credit_card", "gift_card"):
        record = first(r for r in active if any(users[r["user_id"]]["payment_methods"][m].get("amount", 100) >= 50
                                                for m in methods(r["user_id"], kind)))
        if record is not None:
            payment = first(m for m in methods(record["user_id"], kind)
                            if users[record["user_id"]]["payment_methods"][m].get("amount", 100) >= 50)
            cases.append(Case(f"bags, {kind}", "update_reservation_baggages",
                              {"reservation_id": record["reservation_id"],
                               "total_baggages": record["total_baggages"] + 1,
                               "nonfree_baggages": record["nonfree_baggages"] + 1, "payment_id": payment},
                              record["user_id"], context(record)))
    for kind in ("credit_card", "gift_card"):
        for record in active:
            cabin = "business" if record["cabin"] != "business" else "economy"
            instances = [flights[f["flight_number"]]["dates"].get(f["date"], {}) for f in record["flights"]]
            if not all(i.get("status") == "available" and i["available_seats"][cabin] >= len(record["passengers"])
                       for i in instances):
                continue
            difference = sum(i["prices"][cabin] for i in instances) * len(record["passengers"]) - \
                sum(f["price"] for f in record["flights"]) * len(record["passengers"])
            payment = first(m for m in methods(record["user_id"], kind)
                            if kind == "credit_card" or users[record["user_id"]]["payment_methods"][m]["amount"]
                            >= difference)
            if payment is not None:
                cases.append(Case(f"cabin change, {kind}", "update_reservation_flights",
                                  {"reservation_id": record["reservation_id"], "cabin": cabin,
                                   "flights": [{"flight_number": f["flight_number"], "date": f["date"]}
                                               for f in record["flights"]], "payment_id": payment},
                                  record["user_id"], context(record)))
                break
    if active:
        record = active[0]
        renamed = [{**p, "first_name": "Renamed"} for p in record["passengers"]]
        cases.append(Case("passengers", "update_reservation_passengers",
                          {"reservation_id": record["reservation_id"], "passengers": renamed}, record["user_id"],
                          context(record)))
    someone = sorted(users)[0]
    cases.append(Case("certificate", "send_certificate", {"user_id": someone, "amount": 100}, someone))
    return cases


AIRLINE_PROBE = Probe(AIRLINE, _airline_cases, _airline_row_reads, _airline_identification)


# ---------------------------------------------------------------------------------------------------
# Telecom (the sync after each call is part of a write's effect).

PHONE_READS = tuple(tool for tool in DEVICE_READINGS if tool not in ("check_app_status", "check_app_permissions"))


def _telecom_identification(customer_id: str, _db: Data) -> list[Read]:
    return [read("get_customer_by_id", customer_id=customer_id)]


def _line_owner(db: Data, line_id: str) -> str | None:
    return first(c for c, record in sorted(db["customers"].items()) if line_id in record["line_ids"])


def _telecom_row_reads(collection: str, key: str, before: Data, after: Data) -> list[Read]:
    if collection == "customers":
        return [read("get_customer_by_id", customer_id=key), read("get_details_by_id", id=key),
                read("get_bills_for_customer", customer_id=key)]
    if collection == "lines":
        owner = _line_owner(before, key)
        return [read("get_details_by_id", id=key),
                *([read("get_data_usage", customer_id=owner, line_id=key)] if owner else [])]
    if collection == "bills":
        bill = before["bills"].get(key) or after["bills"][key]
        return [read("get_details_by_id", id=key), read("get_bills_for_customer", customer_id=bill["customer_id"])]
    if collection in ("plans", "devices"):
        return [read("get_details_by_id", id=key)]
    if collection == "user_db":
        apps = sorted((before["user_db"].get("device") or {}).get("app_statuses") or {})
        return [*(read(tool, "user") for tool in PHONE_READS),
                *(read(tool, "user", app_name=app) for app in apps
                  for tool in ("check_app_status", "check_app_permissions"))]
    return []


def _telecom_cases(db: Data) -> list[Case]:
    customers, lines, bills = db["customers"], db["lines"], db["bills"]
    phone = (db.get("user_db", {}).get("surroundings") or {}).get("phone_number")
    cases: list[Case] = []

    def owned(predicate: Callable[[dict[str, Any]], bool]) -> tuple[str, str] | None:
        for line_id, line in sorted(lines.items()):
            owner = _line_owner(db, line_id)
            if owner is not None and predicate(line):
                return owner, line_id
        return None

    def context(customer: str, line_id: str) -> tuple[Read, ...]:
        return (read("get_details_by_id", id=line_id), read("get_bills_for_customer", customer_id=customer))

    for tool, wanted in (("suspend_line", lambda ln: ln["status"] == "Active"),
                         ("resume_line", lambda ln: ln["status"] in ("Suspended", "Pending Activation")),
                         ("enable_roaming", lambda ln: not ln["roaming_enabled"]),
                         ("disable_roaming", lambda ln: ln["roaming_enabled"])):
        found = owned(wanted)
        if found is not None:
            extra = {"reason": "overdue bill"} if tool == "suspend_line" else {}
            cases.append(Case(tool, tool, {"customer_id": found[0], "line_id": found[1], **extra}, found[0],
                              context(*found)))

    def has_draft(customer: str) -> bool:
        return any(bills[b]["status"] == "Draft" for b in customers[customer]["bill_ids"] if b in bills)

    for draft in (True, False):
        found = owned(lambda ln, draft=draft: bool(_line_owner(db, ln["line_id"]))
                      and has_draft(str(_line_owner(db, ln["line_id"]))) == draft)
        if found is not None:
            cases.append(Case(f"refuel, {'a' if draft else 'no'} Draft bill", "refuel_data",
                              {"customer_id": found[0], "line_id": found[1], "gb_amount": 1.0}, found[0],
                              context(*found)))
    for customer, record in sorted(customers.items()):
        own = [bills[b] for b in record["bill_ids"] if b in bills]
        target = first(b for b in own if b["status"] in ("Issued", "Overdue"))
        if target is not None and not any(b["status"] == "Awaiting Payment" for b in own):
            cases.append(Case("payment request", "send_payment_request",
                              {"customer_id": customer, "bill_id": target["bill_id"]}, customer,
                              (read("get_bills_for_customer", customer_id=customer),)))
            break
    phone_owner = first(c for c, r in sorted(customers.items()) if r.get("phone_number") == phone) or \
        first(sorted(customers))
    apps = sorted((db.get("user_db", {}).get("device") or {}).get("app_statuses") or {})
    phone_changes: list[tuple[str, dict[str, Any]]] = [
        ("set_network_mode_preference", {"mode": "2g_only"}), ("toggle_airplane_mode", {}), ("reseat_sim_card", {}),
        ("toggle_data", {}), ("toggle_roaming", {}), ("toggle_data_saver_mode", {}),
        ("set_apn_settings", {"apn_settings": {"apn_name": "broken"}}),
        ("reset_apn_settings", {}), ("toggle_wifi", {}), ("toggle_wifi_calling", {}), ("connect_vpn", {}),
        ("disconnect_vpn", {}), ("reboot_device", {}),
        *((("grant_app_permission", {"app_name": apps[0], "permission": "sms"}),) if apps else ()),
    ]
    first_of = {"disconnect_vpn": "connect_vpn", "reboot_device": "reset_apn_settings"}  # so they change something
    if phone:
        for tool, arguments in phone_changes:
            before_it = ((first_of[tool], {}),) if tool in first_of else ()
            cases.append(Case(tool, tool, arguments, phone_owner, requestor="user", setup=before_it))
        own = [bills[b] for b in customers[phone_owner]["bill_ids"] if b in bills]
        target = first(b for b in own if b["status"] in ("Issued", "Overdue"))
        if target is not None and not any(b["status"] == "Awaiting Payment" for b in own):
            cases.append(Case("pay on the phone", "make_payment", {}, phone_owner, requestor="user",
                              setup=(("send_payment_request", {"customer_id": phone_owner,
                                                               "bill_id": target["bill_id"]}),)))
    return cases


TELECOM_PROBE = Probe(TELECOM, _telecom_cases, _telecom_row_reads, _telecom_identification)


# ---------------------------------------------------------------------------------------------------
# Telehealth.


def _telehealth_identification(patient_id: str, db: Data) -> list[Read]:
    patient = db["patients"][patient_id]
    email = (patient.get("demographics") or {}).get("email")
    if email:
        lookup = read("find_patient_by_email", email=email)
    else:
        lookup = read("find_patient_by_name_dob", first_name=patient["name"]["first_name"],
                      last_name=patient["name"]["last_name"],
                      date_of_birth=patient["demographics"]["date_of_birth"])
    return [lookup, read("get_patient_details", patient_id=patient_id)]


def _listings(patient_id: str) -> list[Read]:
    return [read("list_patient_appointments", patient_id=patient_id),
            *(read("list_patient_appointments", patient_id=patient_id, status_filter=s) for s in STATUSES)]


def _telehealth_row_reads(collection: str, key: str, before: Data, after: Data) -> list[Read]:
    if collection == "patients":
        return [read("get_patient_details", patient_id=key), *_listings(key),
                read("list_patient_medical_records", patient_id=key)]
    if collection == "appointments":
        appointment = before["appointments"].get(key) or after["appointments"][key]
        return [read("get_appointment_details", appointment_id=key), *_listings(appointment["patient_id"])]
    if collection == "medical_records":
        record = before["medical_records"].get(key) or after["medical_records"][key]
        return [read("get_medical_record", record_id=key),
                read("list_patient_medical_records", patient_id=record["patient_id"])]
    if collection == "providers":
        return [read("get_provider_details", provider_id=key)]
    return []


def _free_slot(db: Data, provider_id: str, *, avoid: tuple[str, str] | None = None) -> tuple[str, str] | None:
    schedule = db["providers"][provider_id]["schedule"]
    taken = {(a["date"], a["time"]) for a in db["appointments"].values()
             if a["provider_id"] == provider_id and a["status"] in ACTIONABLE_STATUSES}
    for offset in range(1, 30):
        day = REFERENCE_DATE + timedelta(days=offset)
        for time in schedule.get(day.strftime("%A").lower(), []):
            slot = (day.isoformat(), time)
            if slot not in taken and slot != avoid:
                return slot
    return None


def _telehealth_cases(db: Data) -> list[Case]:
    patients, appointments, records = db["patients"], db["appointments"], db["medical_records"]
    cases: list[Case] = []
    insured = first(p for p, record in sorted(patients.items()) if (record.get("insurance") or {}).get("primary"))
    provider = sorted(db["providers"])[0]
    slot = _free_slot(db, provider)
    if insured is not None and slot is not None:
        cases.append(Case("schedule", "schedule_appointment",
                          {"patient_id": insured, "provider_id": provider, "date": slot[0], "time": slot[1],
                           "appointment_type": "follow_up"}, insured,
                          (read("list_patient_appointments", patient_id=insured),)))
    actionable = [a for _, a in sorted(appointments.items()) if a["status"] in ACTIONABLE_STATUSES]
    for appointment in actionable:
        new_slot = _free_slot(db, appointment["provider_id"], avoid=(appointment["date"], appointment["time"]))
        if new_slot is not None:
            cases.append(Case("reschedule", "reschedule_appointment",
                              {"appointment_id": appointment["appointment_id"], "new_date": new_slot[0],
                               "new_time": new_slot[1]}, appointment["patient_id"],
                              (read("get_appointment_details", appointment_id=appointment["appointment_id"]),)))
            break
    if actionable:
        appointment = actionable[0]
        cases.append(Case("cancel", "cancel_appointment", {"appointment_id": appointment["appointment_id"]},
                          appointment["patient_id"],
                          (read("get_appointment_details", appointment_id=appointment["appointment_id"]),)))
    prescribed = first(r for _, r in sorted(records.items()) if r.get("prescriptions"))
    if prescribed is not None:
        cases.append(Case("supplier", "update_prescription_supplier",
                          {"record_id": prescribed["record_id"],
                           "medication": prescribed["prescriptions"][0]["medication"], "supplier_company": "Acme",
                           "brand_name": "Generic", "price_usd": 1.5}, prescribed["patient_id"],
                          (read("get_medical_record", record_id=prescribed["record_id"]),)))
    record = first(r for _, r in sorted(records.items()))
    if record is not None:
        cases.append(Case("note", "update_medical_record_note", {"record_id": record["record_id"], "note": "seen"},
                          record["patient_id"], (read("get_medical_record", record_id=record["record_id"]),)))
    return cases


TELEHEALTH_PROBE = Probe(TELEHEALTH, _telehealth_cases, _telehealth_row_reads, _telehealth_identification)


# ---------------------------------------------------------------------------------------------------
# The data each probe runs on: the shipped seed, and the upstream data when it is there.

Opener = Callable[[Path], Any]


def _upstream(name: str) -> Opener | None:
    if name == "retail" and (TAU2_RETAIL / "db.json").is_file():
        return lambda path: RetailBackend.create(path, load_retail(TAU2_RETAIL / "db.json"))
    if name == "airline" and (TAU2_AIRLINE / "db.json").is_file():
        return lambda path: AirlineBackend.create(path, load_airline(TAU2_AIRLINE / "db.json"))
    if name == "telecom" and (TAU2_TELECOM / "user_db.toml").is_file():
        return lambda path: TelecomBackend.create(path, read_tau2_files(TAU2_TELECOM / "db.toml"))
    if name == "telehealth" and (TAU_TRAIT_TELEHEALTH / "patients.json").is_file():
        return lambda path: TelehealthBackend.create(path, read_folder(TAU_TRAIT_TELEHEALTH))
    return None


PROBES = {"retail": RETAIL_PROBE, "airline": AIRLINE_PROBE, "telecom": TELECOM_PROBE, "telehealth": TELEHEALTH_PROBE}


async def _telecom_scene(backend: SQLiteToolBackend) -> None:
    """tau2's telecom phone belongs to nobody until a task's `set_user_info`: give it the first customer's line."""
    data = await backend.export()
    surroundings = (data.get("user_db", {}).get("surroundings") or {})
    if surroundings.get("phone_number"):
        return
    customer = data["customers"][sorted(data["customers"])[0]]
    line = data["lines"][customer["line_ids"][0]]
    await backend.run_env_function("user", "set_user_info",  # type: ignore[attr-defined]
                                   {"name": customer["full_name"], "phone_number": line["phone_number"]})


async def _run(name: str, opener: Opener | None, tmp_path: Path) -> list[str]:
    return (await _findings(name, opener, tmp_path))[0]


async def _findings(name: str, opener: Opener | None, tmp_path: Path) -> tuple[list[str], list[Finding]]:
    """Every case of the domain probed informed and blind: the problems found, and each probe's finding."""
    probe_ = PROBES[name]
    path = tmp_path / f"{name}.sqlite"
    backend: SQLiteToolBackend = await (open_backend(name, path) if opener is None else opener(path))
    try:
        if name == "telecom":
            await _telecom_scene(backend)
        sync = getattr(backend, "sync", None)
        if sync is not None:
            await sync()
        cases = probe_.cases(await backend.export())
        writes = {t.name for t in probe_.domain.tools if t.kind is ToolKind.WRITE}
        assert {c.tool for c in cases} == writes, f"no case for {sorted(writes - {c.tool for c in cases})}"
        problems: list[str] = []
        findings: list[Finding] = []
        for case in cases:
            for finding in await probe(backend, probe_, case):  # informed, then blind
                findings.append(finding)
                problems += [f"{case.name} [{finding.mode}]: {p}" for p in finding.problems]
        agent_writes = {t.name for t in probe_.domain.agent_tools() if t.kind is ToolKind.WRITE}
        changing = {c.tool for c, f in zip((c for c in cases for _ in (0, 1)), findings, strict=True)
                    if f.documents and f.changes}
        problems += [f"{tool}: no case changed anything the ledger holds" for tool in sorted(agent_writes - changing)]
        return problems, findings
    finally:
        await backend.close()


@pytest.mark.parametrize("name", sorted(PROBES))
async def test_every_write_changes_only_what_it_declares_on_the_seed(name: str, tmp_path: Path) -> None:
    problems = await _run(name, None, tmp_path)
    assert not problems, "\n".join(problems)


@pytest.mark.shared
@pytest.mark.parametrize("name", sorted(PROBES))
async def test_every_write_changes_only_what_it_declares_on_the_upstream_data(name: str, tmp_path: Path) -> None:
    opener = _upstream(name)
    if opener is None:
        pytest.skip(f"no upstream {name} data under {TAU2_RETAIL.parent.parent}")
    problems = await _run(name, opener, tmp_path)
    assert not problems, "\n".join(problems)


def test_changed_fields_name_the_leaves_that_differ() -> None:
    assert changed_fields({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 2, "d": 4}}) == ["b.d"]
    assert changed_fields([1, 2], [1, 3]) == [""]
    assert changed_fields({"x": 1}, {"x": 1, "y": 2}) == ["y"]


@pytest.mark.parametrize("name", sorted(PROBES))
async def test_the_probe_finds_every_write_that_declares_less_than_it_changes(name: str, tmp_path: Path) -> None:
    """The same probe over the domain with its declarations narrowed to one field nobody has: every write tool
    that changes a record the ledger holds is reported (telecom's phone changes included)."""
    probe_ = PROBES[name]
    path_map = replace(probe_.domain.path_map, write_effects=tuple(
        replace(effect, fields=("no_such_field",)) for effect in probe_.domain.path_map.write_effects))
    narrowed = replace(probe_, domain=replace(probe_.domain, path_map=path_map))
    PROBES[name] = narrowed
    try:
        problems, findings = await _findings(name, None, tmp_path)
    finally:
        PROBES[name] = probe_
    reported = {line.split(" [", 1)[0] for line in problems}
    changing = {f.case for f in findings if f.changes}
    assert changing and reported == changing


async def _seed_export(name: str, tmp_path: Path) -> Data:
    backend = await open_backend(name, tmp_path / f"{name}-export.sqlite")
    try:
        if name == "telecom":
            await _telecom_scene(backend)
        return await backend.export()
    finally:
        await backend.close()
