"""Upstream gold trajectories replayed with ONLY the reads the gold itself makes, in both evidence modes.

The gold-replay tests (tests/domains/*/test_*_gold_replay.py) add the reads a careful agent makes before each
gold write. Real agents do not: the gate then refuses legal writes for bookkeeping reads. This replays each
task's gold actions exactly as listed (reads, generic calls, writes, the customer's phone actions), through the
real backend on the upstream data, with the paper's gate (`ask`) and with evidence assist (`assist`), and
counts per domain the gold writes refused and the reads the gate made itself.

One thing is added where the gold lacks it: the customer's identification. Many gold lists write without any
(airline 14 of 26 tasks with writes, most retail tasks numbered 70 and above, every telecom task); no
conversation can skip it, and the gate never identifies anyone itself, so before the first write of a gold
that has none the replay makes the identification the customer would give: retail `find_user_id_by_email`,
airline `get_user_details` (the customer states their id), telecom `get_customer_by_phone`, telehealth
`find_patient_by_email` (or by name and date of birth). `identified` counts the tasks that needed it.

`python -m tests.support.gold_own_reads` prints the table docs/evidence.md quotes (needs /work/shared).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.domain import Domain
from core.evidence import EvidenceMode
from core.replay import Checker, CheckResult, TrajectoryCall
from mock_backends.base import SQLiteToolBackend

Line = dict[str, Any]
Task = dict[str, Any]

IDENTIFY_NOTE = "identification the gold omits"
GOLD_NOTE = "gold "


@dataclass(frozen=True)
class GoldTask:
    """One task's replay: its lines, the scene to set first (telecom), which lines are gold agent writes."""

    task_id: str
    lines: list[Line]
    identified: bool  # the replay added the identification
    scene: tuple[dict[str, Any], ...] = ()
    domain: Domain | None = None  # a task-specific domain (airline: its own "now"), else the domain's


@dataclass
class Refusal:
    task_id: str
    action_id: str
    tool: str
    verdict: str
    refusal: str | None
    rules: tuple[str, ...]
    reason: str


@dataclass
class Figures:
    """One domain in one mode."""

    domain: str
    mode: str
    tasks: int = 0
    identified: int = 0
    writes: int = 0
    refused: list[Refusal] = field(default_factory=list)
    gate_reads: int = 0
    failed_gate_reads: int = 0

    @property
    def needs_read(self) -> int:
        return sum(r.refusal == "needs_read" for r in self.refused)


def _gold_action_id(line: Line) -> str | None:
    note = str(line.get("note", ""))
    return note.removeprefix(GOLD_NOTE) if note.startswith(GOLD_NOTE) else None


async def replay(backend: SQLiteToolBackend, domain: Domain, task: GoldTask, evidence: EvidenceMode,
                 set_scene: Callable[[SQLiteToolBackend, Sequence[dict[str, Any]]], Awaitable[None]] | None = None,
                 ) -> list[tuple[Line, CheckResult]]:
    """The task's lines through a fresh checker (the backend is restored by the caller)."""
    if set_scene is not None and task.scene:
        await set_scene(backend, task.scene)
    checker = Checker(task.domain or domain, backend, evidence=evidence)
    results = []
    for index, line in enumerate(task.lines):
        call = TrajectoryCall(index, index + 1, line["name"], dict(line["arguments"]),
                              requestor=line.get("requestor", "assistant"))
        results.append((line, await checker.check(call)))
    return results


def tally(figures: Figures, task: GoldTask, results: Sequence[tuple[Line, CheckResult]]) -> None:
    figures.tasks += 1
    figures.identified += task.identified
    for line, result in results:
        figures.gate_reads += len(result.gate_reads)
        figures.failed_gate_reads += sum("(failed:" in r for r in result.gate_reads)
        action_id = _gold_action_id(line)
        if action_id is None or result.kind != "write" or result.requestor != "assistant":
            continue
        figures.writes += 1
        if result.verdict in ("REVISE", "BLOCK"):
            figures.refused.append(Refusal(task.task_id, action_id, result.name, result.verdict, result.refusal,
                                           result.predicates, result.reason))


# ---------------------------------------------------------------------------------------------------
# Per domain: the gold lines, and the identification a gold without one gets.


def _lines(actions: Sequence[Mapping[str, Any]]) -> list[Line]:
    return [{"name": a["name"], "arguments": dict(a["arguments"]), "requestor": a.get("requestor", "assistant"),
             "note": GOLD_NOTE + str(a["action_id"])} for a in actions]


def _with_identification(lines: list[Line], identifies: Callable[[Line], bool], writes: frozenset[str],
                         identification: list[Line]) -> tuple[list[Line], bool]:
    for line in lines:
        if identifies(line):
            return lines, False
        if line["name"] in writes and line.get("requestor", "assistant") == "assistant":
            break
    else:
        return lines, False
    return [*({**i, "note": IDENTIFY_NOTE} for i in identification), *lines], True


def retail_tasks() -> tuple[Domain, list[GoldTask], Callable[[Path], Awaitable[SQLiteToolBackend]]]:
    from domains.retail import DOMAIN
    from mock_backends.retail import RetailBackend, load_tau2_db
    from tests.support.tau2_retail_trajectories import (
        DB_PATH,
        WRITE_TOOLS,
        gold_actions,
        load_db,
        load_tasks,
        task_customer,
    )

    db = load_db()
    tasks = []
    for task in load_tasks():
        customer = task_customer(task, db)
        identification = [] if customer is None else [
            {"name": "find_user_id_by_email", "arguments": {"email": db["users"][customer]["email"]}}]
        lines, added = _with_identification(_lines(gold_actions(task)),
                                            lambda ln: ln["name"].startswith("find_user_id"), WRITE_TOOLS,
                                            identification)
        tasks.append(GoldTask(str(task["id"]), lines, added))
    return DOMAIN, tasks, lambda path: RetailBackend.create(path, load_tau2_db(DB_PATH))


def airline_tasks() -> tuple[Domain, list[GoldTask], Callable[[Path], Awaitable[SQLiteToolBackend]]]:
    from domains.airline import DOMAIN
    from mock_backends.airline import AirlineBackend, load_tau2_db
    from tests.support.tau2_airline_trajectories import (
        DB_PATH,
        WRITE_TOOLS,
        gold_actions,
        load_db,
        load_tasks,
        task_customer,
    )

    db = load_db()
    tasks = []
    for task in load_tasks():
        customer = task_customer(task, db)
        identification = [] if customer is None else [
            {"name": "get_user_details", "arguments": {"user_id": customer}}]
        lines, added = _with_identification(
            _lines(gold_actions(task)),
            lambda ln, c=customer: ln["name"] == "get_user_details" and ln["arguments"].get("user_id") == c,
            WRITE_TOOLS, identification)
        tasks.append(GoldTask(str(task["id"]), lines, added))
    return DOMAIN, tasks, lambda path: AirlineBackend.create(path, load_tau2_db(DB_PATH))


def telecom_tasks() -> tuple[Domain, list[GoldTask], Callable[[Path], Awaitable[SQLiteToolBackend]]]:
    from domains.telecom import DOMAIN
    from mock_backends.telecom import TelecomBackend
    from tests.support.tau2_telecom_trajectories import (
        DB_PATH,
        WRITES,
        gold_actions,
        load_tasks,
        phone_number,
        setup,
        short_id,
    )

    tasks = []
    for task in load_tasks():
        identification = [{"name": "get_customer_by_phone", "arguments": {"phone_number": phone_number(task)}}]
        lines, added = _with_identification(_lines(gold_actions(task)),
                                            lambda ln: ln["name"].startswith("get_customer_by"), WRITES,
                                            identification)
        tasks.append(GoldTask(short_id(task), lines, added, tuple(setup(task))))
    return DOMAIN, tasks, lambda path: TelecomBackend.create(path, TelecomBackend.read_source(DB_PATH))


def telehealth_tasks() -> tuple[Domain, list[GoldTask], Callable[[Path], Awaitable[SQLiteToolBackend]]]:
    from domains.telehealth import DOMAIN
    from mock_backends.telehealth import TelehealthBackend
    from tests.support.tau_trait_telehealth_trajectories import (
        DATA_DIR,
        WRITE_TOOLS,
        authentication,
        gold_actions,
        load_data,
        load_tasks,
    )

    data = load_data()
    tasks = []
    for task in load_tasks():
        identification = [{"name": line["name"], "arguments": line["arguments"]}
                          for line in authentication(task, data)[:1]]
        lines, added = _with_identification(_lines(gold_actions(task)),
                                            lambda ln: ln["name"].startswith("find_patient"), WRITE_TOOLS,
                                            identification)
        tasks.append(GoldTask(str(task["id"]), lines, added))
    return DOMAIN, tasks, lambda path: TelehealthBackend.create(path, TelehealthBackend.read_source(DATA_DIR))


SOURCES = {"airline": airline_tasks, "retail": retail_tasks, "telecom": telecom_tasks, "telehealth": telehealth_tasks}


async def _telecom_scene(backend: SQLiteToolBackend, actions: Sequence[dict[str, Any]]) -> None:
    for action in actions:
        await backend.run_env_function(action["env_type"], action["func_name"],  # type: ignore[attr-defined]
                                       action["arguments"])


async def measure(name: str, folder: Path, modes: Sequence[EvidenceMode] = tuple(EvidenceMode)) -> list[Figures]:
    """Every gold task of domain `name` in each mode, from the freshly loaded upstream data each time."""
    domain, tasks, create = SOURCES[name]()
    backend = await create(folder / f"{name}.sqlite")
    scene = _telecom_scene if name == "telecom" else None
    try:
        base = await backend.snapshot()
        found = []
        for mode in modes:
            figures = Figures(name, mode.value)
            for task in tasks:
                await backend.restore(base)
                tally(figures, task, await replay(backend, domain, task, mode, scene))
            found.append(figures)
        return found
    finally:
        await backend.close()


def markdown(rows: Sequence[tuple[Figures, Figures]]) -> str:
    lines = ["| domain | tasks | identification added | gold writes | refused, ask: all (needs a read / breaks a "
             "rule / BLOCK) | refused, assist | reads the gate made (failed) |", "|---|---|---|---|---|---|---|"]
    for ask, assist in rows:
        blocked = sum(r.verdict == "BLOCK" for r in ask.refused)
        broken = len(ask.refused) - ask.needs_read - blocked
        lines.append(f"| {ask.domain} | {ask.tasks} | {ask.identified} | {ask.writes} | {len(ask.refused)} "
                     f"({ask.needs_read} / {broken} / {blocked}) | {len(assist.refused)} | {assist.gate_reads} "
                     f"({assist.failed_gate_reads}) |")
    details = [f"- {f.domain} {f.mode}: task {r.task_id} {r.action_id} {r.tool} {r.verdict}"
               f"{' (' + r.refusal + ')' if r.refusal else ''} from {', '.join(r.rules)}"
               for _, f in rows for r in f.refused]
    return "\n".join(lines + ([""] + details if details else []))


async def _main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        rows = []
        for name in SOURCES:
            ask, assist = await measure(name, Path(folder))
            rows.append((ask, assist))
        print(markdown(rows))


if __name__ == "__main__":
    asyncio.run(_main())
