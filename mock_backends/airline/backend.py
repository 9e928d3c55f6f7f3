"""tau2-bench's 14 airline tools over the SQLite document store.

Names, arguments, return shapes, error texts, check order and write semantics follow tau2-bench's airline
toolkit (`src/tau2/domains/airline/tools.py`), quirks included, because tau2 gold trajectories must replay here to
the same DB hash: new reservations take the first free id of HATHAT/HATHAU/HATHAV and the fixed
`created_at` 2024-05-15T15:00:00; a certificate used in a booking is removed whole (no change given
back); cancelling appends negative copies of the payments but releases no seats and credits no gift
card; changing flights never touches seat inventory; new certificates are certificate_3221322, ...323,
...324; the one-stop search builds the next day's date as `2024-05-<day+1>` (May only, not zero-padded).

None of the tools checks policy (who may cancel, baggage allowance, payment-type counts...): tau2 leaves
that to the agent, and so do we; the policy gate (domains/airline/predicates.py) is where it is checked.

Deliberate differences, all on failure paths only: a failing write changes nothing (tau2 can leave a
half-applied write, e.g. a certificate listed twice in one booking), `calculate` does not eval, and a few
crashes of tau2's code on malformed input (a KeyError, an int() of a non-date) become clear messages.
Lookups are exact-match, as API.md documents (newer tau2 code folds case for voice transcripts).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter

from core.money import cents, covers
from domains.airline.tools import TOOLS
from mock_backends.airline.data import load_seed
from mock_backends.airline.models import (
    CABINS,
    AirportCode,
    CabinClass,
    Certificate,
    Flight,
    FlightDateAvailable,
    FlightInfo,
    GiftCard,
    Passenger,
    Payment,
    Reservation,
    ReservationFlight,
    User,
    dump,
    normalise,
)
from mock_backends.base import SQLiteToolBackend, generic_tool, read_tool, write_tool
from mock_backends.calculator import calculate as _calculate
from mock_backends.store import JSON, Collection, Index

FLIGHTS, USERS, RESERVATIONS = "flights", "users", "reservations"

# tau2's fixed clock and id pools (API.md §1.2, §11).
NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
INSURANCE_PER_PASSENGER = 30
NONFREE_BAG_PRICE = 50

AIRPORTS: tuple[tuple[str, str], ...] = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
    ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
    ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)

_FLIGHT_INFOS = TypeAdapter(list[FlightInfo])
_PASSENGERS = TypeAdapter(list[Passenger])
_PAYMENTS = TypeAdapter(list[Payment])


def _direct_flight(flight: Mapping[str, Any], instance: Mapping[str, Any], date: str | None) -> dict[str, Any]:
    """A search hit shaped like tau2's `DirectFlight.model_dump()` (built from the stored dicts: no re-parse)."""
    return {
        "flight_number": flight["flight_number"],
        "origin": flight["origin"],
        "destination": flight["destination"],
        "status": "available",
        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
        "date": date,
        "available_seats": dict(instance["available_seats"]),
        "prices": dict(instance["prices"]),
    }


def _next_day(date: str) -> str:
    """tau2's one-stop quirk, kept for parity: the day number plus one, in May, without zero padding."""
    day = date[-2:]
    if not day.isdigit():
        raise ValueError(f"Invalid date {date}: expected YYYY-MM-DD")
    return f"2024-05-{int(day) + 1}"


class AirlineBackend(SQLiteToolBackend):
    """The airline mock. Reads return stored documents as they are (already normalised); writes parse them
    into the tau2 models, mutate exactly as tau2 does, and store the dumps in one transaction."""

    specs = TOOLS  # checked against the tool methods when the class is created
    collections = (
        # Searches filter on origin and destination; an index turns a 300-document scan into a lookup.
        Collection(FLIGHTS, (Index("$.origin"), Index("$.destination"))),
        Collection(USERS),
        Collection(RESERVATIONS),
    )

    @classmethod
    def normalise(cls, data: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
        return normalise(data)

    @classmethod
    async def open(cls, db_path: Path | str, data: Mapping[str, Any] | None = None) -> AirlineBackend:
        """A fresh database file holding `data` (default: our shipped seed)."""
        return await cls.create(db_path, load_seed() if data is None else data)

    # ----------------------------------------------------------------------------------- lookups

    async def _user(self, user_id: str) -> User:
        doc = await self.store.get(USERS, user_id)
        if doc is None:
            raise ValueError(f"User {user_id} not found")
        return User.model_validate(doc)

    async def _reservation(self, reservation_id: str) -> Reservation:
        doc = await self.store.get(RESERVATIONS, reservation_id)
        if doc is None:
            raise ValueError(f"Reservation {reservation_id} not found")
        return Reservation.model_validate(doc)

    async def _flight(self, flight_number: str, cache: dict[str, Flight]) -> Flight:
        """One Flight model per flight number per write, so two segments of one flight share seat counts."""
        flight = cache.get(flight_number)
        if flight is None:
            doc = await self.store.get(FLIGHTS, flight_number)
            if doc is None:
                raise ValueError(f"Flight {flight_number} not found")
            flight = cache[flight_number] = Flight.model_validate(doc)
        return flight

    @staticmethod
    def _instance(flight: Flight, date: str) -> Any:
        if date not in flight.dates:
            raise ValueError(f"Flight {flight.flight_number} not found on date {date}")
        return flight.dates[date]

    async def _search(self, date: str, origin: str, destination: str | None = None,
                      leave_after: str | None = None) -> list[dict[str, Any]]:
        """tau2's direct-flight filter, in the DB's flight order: route match, `available` on the date,
        and (one-stop second legs) scheduled departure at or after `leave_after`, compared as text."""
        equals: dict[str, Any] = {"$.origin": origin}
        if destination is not None:
            equals["$.destination"] = destination
        hits: list[dict[str, Any]] = []
        for _key, flight in await self.store.find_docs(FLIGHTS, equals=equals):
            instance = flight["dates"].get(date)
            if instance is None or instance.get("status") != "available":
                continue
            if leave_after is not None and flight["scheduled_departure_time_est"] < leave_after:
                continue
            hits.append(_direct_flight(flight, instance, None))
        return hits

    async def _payment_for_update(self, user: User, payment_id: str, total_price: int) -> Payment | None:
        """tau2's update payment: the method must exist and not be a certificate (even for a charge of 0); a
        gift card pays (or, for a negative total, receives) the difference. No record for a zero total."""
        if payment_id not in user.payment_methods:
            raise ValueError("Payment method not found")
        method = user.payment_methods[payment_id]
        if isinstance(method, Certificate):
            raise ValueError("Certificate cannot be used to update reservation")
        if isinstance(method, GiftCard):
            if not covers(method.amount, cents(total_price)):  # in whole cents, as the gate compares
                raise ValueError("Gift card balance is not enough")
            method.amount -= total_price
        return Payment(payment_id=payment_id, amount=total_price) if total_price != 0 else None

    async def _save(self, *, user: User | None = None, reservation: Reservation | None = None,
                    flights: Mapping[str, Flight] | None = None) -> None:
        for flight in (flights or {}).values():
            await self.tx.put(FLIGHTS, flight.flight_number, dump(flight))
        if user is not None:
            await self.tx.put(USERS, user.user_id, dump(user))
        if reservation is not None:
            await self.tx.put(RESERVATIONS, reservation.reservation_id, dump(reservation))

    # ----------------------------------------------------------------------------------- reads

    @read_tool
    async def get_user_details(self, user_id: str) -> dict[str, Any]:
        doc = await self.store.get(USERS, user_id)
        if doc is None:
            raise ValueError(f"User {user_id} not found")
        return doc

    @read_tool
    async def get_reservation_details(self, reservation_id: str) -> dict[str, Any]:
        doc = await self.store.get(RESERVATIONS, reservation_id)
        if doc is None:
            raise ValueError(f"Reservation {reservation_id} not found")
        return doc

    @read_tool
    async def list_all_airports(self) -> list[dict[str, Any]]:
        return [dump(AirportCode(iata=iata, city=city)) for iata, city in AIRPORTS]

    @read_tool
    async def search_direct_flight(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return await self._search(date, origin, destination)

    @read_tool
    async def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[list[dict[str, Any]]]:
        pairs: list[list[dict[str, Any]]] = []
        for first in await self._search(date, origin):
            first["date"] = date
            second_date = _next_day(date) if "+1" in first["scheduled_arrival_time_est"] else date
            for second in await self._search(second_date, first["destination"], destination,
                                             leave_after=first["scheduled_arrival_time_est"]):
                second["date"] = second_date
                pairs.append([first, second])
        return pairs

    @read_tool
    async def get_flight_status(self, flight_number: str, date: str) -> str:
        doc = await self.store.get(FLIGHTS, flight_number)
        if doc is None:
            raise ValueError(f"Flight {flight_number} not found")
        instance = doc["dates"].get(date)
        if instance is None:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        status: str = instance["status"]
        return status

    # ----------------------------------------------------------------------------------- writes

    @write_tool
    async def book_reservation(self, user_id: str, origin: str, destination: str, flight_type: str, cabin: str,
                               flights: list[Any], passengers: list[Any], payment_methods: list[Any],
                               total_baggages: int, nonfree_baggages: int, insurance: str) -> dict[str, Any]:
        segments = _FLIGHT_INFOS.validate_python(flights)
        travellers = _PASSENGERS.validate_python(passengers)
        payments = _PAYMENTS.validate_python(payment_methods)
        user = await self._user(user_id)
        reservation_id = await self._new_reservation_id()
        # Built (and so validated: cabin, trip type, insurance, bag counts) before any flight is looked at,
        # as tau2 does, so a bad cabin is reported before a bad flight.
        reservation = Reservation.model_validate({
            "reservation_id": reservation_id, "user_id": user_id, "origin": origin, "destination": destination,
            "flight_type": flight_type, "cabin": cabin, "flights": [],
            "passengers": [dump(p) for p in travellers], "payment_history": [dump(p) for p in payments],
            "created_at": NOW, "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
            "insurance": insurance,
        })
        cache: dict[str, Flight] = {}
        booked: list[FlightDateAvailable] = []
        total_price = 0
        for segment in segments:
            flight = await self._flight(segment.flight_number, cache)
            instance = self._instance(flight, segment.date)
            if not isinstance(instance, FlightDateAvailable):
                raise ValueError(f"Flight {segment.flight_number} not available on date {segment.date}")
            if instance.available_seats[reservation.cabin] < len(travellers):
                raise ValueError(f"Not enough seats on flight {segment.flight_number}")
            price = instance.prices[reservation.cabin]
            reservation.flights.append(ReservationFlight(
                flight_number=segment.flight_number, origin=flight.origin, destination=flight.destination,
                date=segment.date, price=price))
            booked.append(instance)
            total_price += price * len(travellers)
        if reservation.insurance == "yes":
            total_price += INSURANCE_PER_PASSENGER * len(travellers)
        total_price += NONFREE_BAG_PRICE * nonfree_baggages
        for payment in payments:
            if payment.payment_id not in user.payment_methods:
                raise ValueError(f"Payment method {payment.payment_id} not found")
            method = user.payment_methods[payment.payment_id]
            if isinstance(method, GiftCard | Certificate) and not covers(method.amount, cents(payment.amount)):
                raise ValueError(f"Not enough balance in payment method {payment.payment_id}")
        total_payment = sum(payment.amount for payment in payments)
        if total_payment != total_price:
            raise ValueError(f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}")
        for payment in payments:
            spent = user.payment_methods.get(payment.payment_id)
            if spent is None:  # the same certificate listed twice: tau2 crashes half-way here
                raise ValueError(f"Payment method {payment.payment_id} not found")
            if isinstance(spent, GiftCard):
                spent.amount -= payment.amount
            elif isinstance(spent, Certificate):  # used whole: the remainder is not refunded
                del user.payment_methods[payment.payment_id]
        for instance in booked:
            instance.available_seats[reservation.cabin] -= len(travellers)
        user.reservations.append(reservation_id)
        await self._save(user=user, reservation=reservation, flights=cache)
        return dump(reservation)

    async def _new_reservation_id(self) -> str:
        for candidate in NEW_RESERVATION_IDS:
            if await self.store.get(RESERVATIONS, candidate) is None:
                return candidate
        raise ValueError("Too many reservations")

    @write_tool
    async def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        reservation = await self._reservation(reservation_id)
        refunds = [Payment(payment_id=p.payment_id, amount=-p.amount) for p in reservation.payment_history]
        reservation.payment_history.extend(refunds)
        reservation.status = "cancelled"
        # tau2 neither releases the seats (tau2 issue #153) nor credits gift cards here; nor do we.
        await self._save(reservation=reservation)
        return dump(reservation)

    @write_tool
    async def update_reservation_baggages(self, reservation_id: str, total_baggages: int, nonfree_baggages: int,
                                          payment_id: str) -> dict[str, Any]:
        reservation = await self._reservation(reservation_id)
        user = await self._user(reservation.user_id)
        charge = NONFREE_BAG_PRICE * max(0, nonfree_baggages - reservation.nonfree_baggages)
        payment = await self._payment_for_update(user, payment_id, charge)
        if payment is not None:
            reservation.payment_history.append(payment)
        # Validated like a loaded record, so a count that is not an int fails here and is never stored.
        reservation = Reservation.model_validate(
            dump(reservation) | {"total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages})
        await self._save(user=user, reservation=reservation)
        return dump(reservation)

    @write_tool
    async def update_reservation_flights(self, reservation_id: str, cabin: str, flights: list[Any],
                                         payment_id: str) -> dict[str, Any]:
        segments = _FLIGHT_INFOS.validate_python(flights)
        reservation = await self._reservation(reservation_id)
        user = await self._user(reservation.user_id)
        if cabin not in CABINS:
            raise ValueError(f"Invalid cabin {cabin}: expected one of {', '.join(CABINS)}")
        new_cabin = cast(CabinClass, cabin)
        passengers = len(reservation.passengers)
        cache: dict[str, Flight] = {}
        new_flights: list[ReservationFlight] = []
        total_price = 0
        for segment in segments:
            flight = await self._flight(segment.flight_number, cache)
            kept = next((old for old in reservation.flights if old.flight_number == segment.flight_number
                         and old.date == segment.date and cabin == reservation.cabin), None)
            if kept is not None:  # an unchanged segment keeps the price it was bought at
                total_price += kept.price * passengers
                new_flights.append(kept)
                continue
            instance = self._instance(flight, segment.date)
            if not isinstance(instance, FlightDateAvailable):
                raise ValueError(f"Flight {segment.flight_number} not available on date {segment.date}")
            if instance.available_seats[new_cabin] < passengers:
                raise ValueError(f"Not enough seats on flight {segment.flight_number}")
            price = instance.prices[new_cabin]
            new_flights.append(ReservationFlight(flight_number=segment.flight_number, origin=flight.origin,
                                                 destination=flight.destination, date=segment.date, price=price))
            total_price += price * passengers
        total_price -= sum(old.price for old in reservation.flights) * passengers
        payment = await self._payment_for_update(user, payment_id, total_price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.flights = new_flights
        reservation.cabin = new_cabin
        # tau2 does not move seats when flights change; neither do we.
        await self._save(user=user, reservation=reservation)
        return dump(reservation)

    @write_tool
    async def update_reservation_passengers(self, reservation_id: str, passengers: list[Any]) -> dict[str, Any]:
        travellers = _PASSENGERS.validate_python(passengers)
        reservation = await self._reservation(reservation_id)
        if len(travellers) != len(reservation.passengers):
            raise ValueError("Number of passengers does not match")
        reservation.passengers = [p.model_copy() for p in travellers]
        await self._save(reservation=reservation)
        return dump(reservation)

    @write_tool
    async def send_certificate(self, user_id: str, amount: int) -> str:
        user = await self._user(user_id)
        for certificate_id in NEW_CERTIFICATE_IDS:
            if certificate_id not in user.payment_methods:
                user.payment_methods[certificate_id] = Certificate(source="certificate", id=certificate_id,
                                                                   amount=amount)
                await self._save(user=user)
                return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    # ----------------------------------------------------------------------------------- generic

    @generic_tool
    async def calculate(self, expression: str) -> str:
        return _calculate(expression)

    @generic_tool
    async def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"
