"""Gate pane: one row per gated call: the verdict, the operator's decision and the outcome, as three facts.

Each fact comes from its own event (GateDecided, SupervisorDecided, ToolResultEvent) and is worded by
console.runtime.facts, the same words the transcript, the export and the audit screen use. Selecting a row shows
the three facts in full and asks the screen to highlight, in the ledger, the evidence that verdict read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from console.runtime.facts import (
    customer_words,
    decision_summary,
    disabled_rules,
    failed_rules,
    outcome_summary,
    verdict_reasons,
    verdict_summary,
)
from console.tui.theme import OPERATOR, palette_of

PLACEHOLDER = "Select a verdict to see its reason and highlight its evidence in the ledger."
STEP_WIDTH, VERDICT_WIDTH = 4, 8  # fixed, so the call column's width is known before a row is drawn
SCROLLBAR = 1  # reserved on the right (console.tcss): rows grow, and a scrollbar appearing must not cut a line


def fold(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken at spaces, else after a `.` or `_` (rule ids and
    tool names), else anywhere: a long id reads whole over two lines instead of being cut at the edge."""
    if width <= 0 or len(text) <= width:
        return [text]
    lines: list[str] = []
    rest = text
    while len(rest) > width:
        cut = rest.rfind(" ", 0, width + 1)
        if cut > 0:
            lines.append(rest[:cut])
            rest = rest[cut + 1:]
            continue
        cut = max(rest.rfind(".", 0, width), rest.rfind("_", 0, width))
        cut = cut + 1 if cut > 0 else width
        lines.append(rest[:cut])
        rest = rest[cut:]
    lines.append(rest)
    return lines


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
    said: str = ""  # what the customer said, as the confirmation rule quoted it (console.runtime.facts)
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
        self.wrap_width = 0  # the call column's width the rows are folded at (0: not laid out yet, no folding)
        self._heights: dict[str, int] = {}  # lines of each row's call cell as drawn: a change needs a new row
        self.rows: dict[str, GateRow] = {}
        self._by_call: dict[str, str] = {}  # call id -> key of its latest row
        self.counts: dict[str, int] = {"ALLOW": 0, "REVISE": 0, "BLOCK": 0}
        self.overridden = 0
        self.filter = ""
        self._bulk = False  # inside `bulk()`: rows are gathered, the table is filled once at the end
        self.waiting: str | None = None  # the call a human is asked about now (the screen says which)
        self.ended = False  # the session's `session_ended` was seen: an undecided call will stay undecided

    def compose(self) -> ComposeResult:
        table: DataTable[Any] = DataTable(id="gate-table", cursor_type="row", zebra_stripes=True)
        table.add_column("step", width=STEP_WIDTH)
        table.add_column("verdict", width=VERDICT_WIDTH)
        table.add_column("call · objections")
        yield table
        with VerticalScroll(id="gate-detail-scroll"):
            yield Static(PLACEHOLDER, id="gate-detail")

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#gate-table", DataTable)

    def clear(self) -> None:
        self.waiting, self.ended = None, False
        self.rows.clear()
        self._heights.clear()
        self._by_call.clear()
        self.counts = dict.fromkeys(self.counts, 0)
        self.overridden = 0
        self.table.clear()
        self.query_one("#gate-detail", Static).update(PLACEHOLDER)
        self._subtitle()

    def _subtitle(self) -> None:
        """The verdicts counted, zeros left out: a narrow pane's border must not cut the override count."""
        text = " ".join(f"{v} {n}" for v, n in self.counts.items() if n) or "no verdicts yet"
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
            self._rebuild()
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
                      disabled_rules(e), verdict_summary(e), verdict_reasons(e), evidence,
                      customer_words(e.results))
        key = str(e.seq)
        self.rows[key] = row
        self._by_call[e.call.id] = key
        self.counts[e.verdict] += 1
        if self._bulk:
            return
        if self._matches(row):
            self._add_row(key, row)
            self.table.move_cursor(row=self.table.row_count - 1)
        self._subtitle()

    def _add_row(self, key: str, row: GateRow) -> None:
        cell = self._call_cell(row)
        self._heights[key] = len(cell.split())
        self.table.add_row(str(row.step), self._badge(row.verdict), cell, key=key, height=None)

    def _rebuild(self) -> None:
        """Every shown row again (folded at the current width), the cursor kept on its row."""
        key = self._cursor_key()
        self.table.clear()
        self._heights.clear()
        for row_key, row in self.rows.items():
            if self._matches(row):
                self._add_row(row_key, row)
        if key is not None and key in self.table.rows:
            self.table.move_cursor(row=self.table.get_row_index(key))

    def _call_width(self) -> int:
        padding = 2 * self.table.cell_padding
        return self.table.size.width - (STEP_WIDTH + padding) - (VERDICT_WIDTH + padding) - padding - SCROLLBAR

    @on(events.Resize)
    def _resized(self) -> None:
        """A new width folds the call cells anew (a row's height is fixed when it is added, so the rows are
        added again; this happens on a resize, never per event)."""
        width = self._call_width()
        if width > 0 and width != self.wrap_width:
            self.wrap_width = width
            self._rebuild()

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
        """Outcome, operator decision and tool, then one line per objecting rule, every line folded at the call
        column's width: nothing is cut, a long rule id or label goes on over the next line."""
        width = self.wrap_width
        head = Text()
        if row.executed is not None:
            head.append("ran " if row.executed else "not run ", "bold" if row.executed else "dim")
        if row.decision_kind:
            head.append(f"[{row.decision_kind.replace('_', '-')}] ", palette_of(self).text(OPERATOR, "bold"))
        head.append(row.tool)
        lines: list[Text] = []
        offset = 0
        for part in fold(head.plain, width):
            start = head.plain.index(part, offset)
            lines.append(head[start:start + len(part)])
            offset = start + len(part)
        lines += [Text(part, "dim") for rule in row.failed for part in fold(rule, width)]
        if row.disabled:
            lines += [Text(part, "italic") for part in fold(f"skipped: {', '.join(row.disabled)}", width)]
        return Text("\n").join(lines)

    def _refresh_row(self, key: str) -> None:
        if self._bulk:
            return
        row = self.rows[key]
        if key in self.table.rows:
            cell = self._call_cell(row)
            if len(cell.split()) != self._heights.get(key):
                self._rebuild()  # it needs another number of lines: a row's height is set when it is added
            else:
                self.table.update_cell(key, self.table.ordered_columns[2].key, cell, update_width=True)
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

    def set_waiting(self, call_id: str | None) -> None:
        """The call that waits on the operator now (None: none): its row says so instead of "not asked"."""
        if call_id == self.waiting:
            return
        self.waiting = call_id
        self._show_again()

    def note_ended(self) -> None:
        """The session ended (its `session_ended` event): a call nobody decided stays undecided, and says so."""
        self.ended = True
        self.waiting = None
        self._show_again()

    def _show_again(self) -> None:
        key = self._cursor_key()
        if key is not None:
            self.query_one("#gate-detail", Static).update(self.detail(key))

    def _operator_words(self, row: GateRow) -> str:
        """The operator fact, from what was recorded: the decision; else, for a call that never got an outcome,
        that the session ended first, or that it waits on the operator now; else nobody was asked."""
        if row.decision:
            return row.decision
        if not row.outcome and self.ended:
            return "not decided: the session ended"
        if not row.outcome and row.call_id == self.waiting:
            return "waiting for the operator"
        return "not asked"

    def detail(self, key: str) -> Text:
        row = self.rows[key]
        colours = palette_of(self)
        text = Text.assemble((f" {row.verdict} ", colours.badge(row.verdict)), f"  {row.tool}  (step {row.step})")
        text.append("\ngate: ", "bold")
        text.append(row.summary)
        for reason in row.reasons:
            text.append(f"\n  {reason}")
        if row.said:
            text.append("\ncustomer: ", "bold")
            text.append(row.said)
        text.append("\noperator: ", "bold")
        operator = self._operator_words(row)
        text.append(operator, colours.text(OPERATOR, "bold") if operator != "not asked" else "dim")
        text.append("\noutcome: ", "bold")
        text.append(row.outcome or ("not run: the session ended" if self.ended else "pending"),
                    "" if row.outcome else "dim")
        if row.evidence:
            text.append("\nevidence: " + ", ".join(row.evidence), "dim")
        return text

    def select_call(self, call_id: str) -> bool:
        """Highlight the latest verdict on `call_id` and show its detail; False when the pane has no row for it
        (not decided yet at this step, or filtered out)."""
        key = self._by_call.get(call_id)
        if key is None or key not in self.table.rows:
            return False
        self.table.move_cursor(row=self.table.get_row_index(key))
        self.show(key)
        return True

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
        self._rebuild()

    @on(DataTable.RowHighlighted, "#gate-table")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show(event.row_key.value)
