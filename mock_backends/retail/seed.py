"""Our own small retail seed: a few hand-written story records plus deterministic filler.

The story records (Mia Garcia, Noah Kim, the Tablet and T-Shirt products) are fixed by hand because
scenarios and tests are written against them. Everything else is invented by a seeded generator, so
the shipped `seed.json` is reproducible: `python -m mock_backends.retail.seed` rewrites it and
`--check` fails when the file and the generator disagree. Nothing is copied from tau2-bench's data.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any

SEED = 4821_3107
SEED_FILE = Path(__file__).with_name("seed.json")  # read back by mock_backends.retail.data

Doc = dict[str, Any]

# ----------------------------------------------------------------------------------- story records

TABLET, TSHIRT = "1000000001", "1000000002"
_TABLET_VARIANTS = [
    ("2000000011", {"color": "gold", "storage": "128GB"}, 989.7, True),
    ("2000000012", {"color": "black", "storage": "64GB"}, 549.99, True),
    ("2000000013", {"color": "silver", "storage": "256GB"}, 1099.0, False),
]
_TSHIRT_VARIANTS = [
    ("2000000021", {"color": "blue", "size": "M"}, 49.99, True),
    ("2000000022", {"color": "red", "size": "M"}, 51.5, True),
    ("2000000023", {"color": "blue", "size": "L"}, 49.99, False),
    ("2000000024", {"color": "black", "size": "L"}, 52.0, True),
]


def _product(product_id: str, name: str, variants: list[tuple[str, dict[str, str], float, bool]]) -> Doc:
    return {
        "name": name,
        "product_id": product_id,
        "variants": {
            item_id: {"item_id": item_id, "options": dict(options), "available": available, "price": price}
            for item_id, options, price, available in variants
        },
    }


def _address(address1: str, address2: str, city: str, state: str, zip_code: str) -> Doc:
    return {"address1": address1, "address2": address2, "city": city, "country": "USA", "state": state,
            "zip": zip_code}


def _item(products: dict[str, Doc], product_id: str, item_id: str) -> Doc:
    product = products[product_id]
    variant = product["variants"][item_id]
    return {"name": product["name"], "product_id": product_id, "item_id": item_id, "price": variant["price"],
            "options": dict(variant["options"])}


def _order(order_id: str, user: Doc, items: list[Doc], status: str, tracking: str | None,
           payments: list[tuple[str, float, str]], cancel_reason: str | None = None) -> Doc:
    order: Doc = {
        "order_id": order_id,
        "user_id": user["user_id"],
        "address": dict(user["address"]),
        "items": items,
        "status": status,
        "fulfillments": [] if tracking is None else [
            {"tracking_id": [tracking], "item_ids": [item["item_id"] for item in items]}
        ],
        "payment_history": [
            {"transaction_type": kind, "amount": amount, "payment_method_id": method}
            for kind, amount, method in payments
        ],
    }
    if cancel_reason is not None:
        order["cancel_reason"] = cancel_reason
    return order


def story_records() -> Doc:
    """The records scenarios rely on; ids here are reserved and never generated."""
    products = {
        TABLET: _product(TABLET, "Tablet", _TABLET_VARIANTS),
        TSHIRT: _product(TSHIRT, "T-Shirt", _TSHIRT_VARIANTS),
    }
    mia: Doc = {
        "user_id": "mia_garcia_4821",
        "name": {"first_name": "Mia", "last_name": "Garcia"},
        "address": _address("12 Elm Street", "Apt 3", "Springfield", "IN", "46281"),
        "email": "mia.garcia@example.com",
        "payment_methods": {
            "gift_card_4821001": {"source": "gift_card", "id": "gift_card_4821001", "balance": 59.0},
            "credit_card_4821002": {"source": "credit_card", "id": "credit_card_4821002",
                                    "brand": "mastercard", "last_four": "2732"},
        },
        "orders": ["#W4821001", "#W4821002"],
    }
    noah: Doc = {
        "user_id": "noah_kim_3107",
        "name": {"first_name": "Noah", "last_name": "Kim"},
        "address": _address("5 Bleecker St", "", "New York", "NY", "10012"),
        "email": "noah.kim@example.com",
        "payment_methods": {
            "paypal_3107001": {"source": "paypal", "id": "paypal_3107001"},
            "credit_card_3107002": {"source": "credit_card", "id": "credit_card_3107002",
                                    "brand": "visa", "last_four": "1881"},
        },
        "orders": ["#W3107001", "#W3107002"],
    }
    orders = {
        "#W4821001": _order("#W4821001", mia,
                            [_item(products, TABLET, "2000000011"), _item(products, TABLET, "2000000012")],
                            "delivered", "TRK4821001", [("payment", 1539.69, "gift_card_4821001")]),
        "#W4821002": _order("#W4821002", mia, [_item(products, TSHIRT, "2000000021")], "pending", None,
                            [("payment", 49.99, "credit_card_4821002")]),
        "#W3107001": _order("#W3107001", noah, [_item(products, TSHIRT, "2000000021")], "delivered",
                            "TRK3107001", [("payment", 49.99, "paypal_3107001")]),
        "#W3107002": _order("#W3107002", noah, [_item(products, TABLET, "2000000012")], "pending", None,
                            [("payment", 549.99, "credit_card_3107002")]),
    }
    return {"products": products, "users": {mia["user_id"]: mia, noah["user_id"]: noah}, "orders": orders}


# ----------------------------------------------------------------------------------- generated filler

_CATALOG: list[tuple[str, float, float, dict[str, list[str]]]] = [
    ("Desk Lamp", 25.0, 160.0, {"color": ["black", "white", "brass"], "brightness": ["dim", "medium", "bright"],
                                "power source": ["USB", "AC adapter"]}),
    ("Water Bottle", 12.0, 60.0, {"capacity": ["500ml", "750ml", "1L"],
                                  "material": ["steel", "glass", "plastic"], "color": ["teal", "grey", "orange"]}),
    ("Backpack", 35.0, 180.0, {"color": ["navy", "olive", "black"], "size": ["small", "medium", "large"],
                               "material": ["canvas", "nylon"]}),
    ("Wireless Earbuds", 40.0, 260.0, {"color": ["white", "black", "blue"],
                                       "battery life": ["5 hours", "8 hours", "12 hours"],
                                       "water resistance": ["none", "IPX4", "IPX7"]}),
    ("Running Shoes", 60.0, 190.0, {"size": ["8", "9", "10", "11"], "color": ["white", "red", "grey"],
                                    "sole": ["road", "trail"]}),
    ("Coffee Maker", 45.0, 320.0, {"capacity": ["4 cups", "8 cups", "12 cups"],
                                   "type": ["drip", "pour-over", "espresso"], "color": ["black", "steel"]}),
    ("Yoga Mat", 18.0, 95.0, {"thickness": ["4mm", "6mm", "8mm"], "material": ["TPE", "cork", "rubber"],
                              "color": ["purple", "green", "black"]}),
    ("Mechanical Keyboard", 55.0, 240.0, {"switch type": ["linear", "tactile", "clicky"],
                                          "backlight": ["none", "white", "RGB"], "layout": ["full", "TKL", "60%"]}),
    ("Bluetooth Speaker", 30.0, 210.0, {"color": ["red", "blue", "black"], "battery life": ["10 hours", "20 hours"],
                                        "water resistance": ["yes", "no"]}),
    ("Cast Iron Skillet", 22.0, 110.0, {"diameter": ["8 inch", "10 inch", "12 inch"],
                                        "finish": ["pre-seasoned", "enamel"], "handle": ["single", "double"]}),
]
_FIRST = ["Ava", "Liam", "Zara", "Owen", "Priya", "Mateo", "Hana", "Felix", "Ines", "Tobias", "Leila",
          "Caleb", "Yuki", "Dario", "Nadia", "Silas", "Amara", "Elio", "Greta", "Ravi", "Celeste", "Bruno",
          "Maren", "Idris", "Talia", "Jonas", "Esme", "Kofi"]
_LAST = ["Okafor", "Lindqvist", "Moreau", "Castellano", "Nakamura", "Brennan", "Haddad", "Petrov", "Quinlan",
         "Duarte", "Feld", "Varga", "Oyelaran", "Sato", "Ambrose", "Keller", "Rosales", "Whitlock"]
_STREETS = ["Maple Row", "Harbor Lane", "Quarry Road", "Willow Court", "Juniper Way", "Foundry Street",
            "Orchard Avenue", "Lantern Drive", "Copper Hill Road", "Bayview Terrace"]
_CITIES = [("Riverton", "OR", "97"), ("Lakemont", "MN", "55"), ("Fairhaven", "MA", "02"),
           ("Cedar Falls", "TX", "75"), ("Northgate", "WA", "98"), ("Pinecrest", "CO", "80"),
           ("Brookfield", "GA", "30"), ("Mesa Verde", "AZ", "85")]
_BRANDS = ["visa", "mastercard", "amex", "discover"]
_STATUSES = ["pending", "processed", "delivered", "cancelled"]
_STATUS_WEIGHTS = [4, 2, 4, 2]
GENERATED_USERS = 28
GENERATED_ORDERS = 56


class _Ids:
    """Unique random digit strings that never collide with each other or with the story ids."""

    def __init__(self, rng: random.Random, reserved: set[str]) -> None:
        self.rng = rng
        self.used = set(reserved)

    def new(self, prefix: str, digits: int) -> str:
        while True:
            value = prefix + str(self.rng.randrange(10 ** (digits - 1), 10**digits))
            if value not in self.used:
                self.used.add(value)
                return value


def _reserved(story: Doc) -> set[str]:
    ids: set[str] = set(story["products"]) | set(story["users"]) | set(story["orders"])
    for product in story["products"].values():
        ids |= set(product["variants"])
    for user in story["users"].values():
        ids |= set(user["payment_methods"])
    return ids


def _generate_products(rng: random.Random, ids: _Ids) -> dict[str, Doc]:
    products: dict[str, Doc] = {}
    for name, low, high, options in _CATALOG:
        grid = [dict(zip(options, combo, strict=True)) for combo in itertools.product(*options.values())]
        chosen = rng.sample(grid, rng.randint(4, 7))
        variants = [
            (ids.new("", 10), combo, round(rng.uniform(low, high), 2), index < 2 or rng.random() < 0.7)
            for index, combo in enumerate(chosen)
        ]
        product_id = ids.new("", 10)
        products[product_id] = _product(product_id, name, variants)
    return products


def _generate_users(rng: random.Random, ids: _Ids) -> dict[str, Doc]:
    users: dict[str, Doc] = {}
    names = rng.sample([(f, la) for f in _FIRST for la in _LAST], GENERATED_USERS)
    for first, last in names:
        user_id = ids.new(f"{first.lower()}_{last.lower()}_", 4)
        city, state, zip_prefix = rng.choice(_CITIES)
        address2 = rng.choice(["", f"Apt {rng.randint(1, 40)}", f"Suite {rng.randint(100, 900)}"])
        methods: dict[str, Doc] = {}
        for source in rng.sample(["credit_card", "paypal", "gift_card"], rng.randint(1, 3)):
            method_id = ids.new(f"{source}_", 7)
            method: Doc = {"source": source, "id": method_id}
            if source == "credit_card":
                method |= {"brand": rng.choice(_BRANDS), "last_four": f"{rng.randint(0, 9999):04d}"}
            elif source == "gift_card":
                method["balance"] = float(round(rng.uniform(0, 400), 2))
            methods[method_id] = method
        users[user_id] = {
            "user_id": user_id,
            "name": {"first_name": first, "last_name": last},
            "address": _address(f"{rng.randint(1, 999)} {rng.choice(_STREETS)}", address2, city, state,
                                f"{zip_prefix}{rng.randint(0, 999):03d}"),
            "email": f"{first.lower()}.{last.lower()}{rng.randint(10, 99)}@example.com",
            "payment_methods": methods,
            "orders": [],
        }
    return users


def _generate_orders(rng: random.Random, ids: _Ids, products: dict[str, Doc],
                     users: dict[str, Doc]) -> dict[str, Doc]:
    statuses = [s for s in _STATUSES for _ in range(4)]
    statuses += rng.choices(_STATUSES, _STATUS_WEIGHTS, k=GENERATED_ORDERS - len(statuses))
    rng.shuffle(statuses)
    buyers = rng.sample(sorted(users), GENERATED_USERS - 4)  # a few customers have no orders yet
    catalog = [(pid, item_id) for pid, product in products.items() for item_id in product["variants"]]
    orders: dict[str, Doc] = {}
    for status in statuses:
        user = users[rng.choice(buyers)]
        order_id = ids.new("#W", 7)
        items = [_item(products, *rng.choice(catalog)) for _ in range(rng.randint(1, 4))]
        amount = round(sum(item["price"] for item in items), 2)
        method = rng.choice(sorted(user["payment_methods"]))
        payments = [("payment", amount, method)]
        reason = None
        if status == "cancelled":
            payments.append(("refund", amount, method))
            reason = rng.choice(["no longer needed", "ordered by mistake"])
        tracking = ids.new("", 12) if status in ("processed", "delivered") else None
        orders[order_id] = _order(order_id, user, items, status, tracking, payments, reason)
        user["orders"].append(order_id)
    return orders


def generate() -> Doc:
    """The full seed in tau2 `db.json` layout. Same output on every run and platform."""
    rng = random.Random(SEED)
    story = story_records()
    ids = _Ids(rng, _reserved(story))
    products = copy.deepcopy(story["products"]) | _generate_products(rng, ids)
    users = copy.deepcopy(story["users"]) | _generate_users(rng, ids)
    generated_users = {key: user for key, user in users.items() if key not in story["users"]}
    orders = copy.deepcopy(story["orders"]) | _generate_orders(rng, ids, products, generated_users)
    return {"products": products, "users": users, "orders": orders}


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
