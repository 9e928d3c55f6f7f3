"""Our own small telecom seed: hand-written story records plus a little deterministic filler.

The story records are fixed by hand because scenarios and tests are written against them. The phone in
the user DB is Maria Lopez's, and she is travelling abroad:

- Maria Lopez (C2001, born 1983-04-12, 555-210-3001) has three lines on one account:
  - L2001, her own phone (Plus 20, 20 GB): abroad, mobile data does not work because roaming is off both
    on the line and in the phone's settings (scenario `roaming-abroad`);
  - L2002, her son Lucas's phone (Essentials 5, 5 GB, refuel $4.00/GB): all 5 GB used; she asks for 5 GB
    more, over the 2 GB cap (scenario `refuel-over-cap`);
  - L2003, her tablet (Tablet Flex 2): Suspended since 2025-02-01 because its January bill B2003 ($15.00,
    billed to a card that expired) is Overdue; paying it lets it be resumed (scenario
    `overdue-bill-resume`). Its contract runs to 2026-03-31.
  Her bills: B2001 (January, Paid), B2002 (February, Issued, due 2025-02-26), B2003 (the tablet's
  January bill, Overdue), B2004 (March, the Draft that refuel charges go on).
- Daniel Okafor (C2002) tests the rules from the other side: L2004 Active, L2005 Suspended with a contract
  that ended on 2025-01-31 (never resumable), B2005 Overdue and B2006 already Awaiting Payment.
- Aisha Rahman (C2003) is Pending Verification with no lines.
- Another Maria Lopez (C2004, born 1990-07-21): a name search needs the date of birth to tell them
  apart. Her line L2006 already has roaming on.

Everything else (more customers, lines, bills, devices) is invented by a seeded generator, so the shipped
`seed.json` is reproducible: `python -m mock_backends.telecom.seed` rewrites it and `--check` fails when
the file and the generator disagree. Nothing is copied from tau2's data; the layout is tau2's (`db` =
db.toml's tables, `user_db` = user_db.toml's), so `--db` accepts either.
"""

from __future__ import annotations

import calendar
import json
import random
import sys
from pathlib import Path
from typing import Any

SEED = 2025_0225
SEED_FILE = Path(__file__).with_name("seed.json")  # read back by mock_backends.telecom.data

Doc = dict[str, Any]

MARIA, DANIEL, AISHA, OTHER_MARIA = "C2001", "C2002", "C2003", "C2004"
MARIA_PHONE = "555-210-3001"

# ----------------------------------------------------------------------------------- story records


def story_plans() -> list[Doc]:
    def plan(plan_id: str, name: str, limit: float, price: float, refuel: float) -> Doc:
        return {"plan_id": plan_id, "name": name, "data_limit_gb": limit, "price_per_month": price,
                "data_refueling_price_per_gb": refuel}

    return [
        plan("P2001", "Essentials 5", 5.0, 35.0, 4.0),
        plan("P2002", "Plus 20", 20.0, 55.0, 2.5),
        plan("P2003", "Unlimited Max", 999.0, 80.0, 0.5),
        plan("P2004", "Family Share 40", 40.0, 110.0, 2.0),
        plan("P2005", "Tablet Flex 2", 2.0, 15.0, 6.0),
    ]


def _device(device_id: str, kind: str, model: str, imei: str, esim: bool, activated: str | None) -> Doc:
    return {"device_id": device_id, "device_type": kind, "model": model, "imei": imei, "is_esim_capable": esim,
            "activated": activated is not None, "activation_date": activated, "last_esim_transfer_date": None}


def story_devices() -> list[Doc]:
    return [
        _device("D2001", "phone", "Pixel 8", "356938035643809", True, "2024-11-02T09:40:00"),
        _device("D2002", "phone", "Galaxy A54", "354809102938476", True, "2024-11-02T09:55:00"),
        _device("D2003", "tablet", "Tab S9", "352094857361028", False, "2024-11-05T16:10:00"),
        _device("D2004", "phone", "iPhone 15", "353918204756193", True, "2024-06-14T11:20:00"),
        _device("D2005", "phone", "Moto G84", "359021847563921", True, "2023-02-01T10:00:00"),
        _device("D2006", "phone", "Pixel 7a", "357461920384756", True, "2024-09-09T13:30:00"),
    ]


def _line(line_id: str, number: str, status: str, plan_id: str, device_id: str, used: float, roaming: bool,
          contract_end: str, plan_change: str, suspended: str | None = None, sim_replaced: str | None = None) -> Doc:
    return {"line_id": line_id, "phone_number": number, "status": status, "plan_id": plan_id, "device_id": device_id,
            "data_used_gb": used, "data_refueling_gb": 0.0, "roaming_enabled": roaming,
            "contract_end_date": contract_end, "last_plan_change_date": plan_change,
            "last_sim_replacement_date": sim_replaced, "suspension_start_date": suspended}


def story_lines() -> list[Doc]:
    return [
        _line("L2001", MARIA_PHONE, "Active", "P2002", "D2001", 6.4, False, "2026-09-30", "2024-11-02"),
        _line("L2002", "555-210-3002", "Active", "P2001", "D2002", 5.0, False, "2026-09-30", "2024-11-02"),
        _line("L2003", "555-210-3003", "Suspended", "P2005", "D2003", 0.4, False, "2026-03-31", "2024-11-05",
              suspended="2025-02-01"),
        _line("L2004", "555-340-1001", "Active", "P2004", "D2004", 18.2, True, "2026-06-30", "2024-06-14"),
        _line("L2005", "555-340-1002", "Suspended", "P2001", "D2005", 0.0, False, "2025-01-31", "2023-02-01",
              suspended="2025-02-02", sim_replaced="2024-03-11"),
        _line("L2006", "555-480-2201", "Active", "P2003", "D2006", 31.7, True, "2026-11-30", "2024-09-09"),
    ]


def _item(description: str, amount: float, day: str, kind: str = "Plan Charge") -> Doc:
    return {"description": description, "amount": amount, "date": day, "item_type": kind}


def _bill(bill_id: str, customer_id: str, month: str, issued: str, due: str, status: str, items: list[Doc]) -> Doc:
    year, number = (int(part) for part in month.split("-"))
    last = calendar.monthrange(year, number)[1]
    total = round(sum(item["amount"] for item in items), 2)
    return {"bill_id": bill_id, "customer_id": customer_id, "period_start": f"{month}-01",
            "period_end": f"{month}-{last:02d}", "issue_date": issued, "total_due": total, "due_date": due,
            "line_items": items, "status": status}


def story_bills() -> list[Doc]:
    maria_lines = [_item("Plus 20 - Line 555-210-3001", 55.0, "2025-01-05"),
                   _item("Essentials 5 - Line 555-210-3002", 35.0, "2025-01-05")]
    return [
        _bill("B2001", MARIA, "2025-01", "2025-01-05", "2025-01-19", "Paid", maria_lines),
        _bill("B2002", MARIA, "2025-02", "2025-02-05", "2025-02-26", "Issued",
              [{**item, "date": "2025-02-05"} for item in maria_lines]),
        _bill("B2003", MARIA, "2025-01", "2025-01-05", "2025-01-19", "Overdue",
              [_item("Tablet Flex 2 - Line 555-210-3003", 15.0, "2025-01-05")]),
        _bill("B2004", MARIA, "2025-03", "2025-03-01", "2025-03-15", "Draft", []),
        _bill("B2005", DANIEL, "2025-01", "2025-01-05", "2025-01-19", "Overdue",
              [_item("Essentials 5 - Line 555-340-1002", 35.0, "2025-01-05")]),
        _bill("B2006", DANIEL, "2025-02", "2025-02-05", "2025-02-19", "Awaiting Payment",
              [_item("Family Share 40 - Line 555-340-1001", 110.0, "2025-02-05")]),
        _bill("B2007", OTHER_MARIA, "2025-02", "2025-02-05", "2025-02-19", "Paid",
              [_item("Unlimited Max - Line 555-480-2201", 80.0, "2025-02-05"),
               _item("Roaming Pass - Line 555-480-2201", 12.5, "2025-02-05", "Roaming")]),
    ]


def _customer(customer_id: str, name: str, born: str, email: str, phone: str, street: str, city: str, state: str,
              zip_code: str, status: str, created: str, lines: list[str], bills: list[str],
              methods: list[tuple[str, str, str]], goodwill: float = 0.0, extension: str | None = None) -> Doc:
    return {
        "customer_id": customer_id, "full_name": name, "date_of_birth": born, "email": email, "phone_number": phone,
        "address": {"street": street, "city": city, "state": state, "zip_code": zip_code},
        "account_status": status,
        "payment_methods": [{"method_type": kind, "account_number_last_4": last4, "expiration_date": expires}
                            for kind, last4, expires in methods],
        "line_ids": lines, "bill_ids": bills, "created_at": created, "last_extension_date": extension,
        "goodwill_credit_used_this_year": goodwill,
    }


def story_customers() -> list[Doc]:
    return [
        _customer(MARIA, "Maria Lopez", "1983-04-12", "maria.lopez@example.org", MARIA_PHONE, "18 Alder Way",
                  "Portland", "OR", "97205", "Active", "2024-11-02T09:15:00", ["L2001", "L2002", "L2003"],
                  ["B2001", "B2002", "B2003", "B2004"],
                  [("Credit Card", "4417", "09/2027"), ("Debit Card", "8802", "12/2024")]),
        _customer(DANIEL, "Daniel Okafor", "1971-09-03", "d.okafor@example.org", "555-340-1001", "7 Quarry Lane",
                  "Columbus", "OH", "43215", "Active", "2023-02-01T10:00:00", ["L2004", "L2005"],
                  ["B2005", "B2006"], [("PayPal", "3390", "03/2026")], goodwill=20.0, extension="2025-01-10"),
        _customer(AISHA, "Aisha Rahman", "1996-12-08", "aisha.rahman@example.org", "555-610-7788", "402 Birch St",
                  "Madison", "WI", "53703", "Pending Verification", "2025-02-20T15:45:00", [], [], []),
        _customer(OTHER_MARIA, "Maria Lopez", "1990-07-21", "mlopez90@example.org", "555-480-2201", "55 Harbor Rd",
                  "San Diego", "CA", "92101", "Active", "2024-09-09T13:10:00", ["L2006"], ["B2007"],
                  [("Credit Card", "6021", "01/2028")]),
    ]


def story_user_db() -> Doc:
    """Maria's phone, abroad: connected (5G, excellent), mobile data on, Data Roaming off, line roaming off."""
    device = {
        "sim_card_status": "active", "sim_card_missing": False, "airplane_mode": False,
        "network_signal_strength": "excellent", "network_technology_connected": "5G",
        "network_connection_status": "connected", "battery_level": 64, "data_enabled": True,
        "roaming_enabled": False, "network_mode_preference": "4g_5g_preferred",
        "active_apn_settings": {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
                                "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None,
                                "mms_port": None},
        "wifi_enabled": False, "wifi_connected": False, "wifi_ssid": None, "wifi_signal_strength": "none",
        "wifi_calling_enabled": False, "wifi_calling_mms_over_wifi": False, "data_saver_mode": False,
        "vpn_enabled_setting": False, "vpn_connected": False, "vpn_details": None,
        "app_statuses": {
            "messaging": {"app_name": "messaging",
                          "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
            "browser": {"app_name": "browser",
                        "permissions": {"sms": False, "storage": True, "phone": False, "network": True}},
            "maps": {"app_name": "maps", "permissions": {"sms": False, "storage": True, "phone": False,
                                                         "network": True}},
        },
    }
    surroundings = {
        "name": "Maria Lopez", "phone_number": MARIA_PHONE, "is_abroad": True, "roaming_allowed": False,
        "signal_strength": {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"},
        "mobile_data_usage_exceeded": False, "line_active": True, "payment_request": None,
    }
    return {"device": device, "surroundings": surroundings}


# ----------------------------------------------------------------------------------- generated filler

_FIRST = ["Ava", "Liam", "Zara", "Owen", "Mateo", "Ines", "Tobias", "Leila", "Caleb", "Nadia", "Silas", "Amara"]
_LAST = ["Okonkwo", "Moreno", "Quinlan", "Duarte", "Varga", "Whitlock", "Ambrose", "Keller", "Rosales", "Brandt"]
_CITIES = [("Denver", "CO", "80203"), ("Austin", "TX", "73301"), ("Boise", "ID", "83702"), ("Tampa", "FL", "33602")]
_MODELS = [("phone", "Pixel 8", True), ("phone", "iPhone 14", True), ("phone", "Galaxy S23", True),
           ("tablet", "iPad Air", True), ("watch", "Watch Series 9", True), ("router", "HomeHub 5G", False)]
GENERATED_CUSTOMERS = 12


def generate_filler(rng: random.Random, plans: list[Doc]) -> tuple[list[Doc], list[Doc], list[Doc], list[Doc]]:
    """Customers C2101.. with 1-3 lines (L21xx, devices D21xx) and a Paid January and an Issued February bill."""
    customers: list[Doc] = []
    lines: list[Doc] = []
    bills: list[Doc] = []
    devices: list[Doc] = []
    names = rng.sample([(f, la) for f in _FIRST for la in _LAST], GENERATED_CUSTOMERS)
    line_number = bill_number = 2101
    for index, (first, last) in enumerate(names):
        customer_id = f"C{2101 + index}"
        city, state, zip_code = rng.choice(_CITIES)
        born = f"{rng.randrange(1950, 2004)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        own_lines: list[str] = []
        charges: list[Doc] = []
        for _ in range(rng.randrange(1, 4)):
            line_id, device_id = f"L{line_number}", f"D{line_number}"
            number = f"555-7{line_number % 100:02d}-{rng.randrange(1000, 10000)}"
            plan = rng.choice(plans)
            kind, model, esim = rng.choice(_MODELS)
            devices.append(_device(device_id, kind, model, f"35{rng.randrange(10**12, 10**13)}", esim,
                                   f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T10:00:00"))
            used = round(min(plan["data_limit_gb"], rng.uniform(0, plan["data_limit_gb"] * 0.9)), 1)
            lines.append(_line(line_id, number, "Active", plan["plan_id"], device_id, used, rng.random() < 0.25,
                               f"{rng.randrange(2025, 2028)}-{rng.choice(['03-31', '06-30', '09-30', '12-31'])}",
                               "2024-10-01"))
            charges.append(_item(f"{plan['name']} - Line {number}", plan["price_per_month"], "2025-01-05"))
            own_lines.append(line_id)
            line_number += 1
        january, february = f"B{bill_number}", f"B{bill_number + 1}"
        bill_number += 2
        bills.append(_bill(january, customer_id, "2025-01", "2025-01-05", "2025-01-19", "Paid", charges))
        bills.append(_bill(february, customer_id, "2025-02", "2025-02-05", "2025-02-26", "Issued",
                           [{**c, "date": "2025-02-05"} for c in charges]))
        customers.append(_customer(customer_id, f"{first} {last}", born, f"{first.lower()}.{last.lower()}@example.org",
                                   lines[-len(own_lines)]["phone_number"], f"{rng.randrange(1, 999)} Main St", city,
                                   state, zip_code, "Active", "2024-10-01T09:00:00", own_lines, [january, february],
                                   [("Credit Card", f"{rng.randrange(1000, 10000)}", "06/2027")]))
    return customers, lines, bills, devices


def generate() -> Doc:
    """The full seed in our layout ({"db": tau2 db.toml tables, "user_db": user_db.toml}). Same on every run."""
    rng = random.Random(SEED)
    plans = story_plans()
    customers, lines, bills, devices = generate_filler(rng, plans)
    return {
        "db": {
            "plans": plans,
            "customers": story_customers() + customers,
            "lines": story_lines() + lines,
            "bills": story_bills() + bills,
            "devices": story_devices() + devices,
        },
        "user_db": story_user_db(),
    }


def render(data: Doc) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(generate())
    if "--check" in argv:
        same = SEED_FILE.exists() and SEED_FILE.read_text(encoding="utf-8") == text
        print("seed.json is up to date" if same else "seed.json differs from the generator")
        return 0 if same else 1
    SEED_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {SEED_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
