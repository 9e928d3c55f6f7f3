"""The data every figure runs on: the tau2 retail DB (or a synthetic twin) and ledgers built from it.

Realism is the point of this module. The tau2-bench retail DB (`data/tau2/domains/retail/db.json`: 500 users,
1,000 orders, 50 products with ~12 variants each) is the database a benchmark trial actually runs
against, so the store figures use it when it is present. When it is absent, `synthetic_db` builds a DB of
the same size with the shipped seed generator's catalog, names and record builders, and every row says
which one was used.

Ledgers are filled the only way a session fills them: `Ledger.absorb` of the exact documents the retail
backend returns (normalised through the tau2 models, optional order fields dumped as null), under the
retail PATH_MAP. A ledger larger than the DB (the 10,000-record gate figure) is topped up with copies of
DB records under fresh ids, so every record has a real tau2 shape.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.ledger import Ledger
from core.tools import ToolCall
from domains.retail import DOMAIN
from mock_backends.retail import seed as seed_gen
from mock_backends.retail.models import normalise

Doc = dict[str, Any]
Docs = dict[str, dict[str, Doc]]

REPO = Path(__file__).resolve().parents[1]
TAU2_DB = REPO.parent / "shared" / "tau2" / "retail" / "db.json"

RETURN = "return_delivered_order_items"
SYNTHETIC_SEED = 2025_0611


@dataclass(frozen=True)
class RetailData:
    """A retail DB twice over: `raw` as read from disk (what `RetailBackend.open` is given) and `docs`
    normalised (exactly what the backend stores and its read tools return)."""

    raw: dict[str, Any]
    docs: Docs
    source: str  # "tau2" or "synthetic"

    @property
    def label(self) -> str:
        counts = f"{len(self.docs['users'])} users, {len(self.docs['orders'])} orders"
        return f"tau2 db.json, {counts}" if self.source == "tau2" else f"SYNTHETIC DB, {counts}"


def load_retail_data(path: Path | None = TAU2_DB, *, users: int = 500, orders: int = 1000,
                     products: int = 50) -> RetailData:
    """The tau2 retail DB at `path` when it exists; otherwise a synthetic DB of the given size."""
    if path is not None and path.is_file():
        with path.open(encoding="utf-8") as handle:
            raw = json.load(handle)
        return RetailData(raw=raw, docs=normalise(raw), source="tau2")
    raw = synthetic_db(users=users, orders=orders, products=products)
    return RetailData(raw=raw, docs=normalise(raw), source="synthetic")


# ---------------------------------------------------------------------------------------------------
# A synthetic DB shaped like tau2's, from the seed generator's own builders and vocabulary.

# tau2's status mix: 423 pending, 102 processed, 373 delivered, 102 cancelled out of 1,000.
_STATUS_WEIGHTS = {"pending": 42, "processed": 10, "delivered": 37, "cancelled": 10}


def synthetic_db(*, users: int = 500, orders: int = 1000, products: int = 50,
                 seed: int = SYNTHETIC_SEED) -> dict[str, Any]:
    """A deterministic DB in tau2 `db.json` layout: same record shapes and roughly the same proportions
    (1-5 items per order, ~12 variants per product, the tau2 status mix), invented values."""
    rng = random.Random(seed)
    ids = seed_gen._Ids(rng, set())
    catalog: dict[str, Doc] = {}
    for index in range(products):
        name, low, high, options = seed_gen._CATALOG[index % len(seed_gen._CATALOG)]
        grid = [dict(zip(options, combo, strict=True)) for combo in itertools.product(*options.values())]
        chosen = rng.sample(grid, min(len(grid), rng.randint(8, 16)))
        variants = [(ids.new("", 10), combo, round(rng.uniform(low, high), 2), n < 2 or rng.random() < 0.7)
                    for n, combo in enumerate(chosen)]
        product_id = ids.new("", 10)
        catalog[product_id] = seed_gen._product(product_id, name, variants)

    people: dict[str, Doc] = {}
    pairs = [(f, last) for f in seed_gen._FIRST for last in seed_gen._LAST]
    rng.shuffle(pairs)
    for n in range(users):
        first, last = pairs[n % len(pairs)]
        user_id = ids.new(f"{first.lower()}_{last.lower()}_", 4)
        city, state, zip_prefix = rng.choice(seed_gen._CITIES)
        methods: dict[str, Doc] = {}
        for source in rng.sample(["credit_card", "paypal", "gift_card"], rng.randint(1, 3)):
            method_id = ids.new(f"{source}_", 7)
            method: Doc = {"source": source, "id": method_id}
            if source == "credit_card":
                method |= {"brand": rng.choice(seed_gen._BRANDS), "last_four": f"{rng.randint(0, 9999):04d}"}
            elif source == "gift_card":
                method["balance"] = float(round(rng.uniform(0, 400), 2))
            methods[method_id] = method
        address2 = rng.choice(["", f"Apt {rng.randint(1, 40)}", f"Suite {rng.randint(100, 999)}"])
        people[user_id] = {
            "user_id": user_id,
            "name": {"first_name": first, "last_name": last},
            "address": seed_gen._address(f"{rng.randint(1, 999)} {rng.choice(seed_gen._STREETS)}", address2,
                                         city, state, f"{zip_prefix}{rng.randint(0, 999):03d}"),
            "email": f"{first.lower()}.{last.lower()}{rng.randint(1000, 9999)}@example.com",
            "payment_methods": methods,
            "orders": [],
        }

    stock = [(pid, item_id) for pid, product in catalog.items() for item_id in product["variants"]]
    buyers = sorted(people)
    statuses = rng.choices(list(_STATUS_WEIGHTS), list(_STATUS_WEIGHTS.values()), k=orders)
    placed: dict[str, Doc] = {}
    for status in statuses:
        user = people[rng.choice(buyers)]
        order_id = ids.new("#W", 7)
        items = [seed_gen._item(catalog, *rng.choice(stock)) for _ in range(rng.randint(1, 5))]
        amount = round(sum(item["price"] for item in items), 2)
        method_id = rng.choice(sorted(user["payment_methods"]))
        payments = [("payment", amount, method_id)]
        reason = None
        if status == "cancelled":
            payments.append(("refund", amount, method_id))
            reason = rng.choice(["no longer needed", "ordered by mistake"])
        tracking = ids.new("", 12) if status in ("processed", "delivered") else None
        placed[order_id] = seed_gen._order(order_id, user, items, status, tracking, payments, reason)
        user["orders"].append(order_id)
    return {"products": catalog, "users": people, "orders": placed}


# ---------------------------------------------------------------------------------------------------
# Picking the records a trial works on.


def returnable_order(docs: Docs) -> tuple[Doc, Doc]:
    """A delivered order (preferably with 2+ items) and its owner, paid with a method in the profile."""
    fallback: tuple[Doc, Doc] | None = None
    for order in docs["orders"].values():
        user = docs["users"].get(order["user_id"])
        if order["status"] != "delivered" or user is None or not order["payment_history"]:
            continue
        if order["payment_history"][0]["payment_method_id"] not in user["payment_methods"]:
            continue
        if len(order["items"]) >= 2:
            return order, user
        fallback = fallback or (order, user)
    if fallback is None:
        raise ValueError("the DB has no delivered order that can be returned")
    return fallback


def return_call(order: Mapping[str, Any], call_id: str = "w1") -> ToolCall:
    """return_delivered_order_items of the order's first item, refunded to the original payment method."""
    return ToolCall(id=call_id, name=RETURN, arguments={
        "order_id": order["order_id"],
        "item_ids": [order["items"][0]["item_id"]],
        "payment_method_id": order["payment_history"][0]["payment_method_id"],
    })


def _pending_orders(docs: Docs) -> list[Doc]:
    return [o for o in docs["orders"].values() if o["status"] == "pending"
            and o["user_id"] in docs["users"]
            and all(p["payment_method_id"] in docs["users"][o["user_id"]]["payment_methods"]
                    for p in o["payment_history"])]


def write_plan(docs: Docs, count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` write calls that all succeed in order on a fresh `docs` DB.

    The first four are one typical trial: a return, a cancellation (a refund that may touch a gift card,
    so two documents), an order address change and a profile address change. Further writes alternate
    order and profile address changes over distinct records (cycling when the DB runs out)."""
    order, _user = returnable_order(docs)
    pending = _pending_orders(docs)
    if len(pending) < 2:
        raise ValueError("the DB needs at least two pending orders")
    users = list(docs["users"])
    address = {"address1": "1 Benchmark Way", "address2": "Suite 5", "city": "Austin", "state": "TX",
               "country": "USA", "zip": "78701"}
    typical: list[tuple[str, dict[str, Any]]] = [
        (RETURN, dict(return_call(order).arguments)),
        ("cancel_pending_order", {"order_id": pending[0]["order_id"], "reason": "no longer needed"}),
        ("modify_pending_order_address", {"order_id": pending[1]["order_id"], **address}),
        ("modify_user_address", {"user_id": users[0], **address}),
    ]
    plan = typical[:count]
    more_orders = itertools.cycle(pending[2:] or pending[1:2])
    more_users = itertools.cycle(users[1:] or users)
    while len(plan) < count:
        if len(plan) % 2 == 0:
            plan.append(("modify_pending_order_address", {"order_id": next(more_orders)["order_id"], **address}))
        else:
            plan.append(("modify_user_address", {"user_id": next(more_users), **address}))
    return plan


# ---------------------------------------------------------------------------------------------------
# Ledgers.


@dataclass
class LedgerSetup:
    """A mid-trial ledger: the customer authenticated, their profile, the order being returned and its
    products read, plus filler records; and the write the agent is about to propose."""

    ledger: Ledger
    order: Doc
    user: Doc
    call: ToolCall
    steps: int  # how many absorbs built it (the step counter a session would be at)


def _fresh_id(rng: random.Random, used: set[str], prefix: str, digits: int) -> str:
    while True:
        value = prefix + str(rng.randrange(10 ** (digits - 1), 10**digits))
        if value not in used:
            used.add(value)
            return value


def _reads_for(kind: str, doc: Doc) -> tuple[str, dict[str, Any]]:
    if kind == "orders":
        return "get_order_details", {"order_id": doc["order_id"]}
    if kind == "users":
        return "get_user_details", {"user_id": doc["user_id"]}
    return "get_product_details", {"product_id": doc["product_id"]}


def _filler(docs: Docs, exclude: set[str], rng: random.Random) -> Iterator[tuple[str, dict[str, Any], Doc]]:
    """Endless (tool, arguments, record): first the DB's own records, then copies under fresh ids; orders,
    users and products interleaved in the DB's proportions."""
    used = set(docs["orders"]) | set(docs["users"]) | set(docs["products"])
    for generation in itertools.count():
        stream: list[tuple[float, str, Doc]] = []
        for kind in ("orders", "users", "products"):
            records = list(docs[kind].values())
            stream += [(n / len(records), kind, record) for n, record in enumerate(records)]
        stream.sort(key=lambda entry: entry[0])
        for _, kind, record in stream:
            if generation == 0:
                key = record.get("order_id") or record.get("user_id") or record["product_id"]
                if key in exclude:
                    continue
                clone = copy.deepcopy(record)
            else:
                clone = copy.deepcopy(record)
                if kind == "orders":
                    clone["order_id"] = _fresh_id(rng, used, "#W", 7)
                elif kind == "users":
                    first, last = clone["name"]["first_name"], clone["name"]["last_name"]
                    clone["user_id"] = _fresh_id(rng, used, f"{first.lower()}_{last.lower()}_", 4)
                else:
                    clone["product_id"] = _fresh_id(rng, used, "", 10)
            tool, arguments = _reads_for(kind, clone)
            yield tool, arguments, clone


def build_ledger(docs: Docs, size: int, *, seed: int = 7) -> LedgerSetup:
    """A retail ledger of exactly `size` records (at least the trial's own ~5), absorbed read by read."""
    order, user = returnable_order(docs)
    ledger = Ledger(DOMAIN.path_map)
    counter = itertools.count(1)

    def absorb(tool: str, arguments: dict[str, Any], result: Any) -> None:
        number = next(counter)
        call = ToolCall(id=f"call_{number}", name=tool, arguments=arguments)
        outcome = ledger.absorb(call, result, step=number)
        if not outcome.touched:
            raise RuntimeError(f"{tool}{arguments} was not absorbed: {outcome.skipped}")

    # The trial itself, in the order an agent reads it.
    absorb("find_user_id_by_email", {"email": user["email"]}, user["user_id"])
    absorb("get_user_details", {"user_id": user["user_id"]}, copy.deepcopy(user))
    absorb("get_order_details", {"order_id": order["order_id"]}, copy.deepcopy(order))
    product_ids = list(dict.fromkeys(item["product_id"] for item in order["items"]))
    for product_id in product_ids:
        absorb("get_product_details", {"product_id": product_id}, copy.deepcopy(docs["products"][product_id]))
    exclude = {user["user_id"], order["order_id"], *product_ids}
    filler = _filler(docs, exclude, random.Random(seed))
    while len(ledger) < size:
        tool, arguments, record = next(filler)
        absorb(tool, arguments, record)
    return LedgerSetup(ledger=ledger, order=order, user=user, call=return_call(order),
                       steps=next(counter) - 1)
