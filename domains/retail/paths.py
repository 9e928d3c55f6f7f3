"""Where retail read results land in the ledger, what each write makes stale, and who the customer is.

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

from typing import Any

from core.ledger import LedgerReader, PathMap, PathRule, StaleRule
from core.tools import ToolCall

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


# Writes that can move money on a gift card (refunds on cancel, price differences, payment swaps) change
# the customer's profile too, so the profile is stale until read again. `users.*` is deliberately broad:
# the write's arguments do not name the order's owner.
_MONEY_WRITE_STALES = ("orders.{order_id}", PROFILE_PATH, "users.*")

PATH_MAP = PathMap(
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
    stale_rules=(
        StaleRule("cancel_pending_order", _MONEY_WRITE_STALES),
        StaleRule("modify_pending_order_items", _MONEY_WRITE_STALES),
        StaleRule("modify_pending_order_payment", _MONEY_WRITE_STALES),
        StaleRule("modify_pending_order_address", ("orders.{order_id}",)),
        StaleRule("return_delivered_order_items", ("orders.{order_id}",)),
        StaleRule("exchange_delivered_order_items", ("orders.{order_id}",)),
        StaleRule("modify_user_address", ("users.{user_id}", PROFILE_PATH)),
    ),
)
