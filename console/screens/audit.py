"""Every operator decision of the session: who, when, which call, the gate's verdict, the decision, why."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static


class AuditScreen(Screen[None]):
    BINDINGS = [Binding("escape,a", "app.pop_screen", "Back")]

    def __init__(self, events: Sequence[Any]) -> None:
        super().__init__()
        self.decisions = [e for e in events if e.type == "supervisor_decision"]

    def compose(self) -> ComposeResult:
        yield Static(f"Audit: {len(self.decisions)} operator decision(s) in this session (also in trace.jsonl)",
                     id="audit-title")
        table: DataTable[str] = DataTable(id="audit-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("when", "who", "step", "call", "gate", "decision", "reason / edit")
        for e in self.decisions:
            detail = e.reason
            if e.edited_arguments is not None:
                detail = f"{detail} → {json.dumps(e.edited_arguments, sort_keys=True)}".strip()
            call = f"{e.call.name}({json.dumps(e.call.arguments, sort_keys=True)})"
            table.add_row(e.when, e.who, str(e.step), call, e.gate_verdict or "—", e.decision, detail)
        yield table
        yield Footer()
