"""Airline policy as executable predicates over the ledger.

Each predicate is one sentence of `policy.md`, checked against observed records only. Reading rules:

- `view.get/require` is the only way to see the ledger; every path read becomes the verdict's evidence.
  Stale or absent evidence that a rule needs makes the gate answer REVISE ("read X first").
- Severity follows "can the model fix this by changing the call?". A wrong argument (payment method,
  amounts, bag counts, passenger details, a flight nobody searched for) is REVISE. A fact about the world
  that no argument changes (the reservation is someone else's, it is basic economy, a flight has flown,
  nothing entitles the customer to a cancellation or a certificate) is BLOCK.
- "Now" is the domain's reference time (`ctx.now`, 2024-05-15 15:00 EST by default): it decides the 24-hour
  window and which flights may already have flown (a flight dated after today cannot have; for today or
  earlier the observed status decides, and an unobserved one is asked for).
- Before the customer's profile has been read only `airline.customer_identified` complains; rules that
  need to know the customer pass with a note instead of piling up the same complaint. Likewise a rule
  that needs a flight's seats or price passes when the flight was never observed: that is
  `airline.flight_observed_available`'s to report.
- What the customer said is evidence too (core.conversation): a user id they stated identifies them until a
  profile is read (the policy's "obtain the user id from the user"), and `airline.explicit_confirmation`
  reads whether their latest message is an explicit "yes". Their stated reason for a cancellation is only
  quoted beside the verdict. What a predicate cannot see (whether that reason is one the insurance covers,
  whether the customer asked for compensation, one tool call per turn) is not faked here; `policy.md` lists it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from core.conversation_rules import explicitly_confirmed
from core.gate import (
    GateContext,
    LedgerView,
    MissingEvidence,
    Outcome,
    Pass,
    Predicate,
    Verdict,
    Violation,
    predicate,
    requires_customer,
)
from core.numbers import whole
from core.tools import ToolCall, call_text
from domains.airline.clock import local_now, parse_local
from domains.airline.conversation import STATED_USER_IDS
from domains.airline.legs import ONESTOP, LegSearch, Seen, route_of, search_for
from domains.airline.paths import PROFILE_PATH

BOOK = "book_reservation"
CANCEL = "cancel_reservation"
UPDATE_FLIGHTS = "update_reservation_flights"
UPDATE_BAGS = "update_reservation_baggages"
UPDATE_PASSENGERS = "update_reservation_passengers"
CERTIFICATE = "send_certificate"

RESERVATION_WRITES = (CANCEL, UPDATE_FLIGHTS, UPDATE_BAGS, UPDATE_PASSENGERS)
ALL_WRITES = (BOOK, *RESERVATION_WRITES, CERTIFICATE)
PAID_UPDATES = (UPDATE_FLIGHTS, UPDATE_BAGS)

CABINS = ("basic_economy", "economy", "business")
FREE_BAGS: Mapping[str, Mapping[str, int]] = {  # per passenger, by membership and cabin
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
INSURANCE_PER_PASSENGER = 30
BAG_PRICE = 50
MAX_PASSENGERS = 5
PAYMENT_LIMITS = {"certificate": 1, "credit_card": 1, "gift_card": 3}
CANCELLATION_WINDOW = timedelta(hours=24)
FLOWN = ("flying", "landed")
COMPENSATION_PER_PASSENGER = {"cancelled": 100, "delayed": 50}

# ---------------------------------------------------------------------------------------------------
# Reading helpers: how a rule gets the records it needs, and what to tell the model when they are missing.


def _customer(view: LedgerView, ctx: GateContext) -> str | None:
    """Who the customer is. Identity needs only that a profile was read, not that it is fresh, so this notes
    `user` as evidence without demanding a re-read after a write changed a balance."""
    view.has(PROFILE_PATH)
    return ctx.customer_id


def _profile(view: LedgerView, customer: str) -> Mapping[str, Any]:
    """The customer's profile, fresh: payment balances and membership are read from it."""
    profile: Mapping[str, Any] = view.need(PROFILE_PATH, call_text("get_user_details", user_id=customer))
    return profile


def _reservation(view: LedgerView, call: ToolCall) -> tuple[str, Mapping[str, Any]]:
    reservation_id = str(call.arguments.get("reservation_id", ""))
    record: Mapping[str, Any] = view.need(f"reservations.{reservation_id}",
                                      call_text("get_reservation_details", reservation_id=reservation_id))
    return reservation_id, record


def _methods(profile: Mapping[str, Any]) -> Mapping[str, Any]:
    methods = profile.get("payment_methods", {})
    return methods if isinstance(methods, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class Segment:
    """One flight of an itinerary: what the call or record names, plus its route when known."""

    flight_number: str
    date: str
    origin: str | None = None
    destination: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.flight_number, self.date)

    @property
    def offer_path(self) -> str:
        return f"flights.{self.flight_number}.{self.date}"

    @property
    def status_path(self) -> str:
        return f"flights.{self.flight_number}.{self.date}.status"

    def label(self) -> str:
        route = f" {self.origin}->{self.destination}" if self.origin and self.destination else ""
        return f"{self.flight_number} on {self.date}{route}"


def _requested(call: ToolCall) -> list[Segment]:
    """The segments a booking or flight change names (malformed entries become empty names)."""
    segments: list[Segment] = []
    for item in _list(call.arguments.get("flights")):
        item = item if isinstance(item, Mapping) else {}
        segments.append(Segment(str(item.get("flight_number", "")), str(item.get("date", ""))))
    return segments


def _booked(record: Mapping[str, Any]) -> list[Segment]:
    """The segments of a reservation record, with their routes."""
    return [Segment(str(f.get("flight_number")), str(f.get("date")), f.get("origin"), f.get("destination"))
            for f in _list(record.get("flights")) if isinstance(f, Mapping)]


def _offer(view: LedgerView, segment: Segment) -> Mapping[str, Any] | None:
    """What a search showed for this flight on this date (seats, prices, route), or None if never seen.

    Direct-search hits are at `flights.<number>.<date>`; one-stop hits stay inside their pairs."""
    offer = view.get(segment.offer_path)
    if isinstance(offer, Mapping):
        return offer
    for pairs in view.glob("onestop_search.*.*.*").values():
        for pair in _list(pairs):
            for leg in _list(pair):
                if isinstance(leg, Mapping) and (leg.get("flight_number"), leg.get("date")) == segment.key:
                    return leg
    return None


def _status(view: LedgerView, segment: Segment) -> str | None:
    """The observed status of a flight date: a status read, else 'available' if a search showed it."""
    status = view.get(segment.status_path)
    if isinstance(status, str):
        return status
    offer = view.get(segment.offer_path)
    if isinstance(offer, Mapping):
        return str(offer.get("status"))
    return None


def _with_route(view: LedgerView, segments: Sequence[Segment], kept: Sequence[Segment] = ()) -> list[Segment] | None:
    """Fill each segment's route from the reservation (kept segments), from what a search showed on its date, or
    from any other observation of its number (a number flies one route, domains.airline.legs.route_of).
    None when some route is unknown (a flight never observed at all)."""
    known = {s.key: s for s in kept}
    routed: list[Segment] = []
    for segment in segments:
        source = known.get(segment.key)
        if source is not None:
            routed.append(source)
            continue
        offer = _offer(view, segment)
        route = (offer.get("origin"), offer.get("destination")) if offer is not None else \
            route_of(segment.flight_number, _seen(view))
        if route is None:
            return None
        routed.append(Segment(segment.flight_number, segment.date, route[0], route[1]))
    return routed


def _repriced(call: ToolCall, record: Mapping[str, Any] | None) -> list[Segment]:
    """The segments that are bought at today's price: all of a booking; in a change, every segment except
    those kept as they are (same flight, same date, same cabin), which keep the fare paid."""
    requested = _requested(call)
    if record is None:
        return requested
    if call.arguments.get("cabin") != record.get("cabin"):
        return requested
    old = {s.key for s in _booked(record)}
    return [s for s in requested if s.key not in old]


def _passenger_count(call: ToolCall, record: Mapping[str, Any] | None) -> int:
    source = call.arguments.get("passengers") if record is None else record.get("passengers")
    return len(_list(source))


def _fare_total(view: LedgerView, call: ToolCall, record: Mapping[str, Any] | None) -> int | None:
    """Fares for the call's itinerary times passengers: today's price for re-priced segments, the price paid
    for kept ones. None when a re-priced flight was never observed."""
    cabin = str(call.arguments.get("cabin"))
    n = _passenger_count(call, record)
    repriced = {s.key for s in _repriced(call, record)}
    paid = {(str(f.get("flight_number")), str(f.get("date"))): f.get("price")
            for f in _list((record or {}).get("flights")) if isinstance(f, Mapping)}
    total = 0
    for segment in _requested(call):
        if segment.key in repriced:
            offer = _offer(view, segment)
            price = offer.get("prices", {}).get(cabin) if offer is not None else None
        else:
            price = paid.get(segment.key)
        price = whole(price)
        if price is None:
            return None
        total += price * n
    return total


def _count(n: int, noun: str) -> str:
    """'1 passenger', '2 passengers', '0 bags': a reason states the number, never 'passenger(s)'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _today(ctx: GateContext) -> str:
    return local_now(ctx.now).date().isoformat()


def _status_source(view: LedgerView, segment: Segment) -> str:
    """The path `_status` took a segment's status from: the status read, else the search that showed it."""
    return segment.status_path if isinstance(view.get(segment.status_path), str) else segment.offer_path + ".status"


def _flown(view: LedgerView, ctx: GateContext, segment: Segment) -> bool | None:
    """Whether a segment has flown: never for a date after today; otherwise by its observed status
    (None when not observed: the caller asks for it)."""
    if segment.date > _today(ctx):
        return False
    status = _status(view, segment)
    return None if status is None else status in FLOWN


def _ask_status(segments: Sequence[Segment], why: str) -> MissingEvidence:
    reads = ", ".join(call_text("get_flight_status", flight_number=s.flight_number, date=s.date) for s in segments)
    return MissingEvidence(paths=tuple(s.status_path for s in segments), reason=f"{why}: read {reads}")


def _is_date(text: object) -> bool:
    if not isinstance(text, str) or len(text) != 10:
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _payments(call: ToolCall) -> list[tuple[str, Any]]:
    """(payment id, amount) of a booking, or the single payment id of a paid update (amount None)."""
    if call.name == BOOK:
        return [(str(p.get("payment_id")), p.get("amount")) if isinstance(p, Mapping) else ("", None)
                for p in _list(call.arguments.get("payment_methods"))]
    return [(str(call.arguments.get("payment_id")), None)]


# ---------------------------------------------------------------------------------------------------
# Who the customer is, and whose records may be changed.

for_customer = requires_customer("airline.customer_identified", _customer)
# Rules about a record the call names (a reservation, order, appointment, medical record, a patient's
# calendar or insurance) stand aside until someone is identified: before that the record may be anyone's,
# and a "read it first" hint would ask the agent to read a stranger's data.
# Only ctx is consulted, so the evidence stays the record the rule judges.
once_identified = requires_customer("airline.customer_identified", lambda view, ctx: ctx.customer_id,
                                    "no customer profile read yet")


@predicate(
    id="airline.customer_identified",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="Ask the customer for their user id and read their profile before changing anything.",
)
def customer_identified(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    """The customer is known by the first profile read or, until then, by the one user id they stated (the
    upstream policy: "The agent must first obtain the user id from the user"); the rules that need the profile
    then ask for it, and the gate may read it itself (core.evidence)."""
    customer = _customer(view, ctx)
    stated = view.get(STATED_USER_IDS) if not view.has(PROFILE_PATH) else None
    if customer is None:
        if isinstance(stated, list) and len(stated) > 1:
            return Violation(f"the customer stated several user ids ({', '.join(map(str, stated))}; "
                             f"{STATED_USER_IDS}) and no profile has been read (user is not set); ask which is "
                             "theirs and read it with get_user_details first")
        return Violation(
            "no customer profile has been read in this conversation (user is not set) and the customer has not "
            "stated a user id; ask the customer for their user id and read it with get_user_details first"
        )
    if stated is not None:
        return Pass(f"the customer stated their user id {customer} ({STATED_USER_IDS})")
    return Pass()


@predicate(
    id="airline.user_is_customer",
    tools=[BOOK, CERTIFICATE],
    severity=Verdict.BLOCK,
    policy="Book and give certificates only for the customer you are serving, whose profile you read first.",
)
@for_customer
def user_is_customer(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    user_id = call.arguments.get("user_id")
    if user_id != customer:
        return Violation(f"user_id {user_id!r} is not the customer {customer!r} (user.user_id, the first profile "
                         "read in this conversation)")
    return Pass()


@predicate(
    id="airline.reservation_owned_by_customer",
    tools=RESERVATION_WRITES,
    severity=Verdict.BLOCK,
    policy="Only change or cancel reservations that belong to the customer you are serving.",
)
@for_customer
def reservation_owned_by_customer(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    owner = record.get("user_id")
    if owner != customer:
        return Violation(f"reservation {reservation_id} belongs to {owner!r} (reservations.{reservation_id}.user_id), "
                         f"not to the customer {customer!r} (user.user_id)")
    return Pass()


@predicate(
    id="airline.reservation_active",
    tools=RESERVATION_WRITES,
    severity=Verdict.BLOCK,
    policy="A cancelled reservation can no longer be changed or cancelled again.",
)
@once_identified
def reservation_active(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    if record.get("status") == "cancelled":
        return Violation(f"reservation {reservation_id} is already cancelled (reservations.{reservation_id}.status)")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Cancellation.


@predicate(
    id="airline.cancel_basis",
    tools=[CANCEL],
    severity=Verdict.BLOCK,
    policy="A reservation can be cancelled only if it was booked within the last 24 hours, the airline "
           "cancelled one of its flights, it is in business, or it has travel insurance and the reason is "
           "covered.",
)
@once_identified
def cancel_basis(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    now = local_now(ctx.now)
    created = parse_local(record.get("created_at"))
    if created is not None and now - created <= CANCELLATION_WINDOW:
        return Pass(f"booked at {record.get('created_at')}, within 24 hours of {now:%Y-%m-%dT%H:%M:%S}")
    if record.get("cabin") == "business":
        return Pass("business reservations can always be cancelled")
    if record.get("insurance") == "yes":
        return Pass("insured: the cancellation reason must be one the insurance covers (health or weather)")
    segments = _booked(record)
    statuses = {s.key: _status(view, s) for s in segments}
    if "cancelled" in statuses.values():
        return Pass("the airline cancelled one of its flights")
    age = ("at an unknown time" if created is None
           else f"at {record.get('created_at')}, {_span(now - created)} before now ({now:%Y-%m-%dT%H:%M:%S}), "
                f"past the 24-hour window")
    facts = (f"reservation {reservation_id} ({record.get('cabin')}) was booked {age} "
             f"(reservations.{reservation_id}.created_at), has no travel insurance and is not business")
    unknown = [s for s in segments if statuses[s.key] is None]
    if unknown:
        return _ask_status(unknown, f"{facts}; it can be cancelled only if the airline cancelled one of its flights")
    shown = ", ".join(f"{s.flight_number} {s.date}: {statuses[s.key]} ({_status_source(view, s)})" for s in segments)
    return Violation(f"{facts}, and the airline cancelled none of its flights ({shown}); it cannot be cancelled "
                     "outside the 24-hour window")


def _span(delta: timedelta) -> str:
    """An exact span ('24 h 0 min 1 s', '3 days 2 h 0 min 0 s'): never rounded onto the limit it broke."""
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86400) if seconds >= 2 * 86400 else (0, seconds)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    head = f"{days} days " if days else ""
    return f"{head}{hours} h {minutes} min {secs} s"


@predicate(
    id="airline.nothing_flown",
    tools=[CANCEL, UPDATE_FLIGHTS],
    severity=Verdict.BLOCK,
    policy="Once a flight of a reservation has been flown, the reservation cannot be cancelled and its cabin "
           "cannot change; a flown flight stays in the itinerary (transfer the customer if they need more).",
)
@once_identified
def nothing_flown(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    segments = _booked(record)
    whole = call.name == CANCEL or call.arguments.get("cabin") != record.get("cabin")
    if not whole:  # a change of flights in the same cabin: only flights that would be dropped matter
        kept = {s.key for s in _requested(call)}
        segments = [s for s in segments if s.key not in kept]
    flown = {s.key: _flown(view, ctx, s) for s in segments}
    used = [s for s in segments if flown[s.key]]
    if used:
        what = ("cancelled" if call.name == CANCEL else "moved to another cabin") if whole else "dropped"
        shown = ", ".join(f"{s.label()} ({_status(view, s)}, {_status_source(view, s)})" for s in used)
        return Violation(f"reservation {reservation_id} has flown {shown}; it cannot be {what}")
    unknown = [s for s in segments if flown[s.key] is None]
    if unknown:
        return _ask_status(unknown, f"flights of reservation {reservation_id} dated today or earlier may have flown")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Changing flights.


@predicate(
    id="airline.basic_economy_flights_fixed",
    tools=[UPDATE_FLIGHTS],
    severity=Verdict.BLOCK,
    policy="The flights of a basic economy reservation cannot be changed; only its cabin can.",
)
@once_identified
def basic_economy_flights_fixed(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    if record.get("cabin") != "basic_economy":
        return Pass()
    old = sorted(s.key for s in _booked(record))
    new = sorted(s.key for s in _requested(call))
    if old != new:
        return Violation(f"reservation {reservation_id} is basic economy (reservations.{reservation_id}.cabin); its "
                         f"flights {old} cannot change to {new} (a change of cabin only keeps the same flights)")
    return Pass()


@predicate(
    id="airline.update_keeps_trip",
    tools=[UPDATE_FLIGHTS],
    severity=Verdict.BLOCK,
    policy="A changed itinerary keeps the reservation's origin, destination and trip type.",
)
@once_identified
def update_keeps_trip(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    routed = _with_route(view, _requested(call), _booked(record))
    if routed is None:
        return Pass("a flight was never observed (see airline.flight_observed_available)")
    if not routed:
        return Pass("no flights (see airline.itinerary_connected)")
    problem = _trip_problem(routed, str(record.get("origin")), str(record.get("destination")),
                            str(record.get("flight_type")))
    if problem:
        return Violation(f"reservation {reservation_id} is a {record.get('flight_type')} trip "
                         f"{record.get('origin')} -> {record.get('destination')} (reservations.{reservation_id}); "
                         f"the new itinerary {problem}")
    return Pass()


def _trip_problem(legs: Sequence[Segment], origin: str, destination: str, flight_type: str) -> str:
    """How an itinerary fails to be the trip origin -> destination (one way or there and back), or ''."""
    if legs[0].origin != origin:
        return f"starts at {legs[0].origin}, not {origin}"
    if flight_type == "one_way" and legs[-1].destination != destination:
        return f"ends at {legs[-1].destination}, not {destination}"
    if flight_type == "round_trip":
        if not any(leg.destination == destination for leg in legs[:-1]):
            return f"never reaches {destination} before returning"
        if legs[-1].destination != origin:
            return f"ends at {legs[-1].destination} instead of returning to {origin}"
    return ""


@predicate(
    id="airline.itinerary_connected",
    tools=[BOOK, UPDATE_FLIGHTS],
    severity=Verdict.REVISE,
    policy="An itinerary lists its flights in travel order, each leaving from where the previous one landed, "
           "and a booking's origin, destination and trip type describe those flights.",
)
@once_identified
def itinerary_connected(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    requested = _requested(call)
    if not requested:
        return Violation("flights is empty; give every flight of the itinerary")
    record = _reservation(view, call)[1] if call.name == UPDATE_FLIGHTS else None
    trip = call.arguments if record is None else record
    if trip.get("flight_type") == "round_trip" and len(requested) < 2:  # no route needed to see it
        where = "the booking" if record is None else f"reservations.{call.arguments.get('reservation_id')}.flight_type"
        return Violation(f"a round trip ({where}) needs a flight out and a flight back; the itinerary has "
                         f"{_count(len(requested), 'flight')}")
    routed = _with_route(view, requested, _booked(record) if record is not None else ())
    if routed is None:
        return Pass("a flight was never observed (see airline.flight_observed_available)")
    for before, after in zip(routed, routed[1:], strict=False):
        if after.origin != before.destination:
            return Violation(f"{after.label()} leaves from {after.origin}, but the flight before it, "
                             f"{before.label()}, lands at {before.destination}")
        if after.date < before.date:
            return Violation(f"{after.label()} is dated before the flight before it, {before.label()}; list the "
                             "flights in travel order")
    if call.name == BOOK:
        args = call.arguments
        problem = _trip_problem(routed, str(args.get("origin")), str(args.get("destination")),
                                str(args.get("flight_type")))
        if problem:
            return Violation(f"the booking says {args.get('flight_type')} {args.get('origin')} -> "
                             f"{args.get('destination')}, but the itinerary {problem}")
    return Pass()


@predicate(
    id="airline.flight_observed_available",
    tools=[BOOK, UPDATE_FLIGHTS],
    severity=Verdict.REVISE,
    policy="Book or switch to a flight only as a search showed it: bookable on that date, with enough free "
           "seats in the cabin for every passenger.",
)
@once_identified
def flight_observed_available(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    """What was observed decides, and only what was not observed is asked for, never again once observed: a
    status other than "available" (a search shows only available flights, so no search will ever show it) and
    a search of the flight's leg that does not list it are reasons the call breaks the rule, cited; a flight
    never searched is asked for with the search that shows it (domains.airline.legs: its route when any
    observation of the number gives it, else its leg of the itinerary), which the gate can make itself."""
    record = _reservation(view, call)[1] if call.name == UPDATE_FLIGHTS else None
    cabin = call.arguments.get("cabin")
    n = _passenger_count(call, record)
    problems: list[str] = []
    asks: list[tuple[Segment, LegSearch | None, bool, bool]] = []  # flight, search, ask status first, search missed
    today = _today(ctx)
    seen = _seen(view)
    for segment in _repriced(call, record):
        offer = _offer(view, segment)
        if offer is None:
            past = _is_date(segment.date) and segment.date < today
            status = _status(view, segment)
            if (past or status in FLOWN) and record is not None:
                continue  # a flown flight of the reservation: airline.nothing_flown's to judge
            if past:  # no search can show it: never ask for one
                problems.append(f"{segment.label()} is dated {segment.date}, before today ({today}); it cannot be "
                                "booked")
                continue
            if status in FLOWN:
                problems.append(f"{segment.label()} is {status} ({_status_source(view, segment)}); it cannot be "
                                "booked")
                continue
            if status is not None and status != "available":  # no search lists it: never ask for one again
                problems.append(f"{segment.label()} is {status} ({_status_source(view, segment)}); only a flight "
                                "whose status is available can be booked")
                continue
            search = search_for(segment.flight_number, segment.date, call, seen)
            listing = _listing_without(view, search, segment)
            if search is not None and search.forced and listing is not None:
                problems.append(f"{segment.label()} is not among the flights {search.text} shows ({search.path}: "
                                f"{listing}); that search lists every bookable flight of the leg it must fly, so it "
                                "cannot be booked there on that date")
                continue
            status_first = status is None and (segment.date == today or search is None or listing is not None)
            asks.append((segment, search, status_first, listing is not None))
            continue
        seats = whole(offer.get("available_seats", {}).get(cabin)) if isinstance(cabin, str) else None
        if seats is None or seats < n:
            shown = f"{seats} free {cabin} seats" if seats is not None else f"no {cabin} seat count"
            problems.append(f"{segment.label()} shows {shown} ({segment.offer_path}.available_seats.{cabin}) for "
                            f"{_count(n, 'passenger')}")
    if problems:
        return Violation("; ".join(problems) + "; choose another flight or cabin")
    if asks:
        return _ask_search(asks, today)
    return Pass()


def _seen(view: LedgerView) -> Seen:
    return Seen(view.observations, view.observed_paths)


def _listing_without(view: LedgerView, search: LegSearch | None, segment: Segment) -> str | None:
    """The flights an observed search of the segment's leg lists, when it does not list the segment; None when
    that search was never made, or shows it. The latest observation counts even when a booking made it stale:
    a write changes seats, never which flights a search lists (statuses never change)."""
    if search is None:
        return None
    observed = view.observations(search.path)
    if not observed or search.lists(observed[-1], segment.flight_number, segment.date):
        return None
    result = observed[-1]
    items = [leg for pair in _list(result) for leg in _list(pair)] if search.tool == ONESTOP else _list(result)
    numbers = list(dict.fromkeys(str(i.get("flight_number")) for i in items if isinstance(i, Mapping)))
    return ", ".join(numbers) if numbers else "no flights"


def _ask_search(asks: Sequence[tuple[Segment, LegSearch | None, bool, bool]],
                today: str) -> Outcome:
    """The reads that show the flights never seen: their status first where a search may never show them (dated
    today, their leg unknown, or missing from a search of a leg the facts do not force), else their search."""
    paths: list[str] = []
    parts: list[str] = []
    for segment, search, status_first, missed in asks:
        if status_first:
            paths.append(segment.status_path)
            why = ("a flight dated today may already have flown" if segment.date == today else
                   "its route is not known from this conversation" if search is None else
                   f"{search.text} did not list it")
            parts.append(f"{segment.label()} was not seen in any flight search and {why}: check its status with "
                         f"{call_text('get_flight_status', flight_number=segment.flight_number, date=segment.date)}")
        else:
            paths.append(segment.offer_path)
            how = (f"search it with {search.text}" if search is not None and not missed else
                   "search the route it flies on that date with search_direct_flight or search_onestop_flight"
                   + (f" ({search.text} did not list it)" if search is not None else ""))
            parts.append(f"{segment.label()} was not seen in any flight search: {how} and use a flight from the "
                         "result")
    return MissingEvidence(paths=tuple(paths), reason="; ".join(parts))


# ---------------------------------------------------------------------------------------------------
# Payment.


@predicate(
    id="airline.payment_in_profile",
    tools=[BOOK, *PAID_UPDATES],
    severity=Verdict.REVISE,
    policy="Every payment method used must already be in the customer's profile.",
)
@for_customer
def payment_in_profile(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    methods = _methods(_profile(view, customer))
    unknown = [pid for pid, _ in _payments(call) if pid not in methods]
    if unknown:
        what = f"payment method {unknown[0]!r} is" if len(unknown) == 1 else f"payment methods {unknown} are"
        return Violation(f"{what} not in the customer's profile (user.payment_methods has {sorted(methods)})")
    return Pass()


@predicate(
    id="airline.payment_method_allowed",
    tools=[BOOK, *PAID_UPDATES],
    severity=Verdict.REVISE,
    policy="A booking is paid with at most one certificate, one credit card and three gift cards; a change of "
           "flights or bags is paid with one credit card or gift card, never a certificate.",
)
@for_customer
def payment_method_allowed(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    methods = _methods(_profile(view, customer))
    ids = [pid for pid, _ in _payments(call)]
    sources = {pid: m.get("source") for pid in ids if isinstance(m := methods.get(pid), Mapping)}
    if call.name != BOOK:
        pid = ids[0]
        if sources.get(pid) == "certificate":
            return Violation(f"{pid} is a certificate (user.payment_methods.{pid}.source); certificates cannot pay "
                             "for a change: use a credit card or gift card from the profile")
        return Pass()
    twice = sorted(pid for pid, count in Counter(ids).items() if count > 1)
    if twice:
        what = f"payment method {twice[0]!r} is" if len(twice) == 1 else f"payment methods {twice} are"
        return Violation(f"{what} listed more than once; give each method once with its total amount")
    counts = Counter(sources.values())
    over = [f"{counts[source]} {source.replace('_', ' ')}s (at most {limit})"
            for source, limit in PAYMENT_LIMITS.items() if counts[source] > limit]
    if over:
        return Violation(f"the booking uses {', '.join(over)} (sources in user.payment_methods)")
    return Pass()


@predicate(
    id="airline.payment_balance_covers",
    tools=[BOOK, *PAID_UPDATES],
    severity=Verdict.REVISE,
    policy="Each amount is a positive whole number of dollars, and a gift card or certificate covers what is "
           "charged to it.",
)
@for_customer
def payment_balance_covers(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    methods = _methods(_profile(view, customer))
    charged: Counter[str] = Counter()
    if call.name == BOOK:
        for pid, given in _payments(call):
            amount = whole(given)  # 110.0 is a whole number of dollars; 110.5 is not
            if amount is None or amount < 1:
                return Violation(f"the amount {given!r} for {pid} is not a positive whole number of dollars")
            charged[pid] += amount
    else:
        charge = _update_charge(view, call)
        if charge is None:
            return Pass("the charge depends on a flight never observed (see airline.flight_observed_available)")
        charged[str(call.arguments.get("payment_id"))] += charge
    short: list[str] = []
    for pid, amount in charged.items():
        method = methods.get(pid)
        if isinstance(method, Mapping) and method.get("source") in ("gift_card", "certificate"):
            balance = method.get("amount", 0)
            if isinstance(balance, int | float) and amount > balance:
                short.append(f"{pid} has {balance} (user.payment_methods.{pid}.amount) but {amount} is charged to it")
    if short:
        return Violation("; ".join(short) + "; use another method for the rest")
    return Pass()


def _update_charge(view: LedgerView, call: ToolCall) -> int | None:
    """What a paid update charges: the fare difference of a flight change, 50 per added non-free bag."""
    _, record = _reservation(view, call)
    if call.name == UPDATE_BAGS:
        new = whole(call.arguments.get("nonfree_baggages"))
        old = whole(record.get("nonfree_baggages"))
        if new is None or old is None:
            return 0
        return BAG_PRICE * max(0, new - old)
    new_total = _fare_total(view, call, record)
    if new_total is None:
        return None
    paid = sum(int(f.get("price", 0)) for f in _list(record.get("flights")) if isinstance(f, Mapping))
    return new_total - paid * _passenger_count(call, record)


@predicate(
    id="airline.payment_total_matches",
    tools=[BOOK],
    severity=Verdict.REVISE,
    policy="A booking's payments add up to the fares of every flight times the passengers, plus 30 per "
           "passenger for insurance and 50 per non-free bag.",
)
def payment_total_matches(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    fares = _fare_total(view, call, None)
    if fares is None:
        return Pass("a fare is unknown (see airline.flight_observed_available)")
    args = call.arguments
    n = _passenger_count(call, None)
    insurance = INSURANCE_PER_PASSENGER * n if args.get("insurance") == "yes" else 0
    nonfree = whole(args.get("nonfree_baggages"))
    bags = BAG_PRICE * nonfree if nonfree is not None else 0
    expected = fares + insurance + bags
    amounts = [amount for _, amount in _payments(call)]
    paid = sum(a for a in amounts if isinstance(a, int | float) and not isinstance(a, bool))
    if paid != expected:
        cabin = args.get("cabin")
        prices = ", ".join(f"{s.offer_path}.prices.{cabin}" for s in _requested(call))
        return Violation(f"the payments add up to {paid}, but the booking costs {expected} = fares {fares} ({prices}, "
                         f"x {_count(n, 'passenger')}) + insurance {insurance} + "
                         f"{_count(nonfree if nonfree is not None else 0, 'non-free bag')} x {BAG_PRICE}")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Bags and passengers.


@predicate(
    id="airline.baggage_add_only",
    tools=[UPDATE_BAGS],
    severity=Verdict.REVISE,
    policy="Checked bags can be added to a reservation but never removed.",
)
@once_identified
def baggage_add_only(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    problems: list[str] = []
    for field in ("total_baggages", "nonfree_baggages"):
        new, old = whole(call.arguments.get(field)), whole(record.get(field))
        if new is not None and old is not None and new < old:
            problems.append(f"{field} {new} is below the {old} already booked (reservations.{reservation_id}.{field})")
    if problems:
        return Violation("; ".join(problems) + "; the arguments are the NEW totals, bags already booked included, "
                         "and bags cannot be removed")
    return Pass()


@predicate(
    id="airline.baggage_allowance",
    tools=[BOOK, UPDATE_BAGS],
    severity=Verdict.REVISE,
    policy="Each passenger has free checked bags by membership and cabin (regular 0/1/2, silver 1/2/3, gold "
           "2/3/4 for basic economy/economy/business); only the bags beyond that are non-free, at 50 each.",
)
@for_customer
def baggage_allowance(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    membership = str(_profile(view, customer).get("membership"))
    given_total, given_nonfree = call.arguments.get("total_baggages"), call.arguments.get("nonfree_baggages")
    total, nonfree = whole(given_total), whole(given_nonfree)  # 3.0 bags are 3 bags
    if total is None or nonfree is None or total < 0 or not 0 <= nonfree <= total:
        return Violation(f"total_baggages {given_total!r} and nonfree_baggages {given_nonfree!r} must be whole "
                         "numbers with 0 <= nonfree_baggages <= total_baggages")
    if call.name == BOOK:
        cabin, n, already, where = call.arguments.get("cabin"), _passenger_count(call, None), 0, "the booking"
    else:
        reservation_id, record = _reservation(view, call)
        cabin, n = record.get("cabin"), _passenger_count(call, record)
        already = whole(record.get("nonfree_baggages")) or 0
        where = f"reservations.{reservation_id}"
    per_passenger = FREE_BAGS.get(membership, {}).get(str(cabin), 0)
    free = per_passenger * n
    expected = max(already, total - free, 0)
    if nonfree != expected:
        return Violation(f"a {membership} member (user.membership) in {cabin} ({where}) has "
                         f"{_count(per_passenger, 'free bag')} per passenger, {free} for {_count(n, 'passenger')}: "
                         f"{_count(total, 'bag')} means {expected} non-free, not {nonfree}")
    return Pass()


@predicate(
    id="airline.passengers_valid",
    tools=[BOOK, UPDATE_PASSENGERS],
    severity=Verdict.REVISE,
    policy="A reservation has one to five passengers, each with a first name, a last name and a real date of "
           "birth (YYYY-MM-DD).",
)
def passengers_valid(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    passengers = _list(call.arguments.get("passengers"))
    if not 1 <= len(passengers) <= MAX_PASSENGERS:
        return Violation(f"{len(passengers)} passengers given; a reservation has 1 to {MAX_PASSENGERS}")
    today = _today(ctx)
    problems: list[str] = []
    for index, person in enumerate(passengers):
        if not isinstance(person, Mapping):
            problems.append(f"passenger {index + 1} is not an object with first_name, last_name and dob")
            continue
        for name in ("first_name", "last_name"):
            if not isinstance(person.get(name), str) or not str(person.get(name)).strip():
                problems.append(f"passenger {index + 1} has no {name}")
        dob = person.get("dob")
        if not _is_date(dob):
            problems.append(f"passenger {index + 1}'s dob {dob!r} is not a date (YYYY-MM-DD)")
        elif str(dob) > today:
            problems.append(f"passenger {index + 1}'s dob {dob} is after today ({today})")
    if problems:
        return Violation("; ".join(problems))
    return Pass()


@predicate(
    id="airline.passenger_count_unchanged",
    tools=[UPDATE_PASSENGERS],
    severity=Verdict.BLOCK,
    policy="The number of passengers on a reservation cannot change; not even a human agent can do it.",
)
@once_identified
def passenger_count_unchanged(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    reservation_id, record = _reservation(view, call)
    old, new = _passenger_count(call, record), len(_list(call.arguments.get("passengers")))
    if old != new:
        return Violation(f"reservation {reservation_id} has {_count(old, 'passenger')} (reservations.{reservation_id}."
                         f"passengers); the new list has {new}")
    return Pass()


# ---------------------------------------------------------------------------------------------------
# Compensation.
#
# Reads sized to the decision: a certificate needs ONE compensable disruption among the flights of the
# customer's reservations, not the status of every one of them. The rules below ask for the unknown statuses
# one at a time (MissingEvidence.one_at_a_time, nearest to today first: where delays and cancellations are),
# only on reservations where a disruption would be compensable at all, so the gate reads until the rule has its
# answer, at most STATUS_READ_BUDGET statuses for one certificate; past that the model is asked, and the
# refusal says how many the gate read.

STATUS_READ_BUDGET = 12


def _compensable(membership: str, record: Mapping[str, Any]) -> bool:
    """A disruption on this reservation is compensable: a silver or gold member, or an insured or business one."""
    return membership in ("silver", "gold") or record.get("insurance") == "yes" or record.get("cabin") == "business"


@dataclass(frozen=True)
class Disruption:
    """A cancelled or delayed flight on one of the customer's reservations, as some observation showed it.

    `record` is the observation of the reservation that listed the flight: after our own change of
    flights the current record no longer does, but what we observed before stays a fact."""

    reservation_id: str
    record: Mapping[str, Any]
    segment: Segment
    kind: str  # "cancelled" | "delayed"
    resolved_by: str  # why a delay is now compensable ("" when it is not yet)

    def eligible(self, membership: str) -> bool:
        return _compensable(membership, self.record)

    @property
    def resolved(self) -> bool:
        """A cancelled flight is compensable at once; a delay only after the reservation was changed or
        cancelled (by this session's executed write, or a cancellation the record shows)."""
        return self.kind == "cancelled" or bool(self.resolved_by)

    @property
    def passengers(self) -> int:
        return len(_list(self.record.get("passengers")))

    @property
    def amount(self) -> int:
        return COMPENSATION_PER_PASSENGER[self.kind] * self.passengers

    def describe(self) -> str:
        return f"{self.segment.label()} {self.kind} ({self.segment.status_path}) on reservation {self.reservation_id}"


def _changed_by_us(view: LedgerView, reservation_id: str) -> str:
    """The executed change or cancellation of `reservation_id` in this session, as 'tool at step N', or ''."""
    for tool in (UPDATE_FLIGHTS, CANCEL):
        for effect in view.effects(tool):
            if str(effect.arguments.get("reservation_id")) == reservation_id:
                return f"{tool} at step {effect.provenance.step} (effects.{tool})"
    return ""


def _customer_reservations(view: LedgerView, customer: str) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """(reservation id, every observation of it) for each observed reservation the customer owns, in reading
    order of their paths."""
    owned: list[tuple[str, list[Mapping[str, Any]]]] = []
    for path in view.observed_paths("reservations.*"):
        observations = [r for r in view.observations(path) if isinstance(r, Mapping)]
        if observations and observations[-1].get("user_id") == customer:
            owned.append((path.split(".", 1)[1], observations))
    return owned


def _disruptions(view: LedgerView, customer: str) -> tuple[list[Disruption], list[tuple[str, Segment]]]:
    """Disruptions on the customer's reservations over every observation of them (a flight our own change
    removed still counts), and the flights whose status is unknown on reservations where a disruption would be
    compensable, with the reservation listing them (the others cannot change the answer: their statuses are
    never asked for)."""
    membership = str(_profile(view, customer).get("membership"))
    found: dict[tuple[str, tuple[str, str]], Disruption] = {}
    unknown: dict[tuple[str, str], tuple[str, Segment]] = {}
    for reservation_id, observations in _customer_reservations(view, customer):
        cancelled = observations[-1].get("status") == "cancelled"
        by_us = _changed_by_us(view, reservation_id)
        resolved_by = by_us or (f"reservations.{reservation_id}.status is cancelled" if cancelled else "")
        for record in observations:
            for segment in _booked(record):
                status = _status(view, segment)
                if status in COMPENSATION_PER_PASSENGER:
                    found.setdefault((reservation_id, segment.key),
                                     Disruption(reservation_id, record, segment, str(status), resolved_by))
                elif status is None and _compensable(membership, record) and segment.key not in unknown:
                    unknown[segment.key] = (reservation_id, segment)
    return list(found.values()), list(unknown.values())


def _nearest_first(segments: Sequence[Segment], ctx: GateContext) -> list[Segment]:
    """Flights dated today or earlier, latest first, then later ones, earliest first: where a delay or a
    cancellation is likeliest to be found first (a flight that has not left yet has seldom been disrupted)."""
    today = _today(ctx)

    def key(segment: Segment) -> tuple[int, int]:
        if not _is_date(segment.date):
            return (2, 0)
        day = date.fromisoformat(segment.date).toordinal()
        return (0, -day) if segment.date <= today else (1, day)

    return sorted(segments, key=key)


def _search_statuses(unknown: Sequence[tuple[str, Segment]], ctx: GateContext, why: str) -> MissingEvidence:
    """Ask for the unknown statuses one at a time (the first that answers settles it), nearest to today first."""
    ordered = _nearest_first([segment for _, segment in unknown], ctx)
    reads = ", ".join(call_text("get_flight_status", flight_number=s.flight_number, date=s.date) for s in ordered)
    return MissingEvidence(
        paths=tuple(s.status_path for s in ordered),
        reason=f"{why}: read {reads}, one at a time until one shows a cancelled or delayed flight (the gate "
               f"reads at most {STATUS_READ_BUDGET} of them itself for one certificate)",
        one_at_a_time=STATUS_READ_BUDGET)


@predicate(
    id="airline.compensation_eligible",
    tools=[CERTIFICATE],
    severity=Verdict.BLOCK,
    policy="A certificate is a goodwill gesture only for a cancelled or delayed flight, confirmed by its "
           "status, on a reservation of a silver or gold member, an insured reservation or a business one.",
)
@for_customer
def compensation_eligible(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    """Needs one compensable disruption, so the statuses it lacks are read one at a time until one is found
    (at most STATUS_READ_BUDGET = 12 for one certificate); it refuses only on what was observed."""
    membership = str(_profile(view, customer).get("membership"))
    found, unknown = _disruptions(view, customer)
    if any(d.eligible(membership) for d in found):
        return Pass()
    if unknown:
        seen = "; ".join(d.describe() for d in found)
        return _search_statuses(unknown, ctx, "no compensable cancelled or delayed flight has been confirmed on the "
                                              f"customer's reservations{f' ({seen}: not compensable)' if seen else ''}")
    if found:
        shown = "; ".join(d.describe() for d in found)
        return Violation(f"{shown}, but the customer is a {membership} member (user.membership) and the reservation "
                         "is neither insured nor business (its insurance and cabin), so no certificate is due")
    owned = _customer_reservations(view, customer)
    if not view.observed_paths("reservations.*"):
        return MissingEvidence(paths=("reservations.*",),
                               reason="read the reservation the customer complains about, then check its flights' "
                                      "status with get_flight_status")
    seen_segments = _observed_segments(view, customer)
    known = [s for s in seen_segments if _status(view, s) is not None]
    shown = ", ".join(f"{s.label()}: {_status(view, s)} ({_status_source(view, s)})" for s in known)
    if len(known) == len(seen_segments):
        return Violation(f"none of the customer's observed reservations has a cancelled or delayed flight ({shown}), "
                         "so there is nothing to compensate")
    # the flights left unknown are on reservations a disruption would not make compensable: no read changes it
    closed = ", ".join(rid for rid, observations in owned if not any(_compensable(membership, r) for r in observations))
    confirmed = f"no cancelled or delayed flight is confirmed ({shown}), and " if known else ""
    return Violation(f"{confirmed}the customer is a {membership} member (user.membership) whose reservations "
                     f"{closed} are neither insured nor business (their insurance and cabin), so no certificate is "
                     "due for them whatever happened to their flights")


def _observed_segments(view: LedgerView, customer: str) -> list[Segment]:
    """Every flight of the customer's observed reservations (any observation), once each, in reading order."""
    seen: dict[tuple[str, str], Segment] = {}
    for _reservation_id, observations in _customer_reservations(view, customer):
        for record in observations:
            for segment in _booked(record):
                seen.setdefault(segment.key, segment)
    return list(seen.values())


@predicate(
    id="airline.compensation_delay_after_change",
    tools=[CERTIFICATE],
    severity=Verdict.REVISE,
    policy="For a delayed flight, the certificate comes only after the reservation was changed or cancelled "
           "as the customer asked.",
)
@for_customer
def compensation_delay_after_change(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    membership = str(_profile(view, customer).get("membership"))
    found, unknown = _disruptions(view, customer)
    eligible = [d for d in found if d.eligible(membership)]
    if not eligible or any(d.resolved for d in eligible):
        return Pass()
    shown = "; ".join(d.describe() for d in eligible)
    if unknown:  # a cancelled flight elsewhere would be compensable now: only its status can say
        return _search_statuses(unknown, ctx, f"{shown}: a delay is compensated only once its reservation has been "
                                              "changed or cancelled, and a cancelled flight on another reservation "
                                              "would be compensable at once")
    return Violation(f"{shown}: a delay is compensated only once the reservation has been changed or cancelled at "
                     f"the customer's request, and no {UPDATE_FLIGHTS} or {CANCEL} of it has run in this "
                     f"conversation (effects.{UPDATE_FLIGHTS}, effects.{CANCEL}); do that first (or do not offer "
                     "a certificate)")


def _due(view: LedgerView, customer: str) -> list[Disruption]:
    """One compensable disruption per reservation (a cancellation outranks a delay on the same one)."""
    membership = str(_profile(view, customer).get("membership"))
    best: dict[str, Disruption] = {}
    for d in _disruptions(view, customer)[0]:
        if d.eligible(membership) and d.resolved:
            held = best.get(d.reservation_id)
            if held is None or d.amount > held.amount:
                best[d.reservation_id] = d
    return list(best.values())


@predicate(
    id="airline.compensation_amount",
    tools=[CERTIFICATE],
    severity=Verdict.REVISE,
    policy="The certificate is 100 dollars per passenger for a cancelled flight and 50 per passenger for a "
           "delayed one.",
)
@for_customer
def compensation_amount(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    found, unknown = _disruptions(view, customer)
    due = [d for d in found if d.eligible(str(_profile(view, customer).get("membership"))) and d.resolved]
    if not due:
        return Pass("nothing is due (see airline.compensation_eligible)")
    amount = call.arguments.get("amount")
    if any(amount == d.amount for d in due):
        return Pass()
    shown = "; ".join(f"{d.amount} for {d.describe()} ({COMPENSATION_PER_PASSENGER[d.kind]} x "
                      f"{_count(d.passengers, 'passenger')})" for d in due)
    if unknown:  # the disruption this amount is for may be among the flights not checked yet
        return _search_statuses(unknown, ctx, f"amount {amount!r} matches none of the disruptions confirmed so far "
                                              f"({shown})")
    return Violation(f"amount {amount!r} is not what the policy sets: {shown}")


@predicate(
    id="airline.compensation_once",
    tools=[CERTIFICATE],
    severity=Verdict.BLOCK,
    policy="A disrupted reservation is compensated once: one certificate for it, never a second.",
)
@for_customer
def compensation_once(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    given = [e for e in view.effects(CERTIFICATE) if e.arguments.get("user_id") == customer]
    if not given:
        return Pass()
    due = _due(view, customer)
    if len(given) < len(due):
        return Pass(f"{_count(len(given), 'certificate')} given for {_count(len(due), 'disrupted reservation')}")
    shown = ", ".join(f"{e.arguments.get('amount')} at step {e.provenance.step}" for e in given)
    reservations = ", ".join(d.reservation_id for d in due) or "none"
    facts = (f"this conversation already gave {customer} {_count(len(given), 'certificate')} ({shown}; "
             f"effects.{CERTIFICATE}) for {_count(len(due), 'compensable reservation')} ({reservations})")
    compensated = {d.reservation_id for d in due}
    unknown = [(rid, segment) for rid, segment in _disruptions(view, customer)[1] if rid not in compensated]
    if unknown:  # another disrupted reservation would be due its own certificate: only its statuses can say
        return _search_statuses(unknown, ctx, facts)
    return Violation(f"{facts}; each disruption is compensated once")


# ---------------------------------------------------------------------------------------------------
# What the customer said.


@predicate(
    id="airline.explicit_confirmation",
    tools=ALL_WRITES,
    severity=Verdict.REVISE,
    policy="Before booking, changing or cancelling, or giving a certificate, tell the customer exactly what you are "
           "about to do and wait for an explicit \"yes\" before calling the tool.",
)
def explicit_confirmation(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    """Upstream: "Before taking any actions that update the booking database (...), you must list the action
    details and obtain explicit user confirmation (yes) to proceed." A cancellation also quotes the reason the
    customer gave ("The agent must also obtain the reason for cancellation"; insurance covers "health or
    weather reasons"), for the operator: whether it is covered is never judged from its wording."""
    return explicitly_confirmed(call, view, quote_reason=call.name == CANCEL)


PREDICATES: tuple[Predicate, ...] = (
    customer_identified,
    user_is_customer,
    reservation_owned_by_customer,
    reservation_active,
    cancel_basis,
    nothing_flown,
    basic_economy_flights_fixed,
    update_keeps_trip,
    itinerary_connected,
    flight_observed_available,
    payment_in_profile,
    payment_method_allowed,
    payment_balance_covers,
    payment_total_matches,
    baggage_add_only,
    baggage_allowance,
    passengers_valid,
    passenger_count_unchanged,
    compensation_eligible,
    compensation_delay_after_change,
    compensation_amount,
    compensation_once,
    explicit_confirmation,
)
