"""The airline gate reading what a write lacks, over the real backend: statuses read one at a time until a
certificate has its answer, the search of a leg the gate derives from the itinerary, and observed facts that
break a rule answered as such (never "search first" again).

Through the one call path (`CallExecutor`, driven by `Checker`), on the shipped seed and on tau2-bench's airline
database (`shared` tests: skipped when it is absent).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.evidence import MAX_GATE_READS, EvidenceMode
from core.replay import Checker, CheckResult, TrajectoryCall
from domains.airline import DOMAIN
from domains.airline.predicates import STATUS_READ_BUDGET
from mock_backends.airline import AirlineBackend
from tests.support.upstream import TAU2_AIRLINE

TAU2_DB = TAU2_AIRLINE / "db.json"
Line = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def tau2() -> dict[str, Any]:
    if not TAU2_DB.exists():
        pytest.skip(f"tau2 reference data not found at {TAU2_DB}")
    data: dict[str, Any] = json.loads(TAU2_DB.read_text(encoding="utf-8"))
    return data


async def _check(tmp_path: Path, lines: Sequence[Line], data: dict[str, Any] | None = None,
                 evidence: EvidenceMode = EvidenceMode.ASSIST) -> list[CheckResult]:
    backend = await (AirlineBackend.open(tmp_path / "db.sqlite") if data is None else
                     AirlineBackend.open(tmp_path / "db.sqlite", json.loads(json.dumps(data))))
    try:
        checker = Checker(DOMAIN, backend, evidence=evidence)
        return [await checker.check(TrajectoryCall(i, i + 1, name, arguments))
                for i, (name, arguments) in enumerate(lines)]
    finally:
        await backend.close()


def _profile_and_reservations(data: dict[str, Any], user_id: str) -> list[Line]:
    """What an agent reads before a certificate: the profile, then every reservation it lists."""
    return [("get_user_details", {"user_id": user_id}),
            *(("get_reservation_details", {"reservation_id": r}) for r in data["users"][user_id]["reservations"])]


def _statuses(result: CheckResult) -> list[str]:
    return [read for read in result.gate_reads if read.startswith("get_flight_status")]


@pytest.mark.shared
async def test_a_certificate_reads_statuses_one_at_a_time_until_the_cancelled_flight(tmp_path: Path,
                                                                                    tau2: dict[str, Any]) -> None:
    """A gold member's 23 flights of unknown status; one (HAT069 on 2024-05-11, reservation KY93IV, two
    passengers) was cancelled. The gate reads statuses nearest to today first and stops at that one: the
    certificate of 200 is allowed; the paper's budget (all the statuses at once, at most 6) refused it."""
    user = "mohamed_taylor_9830"
    results = await _check(tmp_path, [*_profile_and_reservations(tau2, user),
                                      ("send_certificate", {"user_id": user, "amount": 200})], tau2)
    certificate = results[-1]
    assert (certificate.verdict, certificate.executed) == ("ALLOW", True), certificate.reason
    reads = _statuses(certificate)
    assert reads[-1] == 'get_flight_status(flight_number="HAT069", date="2024-05-11")'
    assert len(reads) == len(certificate.gate_reads) == 6 <= MAX_GATE_READS < 23


@pytest.mark.shared
async def test_a_spent_status_budget_asks_the_model_and_says_how_many_the_gate_read(tmp_path: Path,
                                                                                  tau2: dict[str, Any]) -> None:
    """30 flights, none disrupted: the gate reads the budget the rule states, then the model is asked."""
    user = "lucas_wilson_8118"
    results = await _check(tmp_path, [*_profile_and_reservations(tau2, user),
                                      ("send_certificate", {"user_id": user, "amount": 100})], tau2)
    certificate = results[-1]
    assert (certificate.verdict, certificate.refusal) == ("REVISE", "needs_read")
    assert len(_statuses(certificate)) == STATUS_READ_BUDGET == 12
    assert (f"the gate read 12 of them itself for this call, the most this rule lets it read for one write "
            f"({STATUS_READ_BUDGET})") in certificate.reason


@pytest.mark.shared
async def test_the_gate_searches_a_leg_between_observed_flights(tmp_path: Path, tau2: dict[str, Any]) -> None:
    """A one-way PHL -> BOS booking of three flights: the agent's one-stop search showed the first two (PHL ->
    LGA -> CLT); the third (HAT064) leaves from where the second lands, so the gate searches CLT -> BOS itself
    and the booking is judged on what it shows (the itinerary's leg alone, three flights, named no search)."""
    user = "liam_santos_5621"
    booking = {"user_id": user, "origin": "PHL", "destination": "BOS", "flight_type": "one_way",
               "cabin": "business", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"},
                                                {"flight_number": "HAT065", "date": "2024-05-20"},
                                                {"flight_number": "HAT064", "date": "2024-05-20"}],
               "passengers": [{"first_name": "Liam", "last_name": "Santos", "dob": "1998-03-11"}],
               "payment_methods": [{"payment_id": "credit_card_1835044", "amount": 411 + 200 + 466}],
               "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}
    results = await _check(tmp_path, [("get_user_details", {"user_id": user}),
                                      ("search_onestop_flight", {"origin": "PHL", "destination": "CLT",
                                                                 "date": "2024-05-20"}),
                                      ("book_reservation", booking)], tau2)
    booked = results[-1]
    assert (booked.verdict, booked.executed) == ("ALLOW", True), booked.reason
    assert booked.gate_reads == ('search_direct_flight(origin="CLT", destination="BOS", date="2024-05-20")',)


@pytest.mark.shared
async def test_a_flight_missing_from_the_search_of_its_leg_breaks_the_rule(tmp_path: Path,
                                                                          tau2: dict[str, Any]) -> None:
    """A one-way JFK -> LAX booking of HAT001 (it flies PHL -> LGA): the gate searches the one leg the trip gives
    it, and the flight is not in it. That is what breaks the rule, cited, not a read still to make."""
    user = "ivan_muller_7015"
    card = next(k for k, v in tau2["users"][user]["payment_methods"].items() if v["source"] == "credit_card")
    booking = {"user_id": user, "origin": "JFK", "destination": "LAX", "flight_type": "one_way", "cabin": "economy",
               "flights": [{"flight_number": "HAT001", "date": "2024-05-16"}],
               "passengers": [{"first_name": "Ivan", "last_name": "Smith", "dob": "1986-03-14"}],
               "payment_methods": [{"payment_id": card, "amount": 128}],
               "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}
    results = await _check(tmp_path, [("get_user_details", {"user_id": user}), ("book_reservation", booking)], tau2)
    refused = results[-1]
    assert (refused.verdict, refused.refusal) == ("REVISE", "breaks_rule"), refused.reason
    assert "airline.flight_observed_available" in refused.predicates
    assert refused.gate_reads == ('search_direct_flight(origin="JFK", destination="LAX", date="2024-05-16")',)
    assert ('HAT001 on 2024-05-16 is not among the flights search_direct_flight(origin="JFK", destination="LAX", '
            'date="2024-05-16") shows') in refused.reason


DELAYED = {"user_id": "theo_brennan_3391", "origin": "ATL", "destination": "DFW", "flight_type": "one_way",
           "cabin": "economy", "flights": [{"flight_number": "HAT150", "date": "2024-05-15"}],
           "passengers": [{"first_name": "Theo", "last_name": "Brennan", "dob": "1990-06-21"}],
           "payment_methods": [{"payment_id": "credit_card_3391001", "amount": 150}],
           "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}


async def test_an_agent_that_obeys_is_told_what_breaks_the_rule_not_sent_to_search_again(tmp_path: Path) -> None:
    """The paper's gate (ask): a flight dated today is asked for its status first; the agent reads it (delayed),
    and from then on the answer is the status, cited, whatever else it reads: never "search it" again."""
    theo = ("get_user_details", {"user_id": "theo_brennan_3391"})
    status = ("get_flight_status", {"flight_number": "HAT150", "date": "2024-05-15"})
    search = ("search_direct_flight", {"origin": "ATL", "destination": "DFW", "date": "2024-05-15"})
    results = await _check(tmp_path, [theo, ("book_reservation", DELAYED), status, ("book_reservation", DELAYED),
                                      search, ("book_reservation", DELAYED)], evidence=EvidenceMode.ASK)
    first, after_status, after_search = results[1], results[3], results[5]
    assert (first.verdict, first.refusal) == ("REVISE", "needs_read")
    assert 'get_flight_status(flight_number="HAT150", date="2024-05-15")' in first.reason
    for refused in (after_status, after_search):
        assert (refused.verdict, refused.refusal) == ("REVISE", "breaks_rule"), refused.reason
        assert "HAT150 on 2024-05-15 is delayed (flights.HAT150.2024-05-15.status)" in refused.reason
        assert "search" not in refused.reason.split("airline.flight_observed_available:")[1].split(" | ")[0]
