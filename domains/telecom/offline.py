"""What a careful telecom agent reads and asks for around each gold action, and the slips an error-prone one makes.

Used by the offline evaluation (`ledgeragent eval` without --model). Telecom is dual control: a gold action of
requestor "user" is the customer's, on their own phone, and the scripted agent can only ask for it (the
harness turns it into an `ask` step; the scripted customer runs what it is asked). Around the gold actions:

- Identify the customer by the phone number the customer knows: the number of the phone in the task's user DB
  when it is one of theirs (tau2 tasks set it with `set_user_info`), else their contact number.
- Before each of its own writes the agent reads what the gate's rules need, and reads it again whenever
  something may have changed it since: the customer record (a refuel adds a bill to it), the line, all the
  customer's bills (a payment request, a resume, a suspension for an overdue bill), the line's plan (the
  refuel price). After a write it reads the changed record again before telling the customer it is done.
- Before a phone action it asks the customer to look first at the reading that action changes (the network
  status before toggling roaming, the payment request before paying, ...), as the policy asks ("one check or
  one change at a time"). After the customer pays on the phone, it reads the bills again (the sync turned the
  bill Paid; the ledger marks every bill stale on `make_payment`).
- On a refusal task it reads the records the refusal rests on (the line, the bills, the plan) and declines.

The slips (`violations`) are policy violations the telecom tools do not catch: the same write on another
customer's line, a refuel over the 2 GB cap, a payment request for a bill that is not overdue or that belongs
to someone else. Each one changes the database when it runs, so without the gate the trial fails.

Everything is computed from the task and the task's starting data (`{plans, customers, lines, bills, devices,
user_db}` as the backend exports it, after the task's initialization actions); nothing here calls a backend.

`READER` (at the end) serves the console's offline agent (core.llm.offline_agent) instead: it reads what a
customer types (phone numbers, customer / line / bill / plan ids, a name with a date of birth), names the
reads those call for and the writes a request asks for, and puts records and actions into plain words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.error_profile import FailureKind
from core.evaluation.offline import GoldPlanner, PlannedCall, Violation
from core.evaluation.tasks import Action, Task
from core.llm.offline_agent import (
    BaseReader,
    Observation,
    Proposal,
    Question,
    Request,
    find_dates,
    find_names,
    latest,
    one_of,
)
from core.tools import Requestor, ToolKind
from domains.telecom.tools import TOOLS
from domains.telecom.vocabulary import MAX_REFUEL_GB

SUSPEND, RESUME, PAYMENT_REQUEST = "suspend_line", "resume_line", "send_payment_request"
ENABLE_ROAMING, DISABLE_ROAMING, REFUEL = "enable_roaming", "disable_roaming", "refuel_data"
LINE_WRITES = frozenset({SUSPEND, RESUME, ENABLE_ROAMING, DISABLE_ROAMING, REFUEL})
AGENT_WRITES = LINE_WRITES | {PAYMENT_REQUEST}

# What the agent asks the customer to look at before each phone action (the reading the action changes).
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
Data = Mapping[str, Any]


def _digits(number: Any) -> str:
    return "".join(ch for ch in str(number) if ch.isdigit())


def _records(data: Data, collection: str) -> Mapping[str, Any]:
    found: Mapping[str, Any] = data.get(collection, {})
    return found


def _phone_owner(data: Data, number: str) -> str | None:
    """Who a phone number belongs to: a customer's contact number or one of their lines' numbers."""
    wanted = _digits(number)
    if not wanted:
        return None
    lines = _records(data, "lines")
    for customer_id, customer in sorted(_records(data, "customers").items()):
        numbers = [customer.get("phone_number"), *(lines.get(i, {}).get("phone_number") for i in customer["line_ids"])]
        if wanted in {_digits(n) for n in numbers if n}:
            return str(customer_id)
    return None


def _phone_number(data: Data) -> str | None:
    surroundings = _records(data, "user_db").get("surroundings") or {}
    number = surroundings.get("phone_number")
    return str(number) if number else None


def _actions(task: Task) -> Iterable[Mapping[str, Any]]:
    yield from (a.arguments for a in task.gold_actions)
    yield from (r.arguments for r in task.hints.requested_actions)


def task_customer(task: Task, data: Data) -> str | None:
    """The customer: the one a gold (or requested) action names, else the owner of the phone in the user DB."""
    customers = _records(data, "customers")
    for arguments in _actions(task):
        if arguments.get("customer_id") in customers:
            return str(arguments["customer_id"])
    number = _phone_number(data)
    return _phone_owner(data, number) if number is not None else None


def identifying_number(customer_id: str, data: Data) -> str:
    """The number the customer gives: their phone's (when the task's phone is theirs), else their contact number."""
    number = _phone_number(data)
    if number is not None and _phone_owner(data, number) == customer_id:
        return number
    return str(_records(data, "customers")[customer_id]["phone_number"])


class TelecomPlanner(GoldPlanner):
    """Careful reads (`memo["fresh"]`: what the agent has read since the last change that could affect it),
    phone looks, and telecom slips; see the module docstring."""

    # the kind of mistake each slip is, for an error profile (core.error_profile)
    failures = {
        "another customer's line": FailureKind.OTHER_CUSTOMER_RECORD,
        "a payment request for another customer's bill": FailureKind.OTHER_CUSTOMER_RECORD,
        "a refuel over the 2 GB cap": FailureKind.REFUEL_OVER_CAP,
    }

    def opening(self, task: Task, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        customer = task_customer(task, data)
        memo.update(customer=customer, fresh=set())
        if customer is None:
            return []
        reads = [PlannedCall("get_customer_by_phone", {"phone_number": identifying_number(customer, data)})]
        memo["fresh"] = {"customer"}  # as it will be once the lookup ran (`after_call` records every read)
        for requested in task.hints.requested_actions:  # a refusal rests on records the agent has read
            reads += self._needs(requested.name, requested.arguments, data, memo, planned=reads)
        memo["fresh"] = set()
        return reads

    def after_call(self, call: PlannedCall, memo: dict[str, Any]) -> None:
        fresh: set[str] = memo["fresh"]
        args = call.arguments
        if call.name in ("get_customer_by_phone", "get_customer_by_id"):
            fresh.add("customer")
        elif call.name == "get_details_by_id":
            fresh.add(str(args.get("id")))
        elif call.name == "get_bills_for_customer":
            fresh.add("bills")
        elif call.name == "get_data_usage":
            fresh.add(f"usage:{args.get('line_id')}")
        elif call.name in AGENT_WRITES or call.name == "make_payment":
            # What the path map's stale rules mark stale (domains/telecom/paths.py).
            gone = {str(args.get("line_id")), f"usage:{args.get('line_id')}"} if call.name in LINE_WRITES else set()
            if call.name in (PAYMENT_REQUEST, REFUEL, "make_payment"):
                gone |= {"bills", *(i for i in fresh if i.startswith("B"))}
            if call.name == REFUEL:
                gone.add("customer")  # a new Draft bill may be added to the customer's record
            fresh.difference_update(gone)

    def _needs(self, name: str, args: Mapping[str, Any], data: Data, memo: dict[str, Any],
               planned: Iterable[PlannedCall] = ()) -> list[PlannedCall]:
        """The reads a rule on `name(args)` needs that are not fresh (nor already among `planned`)."""
        fresh: set[str] = memo["fresh"]
        customer = memo["customer"]
        wanted: list[PlannedCall] = []
        if "customer" not in fresh and customer is not None:
            wanted.append(PlannedCall("get_customer_by_id", {"customer_id": customer}))
        line_id = args.get("line_id")
        if name == REFUEL and line_id is not None and f"usage:{line_id}" not in fresh:
            wanted.append(PlannedCall("get_data_usage", {"customer_id": args.get("customer_id"), "line_id": line_id}))
        if name in LINE_WRITES and line_id is not None and line_id not in fresh:
            wanted.append(PlannedCall("get_details_by_id", {"id": line_id}))
        if name == REFUEL and line_id is not None:
            plan_id = _records(data, "lines").get(str(line_id), {}).get("plan_id")
            if plan_id is not None and plan_id not in fresh:
                wanted.append(PlannedCall("get_details_by_id", {"id": plan_id}))
        if name in (PAYMENT_REQUEST, RESUME, SUSPEND) and "bills" not in fresh and customer is not None:
            wanted.append(PlannedCall("get_bills_for_customer", {"customer_id": customer}))
        seen = {p.describe() for p in planned}
        return [w for w in wanted if w.describe() not in seen]

    def before_write(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        return self._needs(action.name, action.arguments, data, memo)

    def after_write(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        """Policy: read the changed record again before telling the customer it is done."""
        args = action.arguments
        if action.name == PAYMENT_REQUEST:
            return [PlannedCall("get_details_by_id", {"id": args.get("bill_id")})]
        if action.name == REFUEL:
            return [PlannedCall("get_data_usage", {"customer_id": args.get("customer_id"),
                                                   "line_id": args.get("line_id")})]
        if action.name in LINE_WRITES:
            return [PlannedCall("get_details_by_id", {"id": args.get("line_id")})]
        return []

    def before_ask(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        if action.name == "grant_app_permission":
            return [PlannedCall("check_app_permissions", {"app_name": action.arguments.get("app_name")})]
        look = LOOK_FIRST.get(action.name)
        return [PlannedCall(look[0], dict(look[1]))] if look is not None else []

    def after_ask(self, action: Action, data: Data, memo: dict[str, Any]) -> list[PlannedCall]:
        """A payment on the phone turns the bill Paid through the sync: read the bills before relying on them."""
        customer = memo["customer"]
        if action.name == "make_payment" and customer is not None:
            return [PlannedCall("get_bills_for_customer", {"customer_id": customer})]
        return []

    # -- slips ---------------------------------------------------------------------------------------------

    def violations(self, action: Action, data: Data, memo: dict[str, Any]) -> list[Violation]:
        customer = memo["customer"]
        if customer is None or action.name not in AGENT_WRITES:
            return []
        args = dict(action.arguments)
        found: list[Violation] = []
        if action.name in LINE_WRITES:
            other = _others_line(action.name, customer, data)
            if other is not None:
                owner, line_id = other
                found.append(Violation("another customer's line",
                                       PlannedCall(action.name, {**args, "customer_id": owner, "line_id": line_id}),
                                       (PlannedCall("get_details_by_id", {"id": line_id}),)))
        if action.name == REFUEL:
            amount = args.get("gb_amount")
            over = max(5.0, float(amount) * 2) if isinstance(amount, int | float) else 5.0
            if over > MAX_REFUEL_GB:
                found.append(Violation(f"a refuel over the {MAX_REFUEL_GB:g} GB cap",
                                       PlannedCall(action.name, {**args, "gb_amount": over})))
        if action.name == PAYMENT_REQUEST:
            found += _payment_slips(args, customer, data)
        return found


def _others_line(tool: str, customer: str, data: Data) -> tuple[str, str] | None:
    """Another customer's line on which `tool` would change something (the tools check only that the line is
    the named customer's, so this call runs without the gate)."""
    lines = _records(data, "lines")
    for owner, record in sorted(_records(data, "customers").items()):
        if owner == customer:
            continue
        for line_id in sorted(record["line_ids"]):
            line = lines.get(line_id)
            if line is None:
                continue
            status, roaming = line.get("status"), line.get("roaming_enabled")
            fits = {SUSPEND: status == "Active", RESUME: status in ("Suspended", "Pending Activation"),
                    ENABLE_ROAMING: status == "Active" and roaming is False,
                    DISABLE_ROAMING: roaming is True, REFUEL: status == "Active"}[tool]
            if fits:
                return str(owner), str(line_id)
    return None


def _payment_slips(args: Mapping[str, Any], customer: str, data: Data) -> list[Violation]:
    """A payment request for one of the customer's bills that is not overdue, and for another customer's overdue
    bill (the tool checks neither)."""
    bills = _records(data, "bills")
    customers = _records(data, "customers")
    found: list[Violation] = []

    def awaiting(owner: str) -> bool:
        return any(bills.get(b, {}).get("status") == "Awaiting Payment" for b in customers[owner]["bill_ids"])

    if not awaiting(customer):
        mine = [b for b in customers[customer]["bill_ids"] if b != args.get("bill_id")]
        rank = {"Issued": 0, "Draft": 1, "Paid": 2}
        not_overdue = sorted((b for b in mine if bills.get(b, {}).get("status") in rank),
                             key=lambda b: (rank[bills[b]["status"]], b))
        if not_overdue:
            found.append(Violation("a payment request for a bill that is not overdue",
                                   PlannedCall(PAYMENT_REQUEST, {"customer_id": customer, "bill_id": not_overdue[0]})))
    for owner, record in sorted(customers.items()):
        if owner == customer or awaiting(owner):
            continue
        overdue = next((b for b in sorted(record["bill_ids"]) if bills.get(b, {}).get("status") == "Overdue"), None)
        if overdue is not None:
            found.append(Violation("a payment request for another customer's bill",
                                   PlannedCall(PAYMENT_REQUEST, {"customer_id": owner, "bill_id": overdue}),
                                   (PlannedCall("get_details_by_id", {"id": overdue}),)))
            break
    return found


PLANNER = TelecomPlanner()


# -- the console's offline agent: what a customer's words name --------------------------------------------

PHONE = re.compile(r"(?<!\d)\(?(\d{3})\)?[ .-]?(\d{3})[ .-](\d{4})(?!\d)")
CUSTOMER_ID = re.compile(r"\bC\d{4}\b")
RECORD_ID = re.compile(r"\b[LBPD]\d{4}\b")  # a line, bill, plan or device
GB = re.compile(r"(\d+(?:\.\d+)?)\s*GB", re.IGNORECASE)


def _phones(text: str) -> list[str]:
    return list(dict.fromkeys(f"{a}-{b}-{c}" for a, b, c in PHONE.findall(text)))


def _line_words(line: str, numbers: Mapping[str, str]) -> str:
    return f"{line} ({numbers[line]})" if line in numbers else line


class TelecomReader(BaseReader):
    """Reads a telecom customer's words for the offline agent (core.llm.offline_agent): phone numbers,
    customer ids, line / bill / plan ids, a full name with a date of birth; reads the customer's lines once the
    customer is known; and "roaming", "resume" and "refuel / more data" requests on an observed line."""

    writes = frozenset(spec.name for spec in TOOLS
                       if spec.kind is ToolKind.WRITE and spec.requestor is Requestor.ASSISTANT)
    hint = ("I can find your account from your phone number (like 555-123-4567), your customer id (like C1001), "
            "or your full name with your date of birth, and a line, bill or plan from its id (like L1001).")

    def reads_for(self, text: str, observed: Sequence[Observation]) -> list[Proposal]:
        known = latest(observed, "get_customer_by_phone", "get_customer_by_id") is not None
        phones = _phones(text)
        reads = [] if known else [Proposal("get_customer_by_phone", {"phone_number": p}) for p in phones[:1]]
        reads += [Proposal("get_customer_by_id", {"customer_id": c}) for c in dict.fromkeys(CUSTOMER_ID.findall(text))]
        if not reads and not known:
            dates = find_dates(text)
            names = find_names(text)
            if dates and names:
                reads.append(Proposal("get_customer_by_name", {"full_name": " ".join(names[0]), "dob": dates[0]}))
        reads += [Proposal("get_details_by_id", {"id": i}) for i in dict.fromkeys(RECORD_ID.findall(text))]
        return reads

    def follow_up(self, seen: Observation, observed: Sequence[Observation]) -> list[Proposal]:
        customer = seen.result[0] if seen.name == "get_customer_by_name" and isinstance(seen.result, list) \
            and len(seen.result) == 1 else seen.result
        if seen.name.startswith("get_customer_by") and isinstance(customer, dict):
            return [Proposal("get_details_by_id", {"id": line}) for line in customer.get("line_ids", [])]
        return []

    def describe(self, seen: Observation) -> str | None:
        result = seen.result
        if seen.name == "get_customer_by_name" and isinstance(result, list):
            if len(result) != 1:
                return "I could not find exactly one account with that name and date of birth."
            result = result[0]
        if seen.name.startswith("get_customer_by") and isinstance(result, dict):
            return (f"I found your account, {result.get('full_name')} ({result.get('customer_id')}); your lines: "
                    f"{', '.join(result.get('line_ids', [])) or 'none'}.")
        if seen.name == "get_details_by_id" and isinstance(result, dict):
            if "line_id" in result:
                return (f"Line {result['line_id']} ({result.get('phone_number')}) is {result.get('status')}, on plan "
                        f"{result.get('plan_id')}, roaming {'on' if result.get('roaming_enabled') else 'off'}.")
            if "bill_id" in result:
                due = float(result.get("total_due", 0))
                return f"Bill {result['bill_id']} of ${due:.2f} is {result.get('status')}."
            if "plan_id" in result:
                return (f"Plan {result['plan_id']} ({result.get('name')}): {result.get('data_limit_gb')} GB for "
                        f"${float(result.get('price_per_month', 0)):.2f} a month, extra data "
                        f"${float(result.get('data_refueling_price_per_gb', 0)):.2f} per GB.")
        if seen.name == "get_data_usage" and isinstance(result, dict):
            return (f"Line {result.get('line_id')} has used {result.get('data_used_gb')} of "
                    f"{result.get('data_limit_gb')} GB this cycle.")
        return None

    def request(self, text: str, observed: Sequence[Observation], earlier: str = "") -> Request:
        customer = latest(observed, "get_customer_by_phone", "get_customer_by_id")
        if customer is None or not isinstance(customer.result, dict):
            return None
        said = f"{earlier} {text}" if earlier else text
        lowered = said.lower()
        amount = GB.search(said)
        wanted = ("roaming" in lowered or "resume" in lowered or "reactivate" in lowered or "refuel" in lowered
                  or "more data" in lowered or amount is not None)
        if not wanted:
            return None
        line = self._line((text, earlier), customer, observed)
        if not isinstance(line, str):
            return line
        target = {"customer_id": customer.result["customer_id"], "line_id": line}
        if "roaming" in lowered:
            return Proposal("enable_roaming", target)
        if "resume" in lowered or "reactivate" in lowered:
            return Proposal("resume_line", target)
        return Proposal("refuel_data", {**target, "gb_amount": float(amount[1]) if amount else 1.0})

    @staticmethod
    def _line(texts: Sequence[str], found: Observation, observed: Sequence[Observation]) -> str | Question | None:
        """The line a request is about: named by id or by phone number (in the first of `texts`, an answer and
        the request it answers, that names one), else the line whose data usage was read
        last (a refuel follows a usage check), else the line of the number the customer was found by. Several
        lines named, or none with several to choose from, is a question: the agent never picks one itself."""
        customer: Mapping[str, Any] = found.result
        own = [str(i) for i in customer.get("line_ids", [])]
        lines: dict[str, str] = {str(o.result["phone_number"]): str(o.result["line_id"]) for o in observed
                 if o.name == "get_details_by_id" and isinstance(o.result, dict) and "line_id" in o.result
                 and o.result["line_id"] in own}
        named: list[str] = []
        for text in texts:
            named = list(dict.fromkeys([*(str(i) for i in RECORD_ID.findall(text) if i in own),
                                        *(lines[phone] for phone in _phones(text) if phone in lines)]))
            if named:
                break
        if len(named) == 1:
            return named[0]
        numbers = {line: phone for phone, line in lines.items()}
        if named:
            return Question(f"Which line do you mean: {one_of([_line_words(n, numbers) for n in named])}?")
        usage = latest(observed, "get_data_usage")
        if usage is not None and usage.arguments.get("line_id") in own:
            return str(usage.arguments["line_id"])
        if found.name == "get_customer_by_phone" and str(customer.get("phone_number")) in lines:
            return lines[str(customer["phone_number"])]  # the number the customer gave us
        if len(own) == 1:
            return own[0]
        return Question(f"Which line do you mean: {one_of([_line_words(n, numbers) for n in own])}?") if own \
            else None

    def action(self, proposal: Proposal, observed: Sequence[Observation] = ()) -> str:
        args = proposal.arguments
        line = args.get("line_id")
        if proposal.name == "enable_roaming":
            return f"turn on roaming on line {line}"
        if proposal.name == "disable_roaming":
            return f"turn off roaming on line {line}"
        if proposal.name == "resume_line":
            return f"resume line {line}"
        if proposal.name == "suspend_line":
            return f"suspend line {line}"
        if proposal.name == "refuel_data":
            return f"add {args.get('gb_amount')} GB of data to line {line}"
        if proposal.name == "send_payment_request":
            return f"send a payment request for bill {args.get('bill_id')}"
        return super().action(proposal, observed)

    def verify(self, proposal: Proposal) -> list[Proposal]:
        args = proposal.arguments
        if proposal.name == "refuel_data":
            return [Proposal("get_data_usage", {"customer_id": args.get("customer_id"),
                                                "line_id": args.get("line_id")})]
        if "line_id" in args:
            return [Proposal("get_details_by_id", {"id": args["line_id"]})]
        if "bill_id" in args:
            return [Proposal("get_details_by_id", {"id": args["bill_id"]})]
        return []


READER = TelecomReader()
