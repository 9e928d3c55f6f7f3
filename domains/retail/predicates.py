"""Retail policy as executable predicates over the ledger.

Each predicate is one sentence of `policy.md`, checked against observed records only. Reading rules:

- `view.get/require` is the only way to see the ledger; every path read becomes the verdict's evidence.
  Stale or absent evidence that a rule needs makes the gate answer REVISE ("read X first").
- Severity follows "can the model fix this by changing the call?". A wrong argument (cancel reason, item
  list, payment method) is REVISE. A fact about the world that no argument can change (the order is
  someone else's, or not in the required status) is BLOCK; the check still reads a fresh order, so a
  status that may have changed since a write asks for a re-read (REVISE) rather than a refusal.
- Before the customer is authenticated only `retail.authenticated` complains; rules that need to know
  the customer say so with `@for_customer` and pass with a note instead of piling up the same complaint.
- Money is compared in whole cents (`core.money`), exactly as the mock backend compares it, so at a gift
  card balance equal to the charge the gate and the tool agree.
- The customer's explicit "yes" is read from what they said (core.conversation): `retail.explicit_confirmation`.
  A user id they state never identifies them ("even when the user already provides the user id").
- What a predicate cannot see (one tool call per turn, invented facts, whether all items were collected
  first) is not faked here; `policy.md` lists it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.conversation_rules import explicitly_confirmed
from core.gate import (
    GateContext,
    LedgerView,
    MissingEvidence,
    Outcome,
    Pass,
    Predicate,
    Verdict,
    Violation,
    predicate,
    requires_customer,
)
from core.money import cents, covers, show, total_cents
from core.tools import ToolCall, call_text
from domains.retail.paths import AUTH_PATH, PROFILE_PATH

CANCEL = "cancel_pending_order"
MODIFY_ADDRESS = "modify_pending_order_address"
MODIFY_ITEMS = "modify_pending_order_items"
MODIFY_PAYMENT = "modify_pending_order_payment"
MODIFY_USER_ADDRESS = "modify_user_address"
RETURN = "return_delivered_order_items"
EXCHANGE = "exchange_delivered_order_items"

ORDER_WRITES = (CANCEL, MODIFY_ADDRESS, MODIFY_ITEMS, MODIFY_PAYMENT, RETURN, EXCHANGE)
ALL_WRITES = (*ORDER_WRITES, MODIFY_USER_ADDRESS)
PENDING_MODIFICATIONS = (MODIFY_ADDRESS, MODIFY_ITEMS, MODIFY_PAYMENT)
ITEM_SWAPS = (MODIFY_ITEMS, EXCHANGE)

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
ITEMS_MODIFIED = "pending (item modified)"


# ---------------------------------------------------------------------------------------------------
# Reading helpers: how a rule gets the records it needs, and what to tell the model when they are missing.


def _customer(view: LedgerView, ctx: GateContext) -> str | None:
    """Who is authenticated; reading auth.user_id through the view makes it part of the evidence."""
    view.get(AUTH_PATH)
    return ctx.customer_id


def _order(view: LedgerView, call: ToolCall) -> tuple[str, Mapping[str, Any]]:
    order_id = str(call.arguments.get("order_id", ""))
    note = "" if order_id.startswith("#") else " (order ids include the leading '#', e.g. '#W1234567')"
    read_call = call_text("get_order_details", order_id=order_id)
    order: Mapping[str, Any] = view.need(f"orders.{order_id}", read_call, note)
    return order_id, order


def _profile(view: LedgerView, customer: str) -> tuple[str, Mapping[str, Any]]:
    """(path, profile) of the authenticated customer. `user` is set only when the profile is read after the
    customer was found; a profile read before that lands only at `users.<id>`. Falling back to that path
    keeps the verdict independent of which of the two reads came first; both paths go
    stale together after a money write, and the reason cites the path the facts came from."""
    path = PROFILE_PATH if view.has(PROFILE_PATH) else f"users.{customer}"
    profile: Mapping[str, Any] = view.need(path, call_text("get_user_details", user_id=customer))
    return path, profile


def _ids(call: ToolCall, name: str) -> list[str]:
    value = call.arguments.get(name, [])
    return [str(v) for v in value] if isinstance(value, list) else []


def _order_lines(order: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = order.get("items", [])
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _payments(order: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    history = order.get("payment_history", [])
    return [p for p in history if isinstance(p, Mapping)] if isinstance(history, list) else []


def _gift_cards(profile: Mapping[str, Any]) -> list[str]:
    methods = profile.get("payment_methods", {})
    return sorted(pid for pid, m in methods.items() if isinstance(m, Mapping) and m.get("source") == "gift_card")


@dataclass(frozen=True)
class _Swap:
    """One old item -> new item pair of a modify/exchange call, with the records it is judged against."""

    old_id: str
    new_id: str
    line: Mapping[str, Any] | None  # the order line holding old_id; None when the order has no such item
    product: Mapping[str, Any] | None  # products.<line.product_id>; None when not observed

    @property
    def product_id(self) -> str:
        return str(self.line.get("product_id", "")) if self.line is not None else ""

    @property
    def new_variant(self) -> Mapping[str, Any] | None:
        variants = self.product.get("variants", {}) if self.product is not None else {}
        variant = variants.get(self.new_id) if isinstance(variants, Mapping) else None
        return variant if isinstance(variant, Mapping) else None


def _swaps(view: LedgerView, call: ToolCall, order: Mapping[str, Any]) -> list[_Swap]:
    lines = {str(line.get("item_id")): line for line in _order_lines(order)}
    swaps: list[_Swap] = []
    for old_id, new_id in zip(_ids(call, "item_ids"), _ids(call, "new_item_ids"), strict=False):
        line = lines.get(old_id)
        product = view.get(f"products.{line.get('product_id')}") if line is not None else None
        swaps.append(_Swap(old_id, new_id, line, product if isinstance(product, Mapping) else None))
    return swaps


def _products_missing(swaps: Sequence[_Swap]) -> MissingEvidence | None:
    product_ids = sorted({s.product_id for s in swaps if s.line is not None and s.product is None})
    if not product_ids:
        return None
    reads = ", ".join(call_text("get_product_details", product_id=pid) for pid in product_ids)
    return MissingEvidence(
        paths=tuple(f"products.{pid}" for pid in product_ids),
        reason=f"Read {reads} (the product id is on the order line; it is not the item id)",
    )


# ---------------------------------------------------------------------------------------------------
# Who may act on what.

for_customer = requires_customer("retail.authenticated", _customer, "no authenticated customer yet")
# Rules about a record the call names (a reservation, order, appointment, medical record, a patient's
# calendar or insurance) stand aside until someone is identified: before that the record may be anyone's,
# and a "read it first" hint would ask the agent to read a stranger's data.
# Only ctx is consulted, so the evidence stays the record the rule judges.
once_identified = requires_customer("retail.authenticated", lambda view, ctx: ctx.customer_id,
                                    "no authenticated customer yet")


@predicate(
    id="retail.authenticated",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="Authenticate the customer with find_user_id_by_email or find_user_id_by_name_zip before "
           "changing anything, even when they tell you their user id.",
)
def authenticated(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    if _customer(view, ctx) is None:
        return Violation(
            "no customer has been authenticated in this conversation (auth.user_id is not set); find their "
            "user id with find_user_id_by_email or find_user_id_by_name_zip first"
        )
    return Pass()


@predicate(
    id="retail.order_owned_by_customer",
    tools=ORDER_WRITES,
    severity=Verdict.BLOCK,
    policy="Only act on orders that belong to the authenticated customer; refuse requests about anyone "
           "else's orders.",
)
@for_customer
def order_owned_by_customer(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    owner = order.get("user_id")
    if owner != customer:
        return Violation(
            f"order {order_id} belongs to {owner!r} (orders.{order_id}.user_id), not to the authenticated "
            f"customer {customer!r} (auth.user_id)"
        )
    return Pass()


@predicate(
    id="retail.user_is_customer",
    tools=[MODIFY_USER_ADDRESS],
    severity=Verdict.BLOCK,
    policy="Only the authenticated customer's own profile address can be changed.",
)
@for_customer
def user_is_customer(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    user_id = call.arguments.get("user_id")
    if user_id != customer:
        return Violation(f"user_id {user_id!r} is not the authenticated customer {customer!r} (auth.user_id)")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Order status preconditions. BLOCK: no argument change makes a wrong status right.


@predicate(
    id="retail.cancel_requires_pending",
    tools=[CANCEL],
    severity=Verdict.BLOCK,
    policy="Only an order whose status is exactly 'pending' can be cancelled; check the status first.",
)
@once_identified
def cancel_requires_pending(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    status = order.get("status")
    if status != "pending":
        return Violation(
            f"order {order_id} has status {status!r} (orders.{order_id}.status); only 'pending' orders can "
            "be cancelled"
        )
    return Pass()


@predicate(
    id="retail.cancel_reason_valid",
    tools=[CANCEL],
    severity=Verdict.REVISE,
    policy="The cancellation reason must be 'no longer needed' or 'ordered by mistake'.",
)
def cancel_reason_valid(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    reason = call.arguments.get("reason")
    if reason not in CANCEL_REASONS:
        return Violation(
            f"reason {reason!r} is not accepted; ask the customer which applies: "
            f"{' or '.join(repr(r) for r in CANCEL_REASONS)}"
        )
    return Pass()


@predicate(
    id="retail.modify_requires_pending",
    tools=PENDING_MODIFICATIONS,
    severity=Verdict.BLOCK,
    policy="Only a 'pending' order can be modified (shipping address, payment method or items); check the "
           "status first.",
)
@once_identified
def modify_requires_pending(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    status = order.get("status")
    if status == ITEMS_MODIFIED:
        return Pass("items already modified: see retail.items_modified_once")
    if status != "pending":
        return Violation(
            f"order {order_id} has status {status!r} (orders.{order_id}.status); only 'pending' orders can "
            "be modified"
        )
    return Pass()


@predicate(
    id="retail.items_modified_once",
    tools=PENDING_MODIFICATIONS,
    severity=Verdict.BLOCK,
    policy="Items of a pending order can be modified only once; after that the order can no longer be "
           "modified or cancelled.",
)
@once_identified
def items_modified_once(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    status = order.get("status")
    if status == ITEMS_MODIFIED:
        return Violation(
            f"the items of order {order_id} were already modified (orders.{order_id}.status is "
            f"{status!r}); the order cannot be changed any more"
        )
    return Pass()


@predicate(
    id="retail.return_exchange_requires_delivered",
    tools=[RETURN, EXCHANGE],
    severity=Verdict.BLOCK,
    policy="Only a 'delivered' order can be returned or exchanged, and only once; check the status first.",
)
@once_identified
def return_exchange_requires_delivered(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    status = order.get("status")
    if status == "delivered":
        return Pass()
    already = ("; a return or exchange was already requested for it"
               if status in ("return requested", "exchange requested") else "")
    action = "returned" if call.name == RETURN else "exchanged"
    return Violation(
        f"order {order_id} has status {status!r} (orders.{order_id}.status); only 'delivered' orders can be "
        f"{action}{already}"
    )


# ---------------------------------------------------------------------------------------------------
# Item lists.


@predicate(
    id="retail.item_lists_well_formed",
    tools=[MODIFY_ITEMS, RETURN, EXCHANGE],
    severity=Verdict.REVISE,
    policy="Name at least one item; when swapping items, give exactly one replacement per item, and each "
           "replacement must be a different item from the one it replaces.",
)
def item_lists_well_formed(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    old = _ids(call, "item_ids")
    if not old:
        return Violation("item_ids is empty; name at least one item of the order")
    if call.name not in ITEM_SWAPS:
        return Pass()
    new = _ids(call, "new_item_ids")
    if len(new) != len(old):
        return Violation(
            f"item_ids has {len(old)} items {old} but new_item_ids has {len(new)} {new}; give exactly one "
            "replacement for each item, in the same order"
        )
    unchanged = [o for o, n in zip(old, new, strict=True) if o == n]
    if unchanged:
        return Violation(f"items {unchanged} would be replaced by themselves; pick a different variant")
    return Pass()


@predicate(
    id="retail.items_in_order",
    tools=[MODIFY_ITEMS, RETURN, EXCHANGE],
    severity=Verdict.REVISE,
    policy="Every item named must be in the order, as many times as it is named (an item listed twice must "
           "appear twice in the order).",
)
@once_identified
def items_in_order(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    lines = _order_lines(order)
    held = [str(line.get("item_id")) for line in lines]
    product_ids = {str(line.get("product_id")) for line in lines}
    problems: list[str] = []
    requested = _ids(call, "item_ids")
    for item_id in dict.fromkeys(requested):
        wanted, present = requested.count(item_id), held.count(item_id)
        if present == 0:
            mixup = " (that is a product id, not an item id)" if item_id in product_ids else ""
            problems.append(f"{item_id!r} is not in the order{mixup}")
        elif wanted > present:
            times = "once" if present == 1 else f"{present} times"
            problems.append(f"{item_id!r} is listed {wanted} times but the order holds it {times}")
    if problems:
        return Violation(f"{'; '.join(problems)} (orders.{order_id}.items has item ids {held})")
    return Pass()


@predicate(
    id="retail.replacement_is_available_variant",
    tools=ITEM_SWAPS,
    severity=Verdict.REVISE,
    policy="A replacement must be an available variant of the same product as the item it replaces, as "
           "shown by get_product_details for that product.",
)
@once_identified
def replacement_is_available_variant(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    swaps = _swaps(view, call, order)
    problems: list[str] = []
    for swap in swaps:
        if swap.line is None or swap.product is None:
            continue  # an unknown old item is retail.items_in_order's to report; a missing product: below
        pid, name = swap.product_id, swap.product.get("name", "?")
        variant = swap.new_variant
        if variant is None:
            known = sorted(swap.product.get("variants", {}))
            problems.append(
                f"{swap.new_id!r} is not a variant of product {pid} ({name}), which item {swap.old_id!r} "
                f"belongs to (products.{pid}.variants has {known})"
            )
        elif variant.get("available") is not True:
            problems.append(
                f"variant {swap.new_id!r} of {name} {variant.get('options', {})} is not available "
                f"(products.{pid}.variants.{swap.new_id}.available is {variant.get('available')!r})"
            )
    if problems:
        return Violation("; ".join(problems))
    missing = _products_missing(swaps)
    return missing if missing is not None else Pass()


# ---------------------------------------------------------------------------------------------------
# Payment and refund methods.


@predicate(
    id="retail.payment_method_in_profile",
    tools=[MODIFY_ITEMS, MODIFY_PAYMENT, RETURN, EXCHANGE],
    severity=Verdict.REVISE,
    policy="Any payment or refund method must be one of the authenticated customer's own payment methods, "
           "as read from their profile.",
)
@for_customer
def payment_method_in_profile(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    method_id = call.arguments.get("payment_method_id")
    path, profile = _profile(view, customer)
    methods = profile.get("payment_methods", {})
    if method_id not in methods:
        return Violation(
            f"payment method {method_id!r} is not in the customer's profile ({path}."
            f"payment_methods has {sorted(methods)})"
        )
    return Pass()


@predicate(
    id="retail.refund_to_original_or_gift_card",
    tools=[RETURN],
    severity=Verdict.REVISE,
    policy="A return is refunded either to the order's original payment method or to a gift card already "
           "in the customer's profile.",
)
@for_customer
def refund_to_original_or_gift_card(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    chosen = call.arguments.get("payment_method_id")
    payments = _payments(order)
    original = [str(payments[0].get("payment_method_id"))] if payments else []
    if chosen in original:
        return Pass()
    path, profile = _profile(view, customer)
    gift_cards = _gift_cards(profile)
    if chosen in gift_cards:
        return Pass()
    return Violation(
        f"refunds must go to the original payment ({original}) or an existing gift card ({gift_cards}); "
        f"you chose {chosen!r} (orders.{order_id}.payment_history[0].payment_method_id, gift cards in "
        f"{path}.payment_methods)"
    )


@predicate(
    id="retail.payment_change_single_payment",
    tools=[MODIFY_PAYMENT],
    severity=Verdict.BLOCK,
    policy="The payment method of an order can be changed only while the order has exactly one payment.",
)
@once_identified
def payment_change_single_payment(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    payments = _payments(order)
    if len(payments) != 1:
        used = [(p.get("transaction_type"), p.get("payment_method_id"), p.get("amount")) for p in payments]
        return Violation(
            f"order {order_id} has {len(payments)} payment records (orders.{order_id}.payment_history: "
            f"{used}); its payment can be changed only while it has exactly one payment"
        )
    return Pass()


@predicate(
    id="retail.payment_change_new_method",
    tools=[MODIFY_PAYMENT],
    severity=Verdict.REVISE,
    policy="A payment change must move the order to a different payment method than the one it was paid with.",
)
@once_identified
def payment_change_new_method(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id, order = _order(view, call)
    payments = _payments(order)
    chosen = call.arguments.get("payment_method_id")
    current = payments[0].get("payment_method_id") if payments else None
    if chosen == current:
        return Violation(
            f"order {order_id} is already paid with {current!r} "
            f"(orders.{order_id}.payment_history[0].payment_method_id); choose a different method"
        )
    return Pass()


@predicate(
    id="retail.gift_card_covers_amount",
    tools=[MODIFY_ITEMS, MODIFY_PAYMENT, EXCHANGE],
    severity=Verdict.REVISE,
    policy="A gift card used to pay must have enough balance: for the price difference of an item change, "
           "or for the order amount of a payment change.",
)
@for_customer
def gift_card_covers_amount(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    method_id = str(call.arguments.get("payment_method_id"))
    path, profile = _profile(view, customer)
    method = profile.get("payment_methods", {}).get(method_id)
    if not isinstance(method, Mapping) or method.get("source") != "gift_card":
        return Pass("not a gift card in the profile")
    balance = method.get("balance", 0.0)
    if isinstance(balance, bool) or not isinstance(balance, int | float):
        return Violation(f"gift card {method_id!r} shows no balance ({path}.payment_methods.{method_id}.balance)")
    order_id, order = _order(view, call)
    if call.name == MODIFY_PAYMENT:
        payments = _payments(order)
        if not payments:
            return Pass("the order has no payment to move")
        charge = cents(float(payments[0].get("amount", 0.0)))
        needed = f"the order amount {show(charge)} (orders.{order_id}.payment_history[0].amount)"
    else:
        swaps = _swaps(view, call, order)
        missing = _products_missing(swaps)
        if missing is not None:
            return missing
        priced = [(s, line["price"], variant["price"]) for s in swaps
                  if (line := s.line) is not None and (variant := s.new_variant) is not None]
        if len(priced) != len(swaps):
            return Pass("unknown items or variants are reported by other rules")
        charge = total_cents(float(new) for _, _, new in priced) - total_cents(float(old) for _, old, _ in priced)
        terms = " + ".join(f"({new} [products.{s.product_id}.variants.{s.new_id}.price] - {old} [item "
                           f"{s.old_id} in orders.{order_id}.items])" for s, old, new in priced)
        needed = f"the price difference {show(charge)} = {terms}"
    if not covers(balance, charge):
        return Violation(
            f"gift card {method_id!r} has a balance of {show(cents(balance))} ({path}."
            f"payment_methods.{method_id}.balance), less than {needed}; choose another payment method"
        )
    return Pass()


# ---------------------------------------------------------------------------------------------------
# What the customer said.


@predicate(
    id="retail.explicit_confirmation",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="Before any action that changes an order or the profile, tell the customer exactly what you are about "
           "to do and wait for an explicit \"yes\" before calling the tool.",
)
def explicit_confirmation(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    """Upstream: "Before taking any action that updates the database (cancel, modify, return, exchange), you must
    list the action details and obtain explicit user confirmation (yes) to proceed." A cancellation or a return
    also quotes the reason the customer gave, for the operator (the cancellation's own `reason` argument is what
    `retail.cancel_reason_valid` judges)."""
    return explicitly_confirmed(call, view, quote_reason=call.name in (CANCEL, RETURN))


PREDICATES: tuple[Predicate, ...] = (
    authenticated,
    order_owned_by_customer,
    user_is_customer,
    cancel_requires_pending,
    cancel_reason_valid,
    modify_requires_pending,
    items_modified_once,
    return_exchange_requires_delivered,
    item_lists_well_formed,
    items_in_order,
    replacement_is_available_variant,
    payment_method_in_profile,
    refund_to_original_or_gift_card,
    payment_change_single_payment,
    payment_change_new_method,
    gift_card_covers_amount,
    explicit_confirmation,
)
