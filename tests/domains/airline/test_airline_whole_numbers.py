"""An amount or a count is judged by its value: 110.0 dollars and 3.0 bags are whole numbers (the tools' schemas
and the policy accept them, as tau2's and tau-bench's tools do), 110.5 and 2.5 are not, and NaN never reaches a
rule (core.numbers.whole, core.tools.validate_arguments)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.gate import GateDecision, Verdict
from core.tools import validate_arguments
from domains.airline import DOMAIN
from tests.support.airline_records import (
    LENA,
    THEO,
    THEO_CARD,
    THEO_CERT,
    THEO_ECONOMY,
    AirlineSession,
    lena_cancelled,
    lena_user,
    offer,
    person,
    segment,
    session_for,
    theo_basic,
    theo_business,
    theo_economy,
    theo_user,
)


def theo() -> AirlineSession:
    session = session_for(theo_user(), theo_economy(), theo_basic(), theo_business())
    session.search("BOS", "DEN", "2024-05-20", [offer("HAT117", "2024-05-20"), offer("HAT119", "2024-05-20")])
    return session


def lena() -> AirlineSession:
    session = session_for(lena_user(), lena_cancelled())
    session.status("HAT171", "2024-05-13", "cancelled")
    return session


def booking(payments: list[tuple[str, Any]], **changes: Any) -> dict[str, Any]:
    """Theo on the 18:00 HAT119 BOS->DEN (economy fare 214)."""
    return {"user_id": THEO, "origin": "BOS", "destination": "DEN", "flight_type": "one_way", "cabin": "economy",
            "flights": [segment("HAT119", "2024-05-20")], "passengers": [person("Theo", "Brennan", "1990-06-21")],
            "payment_methods": [{"payment_id": p, "amount": a} for p, a in payments], "total_baggages": 0,
            "nonfree_baggages": 0, "insurance": "no"} | changes


def bags(total: Any, nonfree: Any) -> dict[str, Any]:
    return {"reservation_id": THEO_ECONOMY, "total_baggages": total, "nonfree_baggages": nonfree,
            "payment_id": THEO_CARD}


# every write whose arguments hold a count or an amount, legal with whole numbers, as (session, tool, arguments)
LEGAL = [
    ("a booking paid by card", theo, "book_reservation", booking([(THEO_CARD, 214)])),
    ("a booking with insurance and a paid bag", theo, "book_reservation",
     booking([(THEO_CARD, 214 + 30 + 50)], insurance="yes", total_baggages=4, nonfree_baggages=1)),
    ("a booking paid by certificate and card", theo, "book_reservation", booking([(THEO_CERT, 200), (THEO_CARD, 14)])),
    ("two bags added", theo, "update_reservation_baggages", bags(5, 2)),
    ("a certificate for a cancelled flight", lena, "send_certificate", {"user_id": LENA, "amount": 100}),
]


def _floats(value: Any) -> Any:
    """`value` with every whole number written as a float, as some writers' JSON libraries write them."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value


def _judge(session: AirlineSession, tool: str, arguments: dict[str, Any]) -> GateDecision:
    spec = DOMAIN.tool(tool)
    assert spec is not None and validate_arguments(spec, arguments) == []  # the schema takes it as it is
    return session.propose(tool, **arguments)


@pytest.mark.parametrize(("label", "session", "tool", "arguments"), LEGAL, ids=[c[0] for c in LEGAL])
def test_a_legal_write_is_legal_with_its_whole_numbers_written_as_floats(label: str, session: Any, tool: str,
                                                                         arguments: dict[str, Any]) -> None:
    assert _judge(session(), tool, arguments).verdict is Verdict.ALLOW
    written = _floats(arguments)
    assert ".0" in json.dumps(written)
    decision = _judge(session(), tool, written)
    assert decision.verdict is Verdict.ALLOW, decision.feedback


@pytest.mark.parametrize(("tool", "arguments", "rule", "cited"), [
    ("book_reservation", booking([(THEO_CARD, 214.5)]), "airline.payment_balance_covers",
     "the amount 214.5 for credit_card_3391001 is not a positive whole number of dollars"),
    ("update_reservation_baggages", bags(5.5, 2), "airline.baggage_allowance",
     "total_baggages 5.5 and nonfree_baggages 2 must be whole numbers"),
    ("update_reservation_baggages", bags(0.0, 0.0), "airline.baggage_add_only",
     "total_baggages 0 is below the 1 already booked"),  # a float below what is booked is still below it
])
def test_a_value_that_breaks_a_rule_is_refused_however_it_is_written(tool: str, arguments: dict[str, Any],
                                                                      rule: str, cited: str) -> None:
    decision = theo().propose(tool, **arguments)
    assert decision.verdict is not Verdict.ALLOW
    assert any(r.predicate_id == rule and cited in r.reason for r in decision.failed), decision.feedback


def test_the_schema_takes_whole_floats_for_integers_and_refuses_fractions_and_non_finite_numbers() -> None:
    from core.numbers import whole

    spec = DOMAIN.tool("update_reservation_baggages")
    assert spec is not None
    assert validate_arguments(spec, bags(3.0, 0.0)) == []
    assert validate_arguments(spec, bags(2.5, 0)) == ["argument 'total_baggages' must be integer, got number 2.5"]
    assert validate_arguments(spec, bags(float("nan"), 0))[0].startswith("invalid value: nan is not a finite number")
    assert [whole(v) for v in (3, 3.0, 2.5, True, "3", float("inf"), float("nan"), None)] == [
        3, 3, None, None, None, None, None, None]
