"""tau2-shaped retail records and a small session helper, shared by retail tests.

The story is the one in the shipped seed (mock_backends/retail/seed.json; a test checks they agree):
customer Mia Garcia (`mia_garcia_4821`) has a delivered order #W4821001 with two tablets, paid in full
with her gift card, and a pending order #W4821002 with one T-shirt, paid by Mastercard. A second
customer, Noah Kim (`noah_kim_3107`), has one delivered and one pending order. Shapes follow tau2-bench's
`get_*_details` returns (API.md §2.1), including the optional order fields dumped as null.

Every builder returns a fresh dict, so a test may change a record (a status, a balance) without
affecting any other test.
"""

from __future__ import annotations

import copy
from typing import Any

from core.gate import GateContext, GateDecision, PolicyGate
from core.ledger import AbsorbResult, Ledger
from core.tools import ToolCall
from domains.retail import DOMAIN, PATH_MAP, PREDICATES

Record = dict[str, Any]

MIA = "mia_garcia_4821"
NOAH = "noah_kim_3107"
MIA_EMAIL = "mia.garcia@example.com"
MIA_GIFT_CARD = "gift_card_4821001"
MIA_CREDIT_CARD = "credit_card_4821002"
NOAH_PAYPAL = "paypal_3107001"
NOAH_CREDIT_CARD = "credit_card_3107002"

MIA_DELIVERED = "#W4821001"
MIA_PENDING = "#W4821002"
NOAH_DELIVERED = "#W3107001"
NOAH_PENDING = "#W3107002"

TABLET = "1000000001"
TABLET_GOLD_128 = "2000000011"
TABLET_BLACK_64 = "2000000012"
TABLET_SILVER_256 = "2000000013"  # not available

TSHIRT = "1000000002"
TSHIRT_BLUE_M = "2000000021"
TSHIRT_RED_M = "2000000022"
TSHIRT_BLUE_L = "2000000023"  # not available
TSHIRT_BLACK_L = "2000000024"


def _variant(item_id: str, options: dict[str, str], price: float, available: bool = True) -> Record:
    return {"item_id": item_id, "options": options, "available": available, "price": price}


def tablet_product() -> Record:
    return {
        "name": "Tablet",
        "product_id": TABLET,
        "variants": {
            TABLET_GOLD_128: _variant(TABLET_GOLD_128, {"color": "gold", "storage": "128GB"}, 989.7),
            TABLET_BLACK_64: _variant(TABLET_BLACK_64, {"color": "black", "storage": "64GB"}, 549.99),
            TABLET_SILVER_256: _variant(TABLET_SILVER_256, {"color": "silver", "storage": "256GB"}, 1099.0,
                                        available=False),
        },
    }


def tshirt_product() -> Record:
    return {
        "name": "T-Shirt",
        "product_id": TSHIRT,
        "variants": {
            TSHIRT_BLUE_M: _variant(TSHIRT_BLUE_M, {"color": "blue", "size": "M"}, 49.99),
            TSHIRT_RED_M: _variant(TSHIRT_RED_M, {"color": "red", "size": "M"}, 51.5),
            TSHIRT_BLUE_L: _variant(TSHIRT_BLUE_L, {"color": "blue", "size": "L"}, 49.99, available=False),
            TSHIRT_BLACK_L: _variant(TSHIRT_BLACK_L, {"color": "black", "size": "L"}, 52.0),
        },
    }


PRODUCTS = {TABLET: tablet_product, TSHIRT: tshirt_product}


def address(address1: str, city: str, state: str, zip_code: str, address2: str = "") -> Record:
    return {"address1": address1, "address2": address2, "city": city, "country": "USA", "state": state,
            "zip": zip_code}


def mia_address() -> Record:
    return address("12 Elm Street", "Springfield", "IN", "46281", "Apt 3")


def noah_address() -> Record:
    return address("5 Bleecker St", "New York", "NY", "10012")


def mia_user(*, gift_card_balance: float = 59.0) -> Record:
    return {
        "user_id": MIA,
        "name": {"first_name": "Mia", "last_name": "Garcia"},
        "address": mia_address(),
        "email": MIA_EMAIL,
        "payment_methods": {
            MIA_GIFT_CARD: {"source": "gift_card", "id": MIA_GIFT_CARD, "balance": gift_card_balance},
            MIA_CREDIT_CARD: {"source": "credit_card", "id": MIA_CREDIT_CARD, "brand": "mastercard",
                              "last_four": "2732"},
        },
        "orders": [MIA_DELIVERED, MIA_PENDING],
    }


def noah_user() -> Record:
    return {
        "user_id": NOAH,
        "name": {"first_name": "Noah", "last_name": "Kim"},
        "address": noah_address(),
        "email": "noah.kim@example.com",
        "payment_methods": {
            NOAH_PAYPAL: {"source": "paypal", "id": NOAH_PAYPAL},
            NOAH_CREDIT_CARD: {"source": "credit_card", "id": NOAH_CREDIT_CARD, "brand": "visa",
                               "last_four": "1881"},
        },
        "orders": [NOAH_DELIVERED, NOAH_PENDING],
    }


def order_line(product_id: str, item_id: str) -> Record:
    """One order item, copied from the product's variant the way tau2-bench stores it."""
    product = PRODUCTS[product_id]()
    variant = product["variants"][item_id]
    return {"name": product["name"], "product_id": product_id, "item_id": item_id, "price": variant["price"],
            "options": dict(variant["options"])}


def payment(amount: float, payment_method_id: str, transaction_type: str = "payment") -> Record:
    return {"transaction_type": transaction_type, "amount": amount, "payment_method_id": payment_method_id}


def order(order_id: str, user_id: str, lines: list[Record], *, status: str, payment_method_id: str,
          shipping: Record, payment_history: list[Record] | None = None) -> Record:
    """An order as get_order_details returns it; paid in one payment unless a history is given."""
    total = round(sum(line["price"] for line in lines), 2)
    delivered = status not in ("pending", "pending (item modified)", "cancelled")
    return {
        "order_id": order_id,
        "user_id": user_id,
        "address": shipping,
        "items": lines,
        "status": status,
        "fulfillments": ([{"tracking_id": [f"TRK{order_id[2:]}"], "item_ids": [x["item_id"] for x in lines]}]
                         if delivered else []),
        "payment_history": payment_history if payment_history is not None else [payment(total, payment_method_id)],
        "cancel_reason": None,
        "exchange_items": None,
        "exchange_new_items": None,
        "exchange_payment_method_id": None,
        "exchange_price_difference": None,
        "return_items": None,
        "return_payment_method_id": None,
    }


def mia_delivered_order(*, status: str = "delivered", payment_method_id: str = MIA_GIFT_CARD) -> Record:
    """#W4821001: two tablets, 989.7 + 549.99 = 1539.69, paid with Mia's gift card."""
    lines = [order_line(TABLET, TABLET_GOLD_128), order_line(TABLET, TABLET_BLACK_64)]
    return order(MIA_DELIVERED, MIA, lines, status=status, payment_method_id=payment_method_id,
                 shipping=mia_address())


def mia_pending_order(*, status: str = "pending", payment_history: list[Record] | None = None) -> Record:
    """#W4821002: one blue M T-shirt, 49.99, paid by Mia's Mastercard."""
    return order(MIA_PENDING, MIA, [order_line(TSHIRT, TSHIRT_BLUE_M)], status=status,
                 payment_method_id=MIA_CREDIT_CARD, shipping=mia_address(), payment_history=payment_history)


def noah_delivered_order() -> Record:
    """#W3107001: one blue M T-shirt, 49.99, paid with Noah's PayPal."""
    return order(NOAH_DELIVERED, NOAH, [order_line(TSHIRT, TSHIRT_BLUE_M)], status="delivered",
                 payment_method_id=NOAH_PAYPAL, shipping=noah_address())


def noah_pending_order() -> Record:
    """#W3107002: one black 64GB tablet, 549.99, paid by Noah's Visa."""
    return order(NOAH_PENDING, NOAH, [order_line(TABLET, TABLET_BLACK_64)], status="pending",
                 payment_method_id=NOAH_CREDIT_CARD, shipping=noah_address())


_LOOKUP = {MIA: ("Mia", "Garcia", "46281"), NOAH: ("Noah", "Kim", "10012")}


class RetailSession:
    """A ledger filled the way the agent loop fills it: successful reads absorbed in order, one step each.

    `propose` judges a write with a fresh gate (no anti-loop memory carried between assertions) and the
    domain's own context, exactly as the agent loop would.
    """

    def __init__(self) -> None:
        self.ledger = Ledger(PATH_MAP)
        self.step = 0

    def _next_call(self, tool: str, arguments: dict[str, Any]) -> ToolCall:
        self.step += 1
        return ToolCall(id=f"call_{self.step}", name=tool, arguments=arguments)

    def read(self, tool: str, result: Any, **arguments: Any) -> AbsorbResult:
        return self.ledger.absorb(self._next_call(tool, arguments), copy.deepcopy(result), self.step)

    def wrote(self, tool: str, **arguments: Any) -> list[str]:
        """A write succeeded: mark what it touched stale (the backend itself is not simulated)."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step)

    def executed(self, tool: str, result: Any, **arguments: Any) -> list[str]:
        """A write ran and returned `result`: its paths go stale and the return joins the session's effects."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step, result=copy.deepcopy(result))

    def authenticate(self, user_id: str = MIA) -> AbsorbResult:
        """find_user_id_by_name_zip returning `user_id` (tau2 returns the bare id string)."""
        first, last, zip_code = _LOOKUP[user_id]
        return self.read("find_user_id_by_name_zip", user_id, first_name=first, last_name=last, zip=zip_code)

    def read_user(self, user: Record) -> AbsorbResult:
        return self.read("get_user_details", user, user_id=user["user_id"])

    def read_order(self, record: Record) -> AbsorbResult:
        return self.read("get_order_details", record, order_id=record["order_id"])

    def read_product(self, record: Record) -> AbsorbResult:
        return self.read("get_product_details", record, product_id=record["product_id"])

    def said(self, role: str, text: str) -> AbsorbResult:
        """A message of the conversation ("user": the customer's, "assistant": the agent's), heard by the ledger
        as a session hears it (core.ledger.Ledger.hear)."""
        return self.ledger.hear(role, text, self.step)

    def confirmed(self, described: str, answer: str = "Yes, please go ahead.") -> None:
        """The agent described the action and the customer answered (by default an explicit yes)."""
        self.said("assistant", described)
        self.said("user", answer)

    def context(self) -> GateContext:
        return DOMAIN.context(self.ledger)

    def propose(self, tool: str, **arguments: Any) -> GateDecision:
        call = ToolCall(id=f"proposal_{self.step}", name=tool, arguments=arguments)
        return PolicyGate(PREDICATES, path_map=PATH_MAP).evaluate(call, self.ledger, self.context())


def mia_session(*, user: Record | None = None, orders: list[Record] | None = None,
                products: list[Record] | None = None) -> RetailSession:
    """Mia authenticated, her profile, both her orders and both products read (override any of them)."""
    session = RetailSession()
    session.authenticate(MIA)
    session.read_user(user if user is not None else mia_user())
    for record in orders if orders is not None else [mia_delivered_order(), mia_pending_order()]:
        session.read_order(record)
    for record in products if products is not None else [tablet_product(), tshirt_product()]:
        session.read_product(record)
    return session
