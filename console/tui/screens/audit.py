"""Every operator decision of the session: time, who, tool, the gate's verdict, the decision, why, the call.

The decision is the fifth column (not behind a full-JSON column), named in words, one name per kind:
an accepted REVISE is "accepted the gate's refusal", never "approve". Built from the events it is given,
so the replay's audit shows the replayed session's decisions, not the live one's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.runtime.facts import DECISION_WORDS, verdict_words
from console.runtime.textview import shorten, shown
from console.tui.theme import palette_of
from console.tui.widgets.filter_bar import FilterBar


class AuditScreen(Screen[None]):
    BINDINGS = [Binding("escape,a", "app.pop_screen", "Back"), Binding("slash", "filter", "Filter")]

    def __init__(self, events: Sequence[Any]) -> None:
        super().__init__()
        self.decisions = [shown(e) for e in events if e.type == "supervisor_decision"]  # drawn: text inert

    def compose(self) -> ComposeResult:
        yield Static(f"Audit: {len(self.decisions)} operator decision(s) in this session (also in trace.jsonl)",
                     id="audit-title")
        table: DataTable[Any] = DataTable(id="audit-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("time", "who", "tool", "gate", "decision", "reason", "call")
        yield table
        yield FilterBar(id="filter-bar")
        yield Footer()

    def on_mount(self) -> None:
        self.show_rows("")

    def row(self, e: Any) -> list[Any]:
        arguments = e.edited_arguments if e.edited_arguments is not None else e.call.arguments
        call = shorten(json.dumps(arguments, sort_keys=True, ensure_ascii=False), 60)
        if e.edited_arguments is not None:
            call = f"edited to {call}"
        verdict = e.gate_verdict or "—"
        badge = Text(f" {verdict_words(verdict, getattr(e, 'gate_refusal', None))} ", palette_of(self).badge(verdict))
        # Text, not str: a DataTable parses a str cell as markup ("[red]" in a reason would style the row)
        return [Text(e.when), Text(e.who), Text(e.call.name), badge, Text(DECISION_WORDS.get(e.decision, e.decision)),
                Text(e.reason or "—"), Text(call)]

    def show_rows(self, text: str) -> None:
        """Show the decisions whose row contains `text` (case-insensitive)."""
        needle = text.strip().lower()
        table = self.query_one("#audit-table", DataTable)
        table.clear()
        for e in self.decisions:
            cells = self.row(e)
            if not needle or needle in " ".join(str(c) for c in cells).lower():
                table.add_row(*cells)

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.Applied)
    def _filtered(self, message: FilterBar.Applied) -> None:
        self.show_rows(message.text)
