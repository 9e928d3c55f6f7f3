"""tau2-bench airline tasks as `ledgeragent check` trajectories: the gold actions plus a careful agent's reads.

tau2's gold action lists often write without the reads that justify the write (API.md §11: 14 of the 26
airline tasks with writes). A gate that asks "what did you observe?" would rightly refuse those, so a
trajectory here is what a careful agent does around the same gold writes:

1. read the profile of the user the task's customer says they are (`get_user_details`: airline has no
   lookup tool, the customer gives their id), which makes them the customer for the conversation;
2. every gold action in its original order: reads and generic calls are kept as they are;
3. before each gold write, the reads that write's predicates need: the profile again when a write since the
   last read may have changed it; the reservation (always re-read: an earlier write may have changed it);
   the status of each of its flights dated today or earlier (have they flown?), and of every flight of a
   reservation being cancelled (did the airline cancel one?); and, for every flight the write books or
   switches to, a direct search of that flight's route and date, which is where its seats and fare are seen
   (re-done after a booking, which changes seat counts).

Each line is `{"name", "arguments", "expect"?, "note"}`, the `ledgeragent check` JSONL format. Gold writes
expect ALLOW unless the caller names them as expected refusals; gold reads expect ALLOW unless tau2's own
tool would fail on them. The `note` says where the line comes from: "gold <action_id>" for gold actions,
"careful read before <action_id>" otherwise.

Everything is built from the task and the raw db.json alone; nothing here runs a backend. Flight routes
and statuses never change during a task, so the raw file is enough to know what to read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.tools import ToolKind
from domains.airline import DOMAIN
from tests.support.upstream import TAU2_AIRLINE

TASKS_PATH = TAU2_AIRLINE / "tasks.json"
DB_PATH = TAU2_AIRLINE / "db.json"
TODAY = "2024-05-15"

WRITE_TOOLS = frozenset(t.name for t in DOMAIN.tools if t.kind is ToolKind.WRITE)
GOLD_NOTE = "gold "
READ_NOTE = "careful read before "

Line = dict[str, Any]
Task = dict[str, Any]
DB = dict[str, Any]


def shared_present() -> bool:
    return TASKS_PATH.is_file() and DB_PATH.is_file()


def load_tasks(path: Path = TASKS_PATH) -> list[Task]:
    tasks: list[Task] = json.loads(path.read_text(encoding="utf-8"))
    return tasks


def load_db(path: Path = DB_PATH) -> DB:
    """The raw tau2 db.json (not normalised): enough to find owners, routes and statuses."""
    db: DB = json.loads(path.read_text(encoding="utf-8"))
    return db


def gold_actions(task: Task) -> list[dict[str, Any]]:
    criteria = task.get("evaluation_criteria") or {}
    return list(criteria.get("actions") or [])


def gold_writes(task: Task) -> list[dict[str, Any]]:
    return [a for a in gold_actions(task) if a["name"] in WRITE_TOOLS]


def task_customer(task: Task, db: DB) -> str | None:
    """The user id the task's customer gives ("Your user id is ..." in the scenario's known info), else the
    user a gold action names, else the owner of the first reservation a gold action names."""
    instructions = (task.get("user_scenario") or {}).get("instructions") or {}
    known = instructions.get("known_info") if isinstance(instructions, dict) else str(instructions)
    match = re.search(r"user id is\s+([a-z0-9_]+)", str(known or ""), flags=re.IGNORECASE)
    if match and match.group(1) in db["users"]:
        return match.group(1)
    for action in gold_actions(task):
        args = action["arguments"]
        if args.get("user_id") in db["users"]:
            return str(args["user_id"])
        reservation = db["reservations"].get(args.get("reservation_id", ""))
        if reservation is not None:
            return str(reservation["user_id"])
    return None


def read_would_fail(db: DB, name: str, args: Mapping[str, Any]) -> bool:
    """Whether tau2's own read tool raises on these arguments ("not found")."""
    if name == "get_user_details":
        return args.get("user_id") not in db["users"]
    if name == "get_reservation_details":
        return args.get("reservation_id") not in db["reservations"]
    if name == "get_flight_status":
        flight = db["flights"].get(args.get("flight_number", ""))
        return flight is None or args.get("date") not in flight["dates"]
    return False


def _line(name: str, arguments: Mapping[str, Any], expect: str | None, note: str) -> Line:
    line: Line = {"name": name, "arguments": dict(arguments)}
    if expect is not None:
        line["expect"] = expect
    line["note"] = note
    return line


def build_trajectory(task: Task, db: DB, *, expected_refusals: Mapping[str, str] | None = None) -> list[Line]:
    """The careful trajectory of one task. `expected_refusals` maps a gold write's action_id to the verdict
    it should get instead of ALLOW."""
    refusals = dict(expected_refusals or {})
    customer = task_customer(task, db)
    lines: list[Line] = []
    profile_fresh = False
    fresh_reservations: set[str] = set()
    statuses_read: set[tuple[str, str]] = set()
    offers_fresh: set[tuple[str, str]] = set()

    def read(name: str, arguments: Mapping[str, Any], note: str) -> None:
        lines.append(_line(name, arguments, "ALLOW", note))

    def status(number: str, day: str, note: str) -> None:
        if (number, day) not in statuses_read:
            read("get_flight_status", {"flight_number": number, "date": day}, note)
            statuses_read.add((number, day))

    if customer is not None:
        read("get_user_details", {"user_id": customer}, "the customer's profile (the id they give)")
        profile_fresh = True

    for action in gold_actions(task):
        name, args, action_id = action["name"], action["arguments"], action["action_id"]
        if name not in WRITE_TOOLS:
            fails = DOMAIN.kind_of(name) is ToolKind.READ and read_would_fail(db, name, args)
            lines.append(_line(name, args, None if fails else "ALLOW", GOLD_NOTE + action_id))
            if fails:
                continue
            if name == "get_user_details" and args.get("user_id") == customer:
                profile_fresh = True
            elif name == "get_reservation_details":
                fresh_reservations.add(args["reservation_id"])
            elif name == "search_direct_flight":
                offers_fresh |= {(number, args["date"]) for number, flight in db["flights"].items()
                                 if (flight["origin"], flight["destination"]) == (args["origin"], args["destination"])}
            elif name == "get_flight_status":
                statuses_read.add((args["flight_number"], args["date"]))
            continue
        note = READ_NOTE + action_id
        if customer is not None and not profile_fresh:
            read("get_user_details", {"user_id": customer}, note)
            profile_fresh = True
        reservation_id = args.get("reservation_id")
        record = db["reservations"].get(reservation_id) if reservation_id is not None else None
        if reservation_id is not None and reservation_id not in fresh_reservations:
            read("get_reservation_details", {"reservation_id": reservation_id}, note)
            fresh_reservations.add(reservation_id)
        if record is not None and name in ("cancel_reservation", "update_reservation_flights"):
            for flight in record["flights"]:
                if name == "cancel_reservation" or flight["date"] <= TODAY:
                    status(flight["flight_number"], flight["date"], note)
        for segment in args.get("flights", []):
            number, day = segment["flight_number"], segment["date"]
            flight = db["flights"].get(number)
            if flight is None or day not in flight["dates"] or (number, day) in offers_fresh:
                continue
            read("search_direct_flight", {"origin": flight["origin"], "destination": flight["destination"],
                                          "date": day}, note)
            offers_fresh |= {(other, day) for other, f in db["flights"].items()
                             if (f["origin"], f["destination"]) == (flight["origin"], flight["destination"])}
        lines.append(_line(name, args, refusals.get(action_id, "ALLOW"), GOLD_NOTE + action_id))
        # A careful agent trusts nothing it read about reservations or the profile once something was
        # written, nor seat counts after a booking.
        profile_fresh = False
        fresh_reservations.clear()
        if name == "book_reservation":
            offers_fresh.clear()
    return lines


def gold_write_lines(lines: Iterable[Line]) -> dict[int, str]:
    """Position in the trajectory -> action_id, for the gold writes."""
    return {index: line["note"].removeprefix(GOLD_NOTE) for index, line in enumerate(lines)
            if line["name"] in WRITE_TOOLS and line.get("note", "").startswith(GOLD_NOTE)}
