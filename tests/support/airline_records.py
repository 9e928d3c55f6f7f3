"""tau2-shaped airline records and a small session helper, shared by airline tests.

The story is the one in the shipped seed (mock_backends/airline/seed.py; a test checks they agree):

- Julia Reyes (`julia_reyes_4521`, regular) holds UX789J: economy ORD->SEA on HAT142, 2024-05-17, booked
  2024-05-10, uninsured (the paper's figure 1: outside the 24-hour window, no basis to cancel).
- Nadia Haddad (`nadia_haddad_1297`, regular) holds NH62KW: basic economy MIA->LAS->PHX, booked 2024-05-11,
  uninsured (the paper's appendix B on our own data).
- Theo Brennan (`theo_brennan_3391`, gold) holds TB3K9Q (economy BOS->DEN on HAT117, 2024-05-20; HAT119 flies
  the same route that evening), TB5N1W (basic economy round trip for two, booked today at 09:00) and TB8R2D
  (business round trip BOS<->MIA whose outbound on 2024-05-10 has landed).
- Lena Varga (`lena_varga_7702`, silver) holds LV4X8N (economy CLT->DTW on HAT171, 2024-05-13, cancelled by
  the airline) and LV7C2M (insured economy ATL->DFW on HAT150 today, delayed, two passengers).

Shapes follow tau2-bench's returns (API.md §1.1), including the optional fields dumped as null. Every
builder returns a fresh dict, so a test may change a record without affecting any other test.
"""

from __future__ import annotations

import copy
from typing import Any

from core.domain import Domain
from core.gate import GateContext, GateDecision, PolicyGate
from core.ledger import AbsorbResult, Ledger
from core.tools import ToolCall
from domains.airline import DOMAIN, PATH_MAP

Record = dict[str, Any]

JULIA, NADIA, THEO, LENA = "julia_reyes_4521", "nadia_haddad_1297", "theo_brennan_3391", "lena_varga_7702"
JULIA_CARD, JULIA_GIFT = "credit_card_4521001", "gift_card_4521002"
NADIA_CARD = "credit_card_1297001"
THEO_CARD, THEO_GIFT, THEO_CERT = "credit_card_3391001", "gift_card_3391002", "certificate_3391003"
LENA_CARD, LENA_GIFT = "credit_card_7702001", "gift_card_7702002"

CANCEL_WINDOW_CASE = "UX789J"  # economy, booked 2024-05-10, uninsured
APPENDIX_B_CASE = "NH62KW"  # basic economy, booked 2024-05-11, uninsured
THEO_ECONOMY = "TB3K9Q"  # economy BOS->DEN, HAT117 2024-05-20
THEO_BASIC = "TB5N1W"  # basic economy round trip, booked 2024-05-15 09:00 (inside 24 h)
THEO_BUSINESS = "TB8R2D"  # business round trip, outbound landed 2024-05-10
LENA_CANCELLED = "LV4X8N"  # HAT171 2024-05-13 cancelled by the airline
LENA_DELAYED = "LV7C2M"  # insured, HAT150 today, delayed, 2 passengers


def address(address1: str, address2: str | None, city: str, state: str, zip_code: str) -> Record:
    return {"address1": address1, "address2": address2, "city": city, "country": "USA", "state": state,
            "zip": zip_code}


def card(payment_id: str, brand: str, last_four: str) -> Record:
    return {"source": "credit_card", "id": payment_id, "brand": brand, "last_four": last_four}


def stored(payment_id: str, source: str, amount: float) -> Record:
    return {"source": source, "id": payment_id, "amount": float(amount)}


def person(first: str, last: str, dob: str) -> Record:
    return {"first_name": first, "last_name": last, "dob": dob}


def user(user_id: str, first: str, last: str, *, membership: str, dob: str, home: Record, methods: list[Record],
         saved: list[Record], reservations: list[str]) -> Record:
    return {"user_id": user_id, "name": {"first_name": first, "last_name": last}, "address": home,
            "email": f"{first.lower()}.{last.lower()}@example.com", "dob": dob,
            "payment_methods": {m["id"]: m for m in methods}, "saved_passengers": saved,
            "membership": membership, "reservations": reservations}


def julia_user() -> Record:
    return user(JULIA, "Julia", "Reyes", membership="regular", dob="1988-03-14",
                home=address("410 Lake Shore Drive", "Apt 12B", "Chicago", "IL", "60611"),
                methods=[card(JULIA_CARD, "visa", "4410"), stored(JULIA_GIFT, "gift_card", 40)], saved=[],
                reservations=[CANCEL_WINDOW_CASE])


def nadia_user() -> Record:
    return user(NADIA, "Nadia", "Haddad", membership="regular", dob="1979-11-02",
                home=address("88 Brickell Avenue", None, "Miami", "FL", "33131"),
                methods=[card(NADIA_CARD, "mastercard", "4579")], saved=[], reservations=[APPENDIX_B_CASE])


def theo_user(*, membership: str = "gold", gift_card: float = 150, certificate: float = 200) -> Record:
    return user(THEO, "Theo", "Brennan", membership=membership, dob="1990-06-21",
                home=address("15 Beacon Street", "Unit 3", "Boston", "MA", "02108"),
                methods=[card(THEO_CARD, "amex", "8811"), stored(THEO_GIFT, "gift_card", gift_card),
                         stored(THEO_CERT, "certificate", certificate)],
                saved=[person("Iris", "Brennan", "1993-02-08")],
                reservations=[THEO_ECONOMY, THEO_BASIC, THEO_BUSINESS])


def lena_user(*, membership: str = "silver") -> Record:
    return user(LENA, "Lena", "Varga", membership=membership, dob="1984-09-30",
                home=address("220 Peachtree Street", "Suite 400", "Atlanta", "GA", "30303"),
                methods=[card(LENA_CARD, "visa", "0275"), stored(LENA_GIFT, "gift_card", 60)],
                saved=[person("Marco", "Varga", "1982-01-17")], reservations=[LENA_CANCELLED, LENA_DELAYED])


def leg(flight_number: str, origin: str, destination: str, date: str, price: int) -> Record:
    return {"flight_number": flight_number, "origin": origin, "destination": destination, "date": date,
            "price": price}


def reservation(reservation_id: str, user_id: str, *, origin: str, destination: str, flight_type: str,
                cabin: str, flights: list[Record], passengers: list[Record], payment_id: str, created_at: str,
                insurance: str, total_baggages: int = 0, nonfree_baggages: int = 0,
                status: str | None = None) -> Record:
    """A reservation as get_reservation_details returns it, paid in one payment of the full price."""
    n = len(passengers)
    amount = sum(f["price"] for f in flights) * n + (30 * n if insurance == "yes" else 0) + 50 * nonfree_baggages
    return {"reservation_id": reservation_id, "user_id": user_id, "origin": origin, "destination": destination,
            "flight_type": flight_type, "cabin": cabin, "flights": flights, "passengers": passengers,
            "payment_history": [{"payment_id": payment_id, "amount": amount}], "created_at": created_at,
            "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages, "insurance": insurance,
            "status": status}


def julia_reservation(**changes: Any) -> Record:
    record = reservation(CANCEL_WINDOW_CASE, JULIA, origin="ORD", destination="SEA", flight_type="one_way",
                         cabin="economy", flights=[leg("HAT142", "ORD", "SEA", "2024-05-17", 312)],
                         passengers=[person("Julia", "Reyes", "1988-03-14")], payment_id=JULIA_CARD,
                         created_at="2024-05-10T09:12:00", insurance="no")
    return record | changes


def nadia_reservation(**changes: Any) -> Record:
    record = reservation(APPENDIX_B_CASE, NADIA, origin="MIA", destination="PHX", flight_type="one_way",
                         cabin="basic_economy",
                         flights=[leg("HAT162", "MIA", "LAS", "2024-05-16", 67),
                                  leg("HAT184", "LAS", "PHX", "2024-05-17", 57)],
                         passengers=[person("Nadia", "Haddad", "1979-11-02")], payment_id=NADIA_CARD,
                         created_at="2024-05-11T10:30:00", insurance="no")
    return record | changes


def theo_economy(**changes: Any) -> Record:
    record = reservation(THEO_ECONOMY, THEO, origin="BOS", destination="DEN", flight_type="one_way",
                         cabin="economy", flights=[leg("HAT117", "BOS", "DEN", "2024-05-20", 188)],
                         passengers=[person("Theo", "Brennan", "1990-06-21")], payment_id=THEO_CARD,
                         created_at="2024-05-06T18:45:00", insurance="no", total_baggages=1)
    return record | changes


def theo_basic(**changes: Any) -> Record:
    record = reservation(THEO_BASIC, THEO, origin="BOS", destination="DEN", flight_type="round_trip",
                         cabin="basic_economy",
                         flights=[leg("HAT117", "BOS", "DEN", "2024-05-20", 96),
                                  leg("HAT121", "DEN", "BOS", "2024-05-24", 91)],
                         passengers=[person("Theo", "Brennan", "1990-06-21"), person("Iris", "Brennan", "1993-02-08")],
                         payment_id=THEO_GIFT, created_at="2024-05-15T09:00:00", insurance="no")
    return record | changes


def theo_business(**changes: Any) -> Record:
    record = reservation(THEO_BUSINESS, THEO, origin="BOS", destination="MIA", flight_type="round_trip",
                         cabin="business",
                         flights=[leg("HAT133", "BOS", "MIA", "2024-05-10", 403),
                                  leg("HAT134", "MIA", "BOS", "2024-05-22", 512)],
                         passengers=[person("Theo", "Brennan", "1990-06-21")], payment_id=THEO_CARD,
                         created_at="2024-05-01T12:00:00", insurance="no", total_baggages=2)
    return record | changes


def lena_cancelled(**changes: Any) -> Record:
    record = reservation(LENA_CANCELLED, LENA, origin="CLT", destination="DTW", flight_type="one_way",
                         cabin="economy", flights=[leg("HAT171", "CLT", "DTW", "2024-05-13", 181)],
                         passengers=[person("Lena", "Varga", "1984-09-30")], payment_id=LENA_CARD,
                         created_at="2024-05-02T08:20:00", insurance="no")
    return record | changes


def lena_delayed(**changes: Any) -> Record:
    record = reservation(LENA_DELAYED, LENA, origin="ATL", destination="DFW", flight_type="one_way",
                         cabin="economy", flights=[leg("HAT150", "ATL", "DFW", "2024-05-15", 200)],
                         passengers=[person("Lena", "Varga", "1984-09-30"), person("Marco", "Varga", "1982-01-17")],
                         payment_id=LENA_CARD, created_at="2024-05-08T14:05:00", insurance="yes",
                         total_baggages=2)
    return record | changes


# Bookable flight dates of the story, as a direct search returns them (date null, seats and prices).
_OFFERS: dict[tuple[str, str], tuple[str, str, str, str, tuple[int, int, int], tuple[int, int, int]]] = {
    ("HAT117", "2024-05-20"): ("BOS", "DEN", "07:00:00", "09:45:00", (5, 11, 3), (96, 188, 455)),
    ("HAT119", "2024-05-20"): ("BOS", "DEN", "18:00:00", "20:45:00", (7, 9, 2), (102, 214, 489)),
    ("HAT121", "2024-05-24"): ("DEN", "BOS", "11:00:00", "16:40:00", (4, 13, 8), (91, 176, 430)),
    ("HAT142", "2024-05-17"): ("ORD", "SEA", "08:00:00", "10:30:00", (9, 12, 4), (118, 312, 640)),
    ("HAT134", "2024-05-22"): ("MIA", "BOS", "14:00:00", "17:20:00", (10, 10, 10), (84, 199, 512)),
    ("HAT162", "2024-05-16"): ("MIA", "LAS", "09:00:00", "13:00:00", (6, 10, 5), (67, 180, 420)),
    ("HAT184", "2024-05-17"): ("LAS", "PHX", "15:00:00", "16:10:00", (8, 14, 6), (57, 121, 310)),
}
CABINS = ("basic_economy", "economy", "business")


def offer(flight_number: str, day: str, **changes: Any) -> Record:
    """A direct-search hit; `changes` may set fields, e.g. `date=` as a one-stop search fills it."""
    origin, destination, departs, arrives, seats, prices = _OFFERS[(flight_number, day)]
    record = {"flight_number": flight_number, "origin": origin, "destination": destination, "status": "available",
              "scheduled_departure_time_est": departs, "scheduled_arrival_time_est": arrives, "date": None,
              "available_seats": dict(zip(CABINS, seats, strict=True)),
              "prices": dict(zip(CABINS, prices, strict=True))}
    return record | changes


def segment(flight_number: str, date: str) -> Record:
    return {"flight_number": flight_number, "date": date}


class AirlineSession:
    """A ledger filled the way the agent loop fills it: successful reads absorbed in order, one step each.

    `propose` judges a write with a fresh gate (no anti-loop memory carried between assertions) and the
    domain's own context, exactly as the agent loop would; pass another domain to move "now"."""

    def __init__(self, domain: Domain = DOMAIN) -> None:
        self.domain = domain
        self.ledger = Ledger(PATH_MAP)
        self.step = 0

    def _next_call(self, tool: str, arguments: dict[str, Any]) -> ToolCall:
        self.step += 1
        return ToolCall(id=f"call_{self.step}", name=tool, arguments=arguments)

    def read(self, tool: str, result: Any, **arguments: Any) -> AbsorbResult:
        return self.ledger.absorb(self._next_call(tool, arguments), copy.deepcopy(result), self.step)

    def wrote(self, tool: str, **arguments: Any) -> list[str]:
        """A write succeeded: mark what it touched stale (the backend itself is not simulated)."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step)

    def executed(self, tool: str, result: Any, **arguments: Any) -> list[str]:
        """A write ran and returned `result`: its paths go stale and the return joins the session's effects."""
        return self.ledger.mark_stale(self._next_call(tool, arguments), self.step, result=copy.deepcopy(result))

    def read_user(self, record: Record) -> AbsorbResult:
        return self.read("get_user_details", record, user_id=record["user_id"])

    def read_reservation(self, record: Record) -> AbsorbResult:
        return self.read("get_reservation_details", record, reservation_id=record["reservation_id"])

    def search(self, origin: str, destination: str, date: str, hits: list[Record]) -> AbsorbResult:
        return self.read("search_direct_flight", hits, origin=origin, destination=destination, date=date)

    def status(self, flight_number: str, date: str, status: str) -> AbsorbResult:
        return self.read("get_flight_status", status, flight_number=flight_number, date=date)

    def said(self, role: str, text: str) -> AbsorbResult:
        """A message of the conversation ("user": the customer's, "assistant": the agent's), heard by the ledger
        as a session hears it (core.ledger.Ledger.hear)."""
        return self.ledger.hear(role, text, self.step)

    def confirmed(self, described: str, answer: str = "Yes, please go ahead.") -> None:
        """The agent described the action and the customer answered (by default an explicit yes)."""
        self.said("assistant", described)
        self.said("user", answer)

    def context(self) -> GateContext:
        return self.domain.context(self.ledger)

    def propose(self, tool: str, **arguments: Any) -> GateDecision:
        call = ToolCall(id=f"proposal_{self.step}", name=tool, arguments=arguments)
        gate = PolicyGate(self.domain.predicates, path_map=self.domain.path_map)
        return gate.evaluate(call, self.ledger, self.context())


def session_for(profile: Record, *reservations: Record, domain: Domain = DOMAIN) -> AirlineSession:
    """The customer's profile read first, then the given reservations."""
    session = AirlineSession(domain)
    session.read_user(profile)
    for record in reservations:
        session.read_reservation(record)
    return session
