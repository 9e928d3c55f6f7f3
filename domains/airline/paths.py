"""Where airline read results land in the ledger, what each write can change, which reads the gate may make
itself, and who the customer is.

Ledger layout (one record per path, exactly as the tool returned it):

    user                                      the customer's profile (see the identity rule below)
    users.<user_id>                           every profile read, the customer's included
    reservations.<reservation_id>             reservation records
    flight_search.<origin>.<destination>.<date>   a direct search's whole result list, keyed by its query
    onestop_search.<origin>.<destination>.<date>  a one-stop search's list of [leg 1, leg 2] pairs
    flights.<flight_number>.<date>            each flight of a direct search: seats and prices on that date
    flights.<flight_number>.<date>.status     the bare status string of get_flight_status
    airports                                  the airport list

A flight seen in a one-stop search stays inside its pair (the path map stores whole returns, and a pair
cannot be split into two records); predicates look for a flight in `flights.*` first, then in the pairs.

Identity rule. tau2's airline has no lookup tool: the customer says who they are and the agent reads that
profile. So the customer is the user of the FIRST profile read in the conversation, stored at `user`; the
policy serves one customer per conversation, so reading somebody else's profile later (a companion, a
mistyped id) adds `users.<id>` and never changes who the customer is. Every reservation and payment rule
compares against that user.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from core.evidence import EvidenceReads, GateRead, customer_as, record_of
from core.gate import GateContext
from core.ledger import LedgerReader, PathMap, PathRule, ResultShape, WriteEffect
from core.tools import ToolCall
from domains.airline.conversation import CONVERSATION
from domains.airline.legs import Seen, search_for
from domains.airline.legs import segments as _segments

PROFILE_PATH = "user"


def identify(ledger: LedgerReader) -> str | None:
    """The customer's user id: the one of the first profile read, or None before any profile was read."""
    profile = ledger.get(PROFILE_PATH)
    if isinstance(profile, dict):
        user_id = profile.get("user_id")
        return user_id if isinstance(user_id, str) and user_id else None
    return None


def _is_customer_profile(_call: ToolCall, result: Any, ledger: LedgerReader) -> bool:
    """The first profile read becomes `user`; reading the same user again refreshes it, anyone else never."""
    if not isinstance(result, dict):
        return False
    customer = identify(ledger)
    return customer is None or result.get("user_id") == customer


# ---------------------------------------------------------------------------------------------------
# What each write can change (core.ledger.WriteEffect), from tau2's airline tools (mock_backends/airline):
#
#   book_reservation        the booker's profile (the new reservation's id; each gift card's amount, each
#                           certificate, spent whole) and each booked flight date's seats: the offer seen for it,
#                           and every search on that date (a one-stop search also lists second legs of the next
#                           day, so the day before too); a credit card leaves the payment methods as they were
#   cancel_reservation      the reservation (status, refund records); no seat is released, no card credited
#   update_reservation_     the reservation (bags or flights and cabin, the payment record); the owner's gift card
#     baggages / _flights   when it pays (its amount); no seat moves
#   update_reservation_     the reservation's passengers
#     passengers
#   send_certificate        that profile's payment methods (a new certificate)
#
# Flight statuses, routes and the airport list never change. A payment method's kind comes from the owner's
# profile as observed (its source never changes); when the ledger cannot tell, it is taken as spent.

def _methods_of(ledger: LedgerReader, user_id: str | None) -> Mapping[str, Any]:
    profile = ledger.get(f"users.{user_id}") if user_id else None
    methods = profile.get("payment_methods") if isinstance(profile, Mapping) else None
    return methods if isinstance(methods, Mapping) else {}


def _spent(ledger: LedgerReader, user_id: str | None, payment_id: str) -> str | None:
    """The profile field a payment with `payment_id` changes: a gift card's amount, a certificate (spent
    whole), nothing for a credit card (None); unknown kinds as a certificate (the method itself)."""
    if not payment_id:
        return "payment_methods"
    method = _methods_of(ledger, user_id).get(payment_id)
    source = method.get("source") if isinstance(method, Mapping) else None
    if source == "credit_card":
        return None
    if source == "gift_card":
        return f"payment_methods.{payment_id}.amount"
    return f"payment_methods.{payment_id}"


def _profiles_of(ledger: LedgerReader, user_id: str | None) -> tuple[str, ...]:
    if user_id is None:
        return ("users.*", PROFILE_PATH)
    return (f"users.{user_id}", PROFILE_PATH) if user_id == identify(ledger) else (f"users.{user_id}",)


def _booker_profiles(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    return _profiles_of(ledger, str(call.arguments.get("user_id", "")))


def _booking_fields(call: ToolCall, ledger: LedgerReader) -> list[str]:
    user_id = str(call.arguments.get("user_id", ""))
    payments = call.arguments.get("payment_methods")
    ids = [str(p.get("payment_id")) for p in payments if isinstance(p, Mapping)] if isinstance(payments, list) \
        else []
    spent = [field for field in (_spent(ledger, user_id, pid) for pid in dict.fromkeys(ids)) if field is not None]
    return ["reservations", *spent]


def _day_before(day: str) -> str | None:
    try:
        return (date.fromisoformat(day) - timedelta(days=1)).isoformat()
    except ValueError:
        return None


def _booked_searches(call: ToolCall, _ledger: LedgerReader) -> list[str]:
    """Every search a booked flight date shows up in: direct ones on its date, one-stop ones on its date and
    the day before (a one-stop search lists second legs of the next day)."""
    paths: list[str] = []
    for _number, day in _segments(call):
        before = _day_before(day)
        paths += [f"flight_search.*.*.{day}", f"onestop_search.*.*.{day}"]
        if before is not None:
            paths.append(f"onestop_search.*.*.{before}")
    return list(dict.fromkeys(paths))


def _booked_offers(call: ToolCall, _ledger: LedgerReader) -> list[str]:
    return [f"flights.{number}.{day}" for number, day in _segments(call)]


def _cabin_seats(call: ToolCall, _ledger: LedgerReader) -> list[str]:
    return [f"available_seats.{call.arguments.get('cabin')}"]


def _reservation_owner(call: ToolCall, ledger: LedgerReader) -> str | None:
    record = ledger.get(f"reservations.{call.arguments.get('reservation_id')}")
    owner = record.get("user_id") if isinstance(record, Mapping) else None
    return owner if isinstance(owner, str) and owner else None


def _owner_profiles(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    return _profiles_of(ledger, _reservation_owner(call, ledger))


def _update_payment(call: ToolCall, ledger: LedgerReader) -> list[str] | None:
    """A paid update charges (or refunds) its one payment method: a gift card's amount; a credit card pays
    outside the profile; with the owner unknown, the whole payment methods field."""
    owner = _reservation_owner(call, ledger)
    if owner is None:
        return ["payment_methods"]
    field = _spent(ledger, owner, str(call.arguments.get("payment_id", "")))
    return [] if field is None else [field]


def _certified_profiles(call: ToolCall, ledger: LedgerReader) -> tuple[str, ...]:
    return _profiles_of(ledger, str(call.arguments.get("user_id", "")))


RESERVATION = "reservations.{reservation_id}"
WRITE_EFFECTS = (
    WriteEffect("book_reservation", _booker_profiles, _booking_fields, note="its id; gift cards, certificates"),
    WriteEffect("book_reservation", _booked_offers, _cabin_seats, note="the seats of the booked cabin"),
    WriteEffect("book_reservation", _booked_searches, note="search results list seats"),
    WriteEffect("cancel_reservation", (RESERVATION,), ("status", "payment_history")),
    WriteEffect("update_reservation_baggages", (RESERVATION,),
                ("total_baggages", "nonfree_baggages", "payment_history")),
    WriteEffect("update_reservation_baggages", _owner_profiles, _update_payment),
    WriteEffect("update_reservation_flights", (RESERVATION,), ("flights", "cabin", "payment_history")),
    WriteEffect("update_reservation_flights", _owner_profiles, _update_payment),
    WriteEffect("update_reservation_passengers", (RESERVATION,), ("passengers",)),
    WriteEffect("send_certificate", _certified_profiles, ("payment_methods",)),
)


# ---------------------------------------------------------------------------------------------------
# The reads the gate may make itself (core.evidence). The first profile read identifies the customer, so the
# gate reads a profile only once someone is identified (core.evidence refuses any read before), and then only
# the customer's own; a reservation that is not the customer's is the gate's evidence only.


def _search_for(tool: str) -> Any:
    """The arguments of `tool` (a direct or one-stop search) that show flight `{flight_number}` on `{date}`: its
    route when any observation of the number gives it, else its leg of the itinerary (domains.airline.legs)."""

    def arguments(names: Mapping[str, str], call: ToolCall, ledger: LedgerReader,
                  _ctx: GateContext) -> Mapping[str, Any] | None:
        seen = Seen(lambda path: [entry.value for entry in ledger.observations(path)], ledger.observed_paths)
        found = search_for(names["flight_number"], names["date"], call, seen)
        return None if found is None or found.tool != tool else found.arguments

    return arguments


EVIDENCE_READS = EvidenceReads(
    reads=(
        GateRead(PROFILE_PATH, "get_user_details", customer_as("user_id"), record_of("user_id")),
        GateRead("users.{user_id}", "get_user_details", owner=record_of("user_id")),
        GateRead("reservations.{reservation_id}", "get_reservation_details", owner=record_of("user_id")),
        GateRead("flights.{flight_number}.{date}.status", "get_flight_status"),
        GateRead("flights.{flight_number}.{date}", "search_direct_flight", _search_for("search_direct_flight"),
                 note="the flight's route from any observation of it, or its leg of the itinerary"),
        GateRead("flights.{flight_number}.{date}", "search_onestop_flight", _search_for("search_onestop_flight"),
                 note="a two-flight leg of the itinerary: the one-stop search of the leg"),
        GateRead("flight_search.{origin}.{destination}.{date}", "search_direct_flight"),
        GateRead("onestop_search.{origin}.{destination}.{date}", "search_onestop_flight"),
        GateRead("airports", "list_all_airports"),
    ),
)

# Other releases of the airline tools (core.ledger.ResultShape), read into tau2's shapes. tau-bench's own
# `get_user_details` (tau_bench/envs/airline/tools/get_user_details.py, and tau-Trait's copy of it) returns
# `users[user_id]`, the profile without its `user_id`; the first release of its data wrote the address's state
# as `province`. Its reservations, searches and write returns hold the same fields as tau2's.
SHAPES = (
    ResultShape("get_user_details", key_from=(("user_id", "user_id"),),
                aliases=(("address.province", "address.state"),),
                note="tau-bench's profile: no user_id (it is the record the call named), province for state"),
)

PATH_MAP = PathMap(
    conversation=CONVERSATION,  # what the customer's messages give (domains/airline/conversation.py)
    # the writes a rule counts (core.ledger.PathMap.effect_tools)
    effect_tools=frozenset({"cancel_reservation", "update_reservation_flights", "send_certificate"}),
    rules=(
        PathRule("get_user_details", "users.{result.user_id}"),
        PathRule("get_user_details", PROFILE_PATH, when=_is_customer_profile,
                 note="the first profile read is the customer's; re-reading it refreshes it"),
        PathRule("get_reservation_details", "reservations.{result.reservation_id}"),
        PathRule("search_direct_flight", "flight_search.{origin}.{destination}.{date}"),
        PathRule("search_direct_flight", "flights.{item.flight_number}.{date}", each="result",
                 note="each bookable flight of the search, with its seats and prices on that date"),
        PathRule("search_onestop_flight", "onestop_search.{origin}.{destination}.{date}"),
        PathRule("get_flight_status", "flights.{flight_number}.{date}.status"),
        PathRule("list_all_airports", "airports"),
    ),
    write_effects=WRITE_EFFECTS,
    shapes=SHAPES,
)
