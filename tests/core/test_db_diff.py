"""A compare run's end state in a stakeholder's words: money first, as what was refunded or charged to which
payment method, and the rows that differ after it; never a payment history's JSON."""

from __future__ import annotations

from typing import Any

from core.db_diff import db_diff

MIA = {"user_id": "mia", "payment_methods": {
    "credit_card_4821002": {"source": "credit_card", "id": "credit_card_4821002", "brand": "mastercard"},
    "gift_card_4821001": {"source": "gift_card", "id": "gift_card_4821001", "balance": 59.0},
    "paypal_1": {"source": "paypal", "id": "paypal_1"}}}


def order(*history: dict[str, Any], status: str = "delivered") -> dict[str, Any]:
    return {"order_id": "#W1", "status": status, "payment_history": list(history)}


PAID = {"transaction_type": "payment", "amount": 989.7, "payment_method_id": "credit_card_4821002"}


def test_a_refund_is_said_in_words_with_the_method_it_went_to() -> None:
    refund = {"transaction_type": "refund", "amount": 989.7, "payment_method_id": "credit_card_4821002"}
    diff = db_diff({"users": {"mia": MIA}, "orders": {"#W1": order(PAID)}},
                   {"users": {"mia": MIA}, "orders": {"#W1": order(PAID, refund, status="returned")}})
    assert diff.summary() == "$989.70 refunded to Mastercard credit_card_4821002; 1 row(s) differ"
    assert [c.describe() for c in diff.changes] == [
        "orders #W1 payment_history: $989.70 refunded to Mastercard credit_card_4821002",
        'orders #W1 status: "delivered" -> "returned"']
    assert [c.describe() for c in diff.record_changes] == ['orders #W1 status: "delivered" -> "returned"']
    assert diff.money == 989.7


def test_the_sign_tells_a_refund_from_a_charge_and_an_unknown_method_keeps_its_id() -> None:
    before = {"reservations": {"R1": {"payment_history": [{"payment_id": "gift_card_4821001", "amount": 124}]}}}
    after = {"reservations": {"R1": {"payment_history": [
        {"payment_id": "gift_card_4821001", "amount": 124}, {"payment_id": "gift_card_4821001", "amount": -124},
        {"payment_id": "paypal_1", "amount": 26}, {"payment_id": "card_9", "amount": 5}]}}}
    diff = db_diff({**before, "users": {"mia": MIA}}, {**after, "users": {"mia": MIA}})
    assert diff.summary() == ("$124.00 refunded to gift card gift_card_4821001; $26.00 charged to PayPal paypal_1; "
                              "$5.00 charged to card_9; 1 row(s) differ")


def test_other_amounts_still_count_as_money_moved() -> None:
    diff = db_diff({"bills": {"B1": {"total_due": 8.0}}}, {"bills": {"B1": {"total_due": 20.0}}})
    assert diff.summary() == "$12.00 moved; 1 row(s) differ"
    assert db_diff({"t": {"k": {"x": 1}}}, {"t": {"k": {"x": 2}}}).summary() == "no money moved; 1 row(s) differ"
    assert db_diff({"t": {}}, {"t": {}}).summary() == "no difference"


def test_a_rewritten_history_is_shown_as_it_changed() -> None:
    """Only entries added after an unchanged history are payments; a history rewritten in place is not
    summarised as one."""
    diff = db_diff({"orders": {"#W1": order(PAID)}}, {"orders": {"#W1": order({**PAID, "amount": 1.0})}})
    assert not diff.payments and diff.changes[0].describe().startswith("orders #W1 payment_history: [{")
