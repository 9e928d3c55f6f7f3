"""The 14 airline tools, with tau2-bench's exact names and arguments so tau2 data and trajectories load as-is.

Descriptions are our own and written for the model. They say what an id looks like, that
`update_reservation_flights` takes the WHOLE new itinerary, and that `total_baggages` is the new total,
because those are the argument mistakes that silently do the wrong thing in tau2-bench. Types that the
tools themselves enforce (cabin, trip type, insurance) are schema enums, as tau2's own schemas have them;
policy limits stricter than the tools (bag allowance, payment-type counts, who may cancel) are NOT schema
rules: the gate rejects them with a policy citation, which tells the model why, not just that it was wrong.
"""

from __future__ import annotations

from typing import Any

from core.tools import ToolKind, ToolSpec, closed_object
from core.tools import string_arg as _string


def _integer(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


def _enum(description: str, *values: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return closed_object(properties)


def _parameters(**properties: dict[str, Any]) -> dict[str, Any]:
    """Every argument is required and nothing else is accepted, as tau2-bench's Python signatures imply."""
    return _object(**properties)


_USER_ID = _string("The customer's user id, as the customer gave it, e.g. 'sara_doe_496'.")
_RESERVATION_ID = _string("The 6-character reservation id, e.g. 'ZFA04Y'.")
_AIRPORT = "IATA code of the {} airport, three capital letters, e.g. '{}'."
_DATE = _string("The flight date as YYYY-MM-DD, e.g. '2024-05-20'.")
_CABIN = _enum("The cabin for every flight of the reservation.", "basic_economy", "economy", "business")
_SEGMENTS = {
    "type": "array",
    "description": "The flights, in travel order: each a flight number and its date, as shown by a flight search.",
    "items": _object(flight_number=_string("Flight number, e.g. 'HAT001'."), date=_DATE),
}
_PASSENGERS = {
    "type": "array",
    "description": "Every passenger (at most five), each with first name, last name and date of birth.",
    "items": _object(first_name=_string("First name."), last_name=_string("Last name."),
                     dob=_string("Date of birth as YYYY-MM-DD, e.g. '1990-04-05'.")),
}
_PAYMENT_ID = _string(
    "A payment method id from the customer's profile (get_user_details), e.g. 'credit_card_7815826' or "
    "'gift_card_7815826'. Certificates cannot pay for changes."
)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="book_reservation",
        description=(
            "Book a new reservation for the customer. All passengers fly the same flights in one cabin. The "
            "payments must add up exactly to fare x passengers for every flight, plus 30 per passenger with "
            "insurance, plus 50 per non-free bag. Only flights seen in a search, only payment methods in the "
            "customer's profile, and only after the customer explicitly confirmed the details."
        ),
        parameters=_parameters(
            user_id=_USER_ID,
            origin=_string(_AIRPORT.format("trip's origin", "SFO")),
            destination=_string(_AIRPORT.format("trip's destination (the far end of a round trip)", "JFK")),
            flight_type=_enum("One way or round trip.", "one_way", "round_trip"),
            cabin=_CABIN,
            flights=_SEGMENTS,
            passengers=_PASSENGERS,
            payment_methods={
                "type": "array",
                "description": (
                    "How the booking is paid: at most one certificate, one credit card and three gift cards, "
                    "each with the whole-dollar amount charged to it."
                ),
                "items": _object(payment_id=_PAYMENT_ID, amount=_integer("Dollars charged to this method.")),
            },
            total_baggages=_integer("Checked bags for the whole reservation."),
            nonfree_baggages=_integer("How many of those bags are beyond the free allowance (50 dollars each)."),
            insurance=_enum("Travel insurance, 30 dollars per passenger.", "yes", "no"),
        ),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="calculate",
        description=(
            "Evaluate an arithmetic expression (numbers, + - * / and parentheses), e.g. a fare total or a "
            "price difference. Returns the result rounded to 2 decimals."
        ),
        parameters=_parameters(expression=_string("The expression, e.g. '2 * (174 + 30)'.")),
        kind=ToolKind.GENERIC,
    ),
    ToolSpec(
        name="cancel_reservation",
        description=(
            "Cancel a whole reservation; every payment is refunded to the method it came from in 5 to 7 "
            "business days. Only for a reservation that may be cancelled under the policy, none of whose "
            "flights has been flown, after the customer explicitly confirmed."
        ),
        parameters=_parameters(reservation_id=_RESERVATION_ID),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="get_reservation_details",
        description=(
            "Read one reservation: owner, origin and destination, trip type, cabin, flights with the fare "
            "paid, passengers, payment history, booking time, bags, insurance and status. Read it again "
            "after changing it."
        ),
        parameters=_parameters(reservation_id=_RESERVATION_ID),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="get_user_details",
        description=(
            "Read a customer's profile: name, address, date of birth, membership level, payment methods "
            "(with gift card and certificate balances), saved passengers and reservation ids. The first "
            "profile read in a conversation is the customer you serve."
        ),
        parameters=_parameters(user_id=_USER_ID),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="list_all_airports",
        description="List every airport served, as IATA code and city.",
        parameters=_parameters(),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="search_direct_flight",
        description=(
            "Find the nonstop flights between two airports on a date that can still be booked, with their "
            "scheduled times, free seats and current price for each cabin."
        ),
        parameters=_parameters(origin=_string(_AIRPORT.format("departure", "JFK")),
                               destination=_string(_AIRPORT.format("arrival", "LAX")), date=_DATE),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="search_onestop_flight",
        description=(
            "Find the bookable connections with exactly one stop between two airports on a date: pairs of "
            "flights, each with its own date, free seats and prices."
        ),
        parameters=_parameters(origin=_string(_AIRPORT.format("departure", "JFK")),
                               destination=_string(_AIRPORT.format("arrival", "LAX")), date=_DATE),
        kind=ToolKind.READ,
    ),
    ToolSpec(
        name="send_certificate",
        description=(
            "Give the customer a travel certificate worth `amount` dollars, as a goodwill gesture. Only when "
            "the customer asked for compensation and the policy grants it, for the amount the policy sets."
        ),
        parameters=_parameters(user_id=_USER_ID, amount=_integer("Whole dollars.")),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="transfer_to_human_agents",
        description=(
            "Hand the conversation to a human agent, with a summary of the customer's issue. Use it only when "
            "the customer explicitly asks for a human or the request cannot be handled with these tools "
            "within the policy."
        ),
        parameters=_parameters(summary=_string("A short summary of who the customer is and what they need.")),
        kind=ToolKind.GENERIC,
    ),
    ToolSpec(
        name="update_reservation_baggages",
        description=(
            "Set the checked bags of a reservation. Bags can only be added. `total_baggages` and "
            "`nonfree_baggages` are the NEW totals for the reservation, not the number added; each added "
            "non-free bag costs 50 dollars, paid with a credit card or gift card from the profile."
        ),
        parameters=_parameters(
            reservation_id=_RESERVATION_ID,
            total_baggages=_integer("The new total of checked bags (never fewer than now)."),
            nonfree_baggages=_integer("The new total of non-free bags (never fewer than now)."),
            payment_id=_PAYMENT_ID,
        ),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="update_reservation_flights",
        description=(
            "Change the flights and/or the cabin of a reservation. `flights` is the WHOLE new itinerary, "
            "unchanged flights included. Basic economy flights cannot be changed (their cabin can). The "
            "origin, destination and trip type stay the same. The fare difference is charged to, or "
            "refunded to, a credit card or gift card from the profile."
        ),
        parameters=_parameters(reservation_id=_RESERVATION_ID, cabin=_CABIN, flights=_SEGMENTS,
                               payment_id=_PAYMENT_ID),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="update_reservation_passengers",
        description=(
            "Replace the passenger details of a reservation. The number of passengers cannot change."
        ),
        parameters=_parameters(reservation_id=_RESERVATION_ID, passengers=_PASSENGERS),
        kind=ToolKind.WRITE,
    ),
    ToolSpec(
        name="get_flight_status",
        description=(
            "The status of one flight on one date: available, on time, delayed, flying, landed or cancelled."
        ),
        parameters=_parameters(flight_number=_string("Flight number, e.g. 'HAT001'."), date=_DATE),
        kind=ToolKind.READ,
    ),
)
