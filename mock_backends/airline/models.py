"""Pydantic mirror of tau2-bench's airline `FlightDB`.

Data goes through these models on the way in and every write goes through them on the way back, so a
stored document is exactly tau2's `model_dump()`. Three details carry the hash parity (API.md §0, §11):
- `Payment.amount`, flight prices and seat counts are ints, while gift card and certificate `amount`s are
  floats (the shared db.json stores `100` where tau2 holds `100.0`: loading through these models fixes it);
- optional fields are dumped even when absent from the source (`Reservation.status: null`,
  `Address.address2`, `DirectFlight.date`);
- a flight date's status is a union told apart by its `status` field, dumped with only that variant's
  fields (an `available` date has seats and prices, a `landed` one has actual times, ...).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CabinClass = Literal["business", "economy", "basic_economy"]
FlightType = Literal["round_trip", "one_way"]
Insurance = Literal["yes", "no"]
Membership = Literal["gold", "silver", "regular"]
CABINS: tuple[str, ...] = ("basic_economy", "economy", "business")


class AirportCode(BaseModel):
    iata: str
    city: str


class Name(BaseModel):
    first_name: str
    last_name: str


class Address(BaseModel):
    address1: str
    address2: str | None = None
    city: str
    country: str
    state: str
    zip: str


class Payment(BaseModel):
    """One line of a reservation's payment history; a negative amount is a refund."""

    payment_id: str
    amount: int


class CreditCard(BaseModel):
    source: Literal["credit_card"]
    id: str
    brand: str
    last_four: str


class GiftCard(BaseModel):
    source: Literal["gift_card"]
    id: str
    amount: float


class Certificate(BaseModel):
    source: Literal["certificate"]
    id: str
    amount: float


PaymentMethod = Annotated[CreditCard | GiftCard | Certificate, Field(discriminator="source")]


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class FlightInfo(BaseModel):
    """A segment as the write tools take it: which flight, on which date."""

    flight_number: str
    date: str


class FlightDateAvailable(BaseModel):
    status: Literal["available"]
    available_seats: dict[CabinClass, int]
    prices: dict[CabinClass, int]


class FlightDateOnTime(BaseModel):
    status: Literal["on time"]
    estimated_departure_time_est: str
    estimated_arrival_time_est: str


class FlightDateDelayed(BaseModel):
    status: Literal["delayed"]
    estimated_departure_time_est: str
    estimated_arrival_time_est: str


class FlightDateFlying(BaseModel):
    status: Literal["flying"]
    actual_departure_time_est: str
    estimated_arrival_time_est: str


class FlightDateLanded(BaseModel):
    status: Literal["landed"]
    actual_departure_time_est: str
    actual_arrival_time_est: str


class FlightDateCancelled(BaseModel):
    status: Literal["cancelled"]


FlightDateStatus = Annotated[
    FlightDateAvailable | FlightDateOnTime | FlightDateDelayed | FlightDateFlying | FlightDateLanded
    | FlightDateCancelled,
    Field(discriminator="status"),
]


class Flight(BaseModel):
    flight_number: str
    origin: str
    destination: str
    scheduled_departure_time_est: str  # "HH:MM:SS"
    scheduled_arrival_time_est: str  # "HH:MM:SS", with a "+1" suffix when it lands the next day
    dates: dict[str, FlightDateStatus]


class DirectFlight(BaseModel):
    """A search hit: an `available` flight date with its seats and prices (`date` set by one-stop search)."""

    flight_number: str
    origin: str
    destination: str
    status: Literal["available"]
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    date: str | None = None
    available_seats: dict[CabinClass, int]
    prices: dict[CabinClass, int]


class ReservationFlight(BaseModel):
    flight_number: str
    origin: str
    destination: str
    date: str
    price: int


class User(BaseModel):
    user_id: str
    name: Name
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    membership: Membership
    reservations: list[str]


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: CabinClass
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str  # "YYYY-MM-DDTHH:MM:SS", EST
    total_baggages: int
    nonfree_baggages: int
    insurance: Insurance
    status: Literal["cancelled"] | None = None


class FlightDB(BaseModel):
    """Top level, strict like tau2's DB base class: an unknown collection is an error."""

    model_config = ConfigDict(extra="forbid")

    flights: dict[str, Flight]
    users: dict[str, User]
    reservations: dict[str, Reservation]


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")


def normalise(data: Any) -> dict[str, dict[str, Any]]:
    """Raw tau2-layout data → stored documents, exactly as tau2's `FlightDB.load(...).model_dump()`."""
    return FlightDB.model_validate(data).model_dump(mode="json")
