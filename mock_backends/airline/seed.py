"""Our own small airline seed: hand-written story records plus deterministic filler.

The story records are fixed by hand because scenarios and tests are written against them:

- Julia Reyes (`julia_reyes_4521`, regular): UX789J, economy ORD→SEA on HAT142, 2024-05-17, booked
  2024-05-10, uninsured. The paper's figure 1: outside the 24 h window, so it cannot be cancelled.
- Nadia Haddad (`nadia_haddad_1297`, regular): NH62KW, basic economy MIA→LAS→PHX on 2024-05-16/17, booked
  2024-05-11, uninsured. The paper's appendix B on our own data: no cancellation basis at all.
- Theo Brennan (`theo_brennan_3391`, gold): TB3K9Q, economy BOS→DEN on HAT117 at 07:00 on 2024-05-20 (a
  later same-day flight, HAT119, is bookable); TB5N1W, basic economy booked 2024-05-15 09:00 (inside the
  24 h window); TB8R2D, a business round trip whose outbound (2024-05-10) has landed.
- Lena Varga (`lena_varga_7702`, silver): LV4X8N, economy CLT→DTW on HAT171, 2024-05-13, which the airline
  cancelled; LV7C2M, insured economy ATL→DFW on HAT150 today, delayed, two passengers.

The rest (flights on other routes, users, reservations) is invented by a seeded generator, so the shipped
`seed.json` is reproducible: `python -m mock_backends.airline.seed` rewrites it and `--check` fails when
the file and the generator disagree. Nothing is copied from tau2-bench's data; only the layout is theirs
(flight dates 2024-05-01..30 around the reference time 2024-05-15 15:00 EST, statuses by date).
"""

from __future__ import annotations

import json
import random
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 2024_0515
SEED_FILE = Path(__file__).with_name("seed.json")  # read back by mock_backends.airline.data

Doc = dict[str, Any]

TODAY = date(2024, 5, 15)
NOW = datetime(2024, 5, 15, 15, 0, 0)
DATES = [date(2024, 5, 1) + timedelta(days=n) for n in range(30)]
CABINS = ("basic_economy", "economy", "business")
FREE_BAGS = {"regular": (0, 1, 2), "silver": (1, 2, 3), "gold": (2, 3, 4)}  # by cabin, per passenger

# ----------------------------------------------------------------------------------- flights


def _clock(minutes: int) -> str:
    """Minutes after midnight as tau2's "HH:MM:SS", with "+1" when it falls on the next day."""
    day, rest = divmod(minutes, 24 * 60)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return text + "+1" if day else text


def _at(day: date, minutes: int) -> str:
    return (datetime.combine(day, datetime.min.time()) + timedelta(minutes=minutes)).isoformat()


def _instance(rng: random.Random, day: date, depart: int, arrive: int) -> Doc:
    """One flight date, with the status tau2's data would give it relative to the reference time."""
    if day > TODAY:
        base = rng.randint(50, 100)
        return {"status": "available",
                "available_seats": {"basic_economy": rng.randint(0, 20), "economy": rng.randint(0, 20),
                                    "business": rng.randint(0, 20)},
                "prices": {"basic_economy": base, "economy": base + rng.randint(60, 140),
                           "business": base + rng.randint(200, 450)}}
    shift = rng.randint(-15, 25)
    if day < TODAY:
        if rng.random() < 0.1:
            return {"status": "cancelled"}
        return {"status": "landed", "actual_departure_time_est": _at(day, depart + shift),
                "actual_arrival_time_est": _at(day, arrive + shift)}
    now = NOW.hour * 60 + NOW.minute
    if arrive + shift <= now:
        return {"status": "landed", "actual_departure_time_est": _at(day, depart + shift),
                "actual_arrival_time_est": _at(day, arrive + shift)}
    if depart + shift <= now:
        return {"status": "flying", "actual_departure_time_est": _at(day, depart + shift),
                "estimated_arrival_time_est": _at(day, arrive + shift)}
    delay = rng.choice([0, 0, 45, 90])
    return {"status": "delayed" if delay else "on time",
            "estimated_departure_time_est": _at(day, depart + delay),
            "estimated_arrival_time_est": _at(day, arrive + delay)}


def _flight(rng: random.Random, number: str, origin: str, destination: str, depart: int, arrive: int,
            overrides: dict[str, Doc] | None = None) -> Doc:
    dates = {day.isoformat(): _instance(rng, day, depart, arrive) for day in DATES}
    dates.update(overrides or {})
    return {"flight_number": number, "origin": origin, "destination": destination,
            "scheduled_departure_time_est": _clock(depart), "scheduled_arrival_time_est": _clock(arrive),
            "dates": dates}


def _available(seats: tuple[int, int, int], prices: tuple[int, int, int]) -> Doc:
    return {"status": "available", "available_seats": dict(zip(CABINS, seats, strict=True)),
            "prices": dict(zip(CABINS, prices, strict=True))}


def _landed(day: str, depart: int, arrive: int) -> Doc:
    when = date.fromisoformat(day)
    return {"status": "landed", "actual_departure_time_est": _at(when, depart),
            "actual_arrival_time_est": _at(when, arrive)}


# number, origin, destination, departure and arrival (minutes after midnight), hand-set dates
_STORY_FLIGHTS: list[tuple[str, str, str, int, int, dict[str, Doc]]] = [
    ("HAT142", "ORD", "SEA", 8 * 60, 10 * 60 + 30,
     {"2024-05-17": _available((9, 12, 4), (118, 312, 640))}),
    ("HAT162", "MIA", "LAS", 9 * 60, 13 * 60,
     {"2024-05-16": _available((6, 10, 5), (67, 180, 420))}),
    ("HAT184", "LAS", "PHX", 15 * 60, 16 * 60 + 10,
     {"2024-05-17": _available((8, 14, 6), (57, 121, 310))}),
    ("HAT117", "BOS", "DEN", 7 * 60, 9 * 60 + 45,
     {"2024-05-20": _available((5, 11, 3), (96, 188, 455))}),
    ("HAT119", "BOS", "DEN", 18 * 60, 20 * 60 + 45,
     {"2024-05-20": _available((7, 9, 2), (102, 214, 489))}),
    ("HAT121", "DEN", "BOS", 11 * 60, 16 * 60 + 40,
     {"2024-05-24": _available((4, 13, 8), (91, 176, 430))}),
    ("HAT171", "CLT", "DTW", 12 * 60, 13 * 60 + 50, {"2024-05-13": {"status": "cancelled"}}),
    ("HAT150", "ATL", "DFW", 16 * 60 + 30, 18 * 60,
     {"2024-05-15": {"status": "delayed", "estimated_departure_time_est": "2024-05-15T19:10:00",
                     "estimated_arrival_time_est": "2024-05-15T20:40:00"}}),
    ("HAT133", "BOS", "MIA", 6 * 60 + 30, 10 * 60, {"2024-05-10": _landed("2024-05-10", 6 * 60 + 38, 10 * 60 + 4)}),
    ("HAT134", "MIA", "BOS", 14 * 60, 17 * 60 + 20,
     {"2024-05-22": _available((10, 10, 10), (84, 199, 512))}),
]

# ----------------------------------------------------------------------------------- users


def _card(payment_id: str, brand: str, last_four: str) -> Doc:
    return {"source": "credit_card", "id": payment_id, "brand": brand, "last_four": last_four}


def _stored(payment_id: str, source: str, amount: int) -> Doc:
    return {"source": source, "id": payment_id, "amount": amount}


def _user(user_id: str, first: str, last: str, membership: str, dob: str, address: Doc,
          methods: list[Doc], saved: list[Doc], reservations: list[str]) -> Doc:
    return {"user_id": user_id, "name": {"first_name": first, "last_name": last}, "address": address,
            "email": f"{first.lower()}.{last.lower()}@example.com", "dob": dob,
            "payment_methods": {m["id"]: m for m in methods}, "saved_passengers": saved,
            "membership": membership, "reservations": reservations}


def _address(address1: str, address2: str | None, city: str, state: str, zip_code: str) -> Doc:
    return {"address1": address1, "address2": address2, "city": city, "country": "USA", "state": state,
            "zip": zip_code}


def _person(first: str, last: str, dob: str) -> Doc:
    return {"first_name": first, "last_name": last, "dob": dob}


def _reservation(reservation_id: str, user: Doc, flight_type: str, cabin: str, legs: list[tuple[Doc, str]],
                 passengers: list[Doc], payment_id: str, created_at: str, insurance: str,
                 total_baggages: int = 0) -> Doc:
    """A reservation consistent with tau2's rules: price paid = fares × passengers + insurance + extra bags."""
    flights = [{"flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"],
                "date": day, "price": price_on(f, day, cabin)} for f, day in legs]
    free = FREE_BAGS[user["membership"]][CABINS.index(cabin)] * len(passengers)
    nonfree = max(0, total_baggages - free)
    n = len(passengers)
    amount = sum(f["price"] for f in flights) * n + (30 * n if insurance == "yes" else 0) + 50 * nonfree
    origin = flights[0]["origin"]
    destination = flights[-1]["destination"] if flight_type == "one_way" else flights[len(flights) // 2 - 1][
        "destination"]
    return {"reservation_id": reservation_id, "user_id": user["user_id"], "origin": origin,
            "destination": destination, "flight_type": flight_type, "cabin": cabin, "flights": flights,
            "passengers": passengers, "payment_history": [{"payment_id": payment_id, "amount": amount}],
            "created_at": created_at, "total_baggages": total_baggages, "nonfree_baggages": nonfree,
            "insurance": insurance}


def price_on(flight: Doc, day: str, cabin: str) -> int:
    """The fare a reservation records: today's price when the date is still bookable, else a fixed
    historical fare derived from the flight number (past dates carry no prices in the data)."""
    instance = flight["dates"][day]
    if instance["status"] == "available":
        price: int = instance["prices"][cabin]
        return price
    base = 60 + int(flight["flight_number"][3:]) % 40
    return {"basic_economy": base, "economy": base + 110, "business": base + 330}[cabin]


def story_records(rng: random.Random) -> Doc:
    """The records scenarios rely on; ids here are reserved and never generated."""
    flights = {number: _flight(rng, number, origin, destination, depart, arrive, overrides)
               for number, origin, destination, depart, arrive, overrides in _STORY_FLIGHTS}
    f = flights
    julia = _user("julia_reyes_4521", "Julia", "Reyes", "regular", "1988-03-14",
                  _address("410 Lake Shore Drive", "Apt 12B", "Chicago", "IL", "60611"),
                  [_card("credit_card_4521001", "visa", "4410"), _stored("gift_card_4521002", "gift_card", 40)],
                  [], ["UX789J"])
    nadia = _user("nadia_haddad_1297", "Nadia", "Haddad", "regular", "1979-11-02",
                  _address("88 Brickell Avenue", None, "Miami", "FL", "33131"),
                  [_card("credit_card_1297001", "mastercard", "4579")], [], ["NH62KW"])
    theo = _user("theo_brennan_3391", "Theo", "Brennan", "gold", "1990-06-21",
                 _address("15 Beacon Street", "Unit 3", "Boston", "MA", "02108"),
                 [_card("credit_card_3391001", "amex", "8811"), _stored("gift_card_3391002", "gift_card", 150),
                  _stored("certificate_3391003", "certificate", 200)],
                 [_person("Iris", "Brennan", "1993-02-08")], ["TB3K9Q", "TB5N1W", "TB8R2D"])
    lena = _user("lena_varga_7702", "Lena", "Varga", "silver", "1984-09-30",
                 _address("220 Peachtree Street", "Suite 400", "Atlanta", "GA", "30303"),
                 [_card("credit_card_7702001", "visa", "0275"), _stored("gift_card_7702002", "gift_card", 60)],
                 [_person("Marco", "Varga", "1982-01-17")], ["LV4X8N", "LV7C2M"])
    users = {u["user_id"]: u for u in (julia, nadia, theo, lena)}
    reservations = [
        _reservation("UX789J", julia, "one_way", "economy", [(f["HAT142"], "2024-05-17")],
                     [_person("Julia", "Reyes", "1988-03-14")], "credit_card_4521001", "2024-05-10T09:12:00", "no"),
        _reservation("NH62KW", nadia, "one_way", "basic_economy",
                     [(f["HAT162"], "2024-05-16"), (f["HAT184"], "2024-05-17")],
                     [_person("Nadia", "Haddad", "1979-11-02")], "credit_card_1297001", "2024-05-11T10:30:00", "no"),
        _reservation("TB3K9Q", theo, "one_way", "economy", [(f["HAT117"], "2024-05-20")],
                     [_person("Theo", "Brennan", "1990-06-21")], "credit_card_3391001", "2024-05-06T18:45:00",
                     "no", total_baggages=1),
        _reservation("TB5N1W", theo, "round_trip", "basic_economy",
                     [(f["HAT117"], "2024-05-20"), (f["HAT121"], "2024-05-24")],
                     [_person("Theo", "Brennan", "1990-06-21"), _person("Iris", "Brennan", "1993-02-08")],
                     "gift_card_3391002", "2024-05-15T09:00:00", "no"),
        _reservation("TB8R2D", theo, "round_trip", "business",
                     [(f["HAT133"], "2024-05-10"), (f["HAT134"], "2024-05-22")],
                     [_person("Theo", "Brennan", "1990-06-21")], "credit_card_3391001", "2024-05-01T12:00:00",
                     "no", total_baggages=2),
        _reservation("LV4X8N", lena, "one_way", "economy", [(f["HAT171"], "2024-05-13")],
                     [_person("Lena", "Varga", "1984-09-30")], "credit_card_7702001", "2024-05-02T08:20:00", "no"),
        _reservation("LV7C2M", lena, "one_way", "economy", [(f["HAT150"], "2024-05-15")],
                     [_person("Lena", "Varga", "1984-09-30"), _person("Marco", "Varga", "1982-01-17")],
                     "credit_card_7702001", "2024-05-08T14:05:00", "yes", total_baggages=2),
    ]
    return {"flights": flights, "users": users, "reservations": {r["reservation_id"]: r for r in reservations}}


# ----------------------------------------------------------------------------------- generated filler

AIRPORTS = ("SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX", "IAH", "LAS", "MCO",
            "EWR", "CLT", "MSP", "DTW", "PHL", "LGA")
_FIRST = ["Ava", "Liam", "Zara", "Owen", "Priya", "Mateo", "Hana", "Felix", "Ines", "Tobias", "Leila", "Caleb",
          "Yuki", "Dario", "Nadia", "Silas", "Amara", "Elio", "Greta", "Ravi", "Celeste", "Bruno"]
_LAST = ["Okafor", "Lindqvist", "Moreau", "Castellano", "Nakamura", "Quinlan", "Duarte", "Feld", "Oyelaran",
         "Sato", "Ambrose", "Keller", "Rosales", "Petrov"]
_STREETS = ["Maple Row", "Harbor Lane", "Quarry Road", "Willow Court", "Juniper Way", "Foundry Street"]
_CITIES = [("Riverton", "OR", "97"), ("Lakemont", "MN", "55"), ("Fairhaven", "MA", "02"), ("Cedar Falls", "TX", "75"),
           ("Northgate", "WA", "98"), ("Pinecrest", "CO", "80")]
GENERATED_ROUTES = 15  # each flown both ways: 30 flights
GENERATED_USERS = 20
GENERATED_RESERVATIONS = 40


class _Ids:
    """Unique random ids that never collide with each other or with the story ids."""

    def __init__(self, rng: random.Random, reserved: set[str]) -> None:
        self.rng = rng
        self.used = set(reserved) | {"HATHAT", "HATHAU", "HATHAV"}

    def new(self, make: Any) -> str:
        while True:
            value = str(make(self.rng))
            if value not in self.used:
                self.used.add(value)
                return value


def _reservation_code(rng: random.Random) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(6))


def _generate_flights(rng: random.Random, ids: _Ids) -> dict[str, Doc]:
    flights: dict[str, Doc] = {}
    routes: set[tuple[str, str]] = set()
    while len(routes) < GENERATED_ROUTES:
        origin, destination = rng.sample(AIRPORTS, 2)
        if (origin, destination) not in routes and (destination, origin) not in routes:
            routes.add((origin, destination))
    for origin, destination in sorted(routes):
        for a, b in ((origin, destination), (destination, origin)):
            number = ids.new(lambda r: f"HAT{r.randint(200, 399):03d}")
            depart = rng.randrange(5 * 60, 22 * 60, 15)
            arrive = depart + rng.randrange(60, 6 * 60, 5)
            flights[number] = _flight(rng, number, a, b, depart, arrive)
    return flights


def _generate_users(rng: random.Random, ids: _Ids) -> dict[str, Doc]:
    users: dict[str, Doc] = {}
    for first, last in rng.sample([(f, la) for f in _FIRST for la in _LAST], GENERATED_USERS):
        user_id = ids.new(lambda r, f=first, la=last: f"{f.lower()}_{la.lower()}_{r.randint(1000, 9999)}")
        methods: list[Doc] = []
        for source in rng.sample(["credit_card", "gift_card", "certificate"], rng.randint(1, 3)):
            payment_id = ids.new(lambda r, s=source: f"{s}_{r.randint(1_000_000, 9_999_999)}")
            if source == "credit_card":
                methods.append(_card(payment_id, rng.choice(["visa", "mastercard", "amex"]),
                                     f"{rng.randint(0, 9999):04d}"))
            else:
                methods.append(_stored(payment_id, source, rng.choice([50, 100, 150, 250, 500])
                                       if source == "certificate" else rng.randint(0, 300)))
        city, state, zip_prefix = rng.choice(_CITIES)
        dob = f"{rng.randint(1950, 2002)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        saved = [_person(rng.choice(_FIRST), rng.choice(_LAST), f"{rng.randint(1950, 2015)}-0{rng.randint(1, 9)}-1"
                         f"{rng.randint(0, 9)}") for _ in range(rng.randint(0, 2))]
        address2 = rng.choice([None, f"Apt {rng.randint(1, 40)}"])
        users[user_id] = _user(user_id, first, last, rng.choice(["regular", "silver", "gold"]), dob,
                               _address(f"{rng.randint(1, 999)} {rng.choice(_STREETS)}", address2, city, state,
                                        f"{zip_prefix}{rng.randint(0, 999):03d}"),
                               methods, saved, [])
        users[user_id]["email"] = f"{first.lower()}.{last.lower()}{rng.randint(10, 99)}@example.com"
    return users


def _generate_reservations(rng: random.Random, ids: _Ids, flights: dict[str, Doc],
                           users: dict[str, Doc]) -> dict[str, Doc]:
    by_route = {(f["origin"], f["destination"]): f for f in flights.values()}
    reservations: dict[str, Doc] = {}
    buyers = sorted(users)
    returnable = sorted(k for k, f in flights.items() if (f["destination"], f["origin"]) in by_route)
    for _ in range(GENERATED_RESERVATIONS):
        user = users[rng.choice(buyers)]
        outbound = flights[rng.choice(returnable)]
        first_day = rng.randint(3, 27)
        legs = [(outbound, DATES[first_day].isoformat())]
        flight_type = rng.choice(["one_way", "round_trip"])
        if flight_type == "round_trip":
            back = by_route[(outbound["destination"], outbound["origin"])]
            legs.append((back, DATES[min(29, first_day + rng.randint(1, 5))].isoformat()))
        people = [_person(user["name"]["first_name"], user["name"]["last_name"], user["dob"])]
        people += [_person(rng.choice(_FIRST), rng.choice(_LAST), f"{rng.randint(1950, 2015)}-0{rng.randint(1, 9)}-2"
                           f"{rng.randint(0, 8)}") for _ in range(rng.choice([0, 0, 1, 2]))]
        usable = [m for m in user["payment_methods"].values() if m["source"] != "certificate"] or \
            list(user["payment_methods"].values())
        created = date.fromisoformat(legs[0][1]) - timedelta(days=rng.randint(1, 12))
        created = min(created, TODAY - timedelta(days=1))
        code = ids.new(_reservation_code)
        record = _reservation(code, user, flight_type, rng.choice(CABINS), legs, people,
                              rng.choice(usable)["id"],
                              f"{created.isoformat()}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                              f"{rng.randint(0, 59):02d}", rng.choice(["yes", "no"]), rng.randint(0, 3))
        reservations[code] = record
        user["reservations"].append(code)
    return reservations


def _reserved(story: Doc) -> set[str]:
    ids: set[str] = set(story["flights"]) | set(story["users"]) | set(story["reservations"])
    for user in story["users"].values():
        ids |= set(user["payment_methods"])
    return ids


def generate() -> Doc:
    """The full seed in tau2 `db.json` layout. Same output on every run and platform."""
    rng = random.Random(SEED)
    story = story_records(random.Random(SEED + 1))  # its own stream: filler changes never move story data
    ids = _Ids(rng, _reserved(story))
    flights = story["flights"] | _generate_flights(rng, ids)
    generated_users = _generate_users(rng, ids)
    reservations = story["reservations"] | _generate_reservations(rng, ids, flights, generated_users)
    return {"flights": flights, "users": story["users"] | generated_users, "reservations": reservations}


def render(data: Doc) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(generate())
    if "--check" in argv:
        same = SEED_FILE.exists() and SEED_FILE.read_text(encoding="utf-8") == text
        print("seed.json is up to date" if same else "seed.json differs from the generator")
        return 0 if same else 1
    SEED_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {SEED_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
