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
    Item,
    Observation,
    Proposal,
    Question,
    Reads,
    Request,
    find_emails,
    find_names,
    match_items,
    mentions,
    one_of,
    record_to_change,
    spoken,
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


def _item_words(item: Mapping[str, Any]) -> str:
    """"Tablet (black, 64GB, $549.99)": an order item as the customer sees it."""
    options = ", ".join(str(v) for v in item.get("options", {}).values())
    return f"{item.get('name')} ({options + ', ' if options else ''}{_money(item.get('price', 0))})"


def _order(observed: Sequence[Observation], order_id: Any) -> Mapping[str, Any] | None:
    for seen in reversed(observed):
        result = seen.result
        if seen.name == "get_order_details" and isinstance(result, dict) and result.get("order_id") == order_id:
            return result
    return None


def _items_words(observed: Sequence[Observation], order_id: Any, item_ids: Sequence[Any]) -> str:
    """"the Tablet (black, 64GB, $549.99)": the items of an observed order by what they are; ids otherwise."""
    order = _order(observed, order_id)
    known = {str(i.get("item_id")): i for i in (order or {}).get("items", [])}
    words = [f"the {_item_words(known[str(i)])}" if str(i) in known else f"item {i}" for i in item_ids]
    return " and ".join(words) if words else "no items"


def _variant_words(observed: Sequence[Observation], item_id: str) -> str:
    for seen in reversed(observed):
        if seen.name == "get_product_details" and isinstance(seen.result, dict):
            variant = seen.result.get("variants", {}).get(item_id)
            if isinstance(variant, dict):
                return f"the {_item_words({**variant, 'name': seen.result.get('name')})}"
    return f"item {item_id}"


def _methods(observed: Sequence[Observation]) -> Mapping[str, Any]:
    """The payment methods of the profile read last."""
    for seen in reversed(observed):
        if seen.name == "get_user_details" and isinstance(seen.result, dict):
            methods = seen.result.get("payment_methods", {})
            return methods if isinstance(methods, dict) else {}
    return {}


def _method_words(observed: Sequence[Observation], method_id: Any) -> str:
    """"your Mastercard ending 2732", "your gift card gift_card_4821001": a payment method as its owner knows it."""
    method = _methods(observed).get(str(method_id))
    if not isinstance(method, dict):
        return str(method_id)
    if method.get("source") == "credit_card":
        return f"your {str(method.get('brand', 'card')).title()} ending {method.get('last_four')}"
    if method.get("source") == "paypal":
        return "your PayPal account"
    if method.get("source") == "gift_card":
        return f"your gift card {method_id}"
    return str(method_id)


def _named_method(text: str, observed: Sequence[Observation]) -> str | Question | None:
    """The payment method a customer names ("to my Mastercard", "the card ending 2732", "my gift card"); None
    when none is named, a question when the words fit several."""
    words = spoken(text)
    methods = _methods(observed)
    if " gift card" in words:
        source = "gift_card"
    elif " paypal " in words:
        source = "paypal"
    elif any(f" {w} " in words for w in ("card", "credit", "visa", "mastercard", "amex", "discover")) or \
            any(f" {str(m.get('last_four'))} " in words for m in methods.values() if isinstance(m, dict)):
        source = "credit_card"
    else:
        return None
    fits = [mid for mid, m in sorted(methods.items()) if isinstance(m, dict) and m.get("source") == source]
    narrowed = [mid for mid in fits if f" {str(methods[mid].get('brand', '')).lower()} " in words
                or f" {methods[mid].get('last_four')} " in words]
    fits = narrowed or fits
    if len(fits) == 1:
        return fits[0]
    if not fits:
        return Question("I don't see that payment method on your account. Which one shall I use: "
                        f"{one_of([_method_words(observed, m) for m in sorted(methods)])}?") if methods else None
    return Question(f"Which one do you mean: {one_of([_method_words(observed, m) for m in fits])}?")


_SWAP_VERB = re.compile(r"\b(?:exchange|swap|switch|change|modify|replace)\b", re.IGNORECASE)
_INSTEAD = re.compile(r"\b(?:for|to|into|with)\b", re.IGNORECASE)
_NOT_ITEMS = re.compile(r"\b(?:address|payment|card|pay)\b", re.IGNORECASE)  # other writes, not item swaps


def _before_swap(text: str) -> str:
    """What an exchange gives back: the words up to its "for" / "to" ("exchange the black tablet")."""
    verb = _SWAP_VERB.search(text)
    instead = _INSTEAD.search(text, verb.end()) if verb else None
    return text[:instead.start()] if instead else text


def _after_swap(text: str) -> str:
    """What an exchange asks for instead: the words after its "for" / "to" ("for the gold 128GB one")."""
    verb = _SWAP_VERB.search(text)
    instead = _INSTEAD.search(text, verb.end()) if verb else None
    return text[instead.end():] if instead else ""


def _chosen(order: Mapping[str, Any], verb: str, text: str, earlier: str, swap: bool = False) -> list[int] | Question:
    """The indexes of the order's items the customer named, or the question that tells them apart. An answer
    (`text` after `earlier`) picks among the items the earlier request left open."""
    part = _before_swap if swap else (lambda t: t)
    items = [Item(str(i.get("item_id")), str(i.get("name", "")), tuple(str(v) for v in i.get("options", {}).values()))
             for i in order.get("items", [])]
    if not items:
        return Question(f"Order {order.get('order_id')} has no items to {verb}. What would you like me to do?")
    match = match_items(part(earlier or text), items)
    if earlier and match.ambiguous:
        match = match_items(text, items, within=match.chosen)
    if match.ambiguous:
        choices = [f"the {_item_words(order['items'][i])}" for i in match.chosen]
        return Question(f"Which item of order {order.get('order_id')} would you like to {verb}: {one_of(choices)}?")
    return list(match.chosen)


def _product(observed: Sequence[Observation], product_id: str) -> Mapping[str, Any] | None:
    for seen in reversed(observed):
        if (seen.name == "get_product_details" and isinstance(seen.result, dict)
                and str(seen.result.get("product_id")) == product_id):
            return seen.result
    return None


def _variant(product: Mapping[str, Any], old: Mapping[str, Any], wanted: str) -> str | Question:
    """The variant of `product` the customer asked for instead of item `old`: the ones with the most of the
    options said, then the one that keeps most of the rest; a question when that leaves several or none."""
    words = spoken(wanted)
    old_options: Mapping[str, Any] = old.get("options", {})
    scored: list[tuple[int, int, str]] = []
    for item_id, variant in sorted(product.get("variants", {}).items()):
        if item_id == old.get("item_id"):
            continue
        options: Mapping[str, Any] = variant.get("options", {})
        said = sum(mentions(words, str(v)) for v in options.values())
        kept = sum(options.get(k) == v for k, v in old_options.items())
        scored.append((said, kept, item_id))
    best = max(((said, kept) for said, kept, _ in scored if said), default=None)
    fits = [item_id for said, kept, item_id in scored if (said, kept) == best]
    if len(fits) == 1:
        return fits[0]
    offered = fits or [item_id for _, _, item_id in scored]
    variants = product.get("variants", {})
    choices = [f"{', '.join(str(v) for v in variants[i].get('options', {}).values())} "
               f"({_money(variants[i].get('price', 0))})" for i in offered]
    return Question(f"Which {product.get('name')} would you like instead of the {_item_words(old)}: "
                    f"{one_of(choices)}?")


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

    def request(self, text: str, observed: Sequence[Observation], earlier: str = "") -> Request:
        """Cancel, return, exchange or change items of the order the customer named (else the one read last),
        touching only the items named: by id, product name or options ("the black 64GB tablet"). Several
        items fitting one named, or a variant not said, is a `Question`; a product not read yet, `Reads`."""
        named, before = ({"#" + o.lstrip("#") for o in ORDER_ID.findall(t)} for t in (text, earlier))
        if named - before and before:
            earlier = ""  # the answer is about another order: a new request, not an answer
        said = f"{earlier} {text}" if earlier else text
        lowered = said.lower()
        ids = ["#" + o.lstrip("#") for o in ORDER_ID.findall(text) or ORDER_ID.findall(earlier)]
        found = record_to_change(ids, observed, "get_order_details", "order_id", "order")
        if not isinstance(found, Observation):
            return found
        details: Mapping[str, Any] = found.result
        if details.get("status") == "cancelled":
            return None
        order_id = details["order_id"]
        paid = details.get("payment_history") or [{}]
        payment = paid[0].get("payment_method_id")
        if "cancel" in lowered:
            reason = "ordered by mistake" if "mistake" in lowered else "no longer needed"
            return Proposal("cancel_pending_order", {"order_id": order_id, "reason": reason})
        if "return" in lowered and payment:
            chosen = _chosen(details, "return", text, earlier)
            if isinstance(chosen, Question):
                return chosen
            refund = _named_method(text, observed) or (_named_method(earlier, observed) if earlier else None)
            if isinstance(refund, Question):
                return refund
            return Proposal("return_delivered_order_items", {
                "order_id": order_id, "item_ids": [details["items"][i]["item_id"] for i in chosen],
                "payment_method_id": refund or payment})
        swap = _SWAP_VERB.search(said)
        if swap is None or not payment or _NOT_ITEMS.search(said):
            return None
        tool, verb = (("exchange_delivered_order_items", "exchange") if details.get("status") == "delivered"
                      else ("modify_pending_order_items", "change"))
        chosen = _chosen(details, verb, text, earlier, swap=True)
        if isinstance(chosen, Question):
            return chosen
        wanted = _after_swap(said) or (text if earlier else "")
        new_items: list[str] = []
        missing: list[Proposal] = []
        for i in chosen:
            old = details["items"][i]
            product = _product(observed, str(old.get("product_id")))
            if product is None:
                missing.append(Proposal("get_product_details", {"product_id": old.get("product_id")}))
                continue
            variant = _variant(product, old, wanted)
            if isinstance(variant, Question):
                return variant
            new_items.append(variant)
        if missing:
            return Reads(tuple({str(p.arguments["product_id"]): p for p in missing}.values()))
        return Proposal(tool, {"order_id": order_id, "item_ids": [details["items"][i]["item_id"] for i in chosen],
                               "new_item_ids": new_items, "payment_method_id": payment})

    def action(self, proposal: Proposal, observed: Sequence[Observation] = ()) -> str:
        args = proposal.arguments
        order = args.get("order_id")
        items = _items_words(observed, order, args.get("item_ids", []))
        pay = _method_words(observed, args.get("payment_method_id"))
        if proposal.name == "cancel_pending_order":
            return f"cancel order {order} (reason: {args.get('reason')})"
        if proposal.name == "return_delivered_order_items":
            return f"return {items} from order {order} with the refund to {pay}"
        if proposal.name in SWAPS:
            verb = "exchange" if proposal.name == "exchange_delivered_order_items" else "change"
            new = " and ".join(_variant_words(observed, str(i)) for i in args.get("new_item_ids", []))
            return (f"{verb} {items} {'from' if verb == 'exchange' else 'in'} order {order} for {new or 'nothing'}, "
                    f"any price difference paid with or refunded to {pay}")
        if proposal.name == "modify_pending_order_payment":
            return f"change the payment of order {order} to {pay}"
        if proposal.name == "modify_pending_order_address":
            return f"change the shipping address of order {order}"
        if proposal.name == "modify_user_address":
            return f"change the address on account {args.get('user_id')}"
        return super().action(proposal, observed)

    def verify(self, proposal: Proposal) -> list[Proposal]:
        if "order_id" in proposal.arguments:
            return [Proposal("get_order_details", {"order_id": proposal.arguments["order_id"]})]
        if "user_id" in proposal.arguments:
            return [Proposal("get_user_details", {"user_id": proposal.arguments["user_id"]})]
        return []


READER = RetailReader()
