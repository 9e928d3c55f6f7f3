"""Evaluation results viewer: tasks × trials of a `ledgeragent eval` run; any trial opens in the replay view."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.tui.screens.replay import ReplayScreen
from console.tui.theme import INFO, OPERATOR, palette_of
from console.tui.widgets.cells import literal
from console.tui.widgets.filter_bar import FilterBar
from core.evaluation.results import EvalResults, TrialResult
from core.events import EVENT_ADAPTER, Event
from core.strict_json import inert
from domains.registry import UnknownDomain, load_domain

FIXED_COLUMNS = 4  # domain, task, agent, passed


def row_key(domain: str, task: str, agent: str) -> str:
    """A table row's key: the three names as a JSON list, so no task id or agent name (a results file may hold
    any text) can make two rows one, as a separator inside a name would."""
    return json.dumps([domain, task, agent], ensure_ascii=False)


def trial_events(trial: TrialResult) -> list[Event]:
    return [EVENT_ADAPTER.validate_python(raw) for raw in trial.events]


def trial_outcome(trial: TrialResult) -> str:
    """The trial's verdict in words, for the replay header: passed, or the failure's category and reason."""
    if trial.status != "ok":
        return f"failed: the trial did not complete ({trial.status})"
    if trial.success:
        return "passed"
    if trial.failure is not None:
        return f"failed: {trial.failure.category} — {trial.failure.evidence}"
    return f"failed: {trial.termination}"


HINT = "Enter on a trial opens its trace in the replay view; f shows failures only; / filters."


class ResultsScreen(Screen[None]):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close results"),
                Binding("enter", "open_trial", "Open trial"),
                Binding("f", "failures_only", "Failures only"), Binding("slash", "filter", "Filter")]

    def __init__(self, results: EvalResults, source: Path) -> None:
        super().__init__()
        self.results = results
        self.source = source
        self.rows: dict[str, list[TrialResult]] = defaultdict(list)
        for trial in sorted(results.trials, key=lambda t: (t.domain, t.task_id, t.agent, t.trial)):
            self.rows[row_key(trial.domain, trial.task_id, trial.agent)].append(trial)
        self.max_trials = max((len(v) for v in self.rows.values()), default=0)
        self.failures_only = False
        self.filter = ""

    def compose(self) -> ComposeResult:
        header = self.results.header
        title = Text.assemble(("results ", palette_of(self).text(INFO, "bold")), inert(str(self.source)), "   ",
                              inert(f"{', '.join(header.domains)} · agents {', '.join(header.agents)} · "
                                    f"{header.trials} trial(s)"))
        if header.offline:
            title.append("   SIMULATION: scripted agents and customers, not a model",
                         palette_of(self).text("warning", "bold"))
        elif header.model:
            title.append(inert(f"   model {header.model}"))
        yield Static(title, classes="screen-title")
        yield Static(self._summary(), id="results-summary")
        table: DataTable[Any] = DataTable(id="results-table", cursor_type="cell", zebra_stripes=True)
        table.add_columns("domain", "task", "agent", "passed", *[f"trial {n + 1}" for n in range(self.max_trials)])
        yield table
        yield Static(HINT, id="results-hint")
        yield FilterBar(id="filter-bar")
        yield Footer()

    def on_mount(self) -> None:
        self.fill()

    def fill(self) -> None:
        """(Re)build the table: only tasks with a failed trial when `failures_only`, only rows matching `filter`."""
        table = self.query_one("#results-table", DataTable)
        table.clear()
        needle = self.filter.strip().lower()
        for key, trials in self.rows.items():
            if self.failures_only and all(t.success for t in trials):
                continue
            first = trials[0]
            domain, task, agent = first.domain, first.task_id, first.agent
            shown = (domain, task, agent, *(self._cell(t).plain for t in trials))
            if needle and not any(needle in text.lower() for text in shown):
                continue
            scored = [t for t in trials if t.scored]
            passed = sum(t.success for t in scored)
            cells = [self._cell(t) for t in trials] + [Text("")] * (self.max_trials - len(trials))
            # literal: the domain, task and agent are what the results file says, never markup for the table
            table.add_row(literal(domain), literal(task), literal(agent), Text(f"{passed}/{len(scored)}"), *cells,
                          key=key)

    def action_failures_only(self) -> None:
        """Show only tasks with a failed trial, or all again; a run without failures says so and hides nothing
        (an empty table would read as "nothing loaded")."""
        hint = self.query_one("#results-hint", Static)
        if not self.failures_only and all(t.success for t in self.results.trials):
            hint.update(Text(f"f: no failed trial in this run ({len(self.results.trials)} trial(s), all passed), "
                             "so nothing to narrow to. " + HINT, palette_of(self).text("success", "bold")))
            return
        self.failures_only = not self.failures_only
        hint.update(HINT)
        self.fill()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.Applied)
    def _filtered(self, message: FilterBar.Applied) -> None:
        self.filter = message.text
        self.fill()

    def _summary(self) -> Text:
        """Per agent, passed of the trials that count, as tau2's metrics and `eval regrade` count them: a
        trial that could not be run (infrastructure error) or whose grade is incomplete (unscored) is in no
        denominator; both are named beside the rate so nothing is hidden."""
        by_agent: dict[str, list[TrialResult]] = defaultdict(list)
        for trial in self.results.trials:
            by_agent[trial.agent].append(trial)
        text = Text()
        for agent, trials in sorted(by_agent.items()):
            scored = [t for t in trials if t.scored]
            passed = sum(t.success for t in scored)
            text.append(f"{inert(agent)}: ", "bold")
            rate = f" ({100 * passed / len(scored):.1f}%)" if scored else ""
            text.append(f"{passed} of {len(scored)} scored trials passed{rate}")
            left_out = [f"{n} {what}" for n, what in (
                (sum(t.infra for t in trials), "not run (infrastructure error)"),
                (sum(not t.infra and bool(t.unscored) for t in trials), "unscored"))
                if n]
            if left_out:
                text.append(f", left out: {', '.join(left_out)}")
            text.append("   ")
        return text

    def _cell(self, trial: TrialResult) -> Text:
        """A trial's outcome as its cell; the status, category and termination are the results file's words."""
        if trial.status != "ok":
            return literal(f"⚠ {trial.status}", palette_of(self).text(OPERATOR, "bold"))
        if trial.success:
            return Text("✓", palette_of(self).text("success", "bold"))
        if trial.unscored:
            return Text("? unscored", palette_of(self).text("warning", "bold"))
        label = trial.failure.category if trial.failure is not None else trial.termination
        return literal(f"✗ {label}", palette_of(self).text("error", "bold"))

    def selected_trial(self) -> TrialResult | None:
        table = self.query_one("#results-table", DataTable)
        if table.row_count == 0:
            return None
        row, column = table.cursor_coordinate
        key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        trials = self.rows.get(str(key), [])
        index = column - FIXED_COLUMNS
        if not trials:
            return None
        return trials[index] if 0 <= index < len(trials) else trials[0]

    def action_open_trial(self) -> None:
        trial = self.selected_trial()
        if trial is None:
            return
        if not trial.events:
            self.app.notify("This trial has no recorded events (it crashed before the session started).",
                            severity="warning")
            return
        try:
            domain = load_domain(trial.domain)
        except UnknownDomain as exc:
            self.app.notify(str(exc.args[0]), severity="error")
            return
        name = f"{self.source} · {trial.domain}/{trial.task_id}/{trial.agent}/trial {trial.trial + 1}"
        self.app.push_screen(ReplayScreen(trial_events(trial), domain, Path(name), outcome=trial_outcome(trial)))

    @on(DataTable.CellSelected, "#results-table")
    def _selected(self, _event: DataTable.CellSelected) -> None:
        self.action_open_trial()
