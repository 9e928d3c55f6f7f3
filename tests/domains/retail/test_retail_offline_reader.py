"""The retail reader of the offline agent: what a customer's words name, and the requests it builds."""

from __future__ import annotations

import pytest

from core.llm.offline_agent import Observation, Proposal, Question, Reads
from domains.retail.offline import READER
from mock_backends.retail import load_seed


def test_ids_emails_names_and_zip_codes() -> None:
    assert READER.reads_for("I'm Mia Garcia, zip code 46281, order W4821001 please", []) == [
        Proposal("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"}),
        Proposal("get_order_details", {"order_id": "#W4821001"})]
    assert READER.reads_for("user noah_kim_3107, Noah.Kim@example.com", []) == [
        Proposal("find_user_id_by_email", {"email": "noah.kim@example.com"}),
        Proposal("get_user_details", {"user_id": "noah_kim_3107"})]
    assert READER.reads_for("the blue one please", []) == []


def test_requests_are_built_from_observed_orders_only() -> None:
    order = {"order_id": "#W1", "status": "delivered", "items": [{"item_id": "2000000011"}],
             "payment_history": [{"payment_method_id": "gift_card_1"}]}
    seen = [Observation("get_order_details", {"order_id": "#W1"}, order)]
    assert READER.request("cancel it, ordered by mistake", seen) == Proposal(
        "cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"})
    assert READER.request("I want to return it", seen) == Proposal(
        "return_delivered_order_items", {"order_id": "#W1", "item_ids": ["2000000011"],
                                         "payment_method_id": "gift_card_1"})
    assert READER.request("cancel it", []) is None
    assert READER.request("cancel it", [Observation("get_order_details", {}, {**order, "status": "cancelled"})]) is None


# -- a request names items: the agent proposes exactly those, and asks when several fit ----------------------

SEED = load_seed()
TABLETS = Observation("get_order_details", {"order_id": "#W4821001"}, SEED["orders"]["#W4821001"])
SHIRT_ORDER = Observation("get_order_details", {"order_id": "#W4821002"}, SEED["orders"]["#W4821002"])
TABLET_PRODUCT = Observation("get_product_details", {"product_id": "1000000001"}, SEED["products"]["1000000001"])
SHIRT_PRODUCT = Observation("get_product_details", {"product_id": "1000000002"}, SEED["products"]["1000000002"])


def returning(*items: str) -> Proposal:
    return Proposal("return_delivered_order_items", {"order_id": "#W4821001", "item_ids": list(items),
                                                     "payment_method_id": "gift_card_4821001"})


@pytest.mark.parametrize("text", ["return the black 64GB tablet from order #W4821001",
                                  "I'd like to return the black tablet", "please return the 64 GB one",
                                  "return item 2000000012"])
def test_a_return_takes_only_the_item_the_customer_named(text: str) -> None:
    assert READER.request(text, [TABLETS]) == returning("2000000012")


def test_a_return_of_both_named_items_takes_both() -> None:
    assert READER.request("return both tablets", [TABLETS]) == returning("2000000011", "2000000012")
    assert READER.request("return everything in that order", [TABLETS]) == returning("2000000011", "2000000012")


@pytest.mark.parametrize("text", ["return the tablet", "I want to return it", "return the black 128GB tablet"])
def test_a_return_that_fits_several_items_asks_which(text: str) -> None:
    asked = READER.request(text, [TABLETS])
    assert isinstance(asked, Question)
    assert "gold, 128GB" in asked.text and "black, 64GB" in asked.text and asked.text.endswith("?")


def test_the_answer_to_which_one_picks_among_the_items_asked_about() -> None:
    earlier = "return the tablet from order #W4821001"
    assert READER.request("the black one", [TABLETS], earlier=earlier) == returning("2000000012")
    assert READER.request("the gold 128GB one please", [TABLETS], earlier=earlier) == returning("2000000011")
    assert READER.request("both of them", [TABLETS], earlier=earlier) == returning("2000000011", "2000000012")


def test_an_item_the_order_does_not_hold_is_never_guessed() -> None:
    asked = READER.request("return the blue t-shirt from #W4821001", [TABLETS])
    assert isinstance(asked, Question) and "Tablet (gold, 128GB" in asked.text


def test_the_order_the_customer_names_wins_over_the_last_one_read() -> None:
    assert READER.request("cancel #W4821002, ordered by mistake", [SHIRT_ORDER, TABLETS]) == Proposal(
        "cancel_pending_order", {"order_id": "#W4821002", "reason": "ordered by mistake"})
    assert READER.request("return the black tablet from #W4821001", [TABLETS, SHIRT_ORDER]) == returning(
        "2000000012")


def test_an_exchange_names_the_item_and_the_variant_wanted() -> None:
    text = "exchange the black 64GB tablet from #W4821001 for the gold 128GB one"
    assert READER.request(text, [TABLETS]) == Reads((Proposal("get_product_details", {"product_id": "1000000001"}),))
    assert READER.request(text, [TABLETS, TABLET_PRODUCT]) == Proposal("exchange_delivered_order_items", {
        "order_id": "#W4821001", "item_ids": ["2000000012"], "new_item_ids": ["2000000011"],
        "payment_method_id": "gift_card_4821001"})
    asked = READER.request("exchange the tablet for a silver one", [TABLETS, TABLET_PRODUCT])
    assert isinstance(asked, Question)  # which of the two tablets?


def test_a_pending_order_s_item_is_modified_to_the_variant_named() -> None:
    proposal = READER.request("change the t-shirt in #W4821002 to red", [SHIRT_ORDER, SHIRT_PRODUCT])
    assert proposal == Proposal("modify_pending_order_items", {
        "order_id": "#W4821002", "item_ids": ["2000000021"], "new_item_ids": ["2000000022"],
        "payment_method_id": "credit_card_4821002"})
    asked = READER.request("change the t-shirt in #W4821002 to size L", [SHIRT_ORDER, SHIRT_PRODUCT])
    # blue L keeps the colour; it is the one variant that changes only what was named
    assert asked == Proposal("modify_pending_order_items", {
        "order_id": "#W4821002", "item_ids": ["2000000021"], "new_item_ids": ["2000000023"],
        "payment_method_id": "credit_card_4821002"})
