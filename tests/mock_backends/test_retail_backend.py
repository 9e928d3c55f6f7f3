"""RetailBackend: tau2-bench retail tool parity (returns, errors, write semantics) over the seed data."""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.tools import ToolBackend, ToolError, ToolKind
from mock_backends.retail import RetailBackend, load_seed, load_tau2_db
from mock_backends.retail.seed import SEED_FILE, generate, render
from tests.support.upstream import TAU2_RETAIL

TAU2_RETAIL_DB = TAU2_RETAIL / "db.json"

MIA, NOAH = "mia_garcia_4821", "noah_kim_3107"
MIA_GIFT, MIA_CARD = "gift_card_4821001", "credit_card_4821002"
GOLD, BLACK, SILVER = "2000000011", "2000000012", "2000000013"  # Tablet variants (silver unavailable)
BLUE_M, RED_M, BLUE_L, BLACK_L = "2000000021", "2000000022", "2000000023", "2000000024"  # T-Shirt

Data = dict[str, dict[str, Any]]


async def open_backend(tmp_path: Path, change: Callable[[Data], None] | None = None) -> RetailBackend:
    data = load_seed()
    if change is not None:
        change(data)
    return await RetailBackend.open(tmp_path / "retail.sqlite", data)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[RetailBackend]:
    async with await open_backend(tmp_path) as opened:
        yield opened


async def call(backend: RetailBackend, name: str, **arguments: Any) -> Any:
    return await backend.call(name, arguments)


async def fails(backend: RetailBackend, message: str, name: str, **arguments: Any) -> None:
    """The call raises ToolError with exactly `message`, and the database is unchanged."""
    before = await backend.state_hash()
    with pytest.raises(ToolError) as caught:
        await backend.call(name, arguments)
    assert caught.value.message == message
    assert await backend.state_hash() == before


# ----------------------------------------------------------------------------------- dispatch


async def test_is_a_tool_backend_with_the_16_tau2_tools(backend: RetailBackend) -> None:
    assert isinstance(backend, ToolBackend)
    assert len(backend.tool_names()) == 16
    assert backend.tool_names(ToolKind.WRITE) == [
        "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
        "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
        "return_delivered_order_items",
    ]
    assert backend.tool_names(ToolKind.GENERIC) == ["calculate", "transfer_to_human_agents"]
    assert len(backend.tool_names(ToolKind.READ)) == 7
    assert backend.tool_kind("get_order_details") is ToolKind.READ


async def test_bad_calls_become_tool_errors(backend: RetailBackend) -> None:
    await fails(backend, "Tool 'launch_rocket' not found.", "launch_rocket")
    await fails(backend, "get_order_details: missing required argument 'order_id'", "get_order_details")
    await fails(backend, "cancel_pending_order: unexpected argument 'force'; missing required argument "
                         "'reason'", "cancel_pending_order", order_id="#W4821002", force=True)
    with pytest.raises(ToolError):  # a wrong type fails inside the tool, never as a bare TypeError
        await call(backend, "get_order_details", order_id=["#W4821002"])
    with pytest.raises(ToolError, match="validation error"):
        await call(backend, "modify_user_address", user_id=MIA, address1=1, address2="", city="c",
                   state="s", country="USA", zip="1")


# ----------------------------------------------------------------------------------- reads


async def test_find_user_ids(backend: RetailBackend) -> None:
    assert await call(backend, "find_user_id_by_email", email="MIA.Garcia@example.com") == MIA
    assert await call(backend, "find_user_id_by_name_zip", first_name="noah", last_name="KIM",
                      zip="10012") == NOAH
    await fails(backend, "User not found", "find_user_id_by_email", email="nobody@example.com")
    await fails(backend, "User not found", "find_user_id_by_name_zip", first_name="Noah", last_name="Kim",
                zip="10013")


async def test_get_details(backend: RetailBackend) -> None:
    user = await call(backend, "get_user_details", user_id=MIA)
    assert user["orders"] == ["#W4821001", "#W4821002"]
    assert user["payment_methods"][MIA_GIFT] == {"source": "gift_card", "id": MIA_GIFT, "balance": 59.0}
    order = await call(backend, "get_order_details", order_id="#W4821001")
    assert order["status"] == "delivered" and order["cancel_reason"] is None  # None fields are present
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 1539.69, "payment_method_id": MIA_GIFT}]
    product = await call(backend, "get_product_details", product_id="1000000001")
    assert product["name"] == "Tablet" and list(product["variants"]) == [GOLD, BLACK, SILVER]
    assert await call(backend, "get_item_details", item_id=SILVER) == {
        "item_id": SILVER, "options": {"color": "silver", "storage": "256GB"}, "available": False,
        "price": 1099.0}
    await fails(backend, "User not found", "get_user_details", user_id="ghost")
    await fails(backend, "Order not found", "get_order_details", order_id="W4821001")
    await fails(backend, "Product not found", "get_product_details", product_id=GOLD)
    await fails(backend, "Item not found", "get_item_details", item_id="1000000001")
    await fails(backend, "Item not found", "get_item_details", item_id='x"y')


async def test_list_all_product_types_is_a_sorted_json_string(backend: RetailBackend) -> None:
    text = await call(backend, "list_all_product_types")
    assert isinstance(text, str)
    types = json.loads(text)
    assert list(types) == sorted(types) and len(types) == 12
    assert types["Tablet"] == "1000000001" and types["T-Shirt"] == "1000000002"
    assert text == json.dumps(types, sort_keys=True)


# ----------------------------------------------------------------------------------- cancel


async def test_cancel_pending_order(backend: RetailBackend) -> None:
    order = await call(backend, "cancel_pending_order", order_id="#W4821002", reason="ordered by mistake")
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 49.99,
                                            "payment_method_id": MIA_CARD}
    assert await call(backend, "get_order_details", order_id="#W4821002") == order
    await fails(backend, "Non-pending order cannot be cancelled", "cancel_pending_order",
                order_id="#W4821002", reason="no longer needed")


async def test_cancel_errors(backend: RetailBackend) -> None:
    await fails(backend, "Order not found", "cancel_pending_order", order_id="#W0", reason="no longer needed")
    await fails(backend, "Non-pending order cannot be cancelled", "cancel_pending_order",
                order_id="#W4821001", reason="no longer needed")
    await fails(backend, "Invalid reason", "cancel_pending_order", order_id="#W4821002", reason="too slow")


async def test_cancel_mirrors_every_payment_and_credits_gift_cards_at_once(backend: RetailBackend) -> None:
    await call(backend, "modify_pending_order_payment", order_id="#W4821002", payment_method_id=MIA_GIFT)
    user = await call(backend, "get_user_details", user_id=MIA)
    assert user["payment_methods"][MIA_GIFT]["balance"] == 9.01
    order = await call(backend, "cancel_pending_order", order_id="#W4821002", reason="no longer needed")
    assert [(p["transaction_type"], p["payment_method_id"]) for p in order["payment_history"]] == [
        ("payment", MIA_CARD), ("payment", MIA_GIFT), ("refund", MIA_CARD),
        ("refund", MIA_CARD), ("refund", MIA_GIFT), ("refund", MIA_CARD)]
    user = await call(backend, "get_user_details", user_id=MIA)
    assert user["payment_methods"][MIA_GIFT]["balance"] == 59.0


async def test_failed_cancel_midway_changes_nothing(tmp_path: Path) -> None:
    def orphan_payment(data: Data) -> None:  # second payment method no longer in the profile
        data["orders"]["#W4821002"]["payment_history"].insert(
            0, {"transaction_type": "payment", "amount": 1.0, "payment_method_id": MIA_GIFT})
        data["orders"]["#W4821002"]["payment_history"].append(
            {"transaction_type": "payment", "amount": 1.0, "payment_method_id": "gift_card_gone"})

    async with await open_backend(tmp_path, orphan_payment) as backend:
        # tau2 would have credited the first gift card before failing; we roll it back.
        await fails(backend, "Payment method not found", "cancel_pending_order", order_id="#W4821002",
                    reason="no longer needed")


# ----------------------------------------------------------------------------------- modify address


async def test_modify_pending_order_address(backend: RetailBackend) -> None:
    address = dict(address1="1 New Rd", address2="", city="Gary", state="IN", country="USA", zip="46401")
    order = await call(backend, "modify_pending_order_address", order_id="#W4821002", **address)
    assert order["address"] == address
    user = await call(backend, "get_user_details", user_id=MIA)
    assert user["address"]["zip"] == "46281"  # only the order changes
    await fails(backend, "Non-pending order cannot be modified", "modify_pending_order_address",
                order_id="#W4821001", **address)
    await fails(backend, "Order not found", "modify_pending_order_address", order_id="#W1", **address)


async def test_modify_user_address_returns_the_user(backend: RetailBackend) -> None:
    address = dict(address1="9 Oak Ave", address2="Unit 2", city="Boston", state="MA", country="USA",
                   zip="02101")
    user = await call(backend, "modify_user_address", user_id=NOAH, **address)
    assert user["user_id"] == NOAH and user["address"] == address
    order = await call(backend, "get_order_details", order_id="#W3107002")
    assert order["address"]["zip"] == "10012"  # existing orders keep their address
    assert await call(backend, "find_user_id_by_name_zip", first_name="Noah", last_name="Kim",
                      zip="02101") == NOAH
    await fails(backend, "User not found", "modify_user_address", user_id="ghost", **address)


# ----------------------------------------------------------------------------------- modify items


async def test_modify_items_with_gift_card_rounds_the_balance_not_the_payment(backend: RetailBackend) -> None:
    order = await call(backend, "modify_pending_order_items", order_id="#W4821002", item_ids=[BLUE_M],
                       new_item_ids=[RED_M], payment_method_id=MIA_GIFT)
    assert order["status"] == "pending (item modified)"
    assert order["items"][0] == {"name": "T-Shirt", "product_id": "1000000002", "item_id": RED_M,
                                 "price": 51.5, "options": {"color": "red", "size": "M"}}
    assert order["payment_history"][-1] == {"transaction_type": "payment", "amount": 51.5 - 49.99,
                                            "payment_method_id": MIA_GIFT}
    user = await call(backend, "get_user_details", user_id=MIA)
    assert user["payment_methods"][MIA_GIFT]["balance"] == 57.49


async def test_modify_items_quirk_every_item_gets_the_last_variant(tmp_path: Path) -> None:
    def two_product_order(data: Data) -> None:
        order = data["orders"]["#W4821002"]
        tablet = data["products"]["1000000001"]["variants"][GOLD]
        order["items"].insert(0, {"name": "Tablet", "product_id": "1000000001", "item_id": GOLD,
                                  "price": tablet["price"], "options": tablet["options"]})

    async with await open_backend(tmp_path, two_product_order) as backend:
        order = await call(backend, "modify_pending_order_items", order_id="#W4821002",
                           item_ids=[GOLD, BLUE_M], new_item_ids=[BLACK, RED_M], payment_method_id=MIA_CARD)
        tablet, shirt = order["items"]
        assert (tablet["item_id"], shirt["item_id"]) == (BLACK, RED_M)
        assert tablet["price"] == shirt["price"] == 51.5  # the T-Shirt's price and options, as in tau2
        assert tablet["options"] == shirt["options"] == {"color": "red", "size": "M"}
        refund = order["payment_history"][-1]
        assert refund["transaction_type"] == "refund"
        assert refund["amount"] == abs((549.99 - 989.7) + (51.5 - 49.99))


async def test_modify_items_records_a_zero_amount_refund(backend: RetailBackend) -> None:
    order = await call(backend, "modify_pending_order_items", order_id="#W3107002", item_ids=[],
                       new_item_ids=[], payment_method_id="paypal_3107001")
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 0.0,
                                            "payment_method_id": "paypal_3107001"}
    assert order["status"] == "pending (item modified)"


async def test_modify_items_errors(tmp_path: Path) -> None:
    def poor_gift_card(data: Data) -> None:
        data["users"][MIA]["payment_methods"][MIA_GIFT]["balance"] = 1.0

    async with await open_backend(tmp_path, poor_gift_card) as backend:
        args = dict(order_id="#W4821002", payment_method_id=MIA_CARD)
        await fails(backend, "Order not found", "modify_pending_order_items", order_id="#W9",
                    item_ids=[BLUE_M], new_item_ids=[RED_M], payment_method_id=MIA_CARD)
        await fails(backend, "Non-pending order cannot be modified", "modify_pending_order_items",
                    order_id="#W4821001", item_ids=[GOLD], new_item_ids=[BLACK], payment_method_id=MIA_CARD)
        await fails(backend, f"{BLUE_M} not found", "modify_pending_order_items", item_ids=[BLUE_M, BLUE_M],
                    new_item_ids=[RED_M, RED_M], **args)
        await fails(backend, f"{GOLD} not found", "modify_pending_order_items", item_ids=[GOLD],
                    new_item_ids=[BLACK], **args)
        await fails(backend, "The number of items to be exchanged should match", "modify_pending_order_items",
                    item_ids=[BLUE_M], new_item_ids=[RED_M, BLACK_L], **args)
        await fails(backend, "The new item id should be different from the old item id",
                    "modify_pending_order_items", item_ids=[BLUE_M], new_item_ids=[BLUE_M], **args)
        await fails(backend, "Variant not found", "modify_pending_order_items", item_ids=[BLUE_M],
                    new_item_ids=[GOLD], **args)
        await fails(backend, f"New item {BLUE_L} not found or available", "modify_pending_order_items",
                    item_ids=[BLUE_M], new_item_ids=[BLUE_L], **args)
        await fails(backend, "Payment method not found", "modify_pending_order_items", order_id="#W4821002",
                    item_ids=[BLUE_M], new_item_ids=[RED_M], payment_method_id="paypal_3107001")
        await fails(backend, "Insufficient gift card balance to pay for the new item",
                    "modify_pending_order_items", order_id="#W4821002", item_ids=[BLUE_M],
                    new_item_ids=[BLACK_L], payment_method_id=MIA_GIFT)


async def test_strict_and_loose_pending_checks(backend: RetailBackend) -> None:
    await call(backend, "modify_pending_order_items", order_id="#W3107002", item_ids=[BLACK],
               new_item_ids=[GOLD], payment_method_id="credit_card_3107002")
    # exact "pending" required: modify items again, cancel
    await fails(backend, "Non-pending order cannot be modified", "modify_pending_order_items",
                order_id="#W3107002", item_ids=[GOLD], new_item_ids=[BLACK],
                payment_method_id="credit_card_3107002")
    await fails(backend, "Non-pending order cannot be cancelled", "cancel_pending_order",
                order_id="#W3107002", reason="no longer needed")
    # "pending" contained: address and payment pass the status check
    order = await call(backend, "modify_pending_order_address", order_id="#W3107002", address1="a",
                       address2="", city="c", state="NY", country="USA", zip="10001")
    assert order["status"] == "pending (item modified)"
    await fails(backend, "There should be exactly one payment for a pending order",
                "modify_pending_order_payment", order_id="#W3107002", payment_method_id="paypal_3107001")


# ----------------------------------------------------------------------------------- modify payment


async def test_modify_pending_order_payment(backend: RetailBackend) -> None:
    order = await call(backend, "modify_pending_order_payment", order_id="#W3107002",
                       payment_method_id="paypal_3107001")
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 549.99, "payment_method_id": "credit_card_3107002"},
        {"transaction_type": "payment", "amount": 549.99, "payment_method_id": "paypal_3107001"},
        {"transaction_type": "refund", "amount": 549.99, "payment_method_id": "credit_card_3107002"},
    ]
    assert order["status"] == "pending"


async def test_modify_payment_errors(backend: RetailBackend) -> None:
    await fails(backend, "Order not found", "modify_pending_order_payment", order_id="#W7",
                payment_method_id=MIA_GIFT)
    await fails(backend, "Non-pending order cannot be modified", "modify_pending_order_payment",
                order_id="#W4821001", payment_method_id=MIA_CARD)
    await fails(backend, "Payment method not found", "modify_pending_order_payment", order_id="#W4821002",
                payment_method_id="paypal_3107001")
    await fails(backend, "The new payment method should be different from the current one",
                "modify_pending_order_payment", order_id="#W4821002", payment_method_id=MIA_CARD)


async def test_modify_payment_gift_card_balance(tmp_path: Path) -> None:
    def mia_pays_by_gift_card(data: Data) -> None:
        data["orders"]["#W4821002"]["payment_history"][0]["payment_method_id"] = MIA_GIFT
        data["users"][MIA]["payment_methods"][MIA_GIFT]["balance"] = 10.0

    async with await open_backend(tmp_path, mia_pays_by_gift_card) as backend:
        await call(backend, "modify_pending_order_payment", order_id="#W4821002", payment_method_id=MIA_CARD)
        user = await call(backend, "get_user_details", user_id=MIA)
        assert user["payment_methods"][MIA_GIFT]["balance"] == 59.99  # refunded to the old gift card
        await call(backend, "modify_pending_order_address", order_id="#W4821002", address1="x", address2="",
                   city="c", state="IN", country="USA", zip="1")



async def test_modify_payment_insufficient_gift_card(tmp_path: Path) -> None:
    def gift_card_for_noah(data: Data) -> None:
        data["users"][NOAH]["payment_methods"]["gift_card_3107009"] = {
            "source": "gift_card", "id": "gift_card_3107009", "balance": 500.0}

    async with await open_backend(tmp_path, gift_card_for_noah) as backend:
        await fails(backend, "Insufficient gift card balance to pay for the order",
                    "modify_pending_order_payment", order_id="#W3107002", payment_method_id="gift_card_3107009")


# ----------------------------------------------------------------------------------- return


async def test_return_delivered_order_items(backend: RetailBackend) -> None:
    order = await call(backend, "return_delivered_order_items", order_id="#W4821001", item_ids=[BLACK, GOLD],
                       payment_method_id=MIA_GIFT)
    assert order["status"] == "return requested"
    assert order["return_items"] == [GOLD, BLACK]  # sorted
    assert order["return_payment_method_id"] == MIA_GIFT
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 1539.69, "payment_method_id": MIA_GIFT}]  # no money moves


async def test_return_to_any_gift_card_but_only_the_original_other_method(backend: RetailBackend) -> None:
    await fails(backend, "Payment method should be the original payment method",
                "return_delivered_order_items", order_id="#W4821001", item_ids=[GOLD], payment_method_id=MIA_CARD)
    order = await call(backend, "return_delivered_order_items", order_id="#W3107001", item_ids=[BLUE_M],
                       payment_method_id="paypal_3107001")
    assert order["return_payment_method_id"] == "paypal_3107001"


async def test_return_errors(backend: RetailBackend) -> None:
    await fails(backend, "Order not found", "return_delivered_order_items", order_id="#W5", item_ids=[GOLD],
                payment_method_id=MIA_GIFT)
    await fails(backend, "Non-delivered order cannot be returned", "return_delivered_order_items",
                order_id="#W4821002", item_ids=[BLUE_M], payment_method_id=MIA_GIFT)
    await fails(backend, "Payment method not found", "return_delivered_order_items", order_id="#W4821001",
                item_ids=[GOLD], payment_method_id="paypal_3107001")
    await fails(backend, "Some item not found", "return_delivered_order_items", order_id="#W4821001",
                item_ids=[GOLD, GOLD], payment_method_id=MIA_GIFT)


# ----------------------------------------------------------------------------------- exchange


async def test_exchange_records_the_request_only(backend: RetailBackend) -> None:
    order = await call(backend, "exchange_delivered_order_items", order_id="#W4821001",
                       item_ids=[BLACK, GOLD], new_item_ids=[GOLD, BLACK], payment_method_id=MIA_GIFT)
    assert order["status"] == "exchange requested"
    assert order["exchange_items"] == [GOLD, BLACK]  # sorted, not in the order given
    assert order["exchange_new_items"] == [GOLD, BLACK]
    assert order["exchange_payment_method_id"] == MIA_GIFT
    assert order["exchange_price_difference"] == 0.0
    user = await call(backend, "get_user_details", user_id=MIA)
    assert user["payment_methods"][MIA_GIFT]["balance"] == 59.0


async def test_exchange_rounds_the_difference_and_allows_the_same_id(backend: RetailBackend) -> None:
    order = await call(backend, "exchange_delivered_order_items", order_id="#W4821001", item_ids=[GOLD],
                       new_item_ids=[BLACK], payment_method_id=MIA_CARD)
    assert order["exchange_price_difference"] == round(549.99 - 989.7, 2) == -439.71
    other = await call(backend, "exchange_delivered_order_items", order_id="#W3107001", item_ids=[BLUE_M],
                       new_item_ids=[BLUE_M], payment_method_id="paypal_3107001")
    assert other["exchange_price_difference"] == 0.0


async def test_exchange_errors(backend: RetailBackend) -> None:
    args = dict(order_id="#W4821001", payment_method_id=MIA_CARD)
    await fails(backend, "Order not found", "exchange_delivered_order_items", order_id="#W3",
                item_ids=[GOLD], new_item_ids=[BLACK], payment_method_id=MIA_CARD)
    await fails(backend, "Non-delivered order cannot be exchanged", "exchange_delivered_order_items",
                order_id="#W4821002", item_ids=[BLUE_M], new_item_ids=[RED_M], payment_method_id=MIA_CARD)
    await fails(backend, f"Number of {GOLD} not found.", "exchange_delivered_order_items",
                item_ids=[GOLD, GOLD], new_item_ids=[BLACK, BLACK], **args)
    await fails(backend, "The number of items to be exchanged should match.", "exchange_delivered_order_items",
                item_ids=[GOLD], new_item_ids=[BLACK, GOLD], **args)
    await fails(backend, f"New item {SILVER} not found or available", "exchange_delivered_order_items",
                item_ids=[GOLD], new_item_ids=[SILVER], **args)
    await fails(backend, "Variant not found", "exchange_delivered_order_items", item_ids=[GOLD],
                new_item_ids=[RED_M], **args)
    await fails(backend, "Payment method not found", "exchange_delivered_order_items", order_id="#W4821001",
                item_ids=[GOLD], new_item_ids=[BLACK], payment_method_id="paypal_3107001")
    await fails(backend, "Insufficient gift card balance to pay for the price difference",
                "exchange_delivered_order_items", order_id="#W4821001", item_ids=[BLACK], new_item_ids=[GOLD],
                payment_method_id=MIA_GIFT)


# ----------------------------------------------------------------------------------- generic


async def test_calculate_and_transfer(backend: RetailBackend) -> None:
    assert await call(backend, "calculate", expression="2 + 2") == "4.0"
    assert await call(backend, "calculate", expression="(989.7 - 549.99) / 3") == "146.57"
    assert await call(backend, "calculate", expression="-2 ** 2") == "-4.0"
    await fails(backend, "Invalid characters in expression", "calculate", expression="__import__('os')")
    await fails(backend, "division by zero", "calculate", expression="1 / 0")
    await fails(backend, "Exponent too large", "calculate", expression="9 ** 9 ** 9 ** 9")
    with pytest.raises(ToolError):
        await call(backend, "calculate", expression="1 +")
    assert await call(backend, "transfer_to_human_agents", summary="wants a human") == "Transfer successful"


async def test_writes_roll_back_and_restore_works_on_the_backend(backend: RetailBackend) -> None:
    start = await backend.state_hash()
    snap = await backend.snapshot()
    await call(backend, "cancel_pending_order", order_id="#W4821002", reason="no longer needed")
    await call(backend, "modify_user_address", user_id=MIA, address1="a", address2="", city="c", state="s",
               country="USA", zip="z")
    assert await backend.state_hash() != start
    await backend.restore(snap)
    assert await backend.state_hash() == start


# ----------------------------------------------------------------------------------- seed


def test_seed_file_is_what_the_generator_writes() -> None:
    assert SEED_FILE.read_text(encoding="utf-8") == render(generate())
    assert render(generate()) == render(generate())


def test_seed_contains_the_story_records_exactly() -> None:
    data = json.loads(SEED_FILE.read_text(encoding="utf-8"))
    tablet = data["products"]["1000000001"]
    assert tablet["name"] == "Tablet"
    assert {k: (v["options"], v["price"], v["available"]) for k, v in tablet["variants"].items()} == {
        GOLD: ({"color": "gold", "storage": "128GB"}, 989.7, True),
        BLACK: ({"color": "black", "storage": "64GB"}, 549.99, True),
        SILVER: ({"color": "silver", "storage": "256GB"}, 1099.0, False),
    }
    shirt = data["products"]["1000000002"]
    assert shirt["name"] == "T-Shirt"
    assert {k: (v["options"], v["price"], v["available"]) for k, v in shirt["variants"].items()} == {
        BLUE_M: ({"color": "blue", "size": "M"}, 49.99, True),
        RED_M: ({"color": "red", "size": "M"}, 51.5, True),
        BLUE_L: ({"color": "blue", "size": "L"}, 49.99, False),
        BLACK_L: ({"color": "black", "size": "L"}, 52.0, True),
    }
    mia = data["users"][MIA]
    assert mia["name"] == {"first_name": "Mia", "last_name": "Garcia"}
    assert mia["email"] == "mia.garcia@example.com"
    assert mia["address"] == {"address1": "12 Elm Street", "address2": "Apt 3", "city": "Springfield",
                              "country": "USA", "state": "IN", "zip": "46281"}
    assert mia["payment_methods"] == {
        MIA_GIFT: {"source": "gift_card", "id": MIA_GIFT, "balance": 59.0},
        MIA_CARD: {"source": "credit_card", "id": MIA_CARD, "brand": "mastercard", "last_four": "2732"}}
    noah = data["users"][NOAH]
    assert noah["address"] == {"address1": "5 Bleecker St", "address2": "", "city": "New York",
                               "country": "USA", "state": "NY", "zip": "10012"}
    assert noah["payment_methods"]["credit_card_3107002"]["last_four"] == "1881"
    assert noah["orders"] == ["#W3107001", "#W3107002"]
    w1 = data["orders"]["#W4821001"]
    assert (w1["status"], [i["item_id"] for i in w1["items"]]) == ("delivered", [GOLD, BLACK])
    assert w1["fulfillments"] == [{"tracking_id": ["TRK4821001"], "item_ids": [GOLD, BLACK]}]
    assert data["orders"]["#W4821002"]["fulfillments"] == []
    assert data["orders"]["#W3107001"]["fulfillments"][0]["tracking_id"] == ["TRK3107001"]
    assert data["orders"]["#W3107002"]["payment_history"][0]["payment_method_id"] == "credit_card_3107002"


def test_seed_referential_integrity() -> None:
    data = load_seed()
    assert 25 <= len(data["users"]) <= 35 and 10 <= len(data["products"]) <= 14
    assert 50 <= len(data["orders"]) <= 70
    statuses = Counter(order["status"] for order in data["orders"].values())
    assert all(statuses[s] >= 3 for s in ("pending", "processed", "delivered", "cancelled"))
    for order_id, order in data["orders"].items():
        user = data["users"][order["user_id"]]
        assert order_id in user["orders"]
        for item in order["items"]:
            variant = data["products"][item["product_id"]]["variants"][item["item_id"]]
            assert (item["price"], item["options"]) == (variant["price"], variant["options"])
        for payment in order["payment_history"]:
            assert payment["payment_method_id"] in user["payment_methods"]
    for user_id, user in data["users"].items():
        assert user["user_id"] == user_id
        for order_id in user["orders"]:
            assert data["orders"][order_id]["user_id"] == user_id
    item_ids = [item for p in data["products"].values() for item in p["variants"]]
    assert len(item_ids) == len(set(item_ids))
    emails = [user["email"].lower() for user in data["users"].values()]
    assert len(emails) == len(set(emails))


# ----------------------------------------------------------------------------------- tau2 db.json


@pytest.fixture(scope="module")
def tau2_data() -> Data:
    if not TAU2_RETAIL_DB.exists():
        pytest.skip(f"tau2 reference data not found at {TAU2_RETAIL_DB}")
    return load_tau2_db(TAU2_RETAIL_DB)


@pytest.mark.shared
async def test_tau2_db_loads_and_restores(tmp_path: Path, tau2_data: Data) -> None:
    """What loading tau2's db.json and restoring after writes must give; how fast is benchmarks/restore.py's
    and benchmarks/tools.py's, never a test's (a wall-clock limit fails on a busy machine)."""
    assert [len(tau2_data[c]) for c in ("products", "users", "orders")] == [50, 500, 1000]
    async with await RetailBackend.open(tmp_path / "tau2.sqlite", copy.deepcopy(tau2_data)) as backend:
        start = await backend.state_hash()
        assert start == hashlib.sha256(
            json.dumps(tau2_data, sort_keys=True, default=str).encode()).hexdigest()
        pending = [oid for oid, o in tau2_data["orders"].items() if o["status"] == "pending"][:3]
        for _ in range(5):
            snap = await backend.snapshot()
            for order_id in pending:
                await call(backend, "cancel_pending_order", order_id=order_id, reason="no longer needed")
            await call(backend, "modify_user_address", user_id="noah_brown_6181", address1="a", address2="",
                       city="c", state="s", country="USA", zip="z")
            await backend.restore(snap)
            assert await backend.state_hash() == start
        assert (await call(backend, "get_order_details", order_id=pending[0]))["status"] == "pending"
        assert await call(backend, "find_user_id_by_email", email="noah.brown7922@example.com") == \
            "noah_brown_6181"
