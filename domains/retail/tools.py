"""The 16 retail tools, with tau2-bench's exact names and arguments so tau2 data and trajectories load as-is.

Descriptions are our own and written for the model: they say what each id looks like and which state a
tool expects, because most failed retail calls in tau2-bench come from mixing up product ids and item ids
or from acting on an order in the wrong status. Policy limits that are stricter than the tools (for
example which cancellation reasons are accepted) are deliberately NOT encoded as schema enums: the gate
rejects them with a policy citation, which tells the model why, not just that it was wrong.
"""

from __future__ import annotations

from typing import Any

from core.tools import ToolKind, ToolSpec, closed_object
from core.tools import string_arg as _string

_STRING: dict[str, Any] = {"type": "string"}


def _string_list(description: str) -> dict[str, Any]:
    return {"type": "array", "items": dict(_STRING), "description": description}


def _parameters(**properties: dict[str, Any]) -> dict[str, Any]:
    """Every argument is required and nothing else is accepted, as tau2-bench's Python signatures imply."""
    return closed_object(properties)


_ORDER_ID = _string("The order id, including its leading '#W', e.g. '#W1234567'.")
_USER_ID = _string("The customer's user id as returned by a find_user_id_* tool, e.g. 'jane_doe_1234'.")
_PAYMENT_ID = _string(
    "A payment method id taken from the customer's profile (get_user_details), "
    "e.g. 'gift_card_1234567' or 'credit_card_1234567'."
)
_OLD_ITEMS = _string_list(
    "Item ids (10 digits) of items currently in the order. Item ids are not product ids. "
    "List an id once per unit: if the order holds the same item twice and both are affected, list it twice."
)
_NEW_ITEMS = _string_list(
    "Replacement item ids, in the same order as item_ids: the i-th new item replaces the i-th old item and "
    "must be another available variant of the same product (see get_product_details)."
)


def _address_parameters(owner: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    name, schema = owner
    return _parameters(
        **{name: schema},
        address1=_string("First address line, e.g. '123 Main Street'."),
        address2=_string("Second address line, e.g. 'Apt 1'; an empty string when there is none."),
        city=_string("City, e.g. 'San Francisco'."),
        state=_string("State or region code, e.g. 'CA'."),
        country=_string("Country, e.g. 'USA'."),
        zip=_string("Postal code, e.g. '94105'."),
    )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="find_user_id_by_email",
        description=(
            "Look up a customer's user id from their email address (not case-sensitive). A successful "
            "lookup authenticates the customer for this conversation. Fails with 'User not found'."
        ),
        parameters=_parameters(email=_string("The customer's email address, e.g. 'jane.doe@example.com'.")),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="find_user_id_by_name_zip",
        description=(
            "Look up a customer's user id from their first name, last name and the zip code of their "
            "address. Use it when the customer cannot give an email. A successful lookup authenticates "
            "the customer for this conversation. Fails with 'User not found'."
        ),
        parameters=_parameters(
            first_name=_string("First name, e.g. 'Jane'."),
            last_name=_string("Last name, e.g. 'Doe'."),
            zip=_string("Zip code of the customer's address, e.g. '94105'."),
        ),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_user_details",
        description=(
            "Read a customer's profile: name, address, email, payment methods (with gift card balances) "
            "and the ids of their orders."
        ),
        parameters=_parameters(user_id=_USER_ID),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_order_details",
        description=(
            "Read one order: its owner, shipping address, items (each with product id, item id, price and "
            "options), status, fulfillments and payment history. Read it again after changing it."
        ),
        parameters=_parameters(order_id=_ORDER_ID),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_product_details",
        description=(
            "Read one product and all its variants (item id, options, price, availability). Takes a "
            "product id, which is a different number from any item id; an order item carries both."
        ),
        parameters=_parameters(product_id=_string("The product id (10 digits), e.g. '6086499569'.")),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_item_details",
        description=(
            "Read one variant by its item id: options, price and availability. It does not tell which "
            "product the item belongs to; use get_product_details to see all variants of a product."
        ),
        parameters=_parameters(item_id=_string("The item id (10 digits), e.g. '1008292230'.")),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_all_product_types",
        description="List every product type in the store with its product id (name -> product id).",
        parameters=_parameters(),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="cancel_pending_order",
        description=(
            "Cancel a whole order whose status is 'pending'. The reason must be either 'no longer needed' "
            "or 'ordered by mistake'. Every payment is refunded: gift cards at once, other methods in 5 to "
            "7 business days. Only after the customer explicitly confirmed."
        ),
        parameters=_parameters(
            order_id=_ORDER_ID,
            reason=_string("Why the customer cancels: 'no longer needed' or 'ordered by mistake'."),
        ),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="modify_pending_order_address",
        description=(
            "Change the shipping address of a 'pending' order. Only after the customer explicitly "
            "confirmed the new address."
        ),
        parameters=_address_parameters(("order_id", _ORDER_ID)),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="modify_pending_order_items",
        description=(
            "Swap items of a 'pending' order for other variants of the same products (e.g. another color "
            "or size). Can be done only once per order: collect every item the customer wants changed "
            "first. The price difference is charged to, or refunded to, the given payment method; a gift "
            "card must cover it. Only after the customer explicitly confirmed."
        ),
        parameters=_parameters(
            order_id=_ORDER_ID,
            item_ids=_OLD_ITEMS,
            new_item_ids=_NEW_ITEMS,
            payment_method_id=_PAYMENT_ID,
        ),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="modify_pending_order_payment",
        description=(
            "Pay a 'pending' order with a different payment method from the customer's profile. The "
            "order must have exactly one payment so far; a gift card must cover the order amount. Only "
            "after the customer explicitly confirmed."
        ),
        parameters=_parameters(order_id=_ORDER_ID, payment_method_id=_PAYMENT_ID),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="modify_user_address",
        description=(
            "Change the default address in the authenticated customer's profile. Existing orders keep "
            "their shipping address. Only after the customer explicitly confirmed."
        ),
        parameters=_address_parameters(("user_id", _USER_ID)),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="return_delivered_order_items",
        description=(
            "Request the return of items from a 'delivered' order. The refund goes to the order's original "
            "payment method or to a gift card in the customer's profile. Only after the customer "
            "explicitly confirmed the items and the refund method."
        ),
        parameters=_parameters(
            order_id=_ORDER_ID,
            item_ids=_string_list(
                "Item ids (10 digits) of the items to return, once per unit; item ids are not product ids."
            ),
            payment_method_id=_string(
                "Where the refund goes: the order's original payment method or a gift card in the profile."
            ),
        ),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="exchange_delivered_order_items",
        description=(
            "Request an exchange of items from a 'delivered' order for other variants of the same "
            "products. Can be done only once per order: collect every item first. The price difference "
            "is charged to, or refunded to, the given payment method; a gift card must cover it. Only "
            "after the customer explicitly confirmed."
        ),
        parameters=_parameters(
            order_id=_ORDER_ID,
            item_ids=_OLD_ITEMS,
            new_item_ids=_NEW_ITEMS,
            payment_method_id=_PAYMENT_ID,
        ),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="calculate",
        description=(
            "Evaluate an arithmetic expression (numbers, + - * / and parentheses), e.g. to add up prices "
            "or a price difference. Returns the result rounded to 2 decimals."
        ),
        parameters=_parameters(expression=_string("The expression, e.g. '989.7 - 549.99'.")),
        kind=ToolKind.GENERIC,
    ),
    ToolSpec(
        name="transfer_to_human_agents",
        description=(
            "Hand the conversation to a human agent, with a summary of the customer's issue. Use it only "
            "when the customer explicitly asks for a human or the request is outside what these tools and "
            "the policy allow."
        ),
        parameters=_parameters(summary=_string("A short summary of who the customer is and what they need.")),
        kind=ToolKind.GENERIC,
    ),
)
