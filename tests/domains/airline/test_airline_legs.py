"""Which search shows a flight of an itinerary (domains.airline.legs): from the flight's own route when any
observation gives it, else from its leg of the trip, and whether that leg is forced by the facts."""

from __future__ import annotations

from typing import Any

from core.ledger import Ledger
from core.tools import ToolCall
from domains.airline.legs import DIRECT, ONESTOP, LegSearch, Seen, search_for
from domains.airline.paths import PATH_MAP


def _seen(*reads: tuple[str, dict[str, Any], Any]) -> Seen:
    ledger = Ledger(PATH_MAP)
    for index, (tool, arguments, result) in enumerate(reads):
        ledger.absorb(ToolCall(f"r{index}", tool, arguments), result, step=index)
    return Seen(lambda path: [entry.value for entry in ledger.observations(path)], ledger.observed_paths)


def _offer(number: str, origin: str, destination: str, day: str | None = None) -> dict[str, Any]:
    return {"flight_number": number, "origin": origin, "destination": destination, "status": "available",
            "date": day, "available_seats": {"economy": 5}, "prices": {"economy": 100}}


def _booking(kind: str, origin: str, destination: str, *flights: tuple[str, str]) -> ToolCall:
    return ToolCall("w", "book_reservation", {"origin": origin, "destination": destination, "flight_type": kind,
                                              "flights": [{"flight_number": n, "date": d} for n, d in flights]})


def test_a_flight_seen_on_another_date_is_searched_on_its_own_route() -> None:
    seen = _seen(("search_direct_flight", {"origin": "BOS", "destination": "DEN", "date": "2024-05-20"},
                  [_offer("HAT117", "BOS", "DEN")]))
    call = _booking("one_way", "BOS", "SEA", ("HAT117", "2024-05-22"), ("HAT300", "2024-05-22"))
    assert search_for("HAT117", "2024-05-22", call, seen) == LegSearch(DIRECT, "BOS", "DEN", "2024-05-22", True)
    # and the next flight leaves from where it lands: a direct search of DEN -> SEA, forced by the facts
    assert search_for("HAT300", "2024-05-22", call, seen) == LegSearch(DIRECT, "DEN", "SEA", "2024-05-22", True)


def test_a_round_trip_of_two_flights_goes_out_and_back() -> None:
    call = _booking("round_trip", "JFK", "LAX", ("HAT1", "2024-05-20"), ("HAT2", "2024-05-25"))
    assert search_for("HAT2", "2024-05-25", call, _seen()) == LegSearch(DIRECT, "LAX", "JFK", "2024-05-25", True)


def test_a_round_trip_turns_where_an_observed_flight_reaches_the_destination() -> None:
    """Three flights: the gaps between dates would put the turn after the first, but the second flight is seen
    landing at the destination, so the out leg is two flights and the third flies back."""
    seen = _seen(("search_direct_flight", {"origin": "ORD", "destination": "LAX", "date": "2024-05-21"},
                  [_offer("HAT2", "ORD", "LAX")]))
    call = _booking("round_trip", "JFK", "LAX", ("HAT1", "2024-05-20"), ("HAT2", "2024-05-24"),
                    ("HAT3", "2024-05-25"))
    assert search_for("HAT1", "2024-05-20", call, seen) == LegSearch(DIRECT, "JFK", "ORD", "2024-05-20", True)
    assert search_for("HAT3", "2024-05-25", call, seen) == LegSearch(DIRECT, "LAX", "JFK", "2024-05-25", True)


def test_a_guessed_turn_is_searched_but_forces_nothing() -> None:
    call = _booking("round_trip", "JFK", "LAX", ("HAT1", "2024-05-20"), ("HAT2", "2024-05-20"),
                    ("HAT3", "2024-05-26"))
    assert search_for("HAT1", "2024-05-20", call, _seen()) == LegSearch(ONESTOP, "JFK", "LAX", "2024-05-20", False)
    assert search_for("HAT3", "2024-05-26", call, _seen()) == LegSearch(DIRECT, "LAX", "JFK", "2024-05-26", False)


def test_no_leg_no_search() -> None:
    assert search_for("HAT1", "2024-05-20", _booking("round_trip", "JFK", "LAX", ("HAT1", "2024-05-20")),
                      _seen()) is None
    assert search_for("HAT9", "2024-05-20", _booking("one_way", "JFK", "LAX", ("HAT1", "2024-05-20")), _seen()) is None
    assert search_for("HAT1", "2024-05-20", ToolCall("w", "update_reservation_flights", {
        "reservation_id": "NEVERREAD", "flights": [{"flight_number": "HAT1", "date": "2024-05-20"}]}), _seen()) is None


def test_a_change_of_one_leg_keeps_the_trip_of_the_reservation() -> None:
    """A round trip's return changed: the kept outbound flight lands at the destination, so the new flight flies
    back from there."""
    reservation = {"reservation_id": "ABC123", "user_id": "u", "origin": "SFO", "destination": "SEA",
                   "flight_type": "round_trip", "cabin": "economy",
                   "flights": [{"flight_number": "HAT10", "origin": "SFO", "destination": "SEA", "date": "2024-05-20",
                                "price": 100},
                               {"flight_number": "HAT11", "origin": "SEA", "destination": "SFO", "date": "2024-05-23",
                                "price": 100}]}
    seen = _seen(("get_reservation_details", {"reservation_id": "ABC123"}, reservation))
    call = ToolCall("w", "update_reservation_flights", {
        "reservation_id": "ABC123", "cabin": "economy",
        "flights": [{"flight_number": "HAT10", "date": "2024-05-20"},
                    {"flight_number": "HAT77", "date": "2024-05-24"}]})
    assert search_for("HAT77", "2024-05-24", call, seen) == LegSearch(DIRECT, "SEA", "SFO", "2024-05-24", True)
