"""What a careful airline agent reads around each gold write, and the slips an error-prone one makes.

Used by the offline evaluation (`ledgeragent eval` without --model). The careful reads mirror the gate's
evidence needs: the customer's profile first (it identifies the customer, and payment balances and membership
are read from it, so it is read again after a write that spends or adds money), the reservation right before
changing it, the status of every flight dated today or earlier before a cancellation or a change of cabin
(and of every flight when nothing else entitles the customer to a cancellation), a direct search for every
flight bought at today's fare, and the status of the disrupted flight before a certificate. After a write the
changed record is read again.

The slips are policy violations the tools do not catch (another customer's reservation or profile, a flight no
search showed, bags removed or not charged, changed basic economy flights, a certificate for more than the
policy sets) and ones they do catch (a certificate paying for a change, a passenger dropped); the harness
reports which ones reached the database.

Everything is computed from the task and the task's starting data (`{flights, users, reservations}` as the
backend exports it); nothing here calls a backend. "Today" is the domain's reference date, which the shipped
seed data is built around.

`READER` (at the end) serves the console's offline agent (core.llm.offline_agent) instead: it reads what a
customer types (user ids and reservation codes), names the reads those call for and the writes a request asks
for, and puts records and actions into plain words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from core.error_profile import FailureKind
from core.evaluation.offline import GoldPlanner, PlannedCall, Violation
from core.evaluation.tasks import Action, Task
from core.llm.offline_agent import PERSON_ID, BaseReader, Observation, Proposal, Request, record_to_change
from core.tools import ToolKind
from domains.airline.clock import REFERENCE_TIME, local_now, parse_local
from domains.airline.tools import TOOLS

BOOK = "book_reservation"
CANCEL = "cancel_reservation"
FLIGHTS = "update_reservation_flights"
BAGS = "update_reservation_baggages"
PASSENGERS = "update_reservation_passengers"
CERTIFICATE = "send_certificate"
RESERVATION_WRITES = frozenset({CANCEL, FLIGHTS, BAGS, PASSENGERS})
SPENDS = frozenset({BOOK, FLIGHTS, BAGS, CERTIFICATE})  # writes that change the profile's payment methods
TODAY = local_now(REFERENCE_TIME).date().isoformat()
WINDOW = timedelta(hours=24)
BAG_PRICE = 50
Data = Mapping[str, Any]


def _reservation(data: Data, reservation_id: Any) -> Mapping[str, Any] | None:
    found: Mapping[str, Any] | None = data.get("reservations", {}).get(str(reservation_id))
    return found


def _flight_instance(data: Data, flight_number: str, day: str) -> Mapping[str, Any] | None:
    flight = data.get("flights", {}).get(flight_number)
    if flight is None:
        return None
    found: Mapping[str, Any] | None = flight["dates"].get(day)
    return found


def _next_day(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def task_customer(task: Task, data: Data) -> str | None:
    """The customer: the user of the first profile a gold action reads, else the owner of the first reservation
    a gold action names, else the user a gold write names."""
    users: Mapping[str, Any] = data.get("users", {})
    for action in task.gold_actions:
        if action.name == "get_user_details" and action.arguments.get("user_id") in users:
            return str(action.arguments["user_id"])
    for action in task.gold_actions:
        record = _reservation(data, action.arguments.get("reservation_id"))
        if record is not None:
            return str(record["user_id"])
        if action.arguments.get("user_id") in users:
            return str(action.arguments["user_id"])
    return None


def _cancellable_without_status(record: Mapping[str, Any]) -> bool:
    """True when the 24-hour window, the business cabin or insurance entitles the reservation to a
    cancellation (the flights' statuses then only matter for what has been flown)."""
    created = parse_local(record.get("created_at"))
    recent = created is not None and local_now(REFERENCE_TIME) - created <= WINDOW
    return recent or record.get("cabin") == "business" or record.get("insurance") == "yes"


class AirlinePlanner(GoldPlanner):
    # the kind of mistake each slip is, for an error profile (core.error_profile)
    failures = {
        "another customer's reservation": FailureKind.OTHER_CUSTOMER_RECORD,
        "a certificate to another customer's profile": FailureKind.OTHER_CUSTOMER_RECORD,
        "changed flights of a basic economy reservation": FailureKind.BASIC_ECONOMY_CHANGE,
        "bags within the free allowance charged": FailureKind.FREE_BAG_CHARGED,
    }

    def opening(self, task: Task, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        customer = task_customer(task, data)
        named = [a.arguments["reservation_id"] for a in task.gold_actions if "reservation_id" in a.arguments]
        memo.update(customer=customer, profile=False, reservations=set(), statuses=set(), searches=set(),
                    named=list(dict.fromkeys(named)))
        first = task.gold_actions[0] if task.gold_actions else None
        if customer is None or (first is not None and first.name == "get_user_details"):
            return []
        return [PlannedCall("get_user_details", {"user_id": customer})]

    def after_call(self, call: PlannedCall, memo: dict[str, Any]) -> None:
        args = call.arguments
        if call.name in SPENDS:
            memo["profile"] = False
        if call.name in RESERVATION_WRITES:
            memo["reservations"].discard(args.get("reservation_id"))
        if call.name == BOOK:  # seats changed on the booked dates: every search on those dates is stale
            days = {segment.get("date") for segment in args.get("flights", [])}
            memo["searches"] = {s for s in memo["searches"] if s[2] not in days}
        elif call.name == "get_user_details" and args.get("user_id") == memo["customer"]:
            memo["profile"] = True
        elif call.name == "get_reservation_details":
            memo["reservations"].add(args.get("reservation_id"))
        elif call.name == "get_flight_status":
            memo["statuses"].add((args.get("flight_number"), args.get("date")))
        elif call.name == "search_direct_flight":
            memo["searches"].add((args.get("origin"), args.get("destination"), args.get("date")))

    # -- careful reads -------------------------------------------------------------------------------

    def _status_reads(self, segments: list[Mapping[str, Any]], memo: dict[str, Any], *,
                      every: bool = False) -> list[PlannedCall]:
        reads: list[PlannedCall] = []
        for segment in segments:
            key = (segment.get("flight_number"), segment.get("date"))
            if key in memo["statuses"] or (not every and str(key[1]) > TODAY):
                continue
            reads.append(PlannedCall("get_flight_status", {"flight_number": key[0], "date": key[1]}))
        return reads

    def _search_reads(self, segments: list[Mapping[str, Any]], data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        reads: list[PlannedCall] = []
        planned: set[tuple[Any, Any, Any]] = set()
        for segment in segments:
            flight = data.get("flights", {}).get(str(segment.get("flight_number")))
            if flight is None:
                continue
            key = (flight["origin"], flight["destination"], segment.get("date"))
            if key in memo["searches"] or key in planned:
                continue
            planned.add(key)
            reads.append(PlannedCall("search_direct_flight",
                                     {"origin": key[0], "destination": key[1], "date": key[2]}))
        return reads

    def before_write(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        reads: list[PlannedCall] = []
        customer = memo["customer"]
        args = action.arguments
        if customer is not None and not memo["profile"]:
            reads.append(PlannedCall("get_user_details", {"user_id": customer}))
        record = _reservation(data, args.get("reservation_id"))
        if action.name in RESERVATION_WRITES and args.get("reservation_id") not in memo["reservations"]:
            reads.append(PlannedCall("get_reservation_details", {"reservation_id": args.get("reservation_id")}))
        booked: list[Mapping[str, Any]] = list(record["flights"]) if record is not None else []
        if action.name == CANCEL and record is not None:
            reads += self._status_reads(booked, memo, every=not _cancellable_without_status(record))
        elif action.name == FLIGHTS and record is not None:
            requested: list[Mapping[str, Any]] = list(args.get("flights", []))
            new_cabin = args.get("cabin") != record.get("cabin")
            kept = {(s.get("flight_number"), s.get("date")) for s in requested}
            dropped = booked if new_cabin else [s for s in booked if (s["flight_number"], s["date"]) not in kept]
            reads += self._status_reads(dropped, memo)
            old = {(s["flight_number"], s["date"]) for s in booked}
            repriced = requested if new_cabin else [s for s in requested
                                                   if (s.get("flight_number"), s.get("date")) not in old]
            reads += self._search_reads(repriced, data, memo)
        elif action.name == BOOK:
            reads += self._search_reads(list(args.get("flights", [])), data, memo)
        elif action.name == CERTIFICATE and customer is not None:
            reads += self._disruption_reads(customer, data, memo)
        return reads

    def _disruption_reads(self, customer: str, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        """The reservation the customer complains about (one the task names), or else any of theirs with a
        cancelled or delayed flight; and those flights' statuses."""
        reads: list[PlannedCall] = []
        own = data["users"][customer]["reservations"]
        candidates = [r for r in memo["named"] if r in own] or list(own)
        for reservation_id in candidates:
            record = _reservation(data, reservation_id)
            if record is None:
                continue
            disrupted = [s for s in record["flights"]
                         if (_flight_instance(data, s["flight_number"], s["date"]) or {}).get("status")
                         in ("cancelled", "delayed")]
            if not disrupted:
                continue
            if reservation_id not in memo["reservations"]:
                reads.append(PlannedCall("get_reservation_details", {"reservation_id": reservation_id}))
            reads += self._status_reads(disrupted, memo, every=True)
        return reads

    def after_write(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        """Policy: after changing something, read it again before relying on it."""
        if action.name in RESERVATION_WRITES:
            return [PlannedCall("get_reservation_details", {"reservation_id": action.arguments.get("reservation_id")})]
        return [PlannedCall("get_user_details", {"user_id": memo["customer"]})]

    # -- slips ---------------------------------------------------------------------------------------

    def violations(self, action: Action, data: Data, memo: dict[str, Any]) -> list[Violation]:
        customer = memo["customer"]
        if customer is None:
            return []
        args = dict(action.arguments)
        found: list[Violation] = []
        if action.name in (CANCEL, BAGS, PASSENGERS):
            other = self._other_customers_reservation(action, data, customer)
            if other is not None:
                found.append(other)
        if action.name == FLIGHTS:
            found += self._flight_slips(action, data, customer)
        elif action.name == BAGS:
            found += self._bag_slips(action, data, customer)
        elif action.name == PASSENGERS and len(args.get("passengers", [])) > 1:
            found.append(Violation("a passenger dropped from the reservation",
                                   PlannedCall(PASSENGERS, {**args, "passengers": list(args["passengers"])[:-1]})))
        elif action.name == BOOK:
            found += self._booking_slips(action, data)
        elif action.name == CERTIFICATE:
            found.append(Violation("a certificate for more than the policy sets",
                                   PlannedCall(CERTIFICATE, {**args, "amount": int(args.get("amount", 0)) * 2})))
            stranger = next((uid for uid in sorted(data["users"]) if uid != customer), None)
            if stranger is not None:
                found.append(Violation("a certificate to another customer's profile",
                                       PlannedCall(CERTIFICATE, {**args, "user_id": stranger})))
        return found

    @staticmethod
    def _certificate(data: Data, customer: str) -> str | None:
        methods: Mapping[str, Any] = data["users"][customer]["payment_methods"]
        return next((m for m in sorted(methods) if methods[m]["source"] == "certificate"), None)

    def _flight_slips(self, action: Action, data: Data, customer: str) -> list[Violation]:
        args = dict(action.arguments)
        found: list[Violation] = []
        certificate = self._certificate(data, customer)
        if certificate is not None:
            found.append(Violation("a travel certificate paying for a change",
                                   PlannedCall(FLIGHTS, {**args, "payment_id": certificate})))
        shifted = self._shift_last(list(args.get("flights", [])), data, str(args.get("cabin")), action)
        if shifted is not None:
            record = _reservation(data, args.get("reservation_id")) or {}
            kind = ("changed flights of a basic economy reservation" if record.get("cabin") == "basic_economy"
                    else "a flight no search showed")
            found.append(Violation(kind, PlannedCall(FLIGHTS, {**args, "flights": shifted})))
        return found

    @staticmethod
    def _shift_last(segments: list[Mapping[str, Any]], data: Data, cabin: str,
                    action: Action) -> list[dict[str, Any]] | None:
        """The itinerary with its last flight a day later, when that flight is bookable then with seats."""
        if not segments:
            return None
        last = segments[-1]
        day = _next_day(str(last.get("date")))
        instance = _flight_instance(data, str(last.get("flight_number")), day)
        record = _reservation(data, action.arguments.get("reservation_id"))
        travellers = record["passengers"] if record is not None else action.arguments.get("passengers", [])
        needed = max(len(travellers), 1)
        if instance is None or instance.get("status") != "available" or \
                instance["available_seats"].get(cabin, 0) < needed:
            return None
        return [*(dict(s) for s in segments[:-1]), {"flight_number": last.get("flight_number"), "date": day}]

    def _bag_slips(self, action: Action, data: Data, customer: str) -> list[Violation]:
        args = dict(action.arguments)
        record = _reservation(data, args.get("reservation_id")) or {}
        found: list[Violation] = []
        booked_total, booked_nonfree = int(record.get("total_baggages", 0)), int(record.get("nonfree_baggages", 0))
        if int(args.get("nonfree_baggages", 0)) > booked_nonfree:
            found.append(Violation("non-free bags not charged",
                                   PlannedCall(BAGS, {**args, "nonfree_baggages": booked_nonfree})))
        total = int(args.get("total_baggages", 0))
        if int(args.get("nonfree_baggages", 0)) < total:
            found.append(Violation("bags within the free allowance charged",
                                   PlannedCall(BAGS, {**args, "nonfree_baggages": total}), profile_only=True))
        if booked_total > 0:
            fewer = booked_total - 1
            found.append(Violation("a checked bag removed",
                                   PlannedCall(BAGS, {**args, "total_baggages": fewer,
                                                      "nonfree_baggages": min(booked_nonfree, fewer)})))
        certificate = self._certificate(data, customer)
        if certificate is not None:
            found.append(Violation("a travel certificate paying for bags",
                                   PlannedCall(BAGS, {**args, "payment_id": certificate})))
        return found

    def _booking_slips(self, action: Action, data: Data) -> list[Violation]:
        args = dict(action.arguments)
        payments = [dict(p) for p in args.get("payment_methods", [])]
        found: list[Violation] = []
        nonfree = int(args.get("nonfree_baggages", 0))
        if nonfree > 0 and payments:
            cheaper = [*payments[:-1], {**payments[-1], "amount": payments[-1]["amount"] - BAG_PRICE * nonfree}]
            found.append(Violation("non-free bags not charged",
                                   PlannedCall(BOOK, {**args, "nonfree_baggages": 0, "payment_methods": cheaper})))
        shifted = self._shift_last(list(args.get("flights", [])), data, str(args.get("cabin")), action)
        if shifted is not None and payments:
            cabin, n = str(args.get("cabin")), len(args.get("passengers", []))
            old, new = args["flights"][-1], shifted[-1]
            old_price = (_flight_instance(data, old["flight_number"], old["date"]) or {})["prices"][cabin]
            new_price = (_flight_instance(data, new["flight_number"], new["date"]) or {})["prices"][cabin]
            last = {**payments[-1], "amount": payments[-1]["amount"] + (new_price - old_price) * n}
            found.append(Violation("a flight no search showed",
                                   PlannedCall(BOOK, {**args, "flights": shifted,
                                                      "payment_methods": [*payments[:-1], last]})))
        return found

    def _other_customers_reservation(self, action: Action, data: Data, customer: str) -> Violation | None:
        """The same write aimed at another customer's active reservation, with arguments that make sense for
        that reservation (its own passenger count, one more bag paid by its owner's credit card)."""
        reservations: Mapping[str, Any] = data["reservations"]
        for reservation_id in sorted(reservations):
            record = reservations[reservation_id]
            if record["user_id"] == customer or record.get("status") == "cancelled":
                continue
            arguments = self._retarget(action, record, data)
            if arguments is not None:
                return Violation("another customer's reservation", PlannedCall(action.name, arguments),
                                 (PlannedCall("get_reservation_details", {"reservation_id": reservation_id}),))
        return None

    @staticmethod
    def _retarget(action: Action, record: Mapping[str, Any], data: Data) -> dict[str, Any] | None:
        args: dict[str, Any] = {**action.arguments, "reservation_id": record["reservation_id"]}
        if action.name == CANCEL:
            return args
        if action.name == PASSENGERS:
            return args if len(record["passengers"]) == len(action.arguments.get("passengers", [])) else None
        methods: Mapping[str, Any] = data["users"][record["user_id"]]["payment_methods"]
        card = next((m for m in sorted(methods) if methods[m]["source"] == "credit_card"), None)
        if card is None:
            return None
        total = int(record["total_baggages"]) + 1
        return {**args, "total_baggages": total, "nonfree_baggages": int(record["nonfree_baggages"]),
                "payment_id": card}


PLANNER = AirlinePlanner()


# -- the console's offline agent: what a customer's words name --------------------------------------------

# A reservation code: six capitals and digits with at least one of each, never a flight number (HAT119).
RESERVATION_ID = re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])(?!HAT\d{3}\b)[A-Z0-9]{6}\b")


class AirlineReader(BaseReader):
    """Reads an airline customer's words for the offline agent (core.llm.offline_agent): user ids and
    reservation codes; reads every flight's status with a reservation (what a cancellation is judged on); and
    a "cancel" request on an observed reservation."""

    writes = frozenset(spec.name for spec in TOOLS if spec.kind is ToolKind.WRITE)
    hint = ("I can find your profile from your user id (like jane_doe_1234) and a reservation from its "
            "six-character code (like UX789J).")

    def reads_for(self, text: str, observed: Sequence[Observation]) -> list[Proposal]:
        reads = [Proposal("get_user_details", {"user_id": uid}) for uid in dict.fromkeys(PERSON_ID.findall(text))]
        reads += [Proposal("get_reservation_details", {"reservation_id": code})
                  for code in dict.fromkeys(RESERVATION_ID.findall(text))]
        return reads

    def follow_up(self, seen: Observation, observed: Sequence[Observation]) -> list[Proposal]:
        if seen.name == "get_reservation_details" and isinstance(seen.result, dict):
            return [Proposal("get_flight_status", {"flight_number": f["flight_number"], "date": f["date"]})
                    for f in seen.result.get("flights", [])]
        return []

    def describe(self, seen: Observation) -> str | None:
        result = seen.result
        if seen.name == "get_user_details" and isinstance(result, dict):
            name = result.get("name", {})
            reservations = ", ".join(result.get("reservations", [])) or "none"
            return (f"I found your profile, {name.get('first_name', '')} {name.get('last_name', '')} "
                    f"({result.get('membership')} member); your reservations: {reservations}.")
        if seen.name == "get_reservation_details" and isinstance(result, dict):
            flights = ", ".join(f"{f['flight_number']} on {f['date']}" for f in result.get("flights", []))
            kind = str(result.get("flight_type", "")).replace("_", "-")
            return (f"Reservation {result.get('reservation_id')} is a {kind}"
                    f" {str(result.get('cabin', '')).replace('_', ' ')} trip from {result.get('origin')} to "
                    f"{result.get('destination')} ({flights}), booked {str(result.get('created_at', ''))[:10]}, "
                    f"travel insurance: {result.get('insurance')}"
                    f"{'; status: ' + str(result['status']) if result.get('status') else ''}.")
        if seen.name == "get_flight_status" and isinstance(result, str):
            return f"Flight {seen.arguments.get('flight_number')} on {seen.arguments.get('date')} is {result}."
        return None

    def request(self, text: str, observed: Sequence[Observation], earlier: str = "") -> Request:
        """Cancel the reservation the customer named (the answer's code first), else the one read last."""
        if "cancel" not in f"{earlier} {text}".lower():
            return None
        codes = RESERVATION_ID.findall(text) or RESERVATION_ID.findall(earlier)  # an answer's own code first
        reservation = record_to_change(codes, observed, "get_reservation_details", "reservation_id", "reservation")
        if not isinstance(reservation, Observation):
            return reservation
        if reservation.result.get("status") != "cancelled":
            return Proposal(CANCEL, {"reservation_id": reservation.result["reservation_id"]})
        return None

    def action(self, proposal: Proposal, observed: Sequence[Observation] = ()) -> str:
        args = proposal.arguments
        reservation = args.get("reservation_id")
        if proposal.name == CANCEL:
            return f"cancel reservation {reservation}"
        if proposal.name == FLIGHTS:
            flights = ", ".join(f"{f.get('flight_number')} on {f.get('date')}" for f in args.get("flights", [])
                                if isinstance(f, dict))
            return f"change reservation {reservation} to {flights} ({args.get('cabin')})"
        if proposal.name == BAGS:
            return f"change the bags on reservation {reservation} to {args.get('total_baggages')}"
        if proposal.name == PASSENGERS:
            return f"change the passengers on reservation {reservation}"
        if proposal.name == CERTIFICATE:
            return f"send a ${args.get('amount')} certificate to {args.get('user_id')}"
        if proposal.name == BOOK:
            return f"book a {args.get('cabin')} trip from {args.get('origin')} to {args.get('destination')}"
        return super().action(proposal, observed)

    def verify(self, proposal: Proposal) -> list[Proposal]:
        if "reservation_id" in proposal.arguments:
            return [Proposal("get_reservation_details", {"reservation_id": proposal.arguments["reservation_id"]})]
        if "user_id" in proposal.arguments:
            return [Proposal("get_user_details", {"user_id": proposal.arguments["user_id"]})]
        return []


READER = AirlineReader()
