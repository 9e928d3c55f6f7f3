"""Where each flight of an itinerary goes, and which flight search shows it on its date.

A booking or a change of flights names flights by number and date only; the rules need each one's seats and
price, which only a search shows (search_direct_flight, search_onestop_flight: tau2's airline tools take an
origin, a destination and a date). This module derives that search from what the call and the conversation
say, for the gate to make itself (domains.airline.paths, EVIDENCE_READS) and for the rules to name
(domains.airline.predicates):

- a flight number flies one route (tau2's flights are keyed by number, each with one origin and destination),
  so any observation of the number, on any date, gives its route: a reservation listing it, a search's offer,
  a one-stop pair;
- the trip gives the itinerary's ends: a booking's own origin, destination and trip type, or the reservation's
  (a change keeps them); a one-way trip runs origin -> destination, a round trip out and back, turning at the
  destination;
- an itinerary is connected: each flight leaves from where the previous one landed, so a flight between two
  known points is a direct search of that leg, and two unknown flights between known points a one-stop search
  from the first's date (it lists second flights of the next day too).

Where a round trip turns is a fact when an observed flight lands at (or leaves from) the destination, or when
the trip has two flights; otherwise it is taken where the dates are furthest apart, a guess: a search derived
from a guess is still made (public data; a wrong guess costs one read), but a flight missing from it proves
nothing (`LegSearch.forced` is False), while a flight missing from a search of a leg the facts force is not
bookable as the call describes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from core.tools import ToolCall, call_text

MAX_SEGMENTS = 8  # longest itinerary whose flights a write stales one by one (tau2's longest has 4)
DIRECT = "search_direct_flight"
ONESTOP = "search_onestop_flight"

# (path) -> every value observed there, oldest first; (pattern) -> every path observed matching it. A rule passes
# its LedgerView's `observations` / `observed_paths`; the gate's read declarations a reader's (values of entries).
Observations = Callable[[str], list[Any]]
ObservedPaths = Callable[[str], list[str]]


@dataclass(frozen=True)
class Seen:
    """What the conversation observed, however it is read (a rule's view or the gate's ledger reader)."""

    observations: Observations
    observed_paths: ObservedPaths

    def latest(self, path: str) -> Any:
        values = self.observations(path)
        return values[-1] if values else None


@dataclass(frozen=True)
class LegSearch:
    """The search that shows one flight of an itinerary on its date; `forced` when both ends of the leg follow
    from facts (the trip's ends, observed flights, a turn the facts fix), not from a guess."""

    tool: str
    origin: str
    destination: str
    date: str
    forced: bool

    @property
    def path(self) -> str:
        head = "flight_search" if self.tool == DIRECT else "onestop_search"
        return f"{head}.{self.origin}.{self.destination}.{self.date}"

    @property
    def text(self) -> str:
        return call_text(self.tool, origin=self.origin, destination=self.destination, date=self.date)

    @property
    def arguments(self) -> dict[str, str]:
        return {"origin": self.origin, "destination": self.destination, "date": self.date}

    def lists(self, result: Any, flight_number: str, day: str) -> bool:
        """Whether a result of this search shows the flight on that date."""
        items: Iterable[Any] = result if isinstance(result, list) else []
        if self.tool == ONESTOP:
            items = [leg for pair in items if isinstance(pair, list) for leg in pair]
        return any(isinstance(item, Mapping) and item.get("flight_number") == flight_number
                   and (item.get("date") in (None, day)) for item in items)


def segments(call: ToolCall) -> list[tuple[str, str]]:
    """(flight number, date) of each flight the call names, in order (at most MAX_SEGMENTS)."""
    flights = call.arguments.get("flights")
    found = [(str(f.get("flight_number")), str(f.get("date"))) for f in flights if isinstance(f, Mapping)] \
        if isinstance(flights, list) else []
    return found[:MAX_SEGMENTS]


def route_of(flight_number: str, seen: Seen) -> tuple[str, str] | None:
    """Where a flight number flies, from any observation of it in this conversation (a number flies one route):
    a reservation listing it, a direct search's offer on any date, a leg of a one-stop pair."""
    for path in seen.observed_paths("reservations.*"):
        for record in seen.observations(path):
            for flight in _list(record.get("flights") if isinstance(record, Mapping) else None):
                if isinstance(flight, Mapping) and flight.get("flight_number") == flight_number:
                    found = _ends(flight)
                    if found is not None:
                        return found
    for path in seen.observed_paths(f"flights.{flight_number}.*"):
        if path.count(".") == 2:  # flights.<number>.<date>, not a bare status
            found = _ends(seen.latest(path))
            if found is not None:
                return found
    for path in seen.observed_paths("onestop_search.*.*.*"):
        for pair in _list(seen.latest(path)):
            for leg in _list(pair):
                if isinstance(leg, Mapping) and leg.get("flight_number") == flight_number:
                    found = _ends(leg)
                    if found is not None:
                        return found
    return None


def search_for(flight_number: str, day: str, call: ToolCall, seen: Seen) -> LegSearch | None:
    """The search that shows flight `flight_number` on `day` of the itinerary `call` books or switches to, or
    None when neither the call nor the conversation gives the ends of its leg."""
    legs = segments(call)
    if (flight_number, day) not in legs:
        return None
    position = legs.index((flight_number, day))
    routes = [route_of(number, seen) for number, _ in legs]
    known = routes[position]
    if known is not None:  # the flight was seen: a direct search of its own route
        return LegSearch(DIRECT, known[0], known[1], day, True)
    points = _points(call, seen, legs, routes)
    if points is None:
        return None
    start, end = points[position], points[position + 1]
    if start is not None and end is not None:
        return LegSearch(DIRECT, start[0], end[0], day, start[1] and end[1])
    after = position + 2
    if end is None and after < len(points) and routes[position + 1] is None and start is not None \
            and points[after] is not None:
        far = points[after]
        assert far is not None
        return LegSearch(ONESTOP, start[0], far[0], day, False)
    before = position - 1
    if start is None and before >= 0 and routes[before] is None and points[before] is not None \
            and end is not None:
        near = points[before]
        assert near is not None
        return LegSearch(ONESTOP, near[0], end[0], legs[before][1], False)
    return None


Point = tuple[str, bool]  # an airport, and whether the facts fix it there (False: a guessed turn)


def _points(call: ToolCall, seen: Seen, legs: list[tuple[str, str]],
            routes: list[tuple[str, str] | None]) -> list[Point | None] | None:
    """The airport at each boundary of the itinerary (before the first flight, between flights, after the last),
    where the trip and the observed flights say; None for the whole when the call names no trip."""
    trip: Any = call.arguments if call.name == "book_reservation" else \
        seen.latest(f"reservations.{call.arguments.get('reservation_id')}")
    if not isinstance(trip, Mapping):
        return None
    origin, destination, kind = trip.get("origin"), trip.get("destination"), trip.get("flight_type")
    if not isinstance(origin, str) or not isinstance(destination, str) or kind not in ("one_way", "round_trip"):
        return None
    count = len(legs)
    if count == 0 or (kind == "round_trip" and count < 2):  # a round trip of one flight has no leg to search
        return None
    points: list[Point | None] = [None] * (count + 1)
    points[0] = (origin, True)
    if kind == "one_way":
        points[count] = (destination, True)
    else:
        points[count] = (origin, True)
        turn, fixed = _turn(legs, routes, destination)
        if 0 < turn < count:
            points[turn] = (destination, fixed)
    for index, route in enumerate(routes):  # what was observed outranks what the trip suggests
        if route is not None:
            points[index] = (route[0], True)
            points[index + 1] = (route[1], True)
    return points


def _turn(legs: list[tuple[str, str]], routes: list[tuple[str, str] | None], destination: str) -> tuple[int, bool]:
    """The boundary where a round trip reaches its destination, and whether the facts fix it there."""
    for index, route in enumerate(routes):
        if route is not None and route[1] == destination:
            return index + 1, True
        if route is not None and route[0] == destination:
            return index, True
    if len(legs) == 2:
        return 1, True
    gaps = [(_days_between(legs[i][1], legs[i + 1][1]), i + 1) for i in range(len(legs) - 1)]
    return max(gaps)[1], False


def _ends(flight: Any) -> tuple[str, str] | None:
    if not isinstance(flight, Mapping):
        return None
    origin, destination = flight.get("origin"), flight.get("destination")
    return (origin, destination) if isinstance(origin, str) and isinstance(destination, str) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _days_between(first: str, second: str) -> int:
    try:
        return (date.fromisoformat(second) - date.fromisoformat(first)).days
    except ValueError:
        return 0
