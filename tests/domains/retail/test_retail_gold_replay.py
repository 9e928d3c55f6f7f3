"""tau2-bench gold retail trajectories must pass the gate (the predicates must not refuse correct work).

Gold action lists often write without the reads that justify them, so before each write the replay makes
the reads a careful agent makes (authenticate the order's owner, read the profile, the order and the
products of the items touched), as API.md §11 suggests. Writes that the gate allows are applied to the
in-memory DB with just enough of tau2's semantics to keep statuses, payments and gift card balances right
for the next write of the same task; the real backend lives in mock_backends. Skipped without ../shared.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from core.gate import PolicyGate, Verdict
from core.ledger import Ledger
from core.tools import ToolCall, ToolKind
from domains.retail import DOMAIN, PATH_MAP, PREDICATES

SHARED = Path(__file__).resolve().parents[4] / "shared" / "tau2" / "retail"
pytestmark = [
    pytest.mark.shared,
    pytest.mark.skipif(not (SHARED / "tasks.json").exists(), reason="../shared/tau2/retail is not present"),
]

WRITES = {t.name for t in DOMAIN.tools if t.kind is ToolKind.WRITE}
ADDRESS_FIELDS = ("address1", "address2", "city", "state", "country", "zip")
OPTIONAL_ORDER_FIELDS = ("cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
                         "exchange_price_difference", "return_items", "return_payment_method_id")

# Gold writes that tau2's own tools reject, so the gate refusing them is right.
# Task 64 tries an exchange on a *pending* order before the item modification that succeeds.
EXPECTED_REFUSALS = {("64", "64_6")}

DB = dict[str, Any]


def _read(db: DB, name: str, args: dict[str, Any]) -> Any:
    """tau2's read tools over the raw db.json dict; KeyError stands for the tool's 'not found' error."""
    users, orders, products = db["users"], db["orders"], db["products"]
    if name == "find_user_id_by_email":
        return next(u["user_id"] for u in users.values() if u["email"].lower() == args["email"].lower())
    if name == "find_user_id_by_name_zip":
        return next(u["user_id"] for u in users.values()
                    if (u["name"]["first_name"].lower(), u["name"]["last_name"].lower(), u["address"]["zip"])
                    == (args["first_name"].lower(), args["last_name"].lower(), args["zip"]))
    if name == "get_user_details":
        return copy.deepcopy(users[args["user_id"]])
    if name == "get_order_details":
        return {**dict.fromkeys(OPTIONAL_ORDER_FIELDS), **copy.deepcopy(orders[args["order_id"]])}
    if name == "get_product_details":
        return copy.deepcopy(products[args["product_id"]])
    if name == "get_item_details":
        return next(copy.deepcopy(p["variants"][args["item_id"]]) for p in products.values()
                    if args["item_id"] in p["variants"])
    if name == "list_all_product_types":
        return json.dumps({p["name"]: p["product_id"] for p in products.values()}, sort_keys=True)
    raise KeyError(name)


def _price(db: DB, item_id: str) -> float:
    return float(next(p["variants"][item_id]["price"] for p in db["products"].values() if item_id in p["variants"]))


def _apply(db: DB, name: str, args: dict[str, Any]) -> None:
    """The state changes later writes of the same task depend on (not a full tau2 implementation)."""
    if name == "modify_user_address":
        db["users"][args["user_id"]]["address"] = {k: args[k] for k in ADDRESS_FIELDS}
        return
    order = db["orders"][args["order_id"]]
    methods = db["users"][order["user_id"]]["payment_methods"]

    def credit(method_id: str, amount: float) -> None:
        if methods[method_id]["source"] == "gift_card":
            methods[method_id]["balance"] = round(methods[method_id]["balance"] + amount, 2)

    if name == "cancel_pending_order":
        for paid in list(order["payment_history"]):
            order["payment_history"].append({**paid, "transaction_type": "refund"})
            credit(paid["payment_method_id"], paid["amount"])
        order.update(status="cancelled", cancel_reason=args["reason"])
    elif name == "modify_pending_order_address":
        order["address"] = {k: args[k] for k in ADDRESS_FIELDS}
    elif name == "modify_pending_order_payment":
        first = order["payment_history"][0]
        order["payment_history"] += [
            {"transaction_type": "payment", "amount": first["amount"], "payment_method_id": args["payment_method_id"]},
            {"transaction_type": "refund", "amount": first["amount"], "payment_method_id": first["payment_method_id"]},
        ]
    elif name == "modify_pending_order_items":
        difference = 0.0
        for old, new in zip(args["item_ids"], args["new_item_ids"], strict=True):
            line = next(i for i in order["items"] if i["item_id"] == old)
            difference += _price(db, new) - line["price"]
            line.update(item_id=new, price=_price(db, new))
        credit(args["payment_method_id"], -difference)
        order["status"] = "pending (item modified)"
    elif name == "return_delivered_order_items":
        order["status"] = "return requested"
    elif name == "exchange_delivered_order_items":
        order["status"] = "exchange requested"


def _replay(task: dict[str, Any], db0: DB) -> list[tuple[str, str, Verdict, str]]:
    db, ledger, step = copy.deepcopy(db0), Ledger(PATH_MAP), 0
    verdicts: list[tuple[str, str, Verdict, str]] = []

    def read(name: str, args: dict[str, Any]) -> None:
        nonlocal step
        step += 1
        try:
            result = _read(db, name, args)
        except (KeyError, StopIteration):
            return  # a failed read is not absorbed
        ledger.absorb(ToolCall(id=f"r{step}", name=name, arguments=args), result, step)

    for action in task["evaluation_criteria"]["actions"] or []:
        name, args = action["name"], action["arguments"]
        if name not in WRITES:
            if DOMAIN.kind_of(name) is ToolKind.READ:
                read(name, args)
            continue
        owner = args["user_id"] if "user_id" in args else db["orders"][args["order_id"]]["user_id"]
        if ledger.get("auth.user_id") is None:
            read("find_user_id_by_email", {"email": db["users"][owner]["email"]})
        read("get_user_details", {"user_id": ledger.get("auth.user_id")})
        if "order_id" in args:
            read("get_order_details", {"order_id": args["order_id"]})
            for line in db["orders"][args["order_id"]]["items"]:
                if line["item_id"] in args.get("item_ids", []):
                    read("get_product_details", {"product_id": line["product_id"]})
        call = ToolCall(id=f"w{step}", name=name, arguments=args)
        decision = PolicyGate(PREDICATES, path_map=PATH_MAP).evaluate(call, ledger, DOMAIN.context(ledger))
        verdicts.append((action["action_id"], name, decision.verdict, decision.feedback))
        if decision.verdict is Verdict.ALLOW:
            _apply(db, name, args)
            step += 1
            ledger.mark_stale(call, step)
    return verdicts


def test_gold_writes_pass_the_gate() -> None:
    db0: DB = json.loads((SHARED / "db.json").read_text(encoding="utf-8"))
    tasks: list[dict[str, Any]] = json.loads((SHARED / "tasks.json").read_text(encoding="utf-8"))
    refused: dict[tuple[str, str], str] = {}
    writes = 0
    for task in tasks:
        for action_id, _name, verdict, feedback in _replay(task, db0):
            writes += 1
            if verdict is not Verdict.ALLOW:
                refused[(task["id"], action_id)] = feedback
    assert writes > 50
    assert set(refused) == EXPECTED_REFUSALS, "\n\n".join(refused.values())
