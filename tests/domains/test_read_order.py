"""For every domain's predicates: a verdict is a function of the observed facts, never of
the order or the number of reads.

Each upstream gold trajectory (the careful reads before each gold write, as the four gold-replay modules
build them) is replayed over the REAL backend of its domain in several shapes, and every gold write must
get the verdict it gets in the plain replay (ALLOW, except retail's 64_6, which tau2's own tool refuses):

- `reversed`, `rotated`: the assistant's reads between two state changes come in another order (a read
  never moves past a write or a customer's phone action, so every read still returns what it returned);
- `more`: before each gold write the agent reads more: every read it made so far again (latest first, so
  older facts are superseded by newer copies of the same or changed records), then the customer's other
  records (every reservation, order, line, medical record, ...) and, in telehealth, the interaction checks
  of the medication being changed against the record's and the profile's other drugs (tau-Trait task 10
  changes Sertraline's supplier on a record that also prescribes Warfarin, a high-severity pair).

Extra reads carry no expectation (a few fail, as a real agent's would). Skipped when the upstream data is absent.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
import pytest_asyncio

import tests.support.tau2_airline_trajectories as airline
import tests.support.tau2_retail_trajectories as retail
import tests.support.tau2_telecom_trajectories as telecom
import tests.support.tau_trait_telehealth_trajectories as telehealth
from core.domain import Domain
from core.replay import Checker, parse_trajectory
from core.tools import ToolKind
from domains.airline import DOMAIN as AIRLINE
from domains.retail import DOMAIN as RETAIL
from domains.telecom import DOMAIN as TELECOM
from domains.telehealth import DOMAIN as TELEHEALTH
from mock_backends.airline import AirlineBackend
from mock_backends.airline import load_tau2_db as load_airline_db
from mock_backends.retail import RetailBackend
from mock_backends.retail import load_tau2_db as load_retail_db
from mock_backends.store import Snapshot
from mock_backends.telecom import TelecomBackend
from mock_backends.telehealth import TelehealthBackend

Line = dict[str, Any]
SHAPES = ("reversed", "rotated", "more")
JOHN = "C1001"  # every small telecom task's customer (see test_telecom_gold_replay.py)

pytestmark = pytest.mark.shared
module_loop = pytest.mark.asyncio(loop_scope="module")


def _read_line(name: str, arguments: dict[str, Any]) -> Line:
    return {"name": name, "arguments": arguments, "note": "extra read"}


def _is_read(domain: Domain, line: Line) -> bool:
    """An assistant read: the only lines that may move. Writes, generic calls and the customer's phone actions
    change (or may change) the state a read returns, so they stay where they are."""
    return line.get("requestor", "assistant") == "assistant" and domain.kind_of(line["name"]) is ToolKind.READ


def _is_assistant_write(domain: Domain, line: Line) -> bool:
    return line.get("requestor", "assistant") == "assistant" and domain.kind_of(line["name"]) is ToolKind.WRITE


def _segments(domain: Domain, lines: list[Line]) -> list[tuple[list[Line], Line | None]]:
    """The trajectory as (reads, the state change that follows them), the last one with None."""
    out: list[tuple[list[Line], Line | None]] = []
    reads: list[Line] = []
    for line in lines:
        if _is_read(domain, line):
            reads.append(line)
        else:
            out.append((reads, line))
            reads = []
    out.append((reads, None))
    return out


def reshape(domain: Domain, lines: list[Line], shape: str,
            extras: Callable[[Line], list[Line]] = lambda line: []) -> list[Line]:
    """`lines` in one of SHAPES (see the module docstring)."""
    out: list[Line] = []
    seen: dict[str, Line] = {}
    for reads, change in _segments(domain, lines):
        if shape == "reversed":
            out += reads[::-1]
        elif shape == "rotated":
            out += reads[1:] + reads[:1]
        else:
            out += reads
        for line in reads:
            seen[json.dumps([line["name"], line["arguments"]], sort_keys=True)] = line
        if change is None:
            break
        if shape == "more" and _is_assistant_write(domain, change):
            out += [_read_line(line["name"], line["arguments"]) for line in reversed(seen.values())]
            out += extras(change)
        out.append(change)
    return out


def gold_verdicts(lines: list[Line], verdicts: list[str]) -> dict[str, str]:
    """action note -> verdict, for the gold writes (the notes are unique per trajectory)."""
    return {line["note"]: verdict for line, verdict in zip(lines, verdicts, strict=True)
            if line.get("note", "").startswith("gold ") and "expect" in line}


async def verdicts_of(domain: Domain, backend: Any, lines: list[Line]) -> list[str]:
    trajectory = parse_trajectory("\n".join(json.dumps(line) for line in lines))
    assert not trajectory.problems, trajectory.problems
    return [r.verdict for r in await Checker(domain, backend).run(trajectory.calls)]


@dataclass
class Case:
    """One domain's gold trajectories and how to build more reads for them."""
    domain: Domain
    trajectories: dict[str, list[Line]]
    extras: Callable[[str, Line], list[Line]]
    scene: Callable[[Any, str], Awaitable[None]]


async def _no_scene(backend: Any, task_id: str) -> None:
    return None


# --- airline -------------------------------------------------------------------------------------------------


def _airline_case() -> Case:
    tasks = {t["id"]: t for t in airline.load_tasks()}
    db = airline.load_db()

    def extras(task_id: str, write: Line) -> list[Line]:
        customer = airline.task_customer(tasks[task_id], db)
        if customer is None or customer not in db["users"]:
            return []
        out = [_read_line("get_user_details", {"user_id": customer})]
        for reservation_id in db["users"][customer].get("reservations", []):
            out.append(_read_line("get_reservation_details", {"reservation_id": reservation_id}))
            for flight in db["reservations"].get(reservation_id, {}).get("flights", []):
                args = {"flight_number": flight["flight_number"], "date": flight["date"]}
                if not airline.read_would_fail(db, "get_flight_status", args):
                    out.append(_read_line("get_flight_status", args))
        return out

    return Case(AIRLINE, {tid: airline.build_trajectory(t, db) for tid, t in tasks.items()}, extras, _no_scene)


# --- retail --------------------------------------------------------------------------------------------------


def _retail_case() -> Case:
    tasks = {t["id"]: t for t in retail.load_tasks()}
    db = retail.load_db()
    refusals = {"64_6": "BLOCK"}  # tau2's own tool refuses it (see test_retail_gold_replay.py)

    def extras(task_id: str, write: Line) -> list[Line]:
        customer = retail.task_customer(tasks[task_id], db)
        if customer is None or customer not in db["users"]:
            return []
        out = [_read_line("get_user_details", {"user_id": customer})]
        for order_id in db["users"][customer].get("orders", []):
            out.append(_read_line("get_order_details", {"order_id": order_id}))
            products = dict.fromkeys(item["product_id"] for item in db["orders"].get(order_id, {}).get("items", []))
            out += [_read_line("get_product_details", {"product_id": product}) for product in products]
        return out

    trajectories = {tid: retail.build_trajectory(t, db, expected_refusals=refusals) for tid, t in tasks.items()}
    return Case(RETAIL, trajectories, extras, _no_scene)


# --- telecom -------------------------------------------------------------------------------------------------


def _telecom_case() -> Case:
    tasks = {telecom.short_id(t): t for t in telecom.load_tasks()}

    def extras(task_id: str, write: Line) -> list[Line]:
        lines = ("L1001", "L1002", "L1003")  # John Smith's lines (db.toml)
        return [_read_line("get_customer_by_id", {"customer_id": JOHN}),
                *(_read_line("get_details_by_id", {"id": line}) for line in lines),
                _read_line("get_bills_for_customer", {"customer_id": JOHN}),
                *(_read_line("get_data_usage", {"customer_id": JOHN, "line_id": line}) for line in lines)]

    async def scene(backend: Any, task_id: str) -> None:
        for action in telecom.setup(tasks[task_id]):
            await backend.run_env_function(action["env_type"], action["func_name"], action["arguments"])

    return Case(TELECOM, {tid: telecom.build_trajectory(t, JOHN) for tid, t in tasks.items()}, extras, scene)


# --- telehealth ----------------------------------------------------------------------------------------------


def _telehealth_case() -> Case:
    tasks = {t["id"]: t for t in telehealth.load_tasks()}
    data = telehealth.load_data()

    def extras(task_id: str, write: Line) -> list[Line]:
        patient = tasks[task_id]["user_id"]
        out = [_read_line("list_patient_medical_records", {"patient_id": patient}),
               _read_line("list_patient_appointments", {"patient_id": patient})]
        if write["name"] != "update_prescription_supplier":
            return out
        medication = str(write["arguments"]["medication"])
        record = data["medical_records"].get(write["arguments"]["record_id"], {})
        on_record = [str(p["medication"]) for p in record.get("prescriptions", [])]
        history = data["patients"][patient].get("medical_history", {})
        in_profile = [str(m["name"]) for m in history.get("medications", [])]
        for others in (on_record, in_profile, [*on_record, *in_profile]):
            others = [name for name in dict.fromkeys(others) if name.lower() != medication.lower()]
            out.append(_read_line("check_drug_interactions",
                                  {"primary_medication": medication, "current_medications": others}))
        return out

    return Case(TELEHEALTH, {tid: telehealth.build_trajectory(t, data) for tid, t in tasks.items()}, extras,
                _no_scene)


# --- the property --------------------------------------------------------------------------------------------


@dataclass
class Bench:
    case: Case
    backend: Any
    base: Snapshot


BUILDERS: dict[str, tuple[Callable[[], bool], Callable[[], Case]]] = {
    "airline": (airline.shared_present, _airline_case),
    "retail": (retail.shared_present, _retail_case),
    "telecom": (telecom.shared_present, _telecom_case),
    "telehealth": (telehealth.shared_present, _telehealth_case),
}


async def _backend(name: str, folder: Any) -> Any:
    path = folder / f"{name}.sqlite"
    if name == "airline":
        return await AirlineBackend.create(path, load_airline_db(airline.DB_PATH))
    if name == "retail":
        return await RetailBackend.create(path, load_retail_db(retail.DB_PATH))
    if name == "telecom":
        return await TelecomBackend.create(path, TelecomBackend.read_source(telecom.DB_PATH))
    return await TelehealthBackend.create(path, TelehealthBackend.read_source(telehealth.DATA_DIR))


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=list(BUILDERS))
async def bench(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Bench]:
    present, build = BUILDERS[request.param]
    if not present():
        pytest.skip(f"the {request.param} upstream data is not here")
    backend = await _backend(request.param, tmp_path_factory.mktemp(f"read_order_{request.param}"))
    try:
        yield Bench(build(), backend, await backend.snapshot())
    finally:
        await backend.close()


async def _run(bench: Bench, task_id: str, lines: list[Line]) -> dict[str, str]:
    await bench.backend.restore(bench.base)
    await bench.case.scene(bench.backend, task_id)
    return gold_verdicts(lines, await verdicts_of(bench.case.domain, bench.backend, lines))


def _differences(plain: dict[str, str], shaped: dict[str, str]) -> list[str]:
    return [f"{note}: {plain[note]} -> {shaped.get(note)}" for note in plain if shaped.get(note) != plain[note]]


@module_loop
@pytest.mark.parametrize("shape", SHAPES)
async def test_every_gold_write_keeps_its_verdict_in_any_order_and_with_more_reads(bench: Bench, shape: str) -> None:
    failures: list[str] = []
    for task_id, lines in bench.case.trajectories.items():
        plain = await _run(bench, task_id, lines)
        expected = {line["note"]: line["expect"] for line in lines if line["note"] in plain}
        assert plain == expected, (task_id, _differences(expected, plain))
        shaped_lines = reshape(bench.case.domain, lines, shape, partial(bench.case.extras, task_id))
        shaped = await _run(bench, task_id, shaped_lines)
        failures += [f"task {task_id}: {d}" for d in _differences(plain, shaped)]
    assert not failures, "\n".join(failures)


def test_reshape_moves_reads_only_between_state_changes() -> None:
    """The shapes themselves: reads stay in their segment, writes and phone actions keep their places."""
    lines = [{"name": "get_customer_by_phone", "arguments": {"phone_number": "1"}, "note": "a"},
             {"name": "get_details_by_id", "arguments": {"id": "L1"}, "note": "b"},
             {"name": "toggle_roaming", "arguments": {}, "requestor": "user", "note": "c"},
             {"name": "get_bills_for_customer", "arguments": {"customer_id": "C1"}, "note": "d"},
             {"name": "get_details_by_id", "arguments": {"id": "L1"}, "note": "e"},
             {"name": "enable_roaming", "arguments": {"customer_id": "C1", "line_id": "L1"}, "note": "f"}]

    def notes(shaped: Iterable[Line]) -> list[str]:
        return [line["note"] for line in shaped]

    assert notes(reshape(TELECOM, lines, "reversed")) == ["b", "a", "c", "e", "d", "f"]
    assert notes(reshape(TELECOM, lines, "rotated")) == ["b", "a", "c", "e", "d", "f"]
    more = reshape(TELECOM, lines, "more", lambda write: [_read_line("get_customer_by_id", {"customer_id": "C1"})])
    assert notes(more) == ["a", "b", "c", "d", "e", "extra read", "extra read", "extra read", "extra read", "f"]
    assert [line["arguments"] for line in more[5:9]] == [{"customer_id": "C1"}, {"id": "L1"},
                                                        {"phone_number": "1"}, {"customer_id": "C1"}]
