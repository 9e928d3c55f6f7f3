"""Predicate workbench: see every rule and how it fared, toggle it, reload it from source after an edit,
re-gate the whole session with the rules as they are now, and export the session as a check fixture."""

from __future__ import annotations

import traceback
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.runtime.coverage import CoverageReport, coverage
from console.runtime.live import LiveSession
from console.runtime.rules import reload_rules
from console.tui.theme import palette_of
from console.tui.widgets.cells import literal
from core.gate import Predicate
from core.regate import RegateRow, export_trajectory, regate, write_trajectory
from core.strict_json import inert


def predicate_counts(events: list[Any]) -> dict[str, Counter[str]]:
    """How often each predicate passed / failed / errored in this session's gate decisions."""
    counts: dict[str, Counter[str]] = {}
    for e in events:
        if e.type == "gate_decision":
            for r in e.results:
                counts.setdefault(r.predicate_id, Counter())[r.status] += 1
    return counts


def regate_counts(rows: list[RegateRow]) -> dict[str, Counter[str]]:
    """The same counts as `predicate_counts`, over what the current rules said in a re-gate."""
    counts: dict[str, Counter[str]] = {}
    for row in rows:
        for rule, status in row.new_statuses:
            counts.setdefault(rule, Counter())[status] += 1
    return counts


def _tally(counts: Counter[str]) -> tuple[int, int, int]:
    return counts["pass"], counts["violation"] + counts["missing"], counts["error"]


STATUS_WORDS = {"violation": "", "missing": " (needs a read)", "error": " (crashed)"}


def rule_list(statuses: tuple[tuple[str, str], ...]) -> str:
    """The objecting rules of one decision, each saying how it objected unless it simply found a violation:
    a crash and a missing read give the same REVISE as a violation and must not read like one."""
    return ", ".join(f"{rule}{STATUS_WORDS[status]}" for rule, status in statuses if status in STATUS_WORDS)


def regate_detail(row: RegateRow) -> str:
    """Everything about one re-gated call, unabridged: the diff table's cells are cut to fit, this is not."""
    lines = [f"#{row.index} step {row.step}: {row.name} {row.arguments}",
             f"verdict {row.old_verdict} → {row.new_verdict}" + ("" if row.changed else " (unchanged)")]
    lines += [f"{rule}: {old} → {new}" for rule, old, new in row.status_changes]
    lines.append(f"recorded reason: {row.old_reason or '(none: every rule passed)'}")
    lines.append(f"reason now: {row.new_reason or '(none: every rule passed)'}")
    return "\n".join(lines)


class WorkbenchScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,w", "app.pop_screen", "Back"),
        Binding("space", "toggle_predicate", "Enable/disable"),
        Binding("r", "reload", "Reload from source"),
        Binding("g", "regate", "Re-gate session"),
        Binding("x", "export", "Export as check fixture"),
    ]

    def __init__(self, live: LiveSession) -> None:
        super().__init__()
        self.live = live
        self.last_regate: list[RegateRow] | None = None  # the latest re-gate's rows, once `g` has run

    @property
    def gate(self) -> Any:
        return self.live.agent.gate

    def compose(self) -> ComposeResult:
        yield Static("", id="wb-title", classes="screen-title")
        with Vertical(id="wb-body"):
            table: DataTable[Any] = DataTable(id="wb-predicates", cursor_type="row", zebra_stripes=True)
            table.add_columns("on", "id", "severity", "source", "tests", "pass", "fail", "error", "guards", "policy")
            yield table
            yield Static("", id="wb-message")
            diff: DataTable[Any] = DataTable(id="wb-diff", cursor_type="row", zebra_stripes=True)
            diff.add_columns("#", "step", "call", "old", "new", "old rules", "new rules", "new reason")
            yield diff
            yield Static("", id="wb-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.coverage: CoverageReport = coverage(self.live.domain)
        self.refresh_table()

    def _say(self, text: str | Text) -> None:
        """A message under the rules, shown as it is: it names rules, files and errors (never markup), so a
        `str` is not parsed for markup and the text's control characters are inert; a `Text` keeps its style."""
        plain, style = (text.plain, text.style) if isinstance(text, Text) else (text, "")
        self.query_one("#wb-message", Static).update(Text(inert(plain, lines=True), style=style))

    def refresh_table(self) -> None:
        table = self.query_one("#wb-predicates", DataTable)
        cursor = table.cursor_row
        table.clear()
        gate = self.gate
        title = f"Predicates of {self.live.domain.title}"
        if gate is None:
            self.query_one("#wb-title", Static).update(title + " — this agent runs without a gate")
            return
        counts = predicate_counts(self.live.bus.history)
        regated = regate_counts(self.last_regate) if self.last_regate is not None else None
        colours = palette_of(self)
        for p in gate.predicates:
            c = counts.get(p.id, Counter())
            cells = [str(n) for n in _tally(c)]
            if regated is not None:  # the counts the current rules give, next to the recorded ones
                cells = [str(new) if new == old else f"{new} (was {old})"
                         for new, old in zip(_tally(regated.get(p.id, Counter())), _tally(c), strict=True)]
            on_mark = Text("✗", colours.text("error", "bold")) if p.id in gate.disabled \
                else Text("✓", colours.text("success", "bold"))
            tools = ", ".join(sorted(p.tools))
            tools = tools if len(tools) <= 40 else f"{len(p.tools)} tools: {tools[:28]}…"
            source = Text(p.source, colours.text("warning", "bold") if p.house_rule else "")
            tested = len(self.coverage.tests_of(p.id)) if self.coverage.tests_found else "-"
            # literal: a rule's id, tools and policy are its file's (a house rule's author's), never markup
            table.add_row(on_mark, literal(p.id), Text(p.severity.value, colours.badge(p.severity.value)), source,
                          Text(str(tested)), *map(Text, cells), literal(tools), literal(p.policy), key=p.id)
        table.move_cursor(row=min(cursor, max(table.row_count - 1, 0)))
        house = sum(p.house_rule for p in gate.predicates)
        self.query_one("#wb-title", Static).update(
            f"{title}: {len(gate.predicates)} rules ({house} house rules), {len(gate.disabled)} disabled; "
            f"{len(self.coverage.unchecked)} policy sentences no predicate can check · live: "
            f"{self.live.rules.describe()}")

    def _selected(self) -> str | None:
        table = self.query_one("#wb-predicates", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return None if key is None else str(key)

    def action_toggle_predicate(self) -> None:
        selected = self._selected()
        if selected is None or self.gate is None:
            return
        enable = selected in self.gate.disabled
        self.gate.set_enabled(selected, enable)
        self.last_regate = None  # the re-gate's counts no longer describe the rules as they now are
        self._say(f"{selected} {'enabled' if enable else 'disabled'} for the rest of this session")
        self.refresh_table()

    def action_reload(self) -> None:
        if self.gate is None:
            return
        try:
            rules = reload_rules(self.live.domain.name)
        except Exception as exc:  # noqa: BLE001 - an edited file may raise anything; keep the old rules
            last = traceback.extract_tb(exc.__traceback__)[-1]
            self._say(Text(f"Reload failed, the previous predicates stay active: {type(exc).__name__}: {exc} "
                           f"({last.filename.rsplit('/', 1)[-1]}:{last.lineno})",
                           palette_of(self).text("error", "bold")))
            return
        predicates = rules.predicates
        known = {p.id for p in predicates}
        self.gate.predicates = list(predicates)
        self.gate.disabled &= known
        self.live.rules = rules
        self.last_regate = None
        store = getattr(self.app, "rules", None)
        if isinstance(store, dict):
            store[rules.domain] = rules  # every later session of this console runs these rules
        self._say(f"Reloaded {len(predicates)} predicates from source ({rules.describe()}); they apply to this "
                  "session and every later one. Press g to see what the gate would say now.")
        self.refresh_table()

    def action_regate(self) -> None:
        """Re-gate in a thread worker (a long session's re-gate must not freeze the UI); rows come back as a
        RegateDone message."""
        if self.gate is None:
            return
        self._say("Re-gating the recorded decisions with the current rules …")
        self._regate(list(self.live.bus.history), list(self.gate.predicates), set(self.gate.disabled),
                     self.gate.max_revise_streak)

    @dataclass
    class RegateDone(Message):
        rows: list[RegateRow]

    @work(thread=True, exclusive=True, group="regate", exit_on_error=False)
    def _regate(self, events: list[Any], predicates: list[Predicate], disabled: set[str], streak: int) -> None:
        rows = regate(events, self.live.domain, predicates=predicates, disabled=disabled, max_revise_streak=streak)
        self.post_message(self.RegateDone(rows))

    @on(RegateDone)
    def _regated(self, message: RegateDone) -> None:
        rows = message.rows
        diff = self.query_one("#wb-diff", DataTable)
        diff.clear()
        for row in rows:
            call = f"{row.name}"
            old = Text(f" {row.old_verdict} ", palette_of(self).badge(row.old_verdict))
            new = Text(f" {row.new_verdict} ", palette_of(self).badge(row.new_verdict))
            if row.changed:
                call = f"▶ {call}"
            # literal: the call is the recorded one, the rule ids and the reason the rules' own words
            diff.add_row(Text(str(row.index)), Text(str(row.step)), literal(call), old, new,
                         literal(rule_list(row.old_statuses)), literal(rule_list(row.new_statuses)),
                         literal(row.new_reason[:120]), key=str(row.index))
        changed = sum(r.changed for r in rows)
        self._say(Text(f"Re-gated {len(rows)} recorded decisions with the current rules: {changed} changed "
                       "(marked ▶). The pass / fail / error counts above are the re-gate's now; select a "
                       "row for its reasons in full.", "bold" if changed else ""))
        self.last_regate = rows
        self.refresh_table()
        self._show_detail(diff.cursor_row)

    def _show_detail(self, index: int) -> None:
        rows = self.last_regate or []
        self.query_one("#wb-detail", Static).update(
            Text(inert(regate_detail(rows[index]), lines=True)) if 0 <= index < len(rows) else "")

    @on(DataTable.RowHighlighted, "#wb-diff")
    def _diff_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def action_export(self) -> None:
        folder = self.live.folder
        if folder is None:
            return
        exported = export_trajectory(self.live.bus.history)
        path = write_trajectory(folder / "trajectory.jsonl", exported.lines)
        note = f" ({exported.omitted_count} invalid call(s) left out)" if exported.omitted_count else ""
        warn = f" Warnings: {'; '.join(exported.warnings)}" if exported.warnings else ""
        self._say(f"Wrote {len(exported.lines)} calls with their verdicts as expectations to {path}{note}. "
                  f"Replay with: ledgeragent check {path} --domain {self.live.domain.name}.{warn}")
        self.exported_path = path

    @on(DataTable.RowSelected, "#wb-predicates")
    def _selected_row(self, event: DataTable.RowSelected) -> None:
        self.action_toggle_predicate()
