"""Gate pane: one row per gated call (verdict, tool, failed rules, reason); selecting a row shows the full
feedback and asks the app to highlight, in the ledger, the evidence that verdict read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from console.widgets.transcript import BADGE


@dataclass
class GateRow:
    seq: int
    step: int
    verdict: str
    tool: str
    failed: list[str]
    reason: str
    feedback: str
    evidence: list[str]
    override: str = ""


class GatePane(Vertical):
    BORDER_TITLE = "Gate"

    @dataclass
    class EvidenceSelected(Message):
        evidence: list[str]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: dict[str, GateRow] = {}
        self.counts: dict[str, int] = {"ALLOW": 0, "REVISE": 0, "BLOCK": 0}

    def compose(self) -> ComposeResult:
        table: DataTable[Any] = DataTable(id="gate-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("step", "verdict", "call · rules that objected")
        yield table
        with VerticalScroll(id="gate-detail-scroll"):
            yield Static("Select a verdict to see its reason and highlight its evidence in the ledger.",
                         id="gate-detail")

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#gate-table", DataTable)

    def clear(self) -> None:
        self.rows.clear()
        self.counts = dict.fromkeys(self.counts, 0)
        self.table.clear()
        self._subtitle()

    def _subtitle(self) -> None:
        self.border_subtitle = " ".join(f"{v} {n}" for v, n in self.counts.items())

    def add_decision(self, e: Any) -> None:
        failed = [r for r in e.results if r.status not in ("pass", "disabled")]
        evidence: list[str] = []
        for r in e.results:
            for path in r.evidence:
                if path not in evidence:
                    evidence.append(path)
        row = GateRow(e.seq, e.step, e.verdict, e.call.name, [r.predicate_id for r in failed],
                      " | ".join(r.reason for r in failed), e.feedback, evidence)
        key = str(e.seq)
        self.rows[key] = row
        self.counts[e.verdict] += 1
        self.table.add_row(str(e.step), Text(f" {e.verdict} ", style=BADGE[e.verdict]), self._call_cell(row),
                           key=key, height=None)
        self.table.move_cursor(row=self.table.row_count - 1)
        self._subtitle()

    @staticmethod
    def _call_cell(row: GateRow) -> Text:
        cell = Text(row.tool)
        if row.override:
            cell.append(f"  [{row.override}]", "bold magenta")
        for rule in row.failed:
            cell.append(f"\n{rule}", "dim")
        return cell

    def note_override(self, e: Any) -> None:
        """Mark the latest row for this call with the operator's decision."""
        for key in reversed(list(self.rows)):
            row = self.rows[key]
            if row.tool == e.call.name and not row.override:
                row.override = f"{e.decision} by {e.who}"
                self.table.update_cell(key, self.table.ordered_columns[2].key, self._call_cell(row),
                                       update_width=True)
                return

    def show(self, key: str) -> None:
        row = self.rows.get(key)
        if row is None:
            return
        text = Text.assemble((f" {row.verdict} ", BADGE[row.verdict]), f"  {row.tool}  (step {row.step})")
        if row.override:
            text.append(f"\noperator: {row.override}", "bold magenta")
        text.append("\n" + (row.feedback or "All rules passed."))
        if row.evidence:
            text.append("\nevidence: " + ", ".join(row.evidence), "dim")
        self.query_one("#gate-detail", Static).update(text)
        self.post_message(self.EvidenceSelected(row.evidence))

    @on(DataTable.RowHighlighted, "#gate-table")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show(event.row_key.value)
