"""The retail reader of the offline agent: what a customer's words name, and the requests it builds."""

from __future__ import annotations

from core.llm.offline_agent import Observation, Proposal
from domains.retail.offline import READER


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
