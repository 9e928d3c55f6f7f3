"""tau2-bench retail tasks as `ledgeragent check` trajectories: the gold actions plus a careful agent's reads.

tau2's gold action lists often write without the reads that justify the write (API.md §11): most tasks
numbered 70 and above are bare writes. A gate that asks "what did you observe?" would rightly refuse those,
so a trajectory here is what a careful agent does around the same gold writes:

1. authenticate the customer who owns the task's orders (find_user_id_by_email with the email from
   db.json: the agent asks the customer for it), then read the profile (get_user_details);
2. every gold action in its original order: reads and generic calls are kept as they are;
3. before each gold write, the reads that write's predicates need: the profile again when a write since
   the last read may have changed it, the order (always re-read: its status may have moved), and the
   product of every item touched, old and new (products never change, so each is read once).

Each line is `{"name", "arguments", "expect"?, "note"}`, the `ledgeragent check` JSONL format. Gold writes
expect ALLOW unless the caller names them as expected refusals; gold reads expect ALLOW unless tau2's own
tool would fail on them (then no expectation: the verdict is ERROR and that is fine). The `note` says where
the line comes from: "gold <action_id>" for gold actions, "careful read before <action_id>" otherwise.

Everything is built from the task and the raw db.json alone; nothing here runs a backend.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.tools import ToolKind
from domains.retail import DOMAIN
from tests.support.upstream import TAU2_RETAIL

TASKS_PATH = TAU2_RETAIL / "tasks.json"
DB_PATH = TAU2_RETAIL / "db.json"

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
    """The raw tau2 db.json (not normalised): enough to find owners, emails and item -> product."""
    db: DB = json.loads(path.read_text(encoding="utf-8"))
    return db


def gold_actions(task: Task) -> list[dict[str, Any]]:
    criteria = task.get("evaluation_criteria") or {}
    return list(criteria.get("actions") or [])


def gold_writes(task: Task) -> list[dict[str, Any]]:
    return [a for a in gold_actions(task) if a["name"] in WRITE_TOOLS]


def item_products(db: DB) -> dict[str, str]:
    """item_id -> product_id over every variant of every product."""
    return {item_id: pid for pid, product in db["products"].items() for item_id in product["variants"]}


def _lookup_user(db: DB, name: str, args: Mapping[str, Any]) -> str | None:
    users: Mapping[str, Any] = db["users"]
    if name == "find_user_id_by_email":
        email = str(args.get("email", "")).lower()
        return next((uid for uid, u in users.items() if u["email"].lower() == email), None)
    if name == "find_user_id_by_name_zip":
        key = (str(args.get("first_name", "")).lower(), str(args.get("last_name", "")).lower(), args.get("zip"))
        return next((uid for uid, u in users.items()
                     if (u["name"]["first_name"].lower(), u["name"]["last_name"].lower(), u["address"]["zip"])
                     == key), None)
    return None


def _user_from_instructions(task: Task, db: DB) -> str | None:
    """For tasks whose gold actions name nobody (e.g. a bare transfer): match "First Last" and the zip in
    the scenario's known info, as the agent would with find_user_id_by_name_zip."""
    instructions = (task.get("user_scenario") or {}).get("instructions")
    text = json.dumps(instructions) if not isinstance(instructions, str) else instructions
    zips = set(re.findall(r"\b\d{5}\b", text))
    hits = [uid for uid, u in db["users"].items()
            if f"{u['name']['first_name']} {u['name']['last_name']}".lower() in text.lower()
            and u["address"]["zip"] in zips]
    return hits[0] if len(hits) == 1 else None


def task_customer(task: Task, db: DB) -> str | None:
    """The customer of a task: the owner of the first order or user a gold action names, else the user a
    gold lookup finds, else the one the scenario describes. None when nothing identifies anybody."""
    for action in gold_actions(task):
        args = action["arguments"]
        order = db["orders"].get(args.get("order_id", ""))
        if order is not None:
            return str(order["user_id"])
        if args.get("user_id") in db["users"]:
            return str(args["user_id"])
        found = _lookup_user(db, action["name"], args)
        if found is not None:
            return found
    return _user_from_instructions(task, db)


def read_would_fail(db: DB, name: str, args: Mapping[str, Any]) -> bool:
    """Whether tau2's own read tool raises on these arguments ("not found" and the like)."""
    if name in ("find_user_id_by_email", "find_user_id_by_name_zip"):
        return _lookup_user(db, name, args) is None
    if name == "get_user_details":
        return args.get("user_id") not in db["users"]
    if name == "get_order_details":
        return args.get("order_id") not in db["orders"]
    if name == "get_product_details":
        return args.get("product_id") not in db["products"]
    if name == "get_item_details":
        return args.get("item_id") not in item_products(db)
    return False


def _line(name: str, arguments: Mapping[str, Any], expect: str | None, note: str) -> Line:
    line: Line = {"name": name, "arguments": dict(arguments)}
    if expect is not None:
        line["expect"] = expect
    line["note"] = note
    return line


def build_trajectory(task: Task, db: DB, *, expected_refusals: Mapping[str, str] | None = None) -> list[Line]:
    """The careful trajectory of one task. `expected_refusals` maps a gold write's action_id to the verdict
    it should get instead of ALLOW (a write tau2's own tool refuses too)."""
    refusals = dict(expected_refusals or {})
    products_of = item_products(db)
    customer = task_customer(task, db)
    lines: list[Line] = []
    profile_fresh = False
    fresh_orders: set[str] = set()
    products_read: set[str] = set()

    def read(name: str, arguments: Mapping[str, Any], note: str) -> None:
        lines.append(_line(name, arguments, "ALLOW", note))

    if customer is not None:
        email = db["users"][customer]["email"]
        read("find_user_id_by_email", {"email": email}, "authenticate the customer first")
        read("get_user_details", {"user_id": customer}, "the customer's profile")
        profile_fresh = True

    for action in gold_actions(task):
        name, args, action_id = action["name"], action["arguments"], action["action_id"]
        if name not in WRITE_TOOLS:
            fails = DOMAIN.kind_of(name) is ToolKind.READ and read_would_fail(db, name, args)
            lines.append(_line(name, args, None if fails else "ALLOW", GOLD_NOTE + action_id))
            if not fails and name == "get_user_details" and args.get("user_id") == customer:
                profile_fresh = True
            if not fails and name == "get_order_details":
                fresh_orders.add(args["order_id"])
            if not fails and name == "get_product_details":
                products_read.add(args["product_id"])
            continue
        note = READ_NOTE + action_id
        if customer is not None and not profile_fresh:
            read("get_user_details", {"user_id": customer}, note)
            profile_fresh = True
        order_id = args.get("order_id")
        if order_id is not None and order_id not in fresh_orders:
            read("get_order_details", {"order_id": order_id}, note)
        touched = [*args.get("item_ids", []), *args.get("new_item_ids", [])]
        for product_id in dict.fromkeys(products_of[i] for i in touched if i in products_of):
            if product_id not in products_read:
                read("get_product_details", {"product_id": product_id}, note)
                products_read.add(product_id)
        lines.append(_line(name, args, refusals.get(action_id, "ALLOW"), GOLD_NOTE + action_id))
        # A careful agent trusts nothing it read about orders or the profile once something was written.
        profile_fresh = False
        fresh_orders.clear()
    return lines


def gold_write_lines(lines: Iterable[Line]) -> dict[int, str]:
    """Position in the trajectory -> action_id, for the gold writes."""
    return {index: line["note"].removeprefix(GOLD_NOTE) for index, line in enumerate(lines)
            if line["name"] in WRITE_TOOLS and line.get("note", "").startswith(GOLD_NOTE)}
