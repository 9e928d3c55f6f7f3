"""Every airline predicate, judged through the real gate over a real ledger filled by absorbed reads.

Two tables drive most of the file: REJECTED cases (exactly one rule fails, with the expected verdict and the
ledger values its reason must cite) and ALLOWED cases (the whole gate says ALLOW while that rule ran). A
meta-test makes sure every predicate appears in both tables. The tests below them cover the paper's figure-1
and appendix-B cases, missing and stale evidence, the reference time, identity, and malformed arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from core.gate import GateDecision, PredicateResult, Status, Verdict
from domains.airline import PREDICATES, airline_domain
from domains.airline.clock import EST
from tests.support.airline_records import (
    APPENDIX_B_CASE,
    CANCEL_WINDOW_CASE,
    JULIA,
    LENA,
    LENA_CARD,
    LENA_DELAYED,
    THEO,
    THEO_BASIC,
    THEO_BUSINESS,
    THEO_CARD,
    THEO_CERT,
    THEO_ECONOMY,
    THEO_GIFT,
    AirlineSession,
    julia_reservation,
    julia_user,
    leg,
    lena_cancelled,
    lena_delayed,
    lena_user,
    nadia_reservation,
    nadia_user,
    offer,
    person,
    segment,
    session_for,
    theo_basic,
    theo_business,
    theo_economy,
    theo_user,
)

THEO_ME = person("Theo", "Brennan", "1990-06-21")
IRIS = person("Iris", "Brennan", "1993-02-08")

# ---------------------------------------------------------------------------------------------------
# Sessions and calls used by the tables.


def theo(*, user: dict[str, Any] | None = None, basic: dict[str, Any] | None = None) -> AirlineSession:
    """Theo's profile and his three reservations read, nothing searched yet."""
    return session_for(user or theo_user(), theo_economy(), basic or theo_basic(), theo_business())


def with_evening_flight(session: AirlineSession) -> AirlineSession:
    session.search("BOS", "DEN", "2024-05-20", [offer("HAT117", "2024-05-20"), offer("HAT119", "2024-05-20")])
    return session


def theo_searched(**kwargs: Any) -> AirlineSession:
    return with_evening_flight(theo(**kwargs))


def theo_round_trip_searched() -> AirlineSession:
    session = theo_searched()
    session.search("DEN", "BOS", "2024-05-24", [offer("HAT121", "2024-05-24")])
    return session


def theo_miami_searched() -> AirlineSession:
    session = theo()
    session.search("MIA", "BOS", "2024-05-22", [offer("HAT134", "2024-05-22")])
    session.search("MIA", "LAS", "2024-05-16", [offer("HAT162", "2024-05-16")])
    session.search("LAS", "PHX", "2024-05-17", [offer("HAT184", "2024-05-17")])
    session.search("ORD", "SEA", "2024-05-17", [offer("HAT142", "2024-05-17")])
    return session


def theo_without_profile() -> AirlineSession:
    session = AirlineSession()
    session.read_reservation(theo_basic())
    return session


def theo_reading_julia() -> AirlineSession:
    session = theo()
    session.read_reservation(julia_reservation())
    return session


def julia(status: str | None = "available") -> Callable[[], AirlineSession]:
    def build() -> AirlineSession:
        session = session_for(julia_user(), julia_reservation())
        if status is not None:
            session.status("HAT142", "2024-05-17", status)
        return session
    return build


def theo_outbound_landed() -> AirlineSession:
    session = theo()
    session.status("HAT133", "2024-05-10", "landed")
    return session


def lena(record: dict[str, Any], flight: str, date: str, status: str,
         membership: str = "silver") -> Callable[[], AirlineSession]:
    def build() -> AirlineSession:
        session = session_for(lena_user(membership=membership), record)
        session.status(flight, date, status)
        return session
    return build


def cancel(reservation_id: str) -> tuple[str, dict[str, Any]]:
    return "cancel_reservation", {"reservation_id": reservation_id}


def change(reservation_id: str, cabin: str, flights: list[dict[str, str]],
           payment_id: str = THEO_CARD) -> tuple[str, dict[str, Any]]:
    return "update_reservation_flights", {"reservation_id": reservation_id, "cabin": cabin, "flights": flights,
                                          "payment_id": payment_id}


def evening(payment_id: str = THEO_CARD) -> tuple[str, dict[str, Any]]:
    """TB3K9Q moved from the 07:00 HAT117 to the 18:00 HAT119 on the same day: 214 - 188 = 26 to pay."""
    return change(THEO_ECONOMY, "economy", [segment("HAT119", "2024-05-20")], payment_id)


def bags(total: int, nonfree: int, reservation_id: str = THEO_ECONOMY,
         payment_id: str = THEO_CARD) -> tuple[str, dict[str, Any]]:
    return "update_reservation_baggages", {"reservation_id": reservation_id, "total_baggages": total,
                                           "nonfree_baggages": nonfree, "payment_id": payment_id}


def passengers(reservation_id: str, people: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    return "update_reservation_passengers", {"reservation_id": reservation_id, "passengers": people}


def book(flights: list[dict[str, str]], payments: list[dict[str, Any]], *, user_id: str = THEO,
         origin: str = "BOS", destination: str = "DEN", flight_type: str = "one_way", cabin: str = "economy",
         people: list[dict[str, Any]] | None = None, total_baggages: int = 0, nonfree_baggages: int = 0,
         insurance: str = "no") -> tuple[str, dict[str, Any]]:
    return "book_reservation", {
        "user_id": user_id, "origin": origin, "destination": destination, "flight_type": flight_type,
        "cabin": cabin, "flights": flights, "passengers": people if people is not None else [THEO_ME],
        "payment_methods": payments, "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
        "insurance": insurance,
    }


def pay(payment_id: str, amount: Any) -> dict[str, Any]:
    return {"payment_id": payment_id, "amount": amount}


EVENING_BOOKING = [segment("HAT119", "2024-05-20")]  # economy fare 214


def certificate(user_id: str, amount: Any) -> tuple[str, dict[str, Any]]:
    return "send_certificate", {"user_id": user_id, "amount": amount}


# ---------------------------------------------------------------------------------------------------
# The tables.


@dataclass(frozen=True)
class Rejected:
    label: str
    predicate_id: str
    verdict: Verdict
    session: Callable[[], AirlineSession]
    call: tuple[str, dict[str, Any]]
    cites: tuple[str, ...]  # ledger values and paths the reason must name
    status: Status = Status.VIOLATION


@dataclass(frozen=True)
class Allowed:
    label: str
    predicate_id: str
    session: Callable[[], AirlineSession]
    call: tuple[str, dict[str, Any]]


REJECTED = [
    Rejected("write before any profile was read", "airline.customer_identified", Verdict.REVISE,
             theo_without_profile, cancel(THEO_BASIC), ("user is not set", "get_user_details")),
    Rejected("booking for another user", "airline.user_is_customer", Verdict.BLOCK, theo_searched,
             book(EVENING_BOOKING, [pay(THEO_CARD, 214)], user_id=LENA), (LENA, THEO, "user.user_id")),
    Rejected("someone else's reservation", "airline.reservation_owned_by_customer", Verdict.BLOCK,
             theo_reading_julia, passengers(CANCEL_WINDOW_CASE, [person("Julia", "Reyes", "1988-03-14")]),
             (JULIA, THEO, "reservations.UX789J.user_id")),
    Rejected("a cancelled reservation", "airline.reservation_active", Verdict.BLOCK,
             lambda: theo(basic=theo_basic(status="cancelled")), passengers(THEO_BASIC, [THEO_ME, IRIS]),
             ("already cancelled", "reservations.TB5N1W.status")),
    Rejected("figure 1: economy, booked 5 days ago, uninsured", "airline.cancel_basis", Verdict.BLOCK, julia(),
             cancel(CANCEL_WINDOW_CASE), ("2024-05-10T09:12:00", "no travel insurance", "HAT142 2024-05-17: available",
                                          "24-hour")),
    Rejected("cancel after the outbound landed", "airline.nothing_flown", Verdict.BLOCK, theo_outbound_landed,
             cancel(THEO_BUSINESS),
             ("HAT133 on 2024-05-10 BOS->MIA (landed, flights.HAT133.2024-05-10.status)", "cannot be cancelled")),
    Rejected("basic economy to another flight", "airline.basic_economy_flights_fixed", Verdict.BLOCK,
             theo_round_trip_searched,
             change(THEO_BASIC, "basic_economy", [segment("HAT119", "2024-05-20"), segment("HAT121", "2024-05-24")]),
             ("basic economy", "reservations.TB5N1W.cabin", "HAT119")),
    Rejected("a change that starts somewhere else", "airline.update_keeps_trip", Verdict.BLOCK, theo_miami_searched,
             change(THEO_ECONOMY, "economy", [segment("HAT134", "2024-05-22")]),
             ("one_way trip BOS -> DEN", "starts at MIA, not BOS")),
    Rejected("a booking whose flights do not connect", "airline.itinerary_connected", Verdict.REVISE,
             theo_miami_searched,
             book([segment("HAT162", "2024-05-16"), segment("HAT142", "2024-05-17")], [pay(THEO_CARD, 492)],
                  origin="MIA", destination="SEA"),
             ("HAT142 on 2024-05-17 ORD->SEA leaves from ORD", "lands at LAS")),
    Rejected("a flight nobody searched for", "airline.flight_observed_available", Verdict.REVISE, theo, evening(),
             ("flights.HAT119.2024-05-20", "not seen in any flight search", "search_direct_flight"),
             status=Status.MISSING),
    Rejected("another user's payment method", "airline.payment_in_profile", Verdict.REVISE, theo_searched,
             evening(LENA_CARD), (LENA_CARD, "user.payment_methods", THEO_GIFT)),
    Rejected("a certificate paying for a change", "airline.payment_method_allowed", Verdict.REVISE, theo_searched,
             evening(THEO_CERT), (THEO_CERT, "certificates cannot pay for a change")),
    Rejected("a gift card short of the fare difference", "airline.payment_balance_covers", Verdict.REVISE,
             lambda: theo_searched(user=theo_user(gift_card=10)), evening(THEO_GIFT),
             (THEO_GIFT, "has 10.0", "26 is charged")),
    Rejected("payments short of the fare", "airline.payment_total_matches", Verdict.REVISE, theo_searched,
             book(EVENING_BOOKING, [pay(THEO_CARD, 200)]), ("add up to 200", "costs 214", "fares 214")),
    Rejected("removing a bag", "airline.baggage_add_only", Verdict.REVISE, theo, bags(0, 0),
             ("total_baggages 0 is below the 1 already booked", "reservations.TB3K9Q.total_baggages")),
    Rejected("extra bags declared free", "airline.baggage_allowance", Verdict.REVISE, theo, bags(5, 0),
             ("gold member", "3 free bags per passenger, 3 for 1 passenger:", "5 bags means 2 non-free, not 0")),
    Rejected("a date of birth that is not a date", "airline.passengers_valid", Verdict.REVISE, theo,
             passengers(THEO_ECONOMY, [person("Theo", "Brennan", "yesterday")]),
             ("'yesterday' is not a date",)),
    Rejected("adding a passenger", "airline.passenger_count_unchanged", Verdict.BLOCK, theo,
             passengers(THEO_ECONOMY, [THEO_ME, IRIS]),
             ("has 1 passenger (reservations.TB3K9Q.passengers)", "the new list has 2")),
    Rejected("a regular member, uninsured economy", "airline.compensation_eligible", Verdict.BLOCK,
             julia("cancelled"), certificate(JULIA, 100), ("regular member", "no certificate is due")),
    Rejected("a delay without change or cancellation", "airline.compensation_delay_after_change", Verdict.REVISE,
             lena(lena_delayed(), "HAT150", "2024-05-15", "delayed"), certificate(LENA, 100),
             ("HAT150 on 2024-05-15", "delayed", "changed or cancelled")),
    Rejected("too much for one cancelled flight", "airline.compensation_amount", Verdict.REVISE,
             lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled"), certificate(LENA, 200),
             ("amount 200", "100 for HAT171", "(100 x 1 passenger)")),
    Rejected("a second certificate for the same cancelled flight", "airline.compensation_once", Verdict.BLOCK,
             lambda: _certified(lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled")()), certificate(LENA, 100),
             ("already gave", "100 at step", "effects.send_certificate", "compensated once")),
]

ALLOWED = [
    Allowed("a write once the profile was read", "airline.customer_identified", theo, cancel(THEO_BASIC)),
    Allowed("a booking for the customer", "airline.user_is_customer", theo_searched,
            book(EVENING_BOOKING, [pay(THEO_CARD, 214)])),
    Allowed("the customer's own reservation", "airline.reservation_owned_by_customer", theo,
            passengers(THEO_ECONOMY, [person("Theodore", "Brennan", "1990-06-21")])),
    Allowed("an active reservation", "airline.reservation_active", theo, passengers(THEO_BASIC, [THEO_ME, IRIS])),
    Allowed("booked 6 hours ago", "airline.cancel_basis", theo, cancel(THEO_BASIC)),
    Allowed("the airline cancelled its flight", "airline.cancel_basis", julia("cancelled"),
            cancel(CANCEL_WINDOW_CASE)),
    Allowed("insured", "airline.cancel_basis", lena(lena_delayed(), "HAT150", "2024-05-15", "delayed"),
            cancel(LENA_DELAYED)),
    Allowed("business", "airline.cancel_basis", lambda: session_for(theo_user(), theo_business(
        flights=[theo_business()["flights"][1]], flight_type="one_way", origin="MIA", destination="BOS")),
        cancel(THEO_BUSINESS)),
    Allowed("today's flight is delayed, not flown", "airline.nothing_flown",
            lena(lena_delayed(), "HAT150", "2024-05-15", "delayed"), cancel(LENA_DELAYED)),
    Allowed("basic economy changes cabin, same flights", "airline.basic_economy_flights_fixed",
            theo_round_trip_searched,
            change(THEO_BASIC, "economy", [segment("HAT117", "2024-05-20"), segment("HAT121", "2024-05-24")])),
    Allowed("a later flight on the same route", "airline.update_keeps_trip", theo_searched, evening()),
    Allowed("connected flights", "airline.itinerary_connected", theo_miami_searched,
            book([segment("HAT162", "2024-05-16"), segment("HAT184", "2024-05-17")], [pay(THEO_CARD, 301)],
                 origin="MIA", destination="PHX")),
    Allowed("a searched flight with seats", "airline.flight_observed_available", theo_searched, evening()),
    Allowed("a profile gift card", "airline.payment_in_profile", theo_searched, evening(THEO_GIFT)),
    Allowed("certificate plus card for a booking", "airline.payment_method_allowed", theo_searched,
            book(EVENING_BOOKING, [pay(THEO_CERT, 200), pay(THEO_CARD, 14)])),
    Allowed("a gift card that covers the difference", "airline.payment_balance_covers", theo_searched,
            evening(THEO_GIFT)),
    Allowed("payments that add up", "airline.payment_total_matches", theo_searched,
            book(EVENING_BOOKING, [pay(THEO_CARD, 214 + 30 + 50)], insurance="yes", total_baggages=4,
                 nonfree_baggages=1)),
    Allowed("adding bags", "airline.baggage_add_only", theo, bags(5, 2)),
    Allowed("allowance respected", "airline.baggage_allowance", theo, bags(5, 2)),
    Allowed("a corrected name", "airline.passengers_valid", theo,
            passengers(THEO_ECONOMY, [person("Theodore", "Brennan", "1990-06-21")])),
    Allowed("same number of passengers", "airline.passenger_count_unchanged", theo,
            passengers(THEO_BASIC, [THEO_ME, person("Iris", "Brennan-Lee", "1993-02-08")])),
    Allowed("silver member, airline-cancelled flight", "airline.compensation_eligible",
            lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled"), certificate(LENA, 100)),
    Allowed("a delay after the reservation was cancelled", "airline.compensation_delay_after_change",
            lena(lena_delayed(status="cancelled"), "HAT150", "2024-05-15", "delayed"), certificate(LENA, 100)),
    Allowed("100 for one cancelled passenger", "airline.compensation_amount",
            lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled"), certificate(LENA, 100)),
    Allowed("the first certificate for a cancelled flight", "airline.compensation_once",
            lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled"), certificate(LENA, 100)),
]


def theo_answered(answer: str) -> Callable[[], AirlineSession]:
    """Theo's records read, the agent described a name correction and Theo answered `answer`."""
    def build() -> AirlineSession:
        session = theo()
        session.confirmed("I'll correct the passenger on TB3K9Q to Theodore Brennan, born 1990-06-21. Shall I go "
                          "ahead?", answer)
        return session
    return build


THEODORE = passengers(THEO_ECONOMY, [person("Theodore", "Brennan", "1990-06-21")])
REJECTED.append(
    Rejected("a question instead of a yes", "airline.explicit_confirmation", Verdict.REVISE,
             theo_answered("Will that cost anything?"), THEODORE,
             ('"Will that cost anything?"', "a question, no yes", "conversation.confirmation", "ask them")))
ALLOWED.append(Allowed("a yes to the change described", "airline.explicit_confirmation",
                       theo_answered("Yes, that's right, please do."), THEODORE))


def _certified(session: AirlineSession, amount: int = 100) -> AirlineSession:
    """The session after send_certificate ran for Lena (its return joins the session's effects)."""
    session.executed("send_certificate", f"Certificate certificate_1 added to user {LENA} with amount {amount}.",
                     user_id=LENA, amount=amount)
    session.read_user(lena_user())
    return session


# Rules about the call's own arguments: they read nothing from the ledger, so they cite no evidence.
ARGUMENT_ONLY = {"airline.passengers_valid"}


def propose(session: AirlineSession, call: tuple[str, dict[str, Any]]) -> GateDecision:
    return session.propose(call[0], **call[1])


def _result(decision: GateDecision, predicate_id: str) -> PredicateResult:
    return next(r for r in decision.results if r.predicate_id == predicate_id)


def test_every_predicate_has_an_allowed_and_a_rejected_case() -> None:
    ids = {p.id for p in PREDICATES}
    assert {c.predicate_id for c in REJECTED} == ids
    assert {c.predicate_id for c in ALLOWED} == ids


@pytest.mark.parametrize("case", REJECTED, ids=[c.label for c in REJECTED])
def test_rejected(case: Rejected) -> None:
    decision = propose(case.session(), case.call)
    assert decision.verdict is case.verdict, decision.feedback
    assert [r.predicate_id for r in decision.failed] == [case.predicate_id], decision.feedback
    result = _result(decision, case.predicate_id)
    assert result.status is case.status
    for text in case.cites:
        assert text in result.reason, (text, result.reason)
    if case.predicate_id not in ARGUMENT_ONLY:
        assert result.evidence, "a verdict must say which ledger paths it read"
    assert case.predicate_id in decision.feedback


@pytest.mark.parametrize("case", ALLOWED, ids=[c.label for c in ALLOWED])
def test_allowed(case: Allowed) -> None:
    decision = propose(case.session(), case.call)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert _result(decision, case.predicate_id).status is Status.PASS


# ---------------------------------------------------------------------------------------------------
# The paper's cases, evidence, time and identity.


def test_appendix_b_basic_economy_cancellation_is_blocked_with_its_facts() -> None:
    session = session_for(nadia_user(), nadia_reservation())
    session.status("HAT162", "2024-05-16", "available")
    session.status("HAT184", "2024-05-17", "available")
    decision = propose(session, cancel(APPENDIX_B_CASE))
    assert decision.verdict is Verdict.BLOCK
    reason = _result(decision, "airline.cancel_basis").reason
    assert "basic_economy" in reason and "2024-05-11T10:30:00" in reason and "no travel insurance" in reason
    # each flight's status is cited with the ledger path it was read from
    assert "HAT162 2024-05-16: available (flights.HAT162.2024-05-16.status)" in reason
    assert "HAT184 2024-05-17: available (flights.HAT184.2024-05-17.status)" in reason
    assert "BLOCK: the action cancel_reservation was NOT executed" in decision.feedback
    assert set(decision.evidence) >= {"user", "reservations.NH62KW", "flights.HAT162.2024-05-16.status"}


def test_unobserved_flight_status_asks_for_it_before_blocking() -> None:
    session = session_for(julia_user(), julia_reservation())
    decision = session.propose("cancel_reservation", reservation_id=CANCEL_WINDOW_CASE)
    assert decision.verdict is Verdict.REVISE
    result = _result(decision, "airline.cancel_basis")
    assert result.status is Status.MISSING
    assert 'get_flight_status(flight_number="HAT142", date="2024-05-17")' in result.reason
    session.status("HAT142", "2024-05-17", "available")
    assert session.propose("cancel_reservation", reservation_id=CANCEL_WINDOW_CASE).verdict is Verdict.BLOCK


def test_flights_dated_today_or_earlier_need_their_status() -> None:
    session = session_for(theo_user(), theo_business())
    decision = session.propose("cancel_reservation", reservation_id=THEO_BUSINESS)
    result = _result(decision, "airline.nothing_flown")
    assert (decision.verdict, result.status) == (Verdict.REVISE, Status.MISSING)
    assert "flights.HAT133.2024-05-10.status" in result.evidence
    assert "HAT134" not in result.reason  # 2024-05-22 is after today: it cannot have flown


def test_the_24_hour_window_follows_the_reference_time() -> None:
    """TB5N1W was booked 2024-05-15 09:00: inside the window at 15:00, outside it two days later."""
    assert propose(theo(), cancel(THEO_BASIC)).verdict is Verdict.ALLOW
    later = airline_domain(datetime(2024, 5, 17, 10, 0, tzinfo=EST))
    assert "2024-05-17 10:00:00 EST" in later.policy
    session = session_for(theo_user(), theo_basic(), domain=later)
    session.status("HAT117", "2024-05-20", "available")
    session.status("HAT121", "2024-05-24", "available")
    decision = session.propose("cancel_reservation", reservation_id=THEO_BASIC)
    assert decision.verdict is Verdict.BLOCK
    assert "2 days 1 h 0 min 0 s before now" in _result(decision, "airline.cancel_basis").reason


def test_a_naive_reference_time_is_read_as_est() -> None:
    domain = airline_domain(datetime(2024, 5, 16, 8, 59))
    assert domain.reference_time == datetime(2024, 5, 16, 8, 59, tzinfo=EST)
    session = session_for(theo_user(), theo_basic(), domain=domain)
    assert session.propose("cancel_reservation", reservation_id=THEO_BASIC).verdict is Verdict.ALLOW


def test_reading_another_profile_never_changes_the_customer() -> None:
    session = theo_searched()
    session.read_user(lena_user())
    assert session.context().customer_id == THEO
    assert session.ledger.get("user")["user_id"] == THEO
    decision = propose(session, book(EVENING_BOOKING, [pay(LENA_CARD, 214)], user_id=LENA))
    assert decision.verdict is Verdict.BLOCK
    assert {r.predicate_id for r in decision.failed} == {"airline.user_is_customer", "airline.payment_in_profile"}


def test_stale_reservation_after_a_write_asks_for_a_fresh_read() -> None:
    session = theo_searched()
    session.wrote("update_reservation_flights", reservation_id=THEO_ECONOMY)
    decision = propose(session, bags(2, 0))
    assert decision.verdict is Verdict.REVISE
    assert all(r.status is Status.MISSING for r in decision.failed)
    assert "may have changed since update_reservation_flights" in decision.feedback
    session.read_reservation(theo_economy())
    session.read_user(theo_user())
    assert propose(session, bags(2, 0)).verdict is Verdict.ALLOW


def test_a_flight_seen_only_in_a_one_stop_search_can_be_booked() -> None:
    session = theo()
    pairs = [[offer("HAT162", "2024-05-16", date="2024-05-16"), offer("HAT184", "2024-05-17", date="2024-05-17")]]
    session.read("search_onestop_flight", pairs, origin="MIA", destination="PHX", date="2024-05-16")
    call = book([segment("HAT162", "2024-05-16"), segment("HAT184", "2024-05-17")], [pay(THEO_CARD, 301)],
                origin="MIA", destination="PHX")
    decision = propose(session, call)
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert "onestop_search.MIA.PHX.2024-05-16" in decision.evidence


def test_a_booking_stales_the_seats_it_used() -> None:
    session = theo_searched()
    tool, arguments = book(EVENING_BOOKING, [pay(THEO_CARD, 214)])
    staled = session.wrote(tool, **arguments)
    assert {"user", "users.theo_brennan_3391", "flights.HAT119.2024-05-20",
            "flight_search.BOS.DEN.2024-05-20"} <= set(staled)
    decision = propose(session, book(EVENING_BOOKING, [pay(THEO_CARD, 214)]))
    assert decision.verdict is Verdict.REVISE


# ---------------------------------------------------------------------------------------------------
# Malformed arguments: verdicts, never a crash.

BAD_INPUTS: list[tuple[str, tuple[str, dict[str, Any]], str]] = [
    ("flight date that is not a date", book([segment("HAT119", "20th of May")], [pay(THEO_CARD, 214)]),
     "airline.flight_observed_available"),
    ("flight that does not fly that day", book([segment("HAT119", "2024-06-20")], [pay(THEO_CARD, 214)]),
     "airline.flight_observed_available"),
    ("payment id of another user", book(EVENING_BOOKING, [pay(LENA_CARD, 214)]), "airline.payment_in_profile"),
    ("negative amount", book(EVENING_BOOKING, [pay(THEO_CARD, 314), pay(THEO_GIFT, -100)]),
     "airline.payment_balance_covers"),
    ("fractional amount", book(EVENING_BOOKING, [pay(THEO_CARD, 213.5), pay(THEO_GIFT, 0.5)]),
     "airline.payment_balance_covers"),
    ("negative certificate", certificate(THEO, -100), "airline.compensation_eligible"),
    ("passenger list of the wrong shape", book(EVENING_BOOKING, [pay(THEO_CARD, 214)], people=[["Theo"]]),  # type: ignore[list-item]
     "airline.passengers_valid"),
    ("no passengers", book(EVENING_BOOKING, [pay(THEO_CARD, 0)], people=[]), "airline.passengers_valid"),
    ("six passengers", book(EVENING_BOOKING, [pay(THEO_CARD, 214 * 6)], people=[THEO_ME] * 6),
     "airline.passengers_valid"),
    ("dob in the future", passengers(THEO_ECONOMY, [person("Theo", "Brennan", "2030-01-01")]),
     "airline.passengers_valid"),
    ("malformed flights list", change(THEO_ECONOMY, "economy", ["HAT119"]),  # type: ignore[list-item]
     "airline.flight_observed_available"),
    ("negative bags", bags(-1, 0), "airline.baggage_allowance"),
]


@pytest.mark.parametrize(("label", "call", "predicate_id"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gets_a_verdict(label: str, call: tuple[str, dict[str, Any]], predicate_id: str) -> None:
    decision = propose(theo_searched(), call)
    assert decision.verdict is not Verdict.ALLOW
    assert predicate_id in {r.predicate_id for r in decision.failed}, decision.feedback
    assert not any(r.status is Status.ERROR for r in decision.results), decision.feedback


# ---------------------------------------------------------------------------------------------------
# Facts changed by our own write, repeated compensation, exact messages.


def _delayed_then_changed() -> AirlineSession:
    """Lena's HAT150 is delayed; the agent moved her to HAT151 (executed), then read the reservation again."""
    session = lena(lena_delayed(), "HAT150", "2024-05-15", "delayed")()
    moved = lena_delayed(flights=[leg("HAT151", "ATL", "DFW", "2024-05-16", 200)])
    session.executed("update_reservation_flights", moved, reservation_id=LENA_DELAYED, cabin="economy",
                     flights=[segment("HAT151", "2024-05-16")], payment_id=LENA_CARD)
    session.read_user(lena_user())
    session.read_reservation(moved)
    return session


def test_a_delay_certificate_after_our_flight_change_is_allowed() -> None:
    """The reservation no longer lists the delayed flight; the superseded observation still does."""
    session = _delayed_then_changed()
    assert session.ledger.history(f"reservations.{LENA_DELAYED}")  # the old record is kept with its provenance
    decision = propose(session, certificate(LENA, 100))
    assert decision.verdict is Verdict.ALLOW, decision.feedback
    assert f"reservations.{LENA_DELAYED}" in _result(decision, "airline.compensation_eligible").evidence


def test_a_delay_certificate_needs_an_executed_change_not_just_a_different_record() -> None:
    """A re-read that shows other flights, with no change run by this session, does not resolve the delay."""
    session = lena(lena_delayed(), "HAT150", "2024-05-15", "delayed")()
    session.read_reservation(lena_delayed(flights=[leg("HAT151", "ATL", "DFW", "2024-05-16", 200)]))
    first = _result(propose(session, certificate(LENA, 100)), "airline.compensation_delay_after_change")
    # a cancelled flight elsewhere would be compensable at once: the new flight's status is asked first
    assert (first.status, first.missing, first.one_at_a_time) == (Status.MISSING, ("flights.HAT151.2024-05-16.status",),
                                                                  12)
    session.read("get_flight_status", "available", flight_number="HAT151", date="2024-05-16")
    decision = propose(session, certificate(LENA, 100))
    assert decision.verdict is Verdict.REVISE
    assert "effects.update_reservation_flights" in _result(decision, "airline.compensation_delay_after_change").reason


def test_a_second_delay_certificate_after_the_change_is_blocked() -> None:
    session = _delayed_then_changed()
    assert propose(session, certificate(LENA, 100)).verdict is Verdict.ALLOW
    session = _certified(session)
    decision = propose(session, certificate(LENA, 100))
    assert decision.verdict is Verdict.BLOCK
    assert _result(decision, "airline.compensation_once").status is Status.VIOLATION


def test_two_disrupted_reservations_get_one_certificate_each() -> None:
    session = lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled")()
    session.read_reservation(lena_delayed(status="cancelled"))
    session.status("HAT150", "2024-05-15", "delayed")
    session = _certified(session)
    assert propose(session, certificate(LENA, 100)).verdict is Verdict.ALLOW
    session = _certified(session)
    assert propose(session, certificate(LENA, 100)).verdict is Verdict.BLOCK


def test_a_refused_certificate_is_not_an_effect() -> None:
    """Only executed writes count: a proposal the gate refused, or a stale-only write, gives nothing."""
    session = lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled")()
    session.wrote("send_certificate", user_id=LENA, amount=100)  # no return recorded: not an effect
    session.read_user(lena_user())
    assert propose(session, certificate(LENA, 100)).verdict is Verdict.ALLOW


def test_the_window_message_shows_the_exact_span_one_second_past_the_limit() -> None:
    domain = airline_domain(datetime(2024, 5, 16, 9, 0, 1, tzinfo=EST))
    session = session_for(theo_user(), theo_basic(), domain=domain)
    session.status("HAT117", "2024-05-20", "available")
    session.status("HAT121", "2024-05-24", "available")
    reason = _result(session.propose("cancel_reservation", reservation_id=THEO_BASIC), "airline.cancel_basis").reason
    assert "24 h 0 min 1 s before now (2024-05-16T09:00:01), past the 24-hour window" in reason
    assert "24.0 hours" not in reason
    exactly = session_for(theo_user(), theo_basic(), domain=airline_domain(datetime(2024, 5, 16, 9, 0, tzinfo=EST)))
    exactly.status("HAT117", "2024-05-20", "available")
    exactly.status("HAT121", "2024-05-24", "available")
    assert exactly.propose("cancel_reservation", reservation_id=THEO_BASIC).verdict is Verdict.ALLOW


def test_no_hint_ever_asks_to_search_a_flight_that_has_flown() -> None:
    """Booking yesterday's flight: refused as past, never 'search its route' (no search can show it)."""
    session = theo_searched()
    decision = propose(session, book([segment("HAT119", "2024-05-14")], [pay(THEO_CARD, 214)]))
    result = _result(decision, "airline.flight_observed_available")
    assert result.status is Status.VIOLATION and "before today (2024-05-15)" in result.reason
    assert "search_direct_flight" not in decision.feedback


# ---------------------------------------------------------------------------------------------------
# Reasons name the limit, the observed value and the path it came from, in plain grammar.


def test_no_reason_writes_a_plural_as_a_maybe() -> None:
    """'1 passenger(s)', 'bag(s)', 'certificate(s)': every count is written out, singular or plural."""
    allowance = _result(propose(theo(), bags(5, 0)), "airline.baggage_allowance").reason
    assert "3 free bags per passenger, 3 for 1 passenger: 5 bags means 2 non-free" in allowance
    assert "(s)" not in allowance
    twice = _result(propose(theo_searched(), book(EVENING_BOOKING, [pay(THEO_CARD, 100), pay(THEO_CARD, 114)])),
                    "airline.payment_method_allowed").reason
    assert twice.startswith(f"payment method {THEO_CARD!r} is listed more than once"), twice
    given = _certified(lena(lena_cancelled(), "HAT171", "2024-05-13", "cancelled")())
    once = _result(propose(given, certificate(LENA, 100)), "airline.compensation_once").reason
    assert f"already gave {LENA} 1 certificate (100 at step" in once
    assert "for 1 compensable reservation (LV4X8N)" in once


def test_a_booking_total_names_the_fare_paths_it_summed() -> None:
    reason = _result(propose(theo_searched(), book(EVENING_BOOKING, [pay(THEO_CARD, 200)])),
                     "airline.payment_total_matches").reason
    assert reason == ("the payments add up to 200, but the booking costs 214 = fares 214 "
                      "(flights.HAT119.2024-05-20.prices.economy, x 1 passenger) + insurance 0 + 0 non-free bags x 50")


def test_a_flight_that_has_flown_today_is_refused_as_flown_not_as_past() -> None:
    """Today's flight, observed landed: the reason says which fact refuses it (its status, and where that was
    read), not 'before today ... or has flown', and it never asks for a search that cannot show it."""
    session = theo()
    session.status("HAT119", "2024-05-15", "landed")
    decision = propose(session, book([segment("HAT119", "2024-05-15")], [pay(THEO_CARD, 214)]))
    result = _result(decision, "airline.flight_observed_available")
    assert result.status is Status.VIOLATION
    assert result.reason == ("HAT119 on 2024-05-15 is landed (flights.HAT119.2024-05-15.status); it cannot be "
                             "booked; choose another flight or cabin")
    assert "search_direct_flight" not in decision.feedback


def test_nothing_to_compensate_lists_the_statuses_it_saw() -> None:
    reason = _result(propose(julia("available")(), certificate(JULIA, 100)), "airline.compensation_eligible").reason
    assert reason == ("none of the customer's observed reservations has a cancelled or delayed flight (HAT142 on "
                      "2024-05-17 ORD->SEA: available (flights.HAT142.2024-05-17.status)), so there is nothing to "
                      "compensate")


def test_an_ineligible_disruption_reads_as_one_sentence() -> None:
    reason = _result(propose(julia("cancelled")(), certificate(JULIA, 100)), "airline.compensation_eligible").reason
    assert ("(flights.HAT142.2024-05-17.status) on reservation UX789J, but the customer is a regular member "
            "(user.membership)") in reason
    assert ": but" not in reason


def test_an_unsearched_flight_dated_today_asks_for_its_status_before_any_search() -> None:
    """A search shows only bookable flights, so for today's flight (which may have departed) the hint is its
    status, never a search that could not show it; once it is seen available, the search is asked for."""
    session = theo()
    decision = propose(session, book([segment("HAT119", "2024-05-15")], [pay(THEO_CARD, 214)]))
    result = _result(decision, "airline.flight_observed_available")
    assert result.status is Status.MISSING
    assert 'get_flight_status(flight_number="HAT119", date="2024-05-15")' in result.reason, result.reason
    assert "search_direct_flight" not in result.reason
    session.status("HAT119", "2024-05-15", "available")
    later = _result(propose(session, book([segment("HAT119", "2024-05-15")], [pay(THEO_CARD, 214)])),
                    "airline.flight_observed_available")
    assert later.status is Status.MISSING and 'search it with search_direct_flight(origin="BOS", destination="DEN", ' \
        'date="2024-05-15")' in later.reason, later.reason


# ---------------------------------------------------------------------------------------------------
# What was observed decides: a flight's status and a search of its leg are answers, never "search it" again.


def test_a_flight_seen_on_another_date_shows_where_it_goes() -> None:
    """HAT119 was seen flying BOS -> DEN on 2024-05-20: on 2024-05-24 it flies the same route, so it cannot bring
    Theo back, whether or not anyone searched that date."""
    call = book([segment("HAT119", "2024-05-20"), segment("HAT119", "2024-05-24")], [pay(THEO_CARD, 428)],
                flight_type="round_trip")
    result = _result(propose(theo_searched(), call), "airline.itinerary_connected")
    assert result.status is Status.VIOLATION, result.reason
    assert "HAT119 on 2024-05-24 BOS->DEN leaves from BOS" in result.reason


def test_a_flight_read_as_not_available_breaks_the_rule_with_its_status() -> None:
    session = theo()
    session.status("HAT119", "2024-05-20", "cancelled")
    result = _result(propose(session, book(EVENING_BOOKING, [pay(THEO_CARD, 214)])),
                     "airline.flight_observed_available")
    assert result.status is Status.VIOLATION
    assert result.reason.startswith("HAT119 on 2024-05-20 is cancelled (flights.HAT119.2024-05-20.status); only a "
                                    "flight whose status is available can be booked")


def test_a_flight_missing_from_the_search_of_its_own_route_breaks_the_rule() -> None:
    """HAT119 flies BOS -> DEN (seen on the 20th); the search of that route on the 21st does not list it."""
    session = theo_searched()
    session.search("BOS", "DEN", "2024-05-21", [{**offer("HAT117", "2024-05-20")}])
    result = _result(propose(session, book([segment("HAT119", "2024-05-21")], [pay(THEO_CARD, 214)])),
                     "airline.flight_observed_available")
    assert result.status is Status.VIOLATION, result.reason
    assert ('HAT119 on 2024-05-21 is not among the flights search_direct_flight(origin="BOS", destination="DEN", '
            'date="2024-05-21") shows (flight_search.BOS.DEN.2024-05-21: HAT117)') in result.reason
    # the gate's read of it would be the search already made: nothing left to read, nothing to loop on
    assert result.missing == ()


def test_an_unsearched_flight_is_asked_for_with_the_search_that_shows_it() -> None:
    result = _result(propose(theo(), book([segment("HAT119", "2024-05-20")], [pay(THEO_CARD, 214)])),
                     "airline.flight_observed_available")
    assert (result.status, result.missing) == (Status.MISSING, ("flights.HAT119.2024-05-20",))
    assert 'search it with search_direct_flight(origin="BOS", destination="DEN", date="2024-05-20")' in result.reason
