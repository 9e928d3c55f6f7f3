"""tau2-bench's 16 retail tools over the SQLite document store.

Names, arguments, return shapes, error texts, check order and write semantics follow tau2-bench's
`src/tau2/domains/retail/tools.py`, quirks included, because tau2 gold trajectories
must replay here to the same DB hash. Two deliberate differences, both only visible on failures:
a failing write changes nothing (tau2 can leave a half-applied write), and `calculate` does not eval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from core.money import cents, covers
from domains.retail.tools import TOOLS
from mock_backends.base import SQLiteToolBackend, generic_tool, read_tool, write_tool
from mock_backends.calculator import calculate as _calculate
from mock_backends.retail.data import load_seed
from mock_backends.retail.models import (
    CANCEL_REASONS,
    CancelReason,
    GiftCard,
    Order,
    OrderPayment,
    PaymentMethod,
    Product,
    User,
    UserAddress,
    Variant,
    dump,
    normalise,
)
from mock_backends.store import JSON, Collection, Index

PRODUCTS, USERS, ORDERS = "products", "users", "orders"


class RetailBackend(SQLiteToolBackend):
    """The retail mock. Reads return stored documents as they are (already normalised); writes parse
    them into the tau2 models, mutate exactly as tau2 does, and store the dump."""

    specs = TOOLS  # checked against the tool methods when the class is created
    collections = (
        Collection(PRODUCTS),
        Collection(USERS, (Index("$.email", ignore_case=True), Index("$.address.zip"))),
        Collection(ORDERS),
    )

    @classmethod
    def normalise(cls, data: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
        return normalise(data)

    @classmethod
    async def open(cls, db_path: Path | str, data: Mapping[str, Any] | None = None) -> RetailBackend:
        """A fresh database file holding `data` (default: our shipped seed)."""
        return await cls.create(db_path, load_seed() if data is None else data)

    # ----------------------------------------------------------------------------------- lookups

    async def _order(self, order_id: str) -> Order:
        doc = await self.store.get(ORDERS, order_id)
        if doc is None:
            raise ValueError("Order not found")
        return Order.model_validate(doc)

    async def _user(self, user_id: str) -> User:
        doc = await self.store.get(USERS, user_id)
        if doc is None:
            raise ValueError("User not found")
        return User.model_validate(doc)

    async def _variant(self, product_id: str, item_id: str, cache: dict[str, Product]) -> Variant:
        product = cache.get(product_id)
        if product is None:
            doc = await self.store.get(PRODUCTS, product_id)
            if doc is None:
                raise ValueError("Product not found")
            product = cache[product_id] = Product.model_validate(doc)
        if item_id not in product.variants:
            raise ValueError("Variant not found")
        return product.variants[item_id]

    @staticmethod
    def _payment_method(user: User, payment_method_id: str) -> PaymentMethod:
        if payment_method_id not in user.payment_methods:
            raise ValueError("Payment method not found")
        return user.payment_methods[payment_method_id]

    @staticmethod
    def _missing_items(order: Order, item_ids: list[str]) -> str | None:
        """The first requested id asked for more times than the order holds it (duplicates count)."""
        held = [item.item_id for item in order.items]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                return item_id
        return None

    async def _save(self, order: Order | None = None, user: User | None = None) -> None:
        if user is not None:
            await self.tx.put(USERS, user.user_id, dump(user))
        if order is not None:
            await self.tx.put(ORDERS, order.order_id, dump(order))

    # ----------------------------------------------------------------------------------- reads

    @read_tool
    async def find_user_id_by_email(self, email: str) -> str:
        keys = await self.store.find(USERS, iequals={"$.email": email}, limit=1)
        if not keys:
            raise ValueError("User not found")
        return keys[0]

    @read_tool
    async def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        keys = await self.store.find(
            USERS,
            equals={"$.address.zip": zip},
            iequals={"$.name.first_name": first_name, "$.name.last_name": last_name},
            limit=1,
        )
        if not keys:
            raise ValueError("User not found")
        return keys[0]

    @read_tool
    async def get_user_details(self, user_id: str) -> dict[str, Any]:
        doc = await self.store.get(USERS, user_id)
        if doc is None:
            raise ValueError("User not found")
        return doc

    @read_tool
    async def get_order_details(self, order_id: str) -> dict[str, Any]:
        doc = await self.store.get(ORDERS, order_id)
        if doc is None:
            raise ValueError("Order not found")
        return doc

    @read_tool
    async def get_product_details(self, product_id: str) -> dict[str, Any]:
        doc = await self.store.get(PRODUCTS, product_id)
        if doc is None:
            raise ValueError("Product not found")
        return doc

    @read_tool
    async def get_item_details(self, item_id: str) -> dict[str, Any]:
        # A label with a quote or backslash cannot be a JSON-path key, and no item id has one.
        if not isinstance(item_id, str) or '"' in item_id or "\\" in item_id:
            raise ValueError("Item not found")
        found = await self.store.find_docs(PRODUCTS, exists=[f'$.variants."{item_id}"'], limit=1)
        if not found:
            raise ValueError("Item not found")
        variant: dict[str, Any] = found[0][1]["variants"][item_id]
        return variant

    @read_tool
    async def list_all_product_types(self) -> str:
        names = {name: product_id for name, product_id in await self.store.values(PRODUCTS, "$.name",
                                                                                   "$.product_id")}
        return json.dumps(names, sort_keys=True)

    # ----------------------------------------------------------------------------------- writes

    @write_tool
    async def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        order = await self._order(order_id)
        if order.status != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in CANCEL_REASONS:
            raise ValueError("Invalid reason")
        refunds: list[OrderPayment] = []
        user: User | None = None
        balance_changed = False
        for payment in order.payment_history:
            refunds.append(OrderPayment(transaction_type="refund", amount=payment.amount,
                                        payment_method_id=payment.payment_method_id))
            if user is None:
                user = await self._user(order.user_id)
            method = self._payment_method(user, payment.payment_method_id)
            if isinstance(method, GiftCard):  # refunded to the gift card at once
                method.balance = round(method.balance + payment.amount, 2)
                balance_changed = True
        order.status = "cancelled"
        order.cancel_reason = cast(CancelReason, reason)
        order.payment_history.extend(refunds)
        await self._save(order, user if balance_changed else None)
        return dump(order)

    @write_tool
    async def modify_pending_order_address(self, order_id: str, address1: str, address2: str, city: str,
                                           state: str, country: str, zip: str) -> dict[str, Any]:
        order = await self._order(order_id)
        if "pending" not in order.status:  # loose on purpose: tau2 accepts "pending (item modified)"
            raise ValueError("Non-pending order cannot be modified")
        order.address = UserAddress(address1=address1, address2=address2, city=city, state=state,
                                    country=country, zip=zip)
        await self._save(order)
        return dump(order)

    @write_tool
    async def modify_pending_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                         payment_method_id: str) -> dict[str, Any]:
        order = await self._order(order_id)
        if order.status != "pending":
            raise ValueError("Non-pending order cannot be modified")
        missing = self._missing_items(order, item_ids)
        if missing is not None:
            raise ValueError(f"{missing} not found")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match")
        products: dict[str, Product] = {}
        diff_price: float = 0
        diff_cents = 0
        variant: Variant | None = None
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            if item_id == new_item_id:
                raise ValueError("The new item id should be different from the old item id")
            item = next((i for i in order.items if i.item_id == item_id), None)
            if item is None:
                raise ValueError(f"Item {item_id} not found")
            variant = await self._variant(item.product_id, new_item_id, products)
            if not variant.available:
                raise ValueError(f"New item {new_item_id} not found or available")
            diff_price += variant.price - item.price
            diff_cents += cents(variant.price) - cents(item.price)
        user = await self._user(order.user_id)
        method = self._payment_method(user, payment_method_id)
        # Compared in whole cents (core.money), as the gate does: a card holding exactly the difference pays it.
        if isinstance(method, GiftCard) and not covers(method.balance, diff_cents):
            raise ValueError("Insufficient gift card balance to pay for the new item")
        # tau2 records the difference unrounded, and records it even when it is 0.
        order.payment_history.append(OrderPayment(
            transaction_type="payment" if diff_price > 0 else "refund",
            amount=abs(diff_price), payment_method_id=payment_method_id))
        if isinstance(method, GiftCard):
            method.balance = round(method.balance - diff_price, 2)
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            item = next((i for i in order.items if i.item_id == item_id), None)
            if item is None:
                raise ValueError(f"Item {item_id} not found")
            assert variant is not None  # the check loop ran over the same non-empty lists
            # tau2 quirk kept for hash parity: price and options come from the LAST new variant.
            item.item_id = new_item_id
            item.price = variant.price
            item.options = dict(variant.options)
        order.status = "pending (item modified)"
        await self._save(order, user if isinstance(method, GiftCard) else None)
        return dump(order)

    @write_tool
    async def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict[str, Any]:
        order = await self._order(order_id)
        if "pending" not in order.status:
            raise ValueError("Non-pending order cannot be modified")
        user = await self._user(order.user_id)
        method = self._payment_method(user, payment_method_id)
        if len(order.payment_history) != 1 or order.payment_history[0].transaction_type != "payment":
            raise ValueError("There should be exactly one payment for a pending order")
        old_method_id = order.payment_history[0].payment_method_id
        if old_method_id == payment_method_id:
            raise ValueError("The new payment method should be different from the current one")
        amount = order.payment_history[0].amount
        if isinstance(method, GiftCard) and not covers(method.balance, cents(amount)):
            raise ValueError("Insufficient gift card balance to pay for the order")
        order.payment_history.extend([
            OrderPayment(transaction_type="payment", amount=amount, payment_method_id=payment_method_id),
            OrderPayment(transaction_type="refund", amount=amount, payment_method_id=old_method_id),
        ])
        if isinstance(method, GiftCard):
            method.balance = round(method.balance - amount, 2)
        old_method = self._payment_method(user, old_method_id)
        if isinstance(old_method, GiftCard):
            old_method.balance = round(old_method.balance + amount, 2)
        gift_card_moved = isinstance(method, GiftCard) or isinstance(old_method, GiftCard)
        await self._save(order, user if gift_card_moved else None)
        return dump(order)

    @write_tool
    async def modify_user_address(self, user_id: str, address1: str, address2: str, city: str, state: str,
                                  country: str, zip: str) -> dict[str, Any]:
        user = await self._user(user_id)
        user.address = UserAddress(address1=address1, address2=address2, city=city, state=state,
                                   country=country, zip=zip)
        await self._save(user=user)
        return dump(user)

    @write_tool
    async def return_delivered_order_items(self, order_id: str, item_ids: list[str],
                                           payment_method_id: str) -> dict[str, Any]:
        order = await self._order(order_id)
        if order.status != "delivered":
            raise ValueError("Non-delivered order cannot be returned")
        user = await self._user(order.user_id)
        method = self._payment_method(user, payment_method_id)
        if not isinstance(method, GiftCard) and payment_method_id != order.payment_history[0].payment_method_id:
            raise ValueError("Payment method should be the original payment method")
        if self._missing_items(order, item_ids) is not None:
            raise ValueError("Some item not found")
        order.status = "return requested"
        order.return_items = sorted(item_ids)
        order.return_payment_method_id = payment_method_id
        await self._save(order)
        return dump(order)

    @write_tool
    async def exchange_delivered_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                             payment_method_id: str) -> dict[str, Any]:
        order = await self._order(order_id)
        if order.status != "delivered":
            raise ValueError("Non-delivered order cannot be exchanged")
        missing = self._missing_items(order, item_ids)
        if missing is not None:
            raise ValueError(f"Number of {missing} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match.")
        products: dict[str, Product] = {}
        diff_price: float = 0
        diff_cents = 0
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            item = next((i for i in order.items if i.item_id == item_id), None)
            if item is None:
                raise ValueError(f"Item {item_id} not found")
            variant = await self._variant(item.product_id, new_item_id, products)
            if not variant.available:
                raise ValueError(f"New item {new_item_id} not found or available")
            diff_price += variant.price - item.price
            diff_cents += cents(variant.price) - cents(item.price)
        diff_price = round(diff_price, 2)
        user = await self._user(order.user_id)
        method = self._payment_method(user, payment_method_id)
        if isinstance(method, GiftCard) and not covers(method.balance, diff_cents):
            raise ValueError("Insufficient gift card balance to pay for the price difference")
        order.status = "exchange requested"
        order.exchange_items = sorted(item_ids)
        order.exchange_new_items = sorted(new_item_ids)
        order.exchange_payment_method_id = payment_method_id
        order.exchange_price_difference = diff_price
        await self._save(order)
        return dump(order)

    # ----------------------------------------------------------------------------------- generic

    @generic_tool
    async def calculate(self, expression: str) -> str:
        return _calculate(expression)

    @generic_tool
    async def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"
