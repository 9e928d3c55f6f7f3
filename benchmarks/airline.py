"""The airline figures: load the full tau2 airline DB, restore, search, and one gate decision.

- load the tau2 airline DB into SQLite, target < 3 s: `open_backend("airline", path, source=db.json)`, what
  `ledgeragent --db db.json` does: read and parse the 3.3 MB file, normalise 300 flights x 30 dates, 500
  users and 2,000 reservations through the tau2 models, create a new SQLite file, bulk-insert, index;
- `restore()`, target < 10 ms: `await backend.restore(snapshot)` after a trial's worth of writes made through
  the real write tools: a booking (seats on three flights, a profile), a cancellation, a flight change, a bag
  change and a certificate;
- `search_direct_flight`, target < 2 ms: `await backend.call("search_direct_flight", ...)`, cycling over every
  route of the DB and ten dates, so no sample asks the same question twice in a row;
- gate decision for `book_reservation`, target < 200 µs: `PolicyGate.evaluate` of tau2 task 14's booking
  (business round trip, 3 flights, 3 passengers, 4 payment methods), all 21 airline predicates enabled, over a
  10,000-record ledger.

Why the gate setup is realistic and a worst reasonable case: the booking is ALLOWed, so every one of the ten
predicates guarding `book_reservation` runs to completion; the ledger holds what the trial reads (the
customer's profile, the searches that showed the three flights) plus ~10,000 other records absorbed the
way a session absorbs them (reservations, profiles, search results and their per-flight entries, flight
statuses), far more than any trial observes; the gate's anti-loop memory is cleared (untimed) before each
sample, so no sample is a replayed verdict.

When tau2's airline db.json is absent (benchmarks.data looks beside the repository) the rows run on our shipped
seed instead (40 flights, 24 users), and say so.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import random
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.timing import MS, US, Result, S, summarise, time_async, time_sync
from core.gate import PolicyGate, Status, Verdict
from core.ledger import Ledger
from core.tools import ToolCall
from domains.airline import DOMAIN
from mock_backends.airline import AirlineBackend, load_seed
from mock_backends.airline.models import normalise
from mock_backends.airline.seed import render
from mock_backends.registry import open_backend

REPO = Path(__file__).resolve().parents[1]
TAU2_AIRLINE_DB = REPO.parent / "shared" / "tau2" / "airline" / "db.json"

LOAD_TARGET_NS = 3 * S
RESTORE_TARGET_NS = 10 * MS
SEARCH_TARGET_NS = 2 * MS
GATE_TARGET_NS = 200 * US
GATE_LEDGER_RECORDS = 10_000

Docs = dict[str, dict[str, Any]]

# tau2 airline task 14's gold booking (action 14_1), valid on the freshly loaded DB.
TAU2_BOOKING: dict[str, Any] = {
    "user_id": "mohamed_silva_9265", "origin": "JFK", "destination": "SFO", "flight_type": "round_trip",
    "cabin": "business",
    "flights": [{"flight_number": "HAT023", "date": "2024-05-26"}, {"flight_number": "HAT204", "date": "2024-05-28"},
                {"flight_number": "HAT100", "date": "2024-05-28"}],
    "passengers": [{"first_name": "Mohamed", "last_name": "Silva", "dob": "1960-11-26"},
                   {"first_name": "Raj", "last_name": "Sanchez", "dob": "1986-09-12"},
                   {"first_name": "Liam", "last_name": "Wilson", "dob": "1980-03-27"}],
    "payment_methods": [{"payment_id": "certificate_3765853", "amount": 500},
                        {"payment_id": "gift_card_8020792", "amount": 198},
                        {"payment_id": "gift_card_6136092", "amount": 129},
                        {"payment_id": "credit_card_2198526", "amount": 1786}],
    "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
}
# The same shape on our seed: Theo books HAT117 out and HAT121 back in economy, certificate + card.
SEED_BOOKING: dict[str, Any] = {
    "user_id": "theo_brennan_3391", "origin": "BOS", "destination": "DEN", "flight_type": "round_trip",
    "cabin": "economy",
    "flights": [{"flight_number": "HAT117", "date": "2024-05-20"}, {"flight_number": "HAT121", "date": "2024-05-24"}],
    "passengers": [{"first_name": "Theo", "last_name": "Brennan", "dob": "1990-06-21"}],
    "payment_methods": [{"payment_id": "certificate_3391003", "amount": 200},
                        {"payment_id": "credit_card_3391001", "amount": 164}],
    "total_baggages": 3, "nonfree_baggages": 0, "insurance": "no",
}


@dataclass(frozen=True)
class AirlineData:
    raw: dict[str, Any]
    docs: Docs
    source: Path | None  # the db.json read, or None for the shipped seed
    booking: dict[str, Any]

    @property
    def label(self) -> str:
        counts = f"{len(self.docs['flights'])} flights, {len(self.docs['reservations'])} reservations"
        if self.source is None:
            return f"SEED DB (no tau2 airline db.json), {counts}"
        return f"tau2 airline db.json, {counts}"


def load_airline_data(path: Path | None = TAU2_AIRLINE_DB) -> AirlineData:
    if path is not None and path.is_file():
        raw = json.loads(path.read_text(encoding="utf-8"))
        return AirlineData(raw, normalise(raw), path, TAU2_BOOKING)
    docs = load_seed()
    return AirlineData(docs, docs, None, SEED_BOOKING)


# ---------------------------------------------------------------------------------------------------
# Store figures.


async def measure_load(data: AirlineData, directory: Path, *, repeat: int, warmup: int) -> Result:
    source = data.source if data.source is not None else directory / "seed-db.json"
    if data.source is None:
        source.write_text(render(data.raw), encoding="utf-8")
    opened: list[Any] = []
    counter = itertools.count()

    async def close_previous() -> None:
        while opened:
            await opened.pop().close()

    async def load() -> None:
        opened.append(await open_backend("airline", directory / f"load-{next(counter)}.sqlite", source=source))

    samples = await time_async(load, repeat=repeat, warmup=warmup, setup=close_previous)
    await close_previous()
    return summarise("airline_load_db", f"airline: load the DB into SQLite (--db db.json) [{data.label}]", samples,
                     LOAD_TARGET_NS, note="read + parse + normalise + new SQLite file + bulk insert + indexes")


def trial_writes(data: AirlineData) -> list[tuple[str, dict[str, Any]]]:
    """A trial's worth of writes that all succeed, in order, on the fresh DB."""
    docs = data.docs
    booking = data.booking

    def card_of(user_id: str) -> str | None:
        methods = docs["users"][user_id]["payment_methods"]
        return next((pid for pid, m in methods.items() if m["source"] == "credit_card"), None)

    changed = next(r for r in docs["reservations"].values() if r["cabin"] != "basic_economy"
                   and r.get("status") is None and card_of(r["user_id"]) is not None)
    card = card_of(changed["user_id"])
    other = next(r for r in docs["reservations"].values() if r["reservation_id"] != changed["reservation_id"])
    return [
        ("book_reservation", copy.deepcopy(booking)),
        ("cancel_reservation", {"reservation_id": other["reservation_id"]}),
        ("update_reservation_flights", {"reservation_id": changed["reservation_id"], "cabin": changed["cabin"],
                                        "flights": [{"flight_number": f["flight_number"], "date": f["date"]}
                                                    for f in changed["flights"]], "payment_id": card}),
        ("update_reservation_baggages", {"reservation_id": changed["reservation_id"],
                                         "total_baggages": changed["total_baggages"] + 1,
                                         "nonfree_baggages": changed["nonfree_baggages"] + 1, "payment_id": card}),
        ("send_certificate", {"user_id": booking["user_id"], "amount": 100}),
    ]


async def measure_restore(backend: AirlineBackend, data: AirlineData, *, repeat: int, warmup: int) -> Result:
    plan = trial_writes(data)
    before = await backend.state_hash()
    snapshot = await backend.snapshot()

    async def writes() -> None:
        for name, arguments in plan:
            await backend.call(name, arguments)

    async def restore() -> None:
        await backend.restore(snapshot)

    samples = await time_async(restore, repeat=repeat, warmup=warmup, setup=writes)
    if await backend.state_hash() != before:
        raise RuntimeError("restore() did not bring back the starting state")
    return summarise("airline_restore", f"airline: restore() after {len(plan)} writes [{data.label}]", samples,
                     RESTORE_TARGET_NS, note=", ".join(name for name, _ in plan))


def search_arguments(data: AirlineData) -> list[dict[str, str]]:
    routes = sorted({(f["origin"], f["destination"]) for f in data.docs["flights"].values()})
    days = [f"2024-05-{day}" for day in range(16, 26)]
    return [{"origin": o, "destination": d, "date": day} for day in days for o, d in routes]


async def measure_search(backend: AirlineBackend, data: AirlineData, *, repeat: int, warmup: int) -> Result:
    arguments: Iterator[dict[str, str]] = itertools.cycle(search_arguments(data))

    async def search() -> None:
        await backend.call("search_direct_flight", next(arguments))

    samples = await time_async(search, repeat=repeat, warmup=warmup)
    return summarise("airline_search_direct_flight", f"airline: search_direct_flight [{data.label}]", samples,
                     SEARCH_TARGET_NS, note=f"cycles over {len(search_arguments(data))} route-dates")


def bench_store(data: AirlineData, *, load_repeat: int = 5, load_warmup: int = 1, restore_repeat: int = 100,
                restore_warmup: int = 5, search_repeat: int = 1000, search_warmup: int = 50) -> list[Result]:
    async def run() -> list[Result]:
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-airline-") as tmp:
            directory = Path(tmp)
            loaded = await measure_load(data, directory, repeat=load_repeat, warmup=load_warmup)
            backend = await AirlineBackend.open(directory / "bench.sqlite", data.raw)
            try:
                restored = await measure_restore(backend, data, repeat=restore_repeat, warmup=restore_warmup)
                searched = await measure_search(backend, data, repeat=search_repeat, warmup=search_warmup)
            finally:
                await backend.close()
            return [loaded, restored, searched]

    return asyncio.run(run())


# ---------------------------------------------------------------------------------------------------
# The gate figure.


def _hits(docs: Docs, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
    """What search_direct_flight returns (built from the docs, as the backend builds it)."""
    hits = []
    for flight in docs["flights"].values():
        instance = flight["dates"].get(date)
        if (flight["origin"], flight["destination"]) == (origin, destination) and instance and \
                instance["status"] == "available":
            hits.append({"flight_number": flight["flight_number"], "origin": origin, "destination": destination,
                         "status": "available", "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                         "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"], "date": None,
                         "available_seats": dict(instance["available_seats"]), "prices": dict(instance["prices"])})
    return hits


def build_gate_ledger(data: AirlineData, size: int = GATE_LEDGER_RECORDS, *, seed: int = 11) -> tuple[Ledger, ToolCall]:
    """A ledger of exactly `size` records: the trial's reads first, then filler absorbed read by read."""
    docs, booking = data.docs, data.booking
    ledger = Ledger(DOMAIN.path_map)
    counter = itertools.count(1)

    def absorb(tool: str, arguments: dict[str, Any], result: Any) -> None:
        number = next(counter)
        outcome = ledger.absorb(ToolCall(f"call_{number}", tool, arguments), copy.deepcopy(result), number)
        if not outcome.touched:
            raise RuntimeError(f"{tool}{arguments} was not absorbed: {outcome.skipped}")

    customer = booking["user_id"]
    absorb("get_user_details", {"user_id": customer}, docs["users"][customer])
    for leg in booking["flights"]:
        flight = docs["flights"][leg["flight_number"]]
        args = {"origin": flight["origin"], "destination": flight["destination"], "date": leg["date"]}
        absorb("search_direct_flight", args, _hits(docs, **args))
    rng = random.Random(seed)
    fillers = _filler(docs, rng, exclude=customer)
    while len(ledger) < size:
        tool, arguments, result = next(fillers)
        if tool == "search_direct_flight" and len(ledger) + 1 + len(result) > size:
            continue
        absorb(tool, arguments, result)
    return ledger, ToolCall("bench-book", "book_reservation", copy.deepcopy(booking))


def _filler(docs: Docs, rng: random.Random, exclude: str) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Reads of other records, round after round; past the DB's size, copies under fresh ids."""
    reservations = list(docs["reservations"].values())
    users = [u for u in docs["users"].values() if u["user_id"] != exclude]
    flights = list(docs["flights"].values())
    routes = sorted({(f["origin"], f["destination"]) for f in flights})
    for round_number in itertools.count():
        suffix = "" if round_number == 0 else f"R{round_number}"
        for record in rng.sample(reservations, len(reservations)):
            copy_ = dict(record, reservation_id=record["reservation_id"] + suffix)
            yield "get_reservation_details", {"reservation_id": copy_["reservation_id"]}, copy_
        for record in rng.sample(users, len(users)):
            copy_ = dict(record, user_id=record["user_id"] + suffix.lower())
            yield "get_user_details", {"user_id": copy_["user_id"]}, copy_
        for origin, destination in routes:
            day = f"2024-05-{rng.randint(16, 30)}"
            yield "search_direct_flight", {"origin": origin + suffix, "destination": destination, "date": day}, \
                _hits(docs, origin, destination, day)
        for flight in flights:
            day = f"2024-05-{rng.randint(1, 15):02d}"
            yield "get_flight_status", {"flight_number": flight["flight_number"] + suffix, "date": day}, \
                flight["dates"][day]["status"]


def bench_gate(data: AirlineData, *, records: int = GATE_LEDGER_RECORDS, repeat: int = 3000,
               warmup: int = 200) -> Result:
    ledger, call = build_gate_ledger(data, records)
    gate = PolicyGate(DOMAIN.predicates, path_map=DOMAIN.path_map)
    decision = gate.evaluate(call, ledger, DOMAIN.context(ledger))
    if decision.verdict is not Verdict.ALLOW:
        raise RuntimeError(f"benchmark booking is not ALLOWed:\n{decision.feedback}")
    ran = [r for r in decision.results if r.status is Status.PASS]

    def decide() -> None:
        gate.evaluate(call, ledger, DOMAIN.context(ledger))

    samples = time_sync(decide, repeat=repeat, warmup=warmup, setup=gate.reset)
    return summarise("airline_gate_book_reservation",
                     f"airline gate: book_reservation, {len(ran)} predicates, {len(ledger):,}-record ledger",
                     samples, GATE_TARGET_NS,
                     note=f"{len(DOMAIN.predicates)} predicates enabled; {len(call.arguments['flights'])} flights, "
                          f"{len(call.arguments['passengers'])} passengers, "
                          f"{len(call.arguments['payment_methods'])} payments; verdict ALLOW")


def run_airline(path: Path | None = TAU2_AIRLINE_DB) -> list[Result]:
    """The four airline rows, in table order: load, restore, search, gate."""
    data = load_airline_data(path)
    return [*bench_store(data), bench_gate(data)]
