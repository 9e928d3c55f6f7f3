"""tau2-bench's telecom domain over the SQLite document store: 13 agent tools, 30 phone tools, and the sync.

Names, arguments, returns and errors follow tau2-bench (`src/tau2/domains/telecom/tools.py` and
`user_tools.py`; its data in `data/tau2/domains/telecom/`): the same checks in the same order, the same messages, the
same records back. The phone's rules live in `mock_backends.telecom.phone`; this module stores, loads and
syncs. What differs, and why:

- Deterministic ids. tau2's `refuel_data` creates a Draft bill with a random `B<8 hex>` id when the
  customer has none; ours is the next number: `B` + (the largest number among the bill ids of the form
  `B<digits>` + 1), e.g. `B1007` after `B1006`, `B1234322` once a task added `B1234321`. So the same calls
  always give the same database, and the id reads like the others.
- A failed write changes nothing (one transaction per call; tau2 mutates as it goes).
- Bad input tau2 lets through is refused: a `limit` below 1 (tau2 would slice oddly), `set_apn_settings`
  with something that is not an object. Phone numbers and names are matched as tau2 now does: a phone
  number by its digits, a name case- and accent-insensitively (the date of birth exactly).
- The fixed clock is the domain's (`domains.telecom.vocabulary.REFERENCE_DATE`, tau2's 2025-02-25).

Dual control. The phone's state is two documents (`user_db/device`, `user_db/surroundings`) in the same
store, so `state_hash()` covers both sides and a snapshot restores both. `sync()` is tau2's
`TelecomEnvironment.sync_tools`: after every call the core runs it, and it carries the carrier's side of
the user's line to the phone (line active, roaming allowed, data used up) and payments both ways (a paid
request marks its bill Paid; a bill Awaiting Payment becomes a request on the phone). It reports each
change as one line, for the trace.

Task setup. tau2 tasks set the scene with hidden environment functions (`set_user_info`,
`suspend_line_for_overdue_bill`, `break_vpn`, ...) and grade with hidden assertions. They are not tools,
so no agent or user can call them; `run_env_function` and `assert_env` run them for tests and replays,
each setup function in a transaction followed by a sync, as tau2's `run_env_function_call` does.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any, TypeVar

from core.tools import ToolError
from domains.telecom.tools import TOOLS
from domains.telecom.vocabulary import REFERENCE_DATE
from mock_backends.base import SQLiteToolBackend, generic_tool, read_tool, write_tool
from mock_backends.store import JSON, Collection, Index
from mock_backends.telecom import data as _data
from mock_backends.telecom import phone as _phone
from mock_backends.telecom.models import (
    BILLS,
    CUSTOMERS,
    DEVICE_DOC,
    DEVICES,
    LINES,
    PLANS,
    SURROUNDINGS_DOC,
    USER_DB,
    Bill,
    Customer,
    Device,
    Line,
    LineItem,
    PaymentRequest,
    PhoneDevice,
    Plan,
    Surroundings,
    denormalise,
    digits,
    dump,
    normalise,
)
from mock_backends.telecom.phone import Phone

Doc = dict[str, Any]
M = TypeVar("M", Plan, Customer, Line, Bill, Device)
_BILL_NUMBER = re.compile(r"^B(\d+)$")


def _fold(name: str) -> str:
    """A name as a spoken lookup compares it: no accents, no case, single spaces."""
    stripped = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def _first_of_next_month(day: date) -> date:
    return (day.replace(day=1) + timedelta(days=32)).replace(day=1)


def _last_of_month(day: date) -> date:
    return day.replace(day=calendar.monthrange(day.year, day.month)[1])


class TelecomBackend(SQLiteToolBackend):
    """The telecom mock. Agent reads return stored records; writes validate the changed record through the
    models before storing it. Phone tools return the phone's text, as tau2's do."""

    specs = TOOLS  # checked against the tool methods when the class is created
    collections = (
        Collection(PLANS),
        Collection(CUSTOMERS),
        Collection(LINES),
        Collection(BILLS, (Index("$.customer_id"),)),
        Collection(DEVICES),
        Collection(USER_DB),
    )

    @classmethod
    def normalise(cls, data: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
        return normalise(data)

    @classmethod
    def read_source(cls, path: Path) -> Any:
        """`--db` takes tau2's db.toml (user_db.toml beside it), a folder with both, or our JSON layout."""
        return _data.read_source(path)

    @classmethod
    async def open(cls, db_path: Path | str, data: Mapping[str, Any] | None = None) -> TelecomBackend:
        """A fresh database file holding `data` ({"db", "user_db"}; default: our shipped seed)."""
        return await cls.create(db_path, _data.load_seed() if data is None else data)

    async def export_tau2(self) -> dict[str, Any]:
        """The whole state in tau2's layout: `{"db": <TelecomDB dump>, "user_db": <TelecomUserDB dump>}`."""
        return denormalise(await self.export())

    # ----------------------------------------------------------------------------------- lookups

    async def _record(self, collection: str, model: type[M], key: str, kind: str) -> M:
        doc = await self.store.get(collection, key)
        if doc is None:
            raise ValueError(f"{kind} with ID {key} not found")
        return model.model_validate(doc)

    async def _customer(self, customer_id: str) -> Customer:
        return await self._record(CUSTOMERS, Customer, customer_id, "Customer")

    async def _line(self, line_id: str) -> Line:
        return await self._record(LINES, Line, line_id, "Line")

    async def _plan(self, plan_id: str) -> Plan:
        return await self._record(PLANS, Plan, plan_id, "Plan")

    async def _bill(self, bill_id: str) -> Bill:
        return await self._record(BILLS, Bill, bill_id, "Bill")

    async def _device(self, device_id: str) -> Device:
        return await self._record(DEVICES, Device, device_id, "Device")

    async def _target_line(self, customer_id: str, line_id: str) -> Line:
        customer = await self._customer(customer_id)
        if line_id not in customer.line_ids:
            raise ValueError(f"Line {line_id} not found for customer {customer_id}")
        return await self._line(line_id)

    async def _line_by_phone(self, phone_number: str) -> Line | None:
        wanted = digits(phone_number)
        if not wanted:
            return None
        for _, doc in await self.store.scan(LINES):
            if digits(str(doc["phone_number"])) == wanted:
                return Line.model_validate(doc)
        return None

    async def _customer_by_phone(self, phone_number: str) -> Customer:
        wanted = digits(phone_number)
        if wanted:
            numbers = {key: digits(str(number)) for key, number in await self.store.values(LINES, "$.line_id",
                                                                                             "$.phone_number")}
            for _, doc in await self.store.scan(CUSTOMERS):
                customer = Customer.model_validate(doc)
                if digits(customer.phone_number) == wanted:
                    return customer
                for line_id in customer.line_ids:
                    if line_id not in numbers:
                        raise ValueError(f"Line with ID {line_id} not found")
                    if numbers[line_id] == wanted:
                        return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    async def _bills_of(self, customer: Customer) -> list[Bill]:
        return [await self._bill(bill_id) for bill_id in customer.bill_ids]

    async def _save(self, collection: str, key: str, model: Any) -> Doc:
        doc = dump(model)
        await self.tx.put(collection, key, doc)
        return doc

    # ----------------------------------------------------------------------------------- agent reads

    @read_tool
    async def get_customer_by_phone(self, phone_number: str) -> Doc:
        return dump(await self._customer_by_phone(phone_number))

    @read_tool
    async def get_customer_by_id(self, customer_id: str) -> Doc:
        return dump(await self._customer(customer_id))

    @read_tool
    async def get_customer_by_name(self, full_name: str, dob: str) -> list[Doc]:
        wanted = _fold(full_name)
        return [doc for _, doc in await self.store.scan(CUSTOMERS)
                if _fold(str(doc["full_name"])) == wanted and doc["date_of_birth"] == dob]

    @read_tool
    async def get_details_by_id(self, id: str) -> Doc:
        lookups: dict[str, Callable[[str], Awaitable[Any]]] = {
            "L": self._line, "D": self._device, "B": self._bill, "C": self._customer, "P": self._plan}
        lookup = lookups.get(id[:1])
        if lookup is None:
            raise ValueError(f"Unknown ID format or type: {id}")
        return dump(await lookup(id))

    @read_tool
    async def get_bills_for_customer(self, customer_id: str, limit: int | None = 12) -> list[Doc]:
        limit = 12 if limit is None else limit
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        bills = await self._bills_of(await self._customer(customer_id))
        newest_first = sorted(bills, key=lambda bill: bill.issue_date, reverse=True)  # stable, as tau2's sort
        return [dump(bill) for bill in newest_first[:limit]]

    @read_tool
    async def get_data_usage(self, customer_id: str, line_id: str) -> Doc:
        line = await self._target_line(customer_id, line_id)
        plan = await self._plan(line.plan_id)
        cycle_end = _first_of_next_month(REFERENCE_DATE) - timedelta(days=1)
        return {"line_id": line_id, "data_used_gb": line.data_used_gb, "data_limit_gb": plan.data_limit_gb,
                "data_refueling_gb": line.data_refueling_gb, "cycle_end_date": cycle_end.isoformat()}

    # ----------------------------------------------------------------------------------- agent writes

    @write_tool
    async def suspend_line(self, customer_id: str, line_id: str, reason: str) -> Doc:
        line = await self._target_line(customer_id, line_id)
        if line.status != "Active":
            raise ValueError("Line must be active to suspend")
        line.status, line.suspension_start_date = "Suspended", REFERENCE_DATE
        return {"message": "Line suspended successfully. $5/month holding fee will apply.",
                "line": await self._save(LINES, line_id, line)}

    @write_tool
    async def resume_line(self, customer_id: str, line_id: str) -> Doc:
        line = await self._target_line(customer_id, line_id)
        if line.status not in ("Suspended", "Pending Activation"):
            raise ValueError("Line must be suspended to resume")
        line.status, line.suspension_start_date = "Active", None
        return {"message": "Line resumed successfully", "line": await self._save(LINES, line_id, line)}

    @write_tool
    async def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        customer = await self._customer(customer_id)
        if any(bill.status == "Awaiting Payment" for bill in await self._bills_of(customer)):
            raise ValueError("A bill is already awaiting payment for this customer")
        if bill_id not in customer.bill_ids:
            raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
        bill = await self._bill(bill_id)
        bill.status = "Awaiting Payment"
        await self._save(BILLS, bill_id, bill)
        return f"Payment request sent to the customer for bill {bill_id}"

    async def _set_roaming(self, customer_id: str, line_id: str, enabled: bool) -> str:
        line = await self._target_line(customer_id, line_id)
        word = "enabled" if enabled else "disabled"
        if line.roaming_enabled == enabled:
            return f"Roaming was already {word}"
        line.roaming_enabled = enabled
        await self._save(LINES, line_id, line)
        return f"Roaming {word} successfully"

    @write_tool
    async def enable_roaming(self, customer_id: str, line_id: str) -> str:
        return await self._set_roaming(customer_id, line_id, True)

    @write_tool
    async def disable_roaming(self, customer_id: str, line_id: str) -> str:
        return await self._set_roaming(customer_id, line_id, False)

    @write_tool
    async def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> Doc:
        line = await self._target_line(customer_id, line_id)
        if isinstance(gb_amount, bool) or not isinstance(gb_amount, int | float):
            raise ValueError(f"gb_amount must be a number, got {gb_amount!r}")
        if gb_amount <= 0:
            raise ValueError("Refuel amount must be positive")
        plan = await self._plan(line.plan_id)
        charge = gb_amount * plan.data_refueling_price_per_gb
        line.data_refueling_gb += gb_amount
        await self._save(LINES, line_id, line)
        await self._charge(customer_id, charge,
                           f"Data refueling: {gb_amount} GB at ${plan.data_refueling_price_per_gb}/GB")
        return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
                "new_data_refueling_gb": line.data_refueling_gb, "charge": charge}

    async def _next_bill_id(self) -> str:
        numbers = [int(m.group(1)) for key in await self.store.keys(BILLS) if (m := _BILL_NUMBER.match(key))]
        return f"B{max(numbers, default=0) + 1}"

    async def _charge(self, customer_id: str, amount: float, description: str) -> None:
        """Add a line item to the customer's Draft bill, creating next month's Draft when there is none."""
        customer = await self._customer(customer_id)
        draft = next((bill for bill in await self._bills_of(customer) if bill.status == "Draft"), None)
        if draft is None:
            start = _first_of_next_month(REFERENCE_DATE)
            draft = Bill(bill_id=await self._next_bill_id(), customer_id=customer_id, period_start=start,
                         period_end=_last_of_month(start), issue_date=start, total_due=0.0,
                         due_date=start + timedelta(days=14), status="Draft")
            customer.bill_ids.append(draft.bill_id)
            await self._save(CUSTOMERS, customer_id, customer)
        draft.line_items.append(LineItem(description=description, amount=amount, date=REFERENCE_DATE,
                                         item_type="Credit" if amount < 0 else "Charge"))
        draft.total_due += amount
        await self._save(BILLS, draft.bill_id, draft)

    @generic_tool
    async def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    # ----------------------------------------------------------------------------------- the phone

    async def _load_phone(self) -> Phone:
        device = await self.store.get(USER_DB, DEVICE_DOC)
        surroundings = await self.store.get(USER_DB, SURROUNDINGS_DOC)
        return Phone(PhoneDevice.model_validate(device or {}), Surroundings.model_validate(surroundings or {}))

    async def _look(self, action: Callable[[Phone], str]) -> str:
        return action(await self._load_phone())

    async def _act(self, action: Callable[[Phone], Any]) -> Any:
        """Run a phone action inside the running transaction; store what it changed."""
        phone = await self._load_phone()
        before = dump(phone.device), dump(phone.surroundings)
        result = action(phone)
        device, surroundings = dump(phone.device), dump(phone.surroundings)
        if device != before[0]:
            await self.tx.put(USER_DB, DEVICE_DOC, device)
        if surroundings != before[1]:
            await self.tx.put(USER_DB, SURROUNDINGS_DOC, surroundings)
        return result

    @read_tool
    async def check_status_bar(self) -> str:
        return await self._look(Phone.check_status_bar)

    @read_tool
    async def check_network_status(self) -> str:
        return await self._look(Phone.check_network_status)

    @read_tool
    async def check_network_mode_preference(self) -> str:
        return await self._look(Phone.check_network_mode_preference)

    @read_tool
    async def run_speed_test(self) -> str:
        return await self._look(Phone.run_speed_test)

    @read_tool
    async def check_sim_status(self) -> str:
        return await self._look(Phone.check_sim_status)

    @read_tool
    async def check_data_restriction_status(self) -> str:
        return await self._look(Phone.check_data_restriction_status)

    @read_tool
    async def check_apn_settings(self) -> str:
        return await self._look(Phone.check_apn_settings)

    @read_tool
    async def check_wifi_status(self) -> str:
        return await self._look(Phone.check_wifi_status)

    @read_tool
    async def check_wifi_calling_status(self) -> str:
        return await self._look(Phone.check_wifi_calling_status)

    @read_tool
    async def check_vpn_status(self) -> str:
        return await self._look(Phone.check_vpn_status)

    @read_tool
    async def check_installed_apps(self) -> str:
        return await self._look(Phone.check_installed_apps)

    @read_tool
    async def check_app_status(self, app_name: str) -> str:
        return await self._look(lambda phone: phone.check_app_status(app_name))

    @read_tool
    async def check_app_permissions(self, app_name: str) -> str:
        return await self._look(lambda phone: phone.check_app_permissions(app_name))

    @read_tool
    async def can_send_mms(self) -> str:
        return await self._look(Phone.can_send_mms)

    @read_tool
    async def check_payment_request(self) -> str:
        return await self._look(Phone.check_payment_request)

    @write_tool
    async def set_network_mode_preference(self, mode: str) -> str:
        result: str = await self._act(lambda phone: phone.set_network_mode_preference(mode))
        return result

    @write_tool
    async def toggle_airplane_mode(self) -> str:
        result: str = await self._act(Phone.toggle_airplane_mode)
        return result

    @write_tool
    async def reseat_sim_card(self) -> str:
        result: str = await self._act(Phone.reseat_sim_card)
        return result

    @write_tool
    async def toggle_data(self) -> str:
        result: str = await self._act(Phone.toggle_data)
        return result

    @write_tool
    async def toggle_roaming(self) -> str:
        result: str = await self._act(Phone.toggle_roaming)
        return result

    @write_tool
    async def toggle_data_saver_mode(self) -> str:
        result: str = await self._act(Phone.toggle_data_saver_mode)
        return result

    @write_tool
    async def set_apn_settings(self, apn_settings: dict[str, Any]) -> str:
        result: str = await self._act(lambda phone: phone.set_apn_settings(apn_settings))
        return result

    @write_tool
    async def reset_apn_settings(self) -> str:
        result: str = await self._act(Phone.reset_apn_settings)
        return result

    @write_tool
    async def toggle_wifi(self) -> str:
        result: str = await self._act(Phone.toggle_wifi)
        return result

    @write_tool
    async def toggle_wifi_calling(self) -> str:
        result: str = await self._act(Phone.toggle_wifi_calling)
        return result

    @write_tool
    async def connect_vpn(self) -> str:
        result: str = await self._act(Phone.connect_vpn)
        return result

    @write_tool
    async def disconnect_vpn(self) -> str:
        result: str = await self._act(Phone.disconnect_vpn)
        return result

    @write_tool
    async def grant_app_permission(self, app_name: str, permission: str) -> str:
        result: str = await self._act(lambda phone: phone.grant_app_permission(app_name, permission))
        return result

    @write_tool
    async def reboot_device(self) -> str:
        result: str = await self._act(Phone.reboot_device)
        return result

    @write_tool
    async def make_payment(self) -> str:
        result: str = await self._act(Phone.make_payment)
        return result

    # ----------------------------------------------------------------------------------- the sync

    async def sync(self) -> list[str]:
        """tau2's `sync_tools`, in its order; returns one line per change (empty when nothing changed).

        Looks up the line by the phone's number (no number set: nothing to sync), then: `line_active` from
        the line's status, `roaming_allowed` from its roaming flag, `mobile_data_usage_exceeded` when data
        used >= plan limit + refuelled; a paid payment request marks its bill Paid and is cleared; with no
        request left, the customer's first bill Awaiting Payment becomes one. Raises ToolError when the
        phone's number or the line's plan is missing (tau2 raises too: the scenario is broken).
        """
        try:
            async with self.writing():
                return await self._sync()
        except ToolError:
            raise
        except ValueError as exc:
            raise ToolError(str(exc)) from exc

    async def _sync(self) -> list[str]:
        doc = await self.store.get(USER_DB, SURROUNDINGS_DOC)
        around = Surroundings.model_validate(doc or {})
        number = around.phone_number
        if number is None:
            return []
        line = await self._line_by_phone(number)
        if line is None:
            raise ValueError(f"Wrong scenario, line not found for phone number: {number}")
        plan = await self._plan(line.plan_id)
        changes: list[str] = []

        def note(field: str, before: Any, after: Any) -> None:
            if before != after:
                changes.append(f"surroundings.{field}: {before} -> {after}")

        active, roaming = line.status == "Active", line.roaming_enabled
        exceeded = line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb
        note("line_active", around.line_active, active)
        note("roaming_allowed", around.roaming_allowed, roaming)
        note("mobile_data_usage_exceeded", around.mobile_data_usage_exceeded, exceeded)
        around.line_active, around.roaming_allowed, around.mobile_data_usage_exceeded = active, roaming, exceeded

        request = around.payment_request
        if request is not None and request.paid:
            bill = await self._bill(request.bill_id)
            changes.append(f"bills.{bill.bill_id}.status: {bill.status} -> Paid (paid on the phone)")
            bill.status = "Paid"
            await self._save(BILLS, bill.bill_id, bill)
            changes.append(f"surroundings.payment_request: {request.bill_id} -> None")
            around.payment_request = None
        if around.payment_request is None:
            customer = await self._customer_by_phone(number)
            awaiting = [bill for bill in await self._bills_of(customer) if bill.status == "Awaiting Payment"]
            if awaiting:
                first = awaiting[0]
                around.payment_request = PaymentRequest(bill_id=first.bill_id, amount_due=first.total_due)
                changes.append(f"surroundings.payment_request: None -> {first.bill_id} ({first.total_due} USD)")
        if changes:
            await self.tx.put(USER_DB, SURROUNDINGS_DOC, dump(around))
        return changes

    # ----------------------------------------------------------------------------------- task setup / checks

    _AGENT_SETUP = ("set_data_usage", "suspend_line_for_overdue_bill")
    _AGENT_ASSERTIONS = ("assert_data_refueling_amount", "assert_line_status", "assert_overdue_bill_exists",
                         "assert_no_overdue_bill")

    async def run_env_function(self, env_type: str, func_name: str, arguments: Mapping[str, Any]) -> Any:
        """One of a tau2 task's `initialization_actions` (or an assertion): a hidden setup function, or one of
        that side's tools (tasks set scenes with `enable_roaming` too), run in one transaction and followed by a
        sync; assertions only read. Raises ToolError on failure."""
        if func_name.startswith("assert_"):
            return await self.assert_env(env_type, func_name, arguments)
        kwargs = dict(arguments)
        phone_tools = (*_phone.READS, *_phone.CHANGES)
        try:
            async with self.writing():
                if env_type == "user" and func_name in _phone.SETUP:
                    result = await self._act(lambda phone: getattr(phone, func_name)(**kwargs))
                elif env_type == "assistant" and func_name in self._AGENT_SETUP:
                    result = await getattr(self, f"_{func_name}")(**kwargs)
                elif func_name in self._tools and (func_name in phone_tools) == (env_type == "user"):
                    result = await getattr(self, func_name)(**kwargs)  # a task may set the scene with a tool
                else:
                    raise ValueError(f"Function {func_name} not found in {env_type} tools")
        except ToolError:
            raise
        except (ValueError, TypeError) as exc:
            raise ToolError(str(exc)) from exc
        await self.sync()
        return result

    async def assert_env(self, env_type: str, func_name: str, arguments: Mapping[str, Any]) -> bool:
        """A tau2 env assertion's value (True when the state is as the task expects)."""
        kwargs = dict(arguments)
        try:
            if env_type == "user" and func_name in _phone.ASSERTIONS:
                outcome = getattr(await self._load_phone(), func_name)(**kwargs)
            elif env_type == "assistant" and func_name in self._AGENT_ASSERTIONS:
                outcome = await getattr(self, f"_{func_name}")(**kwargs)
            else:
                raise ValueError(f"Function {func_name} not found in {env_type} tools")
        except (ValueError, TypeError) as exc:
            raise ToolError(str(exc)) from exc
        if not isinstance(outcome, bool):
            raise ToolError(f"Function {func_name} returned {type(outcome).__name__} instead of bool")
        return outcome

    async def _set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        line = await self._target_line(customer_id, line_id)
        line.data_used_gb = data_used_gb
        await self._save(LINES, line_id, line)
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    async def _suspend_line_for_overdue_bill(self, customer_id: str, line_id: str, new_bill_id: str,
                                             contract_ended: bool) -> str:
        """tau2's setup: an Overdue bill of one month's plan price for last month, and the line suspended."""
        line = await self._line(line_id)
        if line.status != "Active":
            raise ValueError("Line must be active to suspend for unpaid bill")
        plan = await self._plan(line.plan_id)
        if plan.price_per_month <= 0:
            raise ValueError("Amount must be positive for overdue bill")
        customer = await self._customer(customer_id)
        if any(bill.status == "Overdue" for bill in await self._bills_of(customer)):
            raise ValueError("Customer already has an overdue bill")
        last_month_end = REFERENCE_DATE.replace(day=1) - timedelta(days=1)
        last_month_start = last_month_end.replace(day=1)
        bill = Bill(bill_id=new_bill_id, customer_id=customer_id, period_start=last_month_start,
                    period_end=last_month_end, issue_date=last_month_start, total_due=plan.price_per_month,
                    due_date=last_month_start + timedelta(days=14), status="Overdue",
                    line_items=[LineItem(description=f"Charge for line {line_id}", amount=plan.price_per_month,
                                         date=REFERENCE_DATE, item_type="Charge")])
        await self._save(BILLS, new_bill_id, bill)
        customer.bill_ids.append(new_bill_id)
        await self._save(CUSTOMERS, customer_id, customer)
        line.status, line.suspension_start_date = "Suspended", REFERENCE_DATE
        if contract_ended:
            line.contract_end_date = last_month_end
        await self._save(LINES, line_id, line)
        return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"

    async def _assert_data_refueling_amount(self, customer_id: str, line_id: str, expected_amount: float) -> bool:
        return abs((await self._target_line(customer_id, line_id)).data_refueling_gb - expected_amount) < 1e-6

    async def _assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        return (await self._target_line(customer_id, line_id)).status == expected_status

    async def _assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        customer = await self._customer(customer_id)
        if overdue_bill_id not in customer.bill_ids:
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if (await self._bill(overdue_bill_id)).status != "Overdue":
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    async def _assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        doc = await self.store.get(BILLS, overdue_bill_id)
        return doc is None or doc.get("status") == "Paid"
