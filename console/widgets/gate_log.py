"""Gate pane: one row per gated call: the verdict, the operator's decision and the outcome, as three facts.

Each fact comes from its own event (GateDecided, SupervisorDecided, ToolResultEvent) and is worded by
console.facts, the same words the transcript, the export and the audit screen use. Selecting a row shows
the three facts in full and asks the screen to highlight, in the ledger, the evidence that verdict read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from console.facts import (
    decision_summary,
    disabled_rules,
    failed_rules,
    outcome_summary,
    verdict_reasons,
    verdict_summary,
)
from console.theme import OPERATOR, palette_of

PLACEHOLDER = "Select a verdict to see its reason and highlight its evidence in the ledger."


@dataclass
class GateRow:
    seq: int
    step: int
    verdict: str
    tool: str
    call_id: str
    failed: list[str]
    disabled: list[str]
    summary: str
    reasons: list[str]
    evidence: list[str]
    decision: str = ""  # the operator's decision, worded ("" when nobody was asked)
    decision_kind: str = ""
    outcome: str = ""  # executed or not, worded from the tool_result event ("" until it arrives)
    executed: bool | None = None
    filter_text: str = field(default="", repr=False)

    @property
    def override(self) -> str:
        """Kept for callers that only ask "did a human change the course?"."""
        return self.decision


class GatePane(Vertical):
    BORDER_TITLE = "Gate"

    @dataclass
    class EvidenceSelected(Message):
        evidence: list[str]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: dict[str, GateRow] = {}
        self._by_call: dict[str, str] = {}  # call id -> key of its latest row
        self.counts: dict[str, int] = {"ALLOW": 0, "REVISE": 0, "BLOCK": 0}
        self.overridden = 0
        self.filter = ""
        self._bulk = False  # inside `bulk()`: rows are gathered, the table is filled once at the end

    def compose(self) -> ComposeResult:
        table: DataTable[Any] = DataTable(id="gate-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("step", "verdict", "call · rules that objected")
        yield table
        with VerticalScroll(id="gate-detail-scroll"):
            yield Static(PLACEHOLDER, id="gate-detail")

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#gate-table", DataTable)

    def clear(self) -> None:
        self.rows.clear()
        self._by_call.clear()
        self.counts = dict.fromkeys(self.counts, 0)
        self.overridden = 0
        self.table.clear()
        self.query_one("#gate-detail", Static).update(PLACEHOLDER)
        self._subtitle()

    def _subtitle(self) -> None:
        text = " ".join(f"{v} {n}" for v, n in self.counts.items())
        if self.overridden:
            text += f" · overridden {self.overridden}"
        self.border_subtitle = text

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Many events at once (the replay moving to a step): the rows are built first, each with its operator
        decision and outcome, and the table is filled once, every row in its final state. Adding a row and then
        updating its cell, row by row, makes DataTable measure the whole column again at each update: with a
        long session's thousands of decisions, tens of seconds."""
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
            self._fill_table()
            if self.table.row_count:
                self.table.move_cursor(row=self.table.row_count - 1)
            self._subtitle()

    def add_decision(self, e: Any) -> None:
        evidence: list[str] = []
        for r in e.results:
            for path in r.evidence:
                if path not in evidence:
                    evidence.append(path)
        row = GateRow(e.seq, e.step, e.verdict, e.call.name, e.call.id, [r.predicate_id for r in failed_rules(e)],
                      disabled_rules(e), verdict_summary(e), verdict_reasons(e), evidence)
        key = str(e.seq)
        self.rows[key] = row
        self._by_call[e.call.id] = key
        self.counts[e.verdict] += 1
        if self._bulk:
            return
        if self._matches(row):
            self.table.add_row(str(e.step), self._badge(e.verdict), self._call_cell(row), key=key, height=None)
            self.table.move_cursor(row=self.table.row_count - 1)
        self._subtitle()

    def _badge(self, verdict: str) -> Text:
        return Text(f" {verdict} ", style=palette_of(self).badge(verdict))

    def recolour(self) -> None:
        """The theme changed: every row's badge and call cell, and the detail, in the new theme's colours."""
        table = self.table
        if not table.row_count:
            return
        verdict_column, call_column = table.ordered_columns[1].key, table.ordered_columns[2].key
        for row_key in list(table.rows):
            row = self.rows[str(row_key.value)]
            table.update_cell(row_key, verdict_column, self._badge(row.verdict))
            table.update_cell(row_key, call_column, self._call_cell(row))
        key = self._cursor_key()
        if key is not None:
            self.query_one("#gate-detail", Static).update(self.detail(key))

    def _call_cell(self, row: GateRow) -> Text:
        """Markers first (a narrow column cuts the end of a line): outcome, operator decision, then the tool."""
        cell = Text()
        if row.executed is not None:
            cell.append("ran " if row.executed else "not run ", "bold" if row.executed else "dim")
        if row.decision_kind:
            cell.append(f"[{row.decision_kind.replace('_', '-')}] ", palette_of(self).text(OPERATOR, "bold"))
        cell.append(row.tool)
        for rule in row.failed:
            cell.append(f"\n{rule}", "dim")
        if row.disabled:
            cell.append(f"\nskipped: {', '.join(row.disabled)}", "italic")
        return cell

    def _refresh_row(self, key: str) -> None:
        if self._bulk:
            return
        row = self.rows[key]
        if key in self.table.rows:
            self.table.update_cell(key, self.table.ordered_columns[2].key, self._call_cell(row), update_width=True)
        if self.table.cursor_row >= 0 and self._cursor_key() == key:
            self.show(key)

    def _cursor_key(self) -> str | None:
        if not self.table.row_count:
            return None
        try:
            return str(self.table.coordinate_to_cell_key(self.table.cursor_coordinate).row_key.value)
        except Exception:  # noqa: BLE001 - no row under the cursor
            return None

    def note_override(self, e: Any) -> None:
        """Attach the operator's decision (a SupervisorDecided) to the latest verdict on that call."""
        key = self._by_call.get(e.call.id)
        if key is None:
            return
        row = self.rows[key]
        if not row.decision_kind:
            if e.decision in ("force_allow", "veto", "edit"):
                self.overridden += 1
                if not self._bulk:
                    self._subtitle()
        row.decision, row.decision_kind = decision_summary(e), e.decision
        self._refresh_row(key)

    def note_result(self, e: Any) -> None:
        """Attach the outcome (a ToolResultEvent) to the latest verdict on that call, if it was gated."""
        key = self._by_call.get(e.call.id)
        if key is None:
            return
        row = self.rows[key]
        row.outcome, row.executed = outcome_summary(e), bool(e.executed)
        self._refresh_row(key)

    def detail(self, key: str) -> Text:
        row = self.rows[key]
        colours = palette_of(self)
        text = Text.assemble((f" {row.verdict} ", colours.badge(row.verdict)), f"  {row.tool}  (step {row.step})")
        text.append("\ngate: ", "bold")
        text.append(row.summary)
        for reason in row.reasons:
            text.append(f"\n  {reason}")
        text.append("\noperator: ", "bold")
        text.append(row.decision or "not asked", colours.text(OPERATOR, "bold") if row.decision else "dim")
        text.append("\noutcome: ", "bold")
        text.append(row.outcome or "pending", "" if row.outcome else "dim")
        if row.evidence:
            text.append("\nevidence: " + ", ".join(row.evidence), "dim")
        return text

    def show(self, key: str) -> None:
        if key not in self.rows:
            return
        self.query_one("#gate-detail", Static).update(self.detail(key))
        self.post_message(self.EvidenceSelected(self.rows[key].evidence))

    # ------------------------------------------------------------------------------------ filter

    def _matches(self, row: GateRow) -> bool:
        if not self.filter:
            return True
        haystack = " ".join([row.verdict, row.tool, row.summary, row.decision, row.outcome, *row.reasons]).lower()
        return self.filter.lower() in haystack

    def set_filter(self, text: str) -> None:
        """Show only rows whose verdict, tool, rules, decision or outcome contain `text`."""
        self.filter = text.strip()
        self._fill_table()

    def _fill_table(self) -> None:
        self.table.clear()
        for key, row in self.rows.items():
            if self._matches(row):
                self.table.add_row(str(row.step), self._badge(row.verdict), self._call_cell(row), key=key, height=None)

    @on(DataTable.RowHighlighted, "#gate-table")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show(event.row_key.value)
