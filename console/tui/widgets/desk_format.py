"""How the desk's widgets word and colour a fact: waits, service levels, phases (roles, never colours).

Shared by the sessions table, the inbox, the item detail and the status line, so a wait or a phase reads
the same wherever it is shown.
"""

from __future__ import annotations

from rich.text import Text

from console.runtime.desk.view import RowPhase, Service
from console.tui.theme import OPERATOR, Palette

SERVICE_ROLE = {Service.OK: None, Service.AMBER: "warning", Service.RED: "error"}
PHASE_ROLE = {RowPhase.RUNNING: "success", RowPhase.WAITING: OPERATOR, RowPhase.PAUSED: "warning",
              RowPhase.FAILED: "error", RowPhase.QUEUED: None, RowPhase.ENDED: None}


def duration(seconds: float | None) -> str:
    """`7s`, `2m05s`, `1h02m`: short enough for a table cell; whole seconds (the clock ticks once a second)."""
    if seconds is None:
        return "—"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def waited_text(seconds: float, service: Service, colours: Palette) -> Text:
    role = SERVICE_ROLE[service]
    label = duration(seconds) + ("" if service is Service.OK else f" {service.value}")
    return Text(label, colours.text(role, "bold") if role else "")


def phase_text(phase: RowPhase, colours: Palette) -> Text:
    role = PHASE_ROLE.get(phase)
    return Text(phase.value, colours.text(role, "bold") if role else "")


def verdict_text(verdict: str | None, colours: Palette) -> Text:
    if verdict is None:
        return Text("no gate", "dim")
    return Text(f" {verdict} ", colours.badge(verdict))
