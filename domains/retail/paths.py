"""Where retail read results land in the ledger, what each write can change, which reads the gate may make
itself, and who the customer is.

Ledger layout (one record per path, exactly as the tool returned it):

    auth.user_id          the authenticated customer's id (bare string)
    lookups.<user_id>     a later find_user_id_* result naming someone else (recorded, never trusted as auth)
    user                  the authenticated customer's profile (only when get_user_details read THAT user)
    users.<user_id>       every profile read, including the authenticated customer's
    orders.<order_id>     order records, e.g. orders.#W4821001
    products.<product_id> product records with all variants
    items.<item_id>       single variants from get_item_details (they carry no product id)
    catalog.product_types the name -> product id listing (a JSON string, as tau2-bench returns it)

Identity rule. Authentication is a successful find_user_id_by_email / find_user_id_by_name_zip. The FIRST
one wins for the whole conversation: the policy serves one customer per conversation, so a later lookup
that names a different user must not silently switch whose orders may be changed. Such a lookup is kept
under `lookups.<id>` (visible to the model and the operator) and `auth.user_id` stays as it was. Reading
another user's profile only adds `users.<id>`; it never changes who the customer is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.evidence import EvidenceReads, GateRead, customer_as, record_of
from core.ledger import LedgerReader, PathMap, PathRule, ResultShape, WriteEffect
from core.tools import ToolCall
from domains.retail.conversation import CONVERSATION

AUTH_PATH = "auth.user_id"
PROFILE_PATH = "user"

def identify(ledger: LedgerReader) -> str | None:
    """The authenticated customer's user id, or None before any successful find_user_id_* call."""
    value = ledger.get(AUTH_PATH)
    return value if isinstance(value, str) and value else None


def _authenticates(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """First successful lookup sets the customer; repeating it for the same customer just refreshes it."""
    return isinstance(result, str) and bool(result) and identify(ledger) in (None, result)


def _names_someone_else(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    current = identify(ledger)
    return isinstance(result, str) and bool(result) and current is not None and current != result


def _is_customer_profile(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """Only the authenticated customer's own profile becomes `user`; anyone else's stays under users.*."""
    customer = identify(ledger)
    return customer is not None and isinstance(result, dict) and result.get("user_id") == customer


def _find_user_rules(tool: str) -> tuple[PathRule, ...]:
    return (
        PathRule(tool, AUTH_PATH, when=_authenticates,
                 note="first successful lookup authenticates the customer"),
        PathRule(tool, "lookups.{result}", when=_names_someone_else,
                 note="a later lookup of a different user; does not change the authenticated customer"),
    )


# ---------------------------------------------------------------------------------------------------
# What each write can change (core.ledger.WriteEffect), from tau2's retail tools (mock_backends/retail):
#
#   cancel_pending_order            the order (status, cancel reason, refunds); each gift card it was paid
#                                   with gets its refund at once (that card's balance in the owner's profile)
#   modify_pending_order_address    the order's address
#   modify_pending_order_items      the order (items, status, the payment record); a gift card pays or receives
#                                   the difference (its balance); a credit card or PayPal leaves the profile
#   modify_pending_order_payment    the order's payment history; a gift card among the new and the old method
#                                   (its balance)
#   return_ / exchange_delivered_   the order only (status and the return / exchange fields): the refund or
#     order_items                   the difference is settled later, nothing is paid now
#   modify_user_address             that profile's address
#
# Products, items and the catalogue never change. A gift card is told apart from other methods by the
# owner's profile as observed (a method's source never changes); when the ledger cannot tell, the card's
# balance is taken as changed. Whose profile: the order's owner as observed; unknown, every profile.

ORDER_FIELDS = {
    "cancel_pending_order": ("status", "cancel_reason", "payment_history"),
    "modify_pending_order_address": ("address",),
    "modify_pending_order_items": ("items", "status", "payment_history"),
    "modify_pending_order_payment": ("payment_history",),
    "return_delivered_order_items": ("status", "return_items", "return_payment_method_id"),
    "exchange_delivered_order_items": ("status", "exchange_items", "exchange_new_items",
                                       "exchange_payment_method_id", "exchange_price_difference"),
}


def _order(call: ToolCall, ledger: LedgerReader) -> Mapping[str, Any] | None:
    order = ledger.get(f"orders.{call.arguments.get('order_id')}")
    return order if isinstance(order, Mapping) else None


def _owner(call: ToolCall, ledger: LedgerReader) -> str | None:
    """The order's owner as observed (an order never changes hands), or None when it was never read."""
    order = _order(call, ledger)
    owner = order.get("user_id") if order is not None else None
    return owner if isinstance(owner, str) and owner else None


def _owner_profiles(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    owner = _owner(call, ledger)
    if owner is None:
        return ("users.*", PROFILE_PATH)
    return (f"users.{owner}", PROFILE_PATH) if owner == identify(ledger) else (f"users.{owner}",)


def _is_gift_card(ledger: LedgerReader, owner: str | None, method_id: str) -> bool:
    """True unless the owner's profile as observed shows `method_id` is not a gift card."""
    profile = ledger.get(f"users.{owner}") if owner is not None else None
    methods = profile.get("payment_methods") if isinstance(profile, Mapping) else None
    method = methods.get(method_id) if isinstance(methods, Mapping) else None
    return not isinstance(method, Mapping) or method.get("source") == "gift_card"


def _balance(method_id: str) -> str:
    return f"payment_methods.{method_id}.balance"


def _paid_with(call: ToolCall, ledger: LedgerReader) -> list[str] | None:
    """The methods of the order's payment history as observed, or None when it may have changed since."""
    entry = ledger.entry(f"orders.{call.arguments.get('order_id')}")
    if entry is None or not isinstance(entry.value, Mapping) or not entry.fresh_at("payment_history"):
        return None
    history = entry.value.get("payment_history")
    return [str(p.get("payment_method_id")) for p in history if isinstance(p, Mapping)] \
        if isinstance(history, list) else None


def _cancel_refunds(call: ToolCall, ledger: LedgerReader) -> list[str] | None:
    """The balances a cancellation refunds at once: every gift card the order was paid with."""
    methods = _paid_with(call, ledger)
    if methods is None:
        return ["payment_methods"]
    owner = _owner(call, ledger)
    return [_balance(m) for m in dict.fromkeys(methods) if _is_gift_card(ledger, owner, m)]


def _new_method_balance(call: ToolCall, ledger: LedgerReader) -> list[str]:
    """The new method's balance when it is a gift card (it pays or receives the difference), else nothing."""
    method = str(call.arguments.get("payment_method_id", ""))
    return [_balance(method)] if _is_gift_card(ledger, _owner(call, ledger), method) else []


def _payment_swap_balances(call: ToolCall, ledger: LedgerReader) -> list[str] | None:
    """A payment change charges the new method and refunds the old one: each balance of a gift card."""
    methods = _paid_with(call, ledger)
    if methods is None:  # the old method is not known: any of the owner's cards may be refunded
        return ["payment_methods"]
    owner = _owner(call, ledger)
    swapped = [str(call.arguments.get("payment_method_id", "")), *methods[:1]]
    return [_balance(m) for m in dict.fromkeys(swapped) if _is_gift_card(ledger, owner, m)]


def _user_profiles(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    user_id = str(call.arguments.get("user_id", ""))
    return (f"users.{user_id}", PROFILE_PATH) if user_id == identify(ledger) else (f"users.{user_id}",)


WRITE_EFFECTS = (
    *(WriteEffect(tool, ("orders.{order_id}",), fields) for tool, fields in ORDER_FIELDS.items()),
    WriteEffect("cancel_pending_order", _owner_profiles, _cancel_refunds, note="refunds to gift cards at once"),
    WriteEffect("modify_pending_order_items", _owner_profiles, _new_method_balance,
                note="a gift card pays or receives the price difference"),
    WriteEffect("modify_pending_order_payment", _owner_profiles, _payment_swap_balances,
                note="a gift card pays the order, or gets the old payment back"),
    WriteEffect("modify_user_address", _user_profiles, ("address",)),
)


# ---------------------------------------------------------------------------------------------------
# The reads the gate may make itself (core.evidence): never the identification lookups; a profile or an order
# that is not the customer's is the gate's evidence only.


EVIDENCE_READS = EvidenceReads(
    reads=(
        GateRead(PROFILE_PATH, "get_user_details", customer_as("user_id"), record_of("user_id")),
        GateRead("users.{user_id}", "get_user_details", owner=record_of("user_id")),
        GateRead("orders.{order_id}", "get_order_details", owner=record_of("user_id")),
        GateRead("products.{product_id}", "get_product_details"),
        GateRead("items.{item_id}", "get_item_details"),
        GateRead("catalog.product_types", "list_all_product_types"),
    ),
    identification=frozenset({"find_user_id_by_email", "find_user_id_by_name_zip"}),
)

# Other releases of the retail tools (core.ledger.ResultShape), read into tau2's shapes. tau-bench's own
# `get_user_details` (tau_bench/envs/retail/tools/get_user_details.py, and tau-Trait's copy) returns
# `users[user_id]`, the profile without its `user_id`; the first release of its data wrote the address's state
# as `province`. Its orders and products hold the same fields as tau2's.
SHAPES = (
    ResultShape("get_user_details", key_from=(("user_id", "user_id"),),
                aliases=(("address.province", "address.state"),),
                note="tau-bench's profile: no user_id (it is the record the call named), province for state"),
)

PATH_MAP = PathMap(
    conversation=CONVERSATION,  # what the customer's messages give (domains/retail/conversation.py)
    effect_tools=frozenset(),  # the writes a rule counts (core.ledger.PathMap)
    rules=(
        *_find_user_rules("find_user_id_by_email"),
        *_find_user_rules("find_user_id_by_name_zip"),
        PathRule("get_user_details", "users.{user_id}"),
        PathRule("get_user_details", PROFILE_PATH, when=_is_customer_profile,
                 note="the authenticated customer's own profile"),
        PathRule("get_order_details", "orders.{result.order_id}"),
        PathRule("get_product_details", "products.{result.product_id}"),
        PathRule("get_item_details", "items.{item_id}"),
        PathRule("list_all_product_types", "catalog.product_types"),
    ),
    write_effects=WRITE_EFFECTS,
    shapes=SHAPES,
)
