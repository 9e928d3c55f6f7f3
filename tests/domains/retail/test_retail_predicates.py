"""Every retail predicate, judged through the real gate over a real ledger filled by absorbed reads.

Two tables drive most of the file: REJECTED cases (exactly one rule fails, with the expected verdict,
the ledger values its reason must cite and the evidence paths it read) and ALLOWED cases (the whole gate
says ALLOW while that rule ran). A meta-test makes sure every predicate appears in both tables. The
scenario tests below them cover the paper's appendix-C trace, missing and stale evidence, and identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.gate import GateDecision, PredicateResult, Status, Verdict
from domains.retail import PREDICATES
from tests.support.retail_records import (
    MIA,
    MIA_CREDIT_CARD,
    MIA_DELIVERED,
    MIA_GIFT_CARD,
    MIA_PENDING,
    NOAH,
    NOAH_CREDIT_CARD,
    NOAH_PENDING,
    TABLET,
    TABLET_BLACK_64,
    TABLET_GOLD_128,
    TABLET_SILVER_256,
    TSHIRT,
    TSHIRT_BLACK_L,
    TSHIRT_BLUE_L,
    TSHIRT_BLUE_M,
    TSHIRT_RED_M,
    RetailSession,
    mia_address,
    mia_delivered_order,
    mia_pending_order,
    mia_session,
    mia_user,
    noah_delivered_order,
    noah_pending_order,
    noah_user,
    order,
    order_line,
    payment,
)

# ---------------------------------------------------------------------------------------------------
# Sessions and calls used by the tables.


def unauthenticated() -> RetailSession:
    """Orders were read, but no find_user_id_* call succeeded yet."""
    session = RetailSession()
    session.read_order(mia_pending_order())
    session.read_order(mia_delivered_order())
    return session


def with_noah_records() -> RetailSession:
    """Mia is the customer; the agent also (wrongly) read Noah's profile and orders."""
    session = mia_session()
    session.read_user(noah_user())
    session.read_order(noah_pending_order())
    session.read_order(noah_delivered_order())
    return session


def pending_status(status: str) -> Callable[[], RetailSession]:
    return lambda: mia_session(orders=[mia_delivered_order(), mia_pending_order(status=status)])


def delivered_status(status: str) -> Callable[[], RetailSession]:
    return lambda: mia_session(orders=[mia_delivered_order(status=status), mia_pending_order()])


def two_blue_shirts() -> RetailSession:
    """A pending order holding the same item twice (tau2 orders may repeat an item)."""
    lines = [order_line(TSHIRT, TSHIRT_BLUE_M), order_line(TSHIRT, TSHIRT_BLUE_M)]
    twice = order(MIA_PENDING, MIA, lines, status="pending", payment_method_id=MIA_CREDIT_CARD,
                  shipping=mia_address())
    return mia_session(orders=[mia_delivered_order(), twice])


def payment_already_changed() -> RetailSession:
    """A pending order whose payment was moved once: payment, new payment, refund of the first."""
    history = [payment(49.99, MIA_CREDIT_CARD), payment(49.99, MIA_GIFT_CARD),
               payment(49.99, MIA_CREDIT_CARD, "refund")]
    return mia_session(orders=[mia_delivered_order(), mia_pending_order(payment_history=history)])


def poor_gift_card() -> RetailSession:
    return mia_session(user=mia_user(gift_card_balance=20.0))


def card_paid_delivery() -> RetailSession:
    return mia_session(orders=[mia_delivered_order(payment_method_id=MIA_CREDIT_CARD), mia_pending_order()])


NEW_ADDRESS = {"address1": "9 Oak Court", "address2": "", "city": "Springfield", "state": "IN",
               "country": "USA", "zip": "46282"}


def cancel(order_id: str = MIA_PENDING, reason: str = "no longer needed") -> tuple[str, dict[str, Any]]:
    return "cancel_pending_order", {"order_id": order_id, "reason": reason}


def modify_address(order_id: str = MIA_PENDING) -> tuple[str, dict[str, Any]]:
    return "modify_pending_order_address", {"order_id": order_id, **NEW_ADDRESS}


def modify_user_address(user_id: str = MIA) -> tuple[str, dict[str, Any]]:
    return "modify_user_address", {"user_id": user_id, **NEW_ADDRESS}


def modify_items(old: list[str], new: list[str], payment_method_id: str = MIA_CREDIT_CARD,
                 order_id: str = MIA_PENDING) -> tuple[str, dict[str, Any]]:
    return "modify_pending_order_items", {"order_id": order_id, "item_ids": old, "new_item_ids": new,
                                          "payment_method_id": payment_method_id}


def modify_payment(payment_method_id: str, order_id: str = MIA_PENDING) -> tuple[str, dict[str, Any]]:
    return "modify_pending_order_payment", {"order_id": order_id, "payment_method_id": payment_method_id}


def return_items(old: list[str], payment_method_id: str = MIA_GIFT_CARD,
                 order_id: str = MIA_DELIVERED) -> tuple[str, dict[str, Any]]:
    return "return_delivered_order_items", {"order_id": order_id, "item_ids": old,
                                            "payment_method_id": payment_method_id}


def exchange(old: list[str], new: list[str], payment_method_id: str = MIA_CREDIT_CARD,
             order_id: str = MIA_DELIVERED) -> tuple[str, dict[str, Any]]:
    return "exchange_delivered_order_items", {"order_id": order_id, "item_ids": old, "new_item_ids": new,
                                              "payment_method_id": payment_method_id}


# ---------------------------------------------------------------------------------------------------
# The tables.


@dataclass(frozen=True)
class Rejected:
    label: str
    predicate_id: str
    verdict: Verdict
    session: Callable[[], RetailSession]
    call: tuple[str, dict[str, Any]]
    cites: tuple[str, ...]  # ledger values and paths the reason must name
    evidence: tuple[str, ...]  # exactly what the failing rule read


@dataclass(frozen=True)
class Allowed:
    label: str
    predicate_id: str
    session: Callable[[], RetailSession]
    call: tuple[str, dict[str, Any]]
    also: tuple[str, ...] = field(default=())  # other predicates this case exercises (documentation)


REJECTED: list[Rejected] = [
    Rejected("write before authentication", "retail.authenticated", Verdict.REVISE, unauthenticated, cancel(),
             ("auth.user_id is not set", "find_user_id_by_email", "find_user_id_by_name_zip"),
             ("auth.user_id",)),
    Rejected("cancel another customer's order", "retail.order_owned_by_customer", Verdict.BLOCK,
             with_noah_records, cancel(NOAH_PENDING),
             ("order #W3107002 belongs to 'noah_kim_3107'", "orders.#W3107002.user_id", "'mia_garcia_4821'",
              "auth.user_id"),
             ("auth.user_id", "orders.#W3107002")),
    Rejected("change another customer's address", "retail.user_is_customer", Verdict.BLOCK, with_noah_records,
             modify_user_address(NOAH), ("'noah_kim_3107'", "'mia_garcia_4821' (auth.user_id)"),
             ("auth.user_id",)),
    Rejected("cancel a delivered order", "retail.cancel_requires_pending", Verdict.BLOCK, mia_session,
             cancel(MIA_DELIVERED), ("order #W4821001 has status 'delivered'", "orders.#W4821001.status",
                                     "only 'pending' orders can be cancelled"),
             ("orders.#W4821001",)),
    Rejected("cancel a processed order", "retail.cancel_requires_pending", Verdict.BLOCK,
             pending_status("processed"), cancel(), ("'processed'", "orders.#W4821002.status"),
             ("orders.#W4821002",)),
    Rejected("cancel with an unlisted reason", "retail.cancel_reason_valid", Verdict.REVISE, mia_session,
             cancel(reason="found it cheaper elsewhere"),
             ("'found it cheaper elsewhere'", "'no longer needed' or 'ordered by mistake'"), ()),
    Rejected("change the address of a processed order", "retail.modify_requires_pending", Verdict.BLOCK,
             pending_status("processed"), modify_address(),
             ("order #W4821002 has status 'processed'", "orders.#W4821002.status"), ("orders.#W4821002",)),
    Rejected("modify items a second time", "retail.items_modified_once", Verdict.BLOCK,
             pending_status("pending (item modified)"), modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M]),
             ("already modified", "orders.#W4821002.status is 'pending (item modified)'"),
             ("orders.#W4821002",)),
    Rejected("change the payment after an item modification", "retail.items_modified_once", Verdict.BLOCK,
             pending_status("pending (item modified)"), modify_payment(MIA_GIFT_CARD),
             ("'pending (item modified)'",), ("orders.#W4821002",)),
    Rejected("return a pending order", "retail.return_exchange_requires_delivered", Verdict.BLOCK, mia_session,
             return_items([TSHIRT_BLUE_M], MIA_CREDIT_CARD, MIA_PENDING),
             ("order #W4821002 has status 'pending'", "orders.#W4821002.status",
              "only 'delivered' orders can be returned"),
             ("orders.#W4821002",)),
    Rejected("exchange an order twice", "retail.return_exchange_requires_delivered", Verdict.BLOCK,
             delivered_status("exchange requested"), exchange([TABLET_BLACK_64], [TABLET_GOLD_128]),
             ("'exchange requested'", "already requested"), ("orders.#W4821001",)),
    Rejected("return no items", "retail.item_lists_well_formed", Verdict.REVISE, mia_session, return_items([]),
             ("item_ids is empty",), ()),
    Rejected("exchange two items for one", "retail.item_lists_well_formed", Verdict.REVISE, mia_session,
             exchange([TABLET_GOLD_128, TABLET_BLACK_64], [TABLET_BLACK_64]),
             ("item_ids has 2 items", "new_item_ids has 1"), ()),
    Rejected("replace an item by itself", "retail.item_lists_well_formed", Verdict.REVISE, mia_session,
             modify_items([TSHIRT_BLUE_M], [TSHIRT_BLUE_M]), ("['2000000021']", "replaced by themselves"), ()),
    Rejected("return an item the order does not hold", "retail.items_in_order", Verdict.REVISE, mia_session,
             return_items([TABLET_SILVER_256]),
             ("'2000000013' is not in the order", "orders.#W4821001.items",
              "['2000000011', '2000000012']"),
             ("orders.#W4821001",)),
    Rejected("return one item twice", "retail.items_in_order", Verdict.REVISE, mia_session,
             return_items([TABLET_GOLD_128, TABLET_GOLD_128]),
             ("'2000000011' is listed 2 times but the order holds it once (",), ("orders.#W4821001",)),
    Rejected("return a product id", "retail.items_in_order", Verdict.REVISE, mia_session, return_items([TABLET]),
             ("'1000000001' is not in the order (that is a product id, not an item id)",),
             ("orders.#W4821001",)),
    Rejected("exchange for an unavailable variant", "retail.replacement_is_available_variant", Verdict.REVISE,
             mia_session, exchange([TABLET_BLACK_64], [TABLET_SILVER_256]),
             ("variant '2000000013' of Tablet", "is not available",
              "products.1000000001.variants.2000000013.available is False"),
             ("orders.#W4821001", "products.1000000001")),
    Rejected("exchange a tablet for a T-shirt", "retail.replacement_is_available_variant", Verdict.REVISE,
             mia_session, exchange([TABLET_BLACK_64], [TSHIRT_RED_M]),
             ("'2000000022' is not a variant of product 1000000001 (Tablet)", "item '2000000012'",
              "products.1000000001.variants has ['2000000011', '2000000012', '2000000013']"),
             ("orders.#W4821001", "products.1000000001")),
    Rejected("modify items to an unavailable size", "retail.replacement_is_available_variant", Verdict.REVISE,
             mia_session, modify_items([TSHIRT_BLUE_M], [TSHIRT_BLUE_L]),
             ("products.1000000002.variants.2000000023.available is False",),
             ("orders.#W4821002", "products.1000000002")),
    Rejected("pay with someone else's card", "retail.payment_method_in_profile", Verdict.REVISE, mia_session,
             modify_payment(NOAH_CREDIT_CARD),
             ("'credit_card_3107002' is not in the customer's profile",
              "user.payment_methods has ['credit_card_4821002', 'gift_card_4821001']"),
             ("auth.user_id", "user")),
    Rejected("paper appendix C: refund to the credit card", "retail.refund_to_original_or_gift_card",
             Verdict.REVISE, mia_session, return_items([TABLET_GOLD_128], MIA_CREDIT_CARD),
             ("refunds must go to the original payment (['gift_card_4821001']) or an existing gift card "
              "(['gift_card_4821001']); you chose 'credit_card_4821002'",
              "orders.#W4821001.payment_history[0].payment_method_id"),
             ("auth.user_id", "orders.#W4821001", "user")),
    Rejected("change the payment of an order paid twice", "retail.payment_change_single_payment", Verdict.BLOCK,
             payment_already_changed, modify_payment(MIA_GIFT_CARD),
             ("order #W4821002 has 3 payment records", "orders.#W4821002.payment_history",
              "exactly one payment"),
             ("orders.#W4821002",)),
    Rejected("change the payment to the same method", "retail.payment_change_new_method", Verdict.REVISE,
             mia_session, modify_payment(MIA_CREDIT_CARD),
             ("already paid with 'credit_card_4821002'", "orders.#W4821002.payment_history[0].payment_method_id"),
             ("orders.#W4821002",)),
    Rejected("gift card short of an exchange's price difference", "retail.gift_card_covers_amount",
             Verdict.REVISE, mia_session, exchange([TABLET_BLACK_64], [TABLET_GOLD_128], MIA_GIFT_CARD),
             ("'gift_card_4821001' has a balance of $59.00", "user.payment_methods.gift_card_4821001.balance",
              "the price difference $439.71 = (989.7 [products.1000000001.variants.2000000011.price] - 549.99 "
              "[item 2000000012 in orders.#W4821001.items])"),
             ("auth.user_id", "user", "orders.#W4821001", "products.1000000001")),
    Rejected("gift card short of the order amount", "retail.gift_card_covers_amount", Verdict.REVISE,
             poor_gift_card, modify_payment(MIA_GIFT_CARD),
             ("balance of $20.00", "the order amount $49.99", "orders.#W4821002.payment_history[0].amount"),
             ("auth.user_id", "user", "orders.#W4821002")),
]

def mia_answered(answer: str) -> Callable[[], RetailSession]:
    """Mia authenticated with her records read; the agent described the cancellation and she answered."""
    def build() -> RetailSession:
        session = mia_session()
        session.said("user", "Please cancel my T-shirt order, I no longer need it.")
        session.confirmed(f"To confirm: cancel order {MIA_PENDING} (T-Shirt) as 'no longer needed'?", answer)
        return session
    return build


REJECTED.append(
    Rejected("cancel while the customer hesitates", "retail.explicit_confirmation", Verdict.REVISE,
             mia_answered("Hmm, wait. Let me think about it."), cancel(),
             ("'let me think', no yes", '"Hmm, wait. Let me think about it."', "conversation.confirmation",
              '"Please cancel my T-shirt order, I no longer need it."'),
             ("conversation.confirmation", "conversation.stated.reason")))

ALLOWED: list[Allowed] = [
    Allowed("cancel own pending order", "retail.authenticated", mia_session, cancel(),
            also=("retail.order_owned_by_customer", "retail.cancel_requires_pending")),
    Allowed("cancel own pending order", "retail.order_owned_by_customer", mia_session, cancel()),
    Allowed("change own profile address", "retail.user_is_customer", mia_session, modify_user_address()),
    Allowed("cancel a pending order", "retail.cancel_requires_pending", mia_session, cancel()),
    Allowed("cancel: no longer needed", "retail.cancel_reason_valid", mia_session, cancel()),
    Allowed("cancel: ordered by mistake", "retail.cancel_reason_valid", mia_session,
            cancel(reason="ordered by mistake")),
    Allowed("change the address of a pending order", "retail.modify_requires_pending", mia_session,
            modify_address()),
    Allowed("first item modification", "retail.items_modified_once", mia_session,
            modify_items([TSHIRT_BLUE_M], [TSHIRT_BLACK_L], MIA_GIFT_CARD)),
    Allowed("paper appendix C: refund to the gift card", "retail.return_exchange_requires_delivered",
            mia_session, return_items([TABLET_GOLD_128], MIA_GIFT_CARD)),
    Allowed("exchange one for one", "retail.item_lists_well_formed", mia_session,
            exchange([TABLET_BLACK_64], [TABLET_GOLD_128])),
    Allowed("swap two items with each other", "retail.item_lists_well_formed", mia_session,
            exchange([TABLET_GOLD_128, TABLET_BLACK_64], [TABLET_BLACK_64, TABLET_GOLD_128])),
    Allowed("return both items", "retail.items_in_order", mia_session,
            return_items([TABLET_GOLD_128, TABLET_BLACK_64])),
    Allowed("an item listed twice that the order holds twice", "retail.items_in_order", two_blue_shirts,
            modify_items([TSHIRT_BLUE_M, TSHIRT_BLUE_M], [TSHIRT_RED_M, TSHIRT_BLACK_L])),
    Allowed("exchange for an available variant", "retail.replacement_is_available_variant", mia_session,
            exchange([TABLET_BLACK_64], [TABLET_GOLD_128])),
    Allowed("pay with own gift card", "retail.payment_method_in_profile", mia_session,
            modify_payment(MIA_GIFT_CARD)),
    Allowed("refund to an existing gift card", "retail.refund_to_original_or_gift_card", mia_session,
            return_items([TABLET_GOLD_128], MIA_GIFT_CARD)),
    Allowed("refund to the original credit card", "retail.refund_to_original_or_gift_card",
            card_paid_delivery, return_items([TABLET_GOLD_128], MIA_CREDIT_CARD)),
    Allowed("first payment change", "retail.payment_change_single_payment", mia_session,
            modify_payment(MIA_GIFT_CARD)),
    Allowed("payment change to another method", "retail.payment_change_new_method", mia_session,
            modify_payment(MIA_GIFT_CARD)),
    Allowed("gift card covers the order amount", "retail.gift_card_covers_amount", mia_session,
            modify_payment(MIA_GIFT_CARD)),
    Allowed("gift card covers a small price difference", "retail.gift_card_covers_amount", mia_session,
            modify_items([TSHIRT_BLUE_M], [TSHIRT_BLACK_L], MIA_GIFT_CARD)),
    Allowed("a cheaper exchange refunds the gift card", "retail.gift_card_covers_amount", mia_session,
            exchange([TABLET_GOLD_128], [TABLET_BLACK_64], MIA_GIFT_CARD)),
    Allowed("a credit card needs no balance", "retail.gift_card_covers_amount", mia_session,
            exchange([TABLET_BLACK_64], [TABLET_GOLD_128], MIA_CREDIT_CARD)),
    Allowed("cancel once the customer said yes", "retail.explicit_confirmation", mia_answered("Yes, cancel it."),
            cancel()),
]


Call = tuple[str, dict[str, Any]]


def propose(session: RetailSession, call: Call) -> GateDecision:
    tool, arguments = call
    return session.propose(tool, **arguments)


def wrote(session: RetailSession, call: Call) -> list[str]:
    """The write ran (the gate allowed it and the backend succeeded): its paths are now stale."""
    tool, arguments = call
    return session.wrote(tool, **arguments)


def result_of(decision: GateDecision, predicate_id: str) -> PredicateResult:
    [result] = [r for r in decision.results if r.predicate_id == predicate_id]
    return result


def failed_ids(decision: GateDecision) -> set[str]:
    return {r.predicate_id for r in decision.failed}


@pytest.mark.parametrize("case", REJECTED, ids=[c.label for c in REJECTED])
def test_rejected(case: Rejected) -> None:
    tool, arguments = case.call
    decision = case.session().propose(tool, **arguments)
    assert decision.verdict is case.verdict, decision.feedback
    assert failed_ids(decision) == {case.predicate_id}, decision.feedback
    result = result_of(decision, case.predicate_id)
    assert result.status is Status.VIOLATION
    for cited in case.cites:
        assert cited in result.reason, f"{cited!r} not in {result.reason!r}"
    assert result.evidence == case.evidence
    assert case.predicate_id in decision.feedback and result.reason in decision.feedback


@pytest.mark.parametrize("case", ALLOWED, ids=[f"{c.predicate_id}: {c.label}" for c in ALLOWED])
def test_allowed(case: Allowed) -> None:
    tool, arguments = case.call
    decision = case.session().propose(tool, **arguments)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert result_of(decision, case.predicate_id).status is Status.PASS


def test_every_predicate_has_an_allowed_and_a_rejected_case() -> None:
    ids = {p.id for p in PREDICATES}
    assert {c.predicate_id for c in REJECTED} == ids
    assert {c.predicate_id for c in ALLOWED} == ids
    guards = {p.id: p.tools for p in PREDICATES}
    cases: list[Rejected | Allowed] = [*REJECTED, *ALLOWED]
    for case in cases:
        assert case.call[0] in guards[case.predicate_id], case.label


# ---------------------------------------------------------------------------------------------------
# Scenarios.


def test_appendix_c_refund_is_revised_then_allowed() -> None:
    """Paper appendix C: the refund rule alone catches a valid-profile but non-original credit card."""
    session = mia_session()
    rejected = propose(session, return_items([TABLET_GOLD_128], MIA_CREDIT_CARD))
    assert rejected.verdict is Verdict.REVISE
    for passing in ("retail.authenticated", "retail.order_owned_by_customer",
                    "retail.return_exchange_requires_delivered", "retail.items_in_order",
                    "retail.payment_method_in_profile"):
        assert result_of(rejected, passing).status is Status.PASS, passing
    assert "retail.refund_to_original_or_gift_card" in rejected.feedback

    assert propose(session, return_items([TABLET_GOLD_128], MIA_GIFT_CARD)).verdict is Verdict.ALLOW


def test_missing_order_asks_for_get_order_details() -> None:
    session = mia_session(orders=[])
    decision = propose(session, cancel())
    assert decision.verdict is Verdict.REVISE  # never BLOCK on absent evidence
    result = result_of(decision, "retail.cancel_requires_pending")
    assert result.status is Status.MISSING
    assert "orders.#W4821002" in result.reason and "has not been observed" in result.reason
    assert 'get_order_details(order_id="#W4821002")' in result.reason
    assert result.evidence == ("orders.#W4821002",)


def test_missing_product_asks_for_get_product_details_by_product_id() -> None:
    session = mia_session(products=[])
    tool, arguments = exchange([TABLET_BLACK_64], [TABLET_GOLD_128], MIA_GIFT_CARD)
    decision = session.propose(tool, **arguments)
    assert decision.verdict is Verdict.REVISE
    for predicate_id in ("retail.replacement_is_available_variant", "retail.gift_card_covers_amount"):
        result = result_of(decision, predicate_id)
        assert result.status is Status.MISSING
        assert 'get_product_details(product_id="1000000001")' in result.reason
        assert "products.1000000001" in result.evidence
    assert failed_ids(decision) == {"retail.replacement_is_available_variant", "retail.gift_card_covers_amount"}


def test_missing_profile_asks_for_the_customers_details() -> None:
    session = RetailSession()
    session.authenticate(MIA)
    session.read_order(mia_pending_order())
    decision = propose(session, modify_payment(MIA_GIFT_CARD))
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "retail.payment_method_in_profile")
    assert result.status is Status.MISSING
    assert 'get_user_details(user_id="mia_garcia_4821")' in result.reason


def test_stale_order_asks_for_a_re_read_then_judges_what_was_read() -> None:
    """An item change can change the order's status: a payment change after it reads the order again, and what
    the re-read shows decides (items modified: no further change)."""
    session = mia_session()
    wrote(session, modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M]))
    step = session.step
    decision = propose(session, modify_payment(MIA_GIFT_CARD))
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "retail.modify_requires_pending")
    assert result.status is Status.MISSING
    assert f"may have changed since modify_pending_order_items at step {step}" in result.reason
    assert 'get_order_details(order_id="#W4821002")' in result.reason

    session.read_order(mia_pending_order(status="pending (item modified)"))
    again = propose(session, modify_payment(MIA_GIFT_CARD))
    assert again.verdict is Verdict.BLOCK and [r.predicate_id for r in again.failed] == ["retail.items_modified_once"]


def test_an_address_change_leaves_the_rest_of_the_order_fresh() -> None:
    """A shipping address change can change only the address: the item change right after it is judged on the
    order as read, without a re-read (its rules read the status, items and payment, never the address)."""
    session = mia_session()
    staled = wrote(session, modify_address())
    assert staled == ["orders.#W4821002"]
    assert session.ledger.entry("orders.#W4821002").stale.fields == {"address"}  # type: ignore[union-attr]
    tool, arguments = modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M])
    assert session.propose(tool, **arguments).verdict is Verdict.ALLOW


def test_stale_status_is_revise_not_block_until_re_read() -> None:
    """A cancelled order is refused only once the new status has actually been observed."""
    session = mia_session()
    wrote(session, cancel())
    again = propose(session, cancel())
    assert again.verdict is Verdict.REVISE
    assert result_of(again, "retail.cancel_requires_pending").status is Status.MISSING

    session.read_order(mia_pending_order(status="cancelled"))
    refused = propose(session, cancel())
    assert refused.verdict is Verdict.BLOCK
    assert "'cancelled'" in result_of(refused, "retail.cancel_requires_pending").reason


def test_gift_card_balance_is_stale_after_a_cancel_paid_with_it() -> None:
    """A cancel refunds a gift card at once: that card's balance must be read again before paying with it."""
    paid = [payment(49.99, MIA_GIFT_CARD)]
    second = order("#W4821003", MIA, [order_line(TSHIRT, TSHIRT_BLUE_M)], status="pending",
                   payment_method_id=MIA_CREDIT_CARD, shipping=mia_address())
    session = mia_session(orders=[mia_delivered_order(), mia_pending_order(payment_history=paid), second])
    wrote(session, cancel(MIA_PENDING))
    decision = propose(session, modify_payment(MIA_GIFT_CARD, order_id="#W4821003"))
    assert decision.verdict is Verdict.REVISE
    result = result_of(decision, "retail.gift_card_covers_amount")
    assert result.status is Status.MISSING and "user may have changed since cancel_pending_order" in result.reason
    assert f"payment_methods.{MIA_GIFT_CARD}.balance" in result.reason


def _two_pending_orders() -> RetailSession:
    second = order("#W4821003", MIA, [order_line(TSHIRT, TSHIRT_BLUE_M)], status="pending",
                   payment_method_id=MIA_CREDIT_CARD, shipping=mia_address())
    return mia_session(orders=[mia_delivered_order(), mia_pending_order(), second])


def test_a_second_orders_item_change_after_a_card_paid_change_needs_no_re_read() -> None:
    """The first change is paid by credit card: nothing in the profile changed, and the second order was never
    touched, so its change is judged on the records as read."""
    session = _two_pending_orders()
    staled = wrote(session, modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M], payment_method_id=MIA_CREDIT_CARD))
    assert staled == ["orders.#W4821002"]
    second = propose(session, modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M], payment_method_id=MIA_CREDIT_CARD,
                                           order_id="#W4821003"))
    assert second.verdict is Verdict.ALLOW, second.feedback


def test_after_a_gift_card_paid_change_the_card_balance_is_read_again() -> None:
    session = _two_pending_orders()
    wrote(session, modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M], payment_method_id=MIA_GIFT_CARD))
    again = propose(session, modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M], payment_method_id=MIA_GIFT_CARD,
                                          order_id="#W4821003"))
    assert again.verdict is Verdict.REVISE and again.refusal is not None and again.refusal.label == "needs a read"
    by_card = propose(session, modify_items([TSHIRT_BLUE_M], [TSHIRT_RED_M], payment_method_id=MIA_CREDIT_CARD,
                                            order_id="#W4821003"))
    assert by_card.verdict is Verdict.ALLOW, by_card.feedback


def test_a_credit_card_paid_cancel_leaves_the_profile_fresh() -> None:
    """The same cancel of an order paid by credit card refunds outside the profile: nothing there is stale."""
    session = mia_session()
    assert wrote(session, cancel(MIA_PENDING)) == ["orders.#W4821002"]
    session.read_order(mia_pending_order())
    assert propose(session, modify_payment(MIA_GIFT_CARD)).verdict is Verdict.ALLOW


def test_reading_another_user_does_not_change_the_customer() -> None:
    session = mia_session()
    assert session.context().customer_id == MIA
    absorbed = session.read_user(noah_user())
    assert absorbed.added == ("users.noah_kim_3107",)
    assert session.context().customer_id == MIA
    assert session.ledger.get("user")["user_id"] == MIA


def test_write_before_authentication_then_after() -> None:
    session = RetailSession()
    session.read_user(mia_user())  # the customer gave their id; that is not authentication
    session.read_order(mia_pending_order())
    assert session.context().customer_id is None
    assert not session.ledger.has("user")
    tool, arguments = modify_payment(MIA_GIFT_CARD)
    before = session.propose(tool, **arguments)
    assert before.verdict is Verdict.REVISE
    assert failed_ids(before) == {"retail.authenticated"}

    session.authenticate(MIA)
    assert not session.ledger.has("user")  # `user` is set only by a read after authentication...
    after = session.propose(tool, **arguments)
    # ...but the profile read before it is the same fact: the verdict does not depend on the order of the
    # two reads, and the reason cites where the profile came from.
    assert after.verdict is Verdict.ALLOW, after.feedback
    assert f"users.{MIA}" in result_of(after, "retail.payment_method_in_profile").evidence


def test_a_profile_read_before_authentication_is_judged_like_one_read_after() -> None:
    """Violating side of the same boundary: the facts of an early profile read still refuse a method the
    profile does not hold, citing the path they came from."""
    session = RetailSession()
    session.read_user(mia_user())
    session.read_order(mia_pending_order())
    session.authenticate(MIA)
    decision = propose(session, modify_payment("paypal_0000000"))
    assert decision.verdict is Verdict.REVISE
    reason = result_of(decision, "retail.payment_method_in_profile").reason
    assert reason.startswith(f"payment method 'paypal_0000000' is not in the customer's profile (users.{MIA}."
                             "payment_methods has ["), reason


def test_switching_to_another_user_keeps_the_first_customer() -> None:
    """A second find_user_id_* for someone else cannot unlock that person's orders."""
    session = mia_session()
    session.authenticate(NOAH)
    session.read_order(noah_pending_order())
    assert session.context().customer_id == MIA
    decision = propose(session, cancel(NOAH_PENDING))
    assert decision.verdict is Verdict.BLOCK
    assert "retail.order_owned_by_customer" in failed_ids(decision)


# ---------------------------------------------------------------------------------------------------
# Money at the exact cent, the same answer as the tool.


def test_money_helper_compares_whole_cents() -> None:
    from core.money import cents, covers, show, total_cents

    assert 0.1 + 0.2 > 0.3 and total_cents([0.1, 0.2]) == cents(0.3) == 30
    assert covers(0.3, total_cents([0.1, 0.2])) and not covers(0.29, 30)
    assert cents(989.7) - cents(549.99) == 43971 and show(-5) == "-$0.05" and show(43971) == "$439.71"
