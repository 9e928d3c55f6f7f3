"""Helpers for desk tests: a clock the test moves, fixed wall time, and the facts a session's trace recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.runtime.desk.desk import Desk
from console.runtime.desk.view import DeskSnapshot
from console.runtime.live import SessionSpec, SupervisionMode

WALL = "2026-01-01T09:00:00+00:00"


@dataclass
class ManualClock:
    """The desk's monotonic clock, moved by the test (waits and claims never depend on how fast it runs)."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def fixed_wall() -> str:
    return WALL


def spec(domain: str, scenario: str, mode: SupervisionMode) -> SessionSpec:
    return SessionSpec(domain=domain, scenario=scenario, mode=mode)


def make_desk(specs: list[SessionSpec], root: Path, clock: ManualClock, *, audit: bool = True,
              concurrency: int = 10, **kwargs: Any) -> Desk:
    return Desk(specs, concurrency=concurrency, root=root, audit_path=root / "desk" / "audit.jsonl" if audit else None,
                clock=clock, wall=fixed_wall, **kwargs)


def one_waiting_two_ended(root: Path, clock: ManualClock) -> Desk:
    """A retail session that waits on the operator (its BLOCK, approve non-ALLOW) beside an airline and a telecom
    session that run to their end on autopilot: the desk with one inbox item whose rows stop changing."""
    return make_desk([spec("retail", "other-customers-order", SupervisionMode.APPROVE_NON_ALLOW),
                      spec("airline", "cancel-outside-window", SupervisionMode.AUTOPILOT),
                      spec("telecom", "roaming-abroad", SupervisionMode.AUTOPILOT)], root, clock)


def trace_of(snapshot: DeskSnapshot, session_id: str) -> list[dict[str, Any]]:
    """The session's trace file on disk, every line parsed."""
    row = snapshot.row(session_id)
    assert row is not None and row.folder, session_id
    lines = (Path(row.folder) / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def corrected_arguments(domain: str, scenario: str) -> dict[str, Any]:
    """The plan's second proposal of its first write tool (the corrected call the script makes next)."""
    from core.tools import ToolKind
    from domains.registry import load_domain

    loaded = load_domain(domain)
    plan = json.loads((loaded.scenarios_dir / f"{scenario}.json").read_text(encoding="utf-8"))
    calls = [c for step in plan["agent"] for c in step.get("calls", [])]
    writes = [c for c in calls if (tool := loaded.tool(c["name"])) is not None and tool.kind is ToolKind.WRITE]
    same_tool = [c for c in writes if c["name"] == writes[0]["name"]]
    arguments: dict[str, Any] = same_tool[min(1, len(same_tool) - 1)]["arguments"]
    return arguments


PATIENCE = 60.0  # seconds a desk test waits for a condition: sessions share two busy cores with other work


async def until(pilot: Any, condition: Any, timeout: float = PATIENCE) -> None:
    """`tests.support.pilot.wait_for` with a desk's patience (a bound on the wait, never a measurement)."""
    from tests.support.pilot import wait_for

    await wait_for(pilot, condition, timeout)


async def until_screen(pilot: Any, app: Any, kind: type[Any], timeout: float = PATIENCE) -> Any:
    from tests.support.pilot import wait_for_screen

    return await wait_for_screen(pilot, app, kind, timeout)
