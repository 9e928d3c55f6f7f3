"""Where airline read results land in the ledger, what each write makes stale, and who the customer is.

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

from typing import Any

from core.ledger import LedgerReader, PathMap, PathRule, StaleRule
from core.tools import ToolCall

PROFILE_PATH = "user"
MAX_SEGMENTS = 8  # longest itinerary whose flights a write stales one by one (tau2's longest has 4)


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


def _segment_paths(template: str) -> tuple[str, ...]:
    """One stale pattern per possible segment of a write's `flights` argument (missing indexes are skipped)."""
    return tuple(template.format(i=i) for i in range(MAX_SEGMENTS))


# A booking decrements seats on each booked flight date: the offers seen for those flights, and every search
# on those dates, no longer show the current seat counts. It also spends gift cards or certificates and adds
# the reservation to the profile.
_BOOKING_STALES = (
    PROFILE_PATH,
    "users.{user_id}",
    *_segment_paths("flights.{{flights.{i}.flight_number}}.{{flights.{i}.date}}"),
    *_segment_paths("flight_search.*.*.{{flights.{i}.date}}"),
    *_segment_paths("onestop_search.*.*.{{flights.{i}.date}}"),
)
# Changing flights or bags may charge or refund a gift card, so the profile is stale too. `users.*` is
# deliberately broad: the arguments do not name the reservation's owner.
_PAID_UPDATE_STALES = ("reservations.{reservation_id}", PROFILE_PATH, "users.*")

PATH_MAP = PathMap(
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
    stale_rules=(
        StaleRule("book_reservation", _BOOKING_STALES),
        StaleRule("cancel_reservation", ("reservations.{reservation_id}",)),
        StaleRule("update_reservation_flights", _PAID_UPDATE_STALES),
        StaleRule("update_reservation_baggages", _PAID_UPDATE_STALES),
        StaleRule("update_reservation_passengers", ("reservations.{reservation_id}",)),
        StaleRule("send_certificate", ("users.{user_id}", PROFILE_PATH)),
    ),
)
