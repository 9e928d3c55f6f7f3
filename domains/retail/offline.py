"""What a careful retail agent reads around each gold write, and the slips an error-prone one makes.

Used by the offline evaluation (`ledgeragent eval` without --model). The careful reads mirror the gate's
evidence needs: identify the customer, read the profile, read the order right before changing it (its status
may have moved), read the product of every item swapped. The slips are policy violations the tools
themselves may not catch (another customer's order or profile) and ones they do catch (a refund method that
is neither the original payment nor a gift card, a cancellation reason the policy refuses, a payment method
from someone else's profile); the harness reports which ones reached the database.

Everything is computed from the task and the task's starting data (`{products, users, orders}` as the backend
exports it); nothing here calls a backend.

`READER` (at the end) serves the console's offline agent (core.llm.offline_agent) instead: it reads what a
customer types (emails, user ids, names with a zip code, order numbers), names the reads those call for and
the writes a request asks for, and puts records and actions into plain words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.error_profile import FailureKind
from core.evaluation.offline import GoldPlanner, PlannedCall, Violation
from core.evaluation.tasks import Action, Task
from core.llm.offline_agent import (
    PERSON_ID,
    ZIP,
    BaseReader,
    Observation,
    Proposal,
    find_emails,
    find_names,
    latest,
)
from core.tools import ToolKind
from domains.retail.tools import TOOLS

ORDER_WRITES = frozenset({"cancel_pending_order", "modify_pending_order_address", "modify_pending_order_items",
                          "modify_pending_order_payment", "return_delivered_order_items",
                          "exchange_delivered_order_items"})
SWAPS = frozenset({"modify_pending_order_items", "exchange_delivered_order_items"})
PAYS = frozenset({"modify_pending_order_items", "exchange_delivered_order_items", "modify_pending_order_payment"})
WRITES = ORDER_WRITES | {"modify_user_address"}
Data = Mapping[str, Any]


def _lookup(data: Data, name: str, args: Mapping[str, Any]) -> str | None:
    users: Mapping[str, Any] = data.get("users", {})
    if name == "find_user_id_by_email":
        email = str(args.get("email", "")).lower()
        return next((uid for uid, u in users.items() if str(u["email"]).lower() == email), None)
    if name == "find_user_id_by_name_zip":
        key = (str(args.get("first_name", "")).lower(), str(args.get("last_name", "")).lower(), args.get("zip"))
        return next((uid for uid, u in users.items()
                     if (u["name"]["first_name"].lower(), u["name"]["last_name"].lower(), u["address"]["zip"]) == key),
                    None)
    return None


def task_customer(task: Task, data: Data) -> str | None:
    """The customer: the first user a gold lookup finds or a gold action names (an order's owner, a user id),
    else the one whose name and zip the scenario gives. None when nobody can be identified."""
    orders: Mapping[str, Any] = data.get("orders", {})
    users: Mapping[str, Any] = data.get("users", {})
    for action in task.gold_actions:
        found = _lookup(data, action.name, action.arguments)
        if found is not None:
            return found
        order = orders.get(str(action.arguments.get("order_id", "")))
        if order is not None:
            return str(order["user_id"])
        if action.arguments.get("user_id") in users:
            return str(action.arguments["user_id"])
    text = json.dumps(task.user_scenario.model_dump(mode="json"))
    zips = set(re.findall(r"\b\d{5}\b", text))
    hits = [uid for uid, u in users.items()
            if f"{u['name']['first_name']} {u['name']['last_name']}".lower() in text.lower()
            and u["address"]["zip"] in zips]
    return hits[0] if len(hits) == 1 else None


def _item_products(data: Data) -> dict[str, str]:
    return {item: pid for pid, p in data.get("products", {}).items() for item in p["variants"]}


class RetailPlanner(GoldPlanner):
    # the kind of mistake each slip is, for an error profile (core.error_profile)
    failures = {
        "another customer's order": FailureKind.OTHER_CUSTOMER_RECORD,
        "another customer's profile": FailureKind.OTHER_CUSTOMER_RECORD,
        "a payment method from another customer's profile": FailureKind.OTHER_CUSTOMER_RECORD,
        "refund to neither the original payment nor a gift card": FailureKind.REFUND_WRONG_METHOD,
        "a replacement variant that is not available": FailureKind.UNAVAILABLE_VARIANT,
    }

    def opening(self, task: Task, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        customer = task_customer(task, data)
        memo.update(customer=customer, profile=False, orders=set(), products=set(), items=_item_products(data))
        identifies = any(a.name.startswith("find_user_id") and _lookup(data, a.name, a.arguments) is not None
                         for a in task.gold_actions)
        if customer is None or identifies:
            return []
        return [PlannedCall("find_user_id_by_email", {"email": data["users"][customer]["email"]})]

    def after_call(self, call: PlannedCall, memo: dict[str, Any]) -> None:
        args = call.arguments
        if call.name in WRITES:
            memo["profile"] = False
            memo["orders"].clear()
        elif call.name == "get_user_details" and args.get("user_id") == memo["customer"]:
            memo["profile"] = True
        elif call.name == "get_order_details":
            memo["orders"].add(args.get("order_id"))
        elif call.name == "get_product_details":
            memo["products"].add(args.get("product_id"))

    def before_write(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        reads: list[PlannedCall] = []
        customer = memo["customer"]
        if customer is not None and not memo["profile"]:
            reads.append(PlannedCall("get_user_details", {"user_id": customer}))
        order_id = action.arguments.get("order_id")
        if order_id is not None and order_id not in memo["orders"]:
            reads.append(PlannedCall("get_order_details", {"order_id": order_id}))
        touched = [*action.arguments.get("item_ids", []), *action.arguments.get("new_item_ids", [])]
        for product_id in dict.fromkeys(memo["items"][i] for i in touched if i in memo["items"]):
            if product_id not in memo["products"]:
                reads.append(PlannedCall("get_product_details", {"product_id": product_id}))
        return reads

    def after_write(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        """Policy: after changing something, read it again before relying on it (and before telling the
        customer it is done)."""
        order_id = action.arguments.get("order_id")
        if order_id is not None:
            return [PlannedCall("get_order_details", {"order_id": order_id})]
        return [PlannedCall("get_user_details", {"user_id": action.arguments.get("user_id")})]

    def violations(self, action: Action, data: Data, memo: dict[str, Any]) -> list[Violation]:
        customer = memo["customer"]
        if customer is None:
            return []
        args = dict(action.arguments)
        users: Mapping[str, Any] = data["users"]
        found: list[Violation] = []
        if action.name in ORDER_WRITES:
            other = self._other_customers_order(action, data, customer)
            if other is not None:
                found.append(other)
        if action.name == "modify_user_address":
            stranger = next((uid for uid in sorted(users) if uid != customer), None)
            if stranger is not None:
                slip = PlannedCall(action.name, {**args, "user_id": stranger})
                found.append(Violation("another customer's profile", slip,
                                       (PlannedCall("get_user_details", {"user_id": stranger}),)))
        if action.name == "return_delivered_order_items":
            order = data["orders"].get(args.get("order_id"), {})
            original = order.get("payment_history", [{}])[0].get("payment_method_id")
            methods = users[customer]["payment_methods"]
            wrong = next((m for m in sorted(methods) if m != original and methods[m]["source"] != "gift_card"), None)
            if wrong is not None:
                found.append(Violation("refund to neither the original payment nor a gift card",
                                       PlannedCall(action.name, {**args, "payment_method_id": wrong})))
        if action.name in SWAPS:
            unavailable = _unavailable_variant(args, data)
            if unavailable is not None:
                found.append(Violation("a replacement variant that is not available",
                                       PlannedCall(action.name, {**args, "new_item_ids": unavailable}),
                                       profile_only=True))
        if action.name == "cancel_pending_order":
            found.append(Violation("a cancellation reason the policy does not accept",
                                   PlannedCall(action.name, {**args, "reason": "found a better price elsewhere"})))
        if action.name in PAYS:
            foreign = next((m for uid in sorted(users) if uid != customer
                            for m in sorted(users[uid]["payment_methods"]) if m.startswith("credit_card")), None)
            if foreign is not None:
                found.append(Violation("a payment method from another customer's profile",
                                       PlannedCall(action.name, {**args, "payment_method_id": foreign})))
        return found

    def _other_customers_order(self, action: Action, data: Data, customer: str) -> Violation | None:
        """The same write aimed at another customer's order in the same status, with arguments that make
        sense for that order (its own items, a variant of the same product, its owner's payment method)."""
        orders: Mapping[str, Any] = data["orders"]
        mine = orders.get(str(action.arguments.get("order_id", "")))
        if mine is None:
            return None
        for order_id in sorted(orders):
            order = orders[order_id]
            if order["user_id"] == customer or order["status"] != mine["status"] or not order["items"]:
                continue
            arguments = self._retarget(action, order, data)
            if arguments is not None:
                return Violation("another customer's order", PlannedCall(action.name, arguments),
                                 (PlannedCall("get_order_details", {"order_id": order_id}),))
        return None

    @staticmethod
    def _retarget(action: Action, order: Mapping[str, Any], data: Data) -> dict[str, Any] | None:
        args: dict[str, Any] = {**action.arguments, "order_id": order["order_id"]}
        owner = data["users"][order["user_id"]]
        original = order["payment_history"][0]["payment_method_id"]
        plain = [m for m in sorted(owner["payment_methods"]) if owner["payment_methods"][m]["source"] != "gift_card"]
        first = order["items"][0]
        if action.name == "return_delivered_order_items":
            return {**args, "item_ids": [first["item_id"]], "payment_method_id": original}
        if action.name == "modify_pending_order_payment":
            other = next((m for m in plain if m != original), None)
            return None if other is None or len(order["payment_history"]) != 1 else {**args, "payment_method_id": other}
        if action.name in SWAPS:
            variants = data["products"][first["product_id"]]["variants"]
            new = next((i for i in sorted(variants) if i != first["item_id"] and variants[i]["available"]), None)
            if new is None or not plain:
                return None
            return {**args, "item_ids": [first["item_id"]], "new_item_ids": [new], "payment_method_id": plain[0]}
        return args


def _unavailable_variant(args: Mapping[str, Any], data: Data) -> list[str] | None:
    """The swap's new items with the first one replaced by an unavailable variant of the same product (the
    item the customer saw but that is out of stock), or None when that product has none."""
    new = [str(i) for i in args.get("new_item_ids", [])]
    if not new:
        return None
    product = next((p for p in data["products"].values() if new[0] in p["variants"]), None)
    if product is None:
        return None
    gone = next((i for i in sorted(product["variants"]) if not product["variants"][i]["available"]), None)
    return None if gone is None else [gone, *new[1:]]


PLANNER = RetailPlanner()


# -- the console's offline agent: what a customer's words name --------------------------------------------

ORDER_ID = re.compile(r"#?\bW\d{7}\b")


def _money(value: Any) -> str:
    return f"${float(value):,.2f}"


class RetailReader(BaseReader):
    """Reads a retail customer's words for the offline agent (core.llm.offline_agent): emails, user ids,
    first and last names with a zip code, order numbers; and "cancel" / "return" requests on an observed order."""

    writes = frozenset(spec.name for spec in TOOLS if spec.kind is ToolKind.WRITE)
    hint = ("I can find your account from your email, your user id, or your first and last name with your zip "
            "code, and an order from its number (like #W1234567).")

    def reads_for(self, text: str, observed: Sequence[Observation]) -> list[Proposal]:
        reads = [Proposal("find_user_id_by_email", {"email": email}) for email in find_emails(text)]
        reads += [Proposal("get_user_details", {"user_id": uid}) for uid in dict.fromkeys(PERSON_ID.findall(text))]
        zips = ZIP.findall(text)
        if zips and not reads:
            reads += [Proposal("find_user_id_by_name_zip", {"first_name": first, "last_name": last, "zip": zips[0]})
                      for first, last in find_names(text)[:1]]
        reads += [Proposal("get_order_details", {"order_id": "#" + oid.lstrip("#")})
                  for oid in dict.fromkeys(ORDER_ID.findall(text))]
        return reads

    def follow_up(self, seen: Observation, observed: Sequence[Observation]) -> list[Proposal]:
        if seen.name.startswith("find_user_id") and isinstance(seen.result, str):
            return [Proposal("get_user_details", {"user_id": seen.result})]
        return []

    def describe(self, seen: Observation) -> str | None:
        result = seen.result
        if seen.name == "get_user_details" and isinstance(result, dict):
            name = result.get("name", {})
            orders = ", ".join(result.get("orders", [])) or "none"
            return (f"I found your account, {name.get('first_name', '')} {name.get('last_name', '')} "
                    f"({result.get('user_id')}); your orders: {orders}.")
        if seen.name == "get_order_details" and isinstance(result, dict):
            items = "; ".join(f"{i.get('name')} ({', '.join(str(v) for v in i.get('options', {}).values())}, "
                              f"{_money(i.get('price', 0))})" for i in result.get("items", []))
            return f"Order {result.get('order_id')} is {result.get('status')}: {items or 'no items'}."
        if seen.name.startswith("find_user_id") and not isinstance(result, str):
            return "I could not find an account with those details."
        return None

    def request(self, text: str, observed: Sequence[Observation]) -> Proposal | None:
        lowered = text.lower()
        order = latest(observed, "get_order_details")
        if order is None or not isinstance(order.result, dict):
            return None
        details = order.result
        if details.get("status") == "cancelled":
            return None
        if "cancel" in lowered:
            reason = "ordered by mistake" if "mistake" in lowered else "no longer needed"
            return Proposal("cancel_pending_order", {"order_id": details["order_id"], "reason": reason})
        if "return" in lowered and details.get("payment_history"):
            return Proposal("return_delivered_order_items", {
                "order_id": details["order_id"], "item_ids": [i["item_id"] for i in details.get("items", [])],
                "payment_method_id": details["payment_history"][0]["payment_method_id"]})
        return None

    def action(self, proposal: Proposal) -> str:
        args = proposal.arguments
        order = args.get("order_id")
        if proposal.name == "cancel_pending_order":
            return f"cancel order {order} (reason: {args.get('reason')})"
        if proposal.name == "return_delivered_order_items":
            return (f"return item(s) {', '.join(args.get('item_ids', []))} of order {order} with the refund to "
                    f"{args.get('payment_method_id')}")
        if proposal.name == "exchange_delivered_order_items":
            return (f"exchange item(s) {', '.join(args.get('item_ids', []))} of order {order} for "
                    f"{', '.join(args.get('new_item_ids', []))}")
        if proposal.name == "modify_pending_order_items":
            return f"change the items of order {order}"
        if proposal.name == "modify_pending_order_payment":
            return f"change the payment of order {order} to {args.get('payment_method_id')}"
        if proposal.name == "modify_pending_order_address":
            return f"change the shipping address of order {order}"
        if proposal.name == "modify_user_address":
            return f"change the address on account {args.get('user_id')}"
        return super().action(proposal)

    def verify(self, proposal: Proposal) -> list[Proposal]:
        if "order_id" in proposal.arguments:
            return [Proposal("get_order_details", {"order_id": proposal.arguments["order_id"]})]
        if "user_id" in proposal.arguments:
            return [Proposal("get_user_details", {"user_id": proposal.arguments["user_id"]})]
        return []


READER = RetailReader()
