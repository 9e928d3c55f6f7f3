"""tau2-bench telecom tasks as `ledgeragent check` trajectories: the gold actions of both sides plus a careful
agent's reads, and the task's setup and end-state checks.

The ten tasks of tau2-bench's data/tau2/domains/telecom/tasks_small.json are dual control: gold actions carry
a requestor, "assistant" (enable_roaming, send_payment_request, resume_line, transfer_to_human_agents) or "user"
(the customer's phone: toggle_roaming, make_payment, reboot_device, ...). None of them reads anything first. A
trajectory here is what a careful agent and a cooperative customer do around the same gold actions:

1. identify the customer by the phone number the task gives the user (`set_user_info`), as the agent asks
   for it: get_customer_by_phone;
2. every gold action in its original order, with its requestor ("user" lines are the customer's phone);
3. before each gold AGENT write, the reads its predicates need, read again every time (simple and always
   fresh, whatever the phone did in between):
   - enable_roaming / disable_roaming: the line (get_details_by_id);
   - send_payment_request: the customer's bills (get_bills_for_customer: the bill's status and "nothing
     awaits payment" in one read);
   - resume_line: the customer's bills (after the customer paid, they are stale) and the line;
   - refuel_data: the line and its plan; suspend_line: the line and the bills;
4. before each gold USER action, the look at the phone a careful agent asks for first (check the payment
   request before paying, the network status before toggling roaming, ...), also a "user" line.

Each line is `{"name", "arguments", "requestor", "expect", "note"}`, the `ledgeragent check` JSONL format. Every
line expects ALLOW (a user line is never gated: ALLOW means it ran). The `note` says where the line comes
from: "gold <action_id>", "careful read before <action_id>", or "customer looks before <action_id>".

The task's `initialization_actions` (its scene: whose phone, what is broken) and `env_assertions` (its
expected end state) are not tool calls; `setup` and `assertions` return them for the backend's
`run_env_function` / `assert_env`. Everything is built from the task alone; nothing here runs a backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from core.tools import Requestor, ToolKind
from domains.telecom import DOMAIN
from tests.support.upstream import TAU2_TELECOM

DATA_DIR = TAU2_TELECOM
DB_PATH = DATA_DIR / "db.toml"
TASKS_PATH = DATA_DIR / "tasks_small.json"

GOLD_NOTE = "gold "
READ_NOTE = "careful read before "
LOOK_NOTE = "customer looks before "

# What a careful agent asks the customer to look at before each phone action (the change's own reading).
LOOK_FIRST: dict[str, tuple[str, dict[str, Any]]] = {
    "toggle_roaming": ("check_network_status", {}),
    "toggle_data": ("check_network_status", {}),
    "toggle_airplane_mode": ("check_status_bar", {}),
    "toggle_data_saver_mode": ("check_data_restriction_status", {}),
    "disconnect_vpn": ("check_vpn_status", {}),
    "set_network_mode_preference": ("check_network_mode_preference", {}),
    "reset_apn_settings": ("check_apn_settings", {}),
    "make_payment": ("check_payment_request", {}),
}

Line = dict[str, Any]
Task = dict[str, Any]
WRITES = frozenset(t.name for t in DOMAIN.tools if t.kind is ToolKind.WRITE)


def shared_present() -> bool:
    return TASKS_PATH.is_file() and DB_PATH.is_file() and (DATA_DIR / "user_db.toml").is_file()


def load_tasks(path: Path = TASKS_PATH) -> list[Task]:
    tasks: list[Task] = json.loads(path.read_text(encoding="utf-8"))
    return tasks


def gold_actions(task: Task) -> list[dict[str, Any]]:
    criteria = task.get("evaluation_criteria") or {}
    return list(criteria.get("actions") or [])


def gold_writes(task: Task) -> list[dict[str, Any]]:
    """The gold actions that change state (either side): what tau2's DB check replays."""
    return [a for a in gold_actions(task) if a["name"] in WRITES]


def setup(task: Task) -> list[dict[str, Any]]:
    return list((task.get("initial_state") or {}).get("initialization_actions") or [])


def assertions(task: Task) -> list[dict[str, Any]]:
    return list((task.get("evaluation_criteria") or {}).get("env_assertions") or [])


def phone_number(task: Task) -> str:
    """The customer's number, from the task's `set_user_info`."""
    for action in setup(task):
        if action["func_name"] == "set_user_info":
            number: str = action["arguments"]["phone_number"]
            return number
    raise ValueError(f"task {task['id']} gives the user no phone number")


def short_id(task: Task) -> str:
    """'[service_issue]overdue_bill_suspension[PERSONA:Easy]' -> 'overdue_bill_suspension'."""
    return str(task["id"]).split("]", 1)[1].split("[", 1)[0]


def _line(name: str, arguments: dict[str, Any], note: str, requestor: str = "assistant") -> Line:
    return {"name": name, "arguments": dict(arguments), "requestor": requestor, "expect": "ALLOW", "note": note}


def careful_reads(action: dict[str, Any], customer_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The agent's reads before one of its own writes (see the module docstring)."""
    args = action["arguments"]
    line_read = ("get_details_by_id", {"id": args.get("line_id")})
    bills_read = ("get_bills_for_customer", {"customer_id": args.get("customer_id", customer_id)})
    name = action["name"]
    if name in ("enable_roaming", "disable_roaming"):
        return [line_read]
    if name == "send_payment_request":
        return [bills_read]
    if name == "resume_line":
        return [bills_read, line_read]
    if name == "suspend_line":
        return [line_read, bills_read]
    if name == "refuel_data":
        return [line_read]  # the plan id comes from the line: see build_trajectory
    return []


def build_trajectory(task: Task, customer_id: str, plans: dict[str, str] | None = None) -> list[Line]:
    """The careful trajectory around the task's gold actions. `customer_id` is who the phone number belongs to
    (the agent learns it from get_customer_by_phone); `plans` maps line ids to plan ids, for refuels."""
    lines = [_line("get_customer_by_phone", {"phone_number": phone_number(task)}, "careful identification")]
    for action in gold_actions(task):
        action_id = action["action_id"]
        requestor = action.get("requestor", "assistant")
        if requestor == Requestor.USER:
            look = LOOK_FIRST.get(action["name"])
            if action["name"] == "grant_app_permission":
                look = ("check_app_permissions", {"app_name": action["arguments"]["app_name"]})
            if look is not None:
                lines.append(_line(look[0], look[1], LOOK_NOTE + action_id, "user"))
        else:
            for name, arguments in careful_reads(action, customer_id):
                lines.append(_line(name, arguments, READ_NOTE + action_id))
            if action["name"] == "refuel_data" and plans is not None:
                lines.append(_line("get_details_by_id", {"id": plans[action["arguments"]["line_id"]]},
                                   READ_NOTE + action_id))
        lines.append(_line(action["name"], action["arguments"], GOLD_NOTE + action_id, requestor))
    return lines


def gold_lines(lines: Iterable[Line]) -> list[int]:
    return [i for i, line in enumerate(lines) if line["note"].startswith(GOLD_NOTE)]
