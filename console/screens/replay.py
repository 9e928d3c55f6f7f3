"""Open a recorded session and replay it with a step slider: every pane shows the state at that step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static

from console.facts import words
from console.storage import data_root
from console.theme import INFO, palette_of
from console.widgets.filter_bar import FilterBar
from console.widgets.gate_log import GatePane
from console.widgets.session_panes import SessionPanes, apply_filter
from core import strict_json
from core.domain import Domain
from core.evaluation.analysis import ending_failure
from core.events import EVENT_ADAPTER, Event, SessionEnded
from core.timeline import LedgerTimeline
from core.trace import TraceProblem, iter_trace
from domains.registry import UnknownDomain, load_domain


def recent_traces(limit: int = 50) -> list[Path]:
    sessions = data_root() / "sessions"
    if not sessions.is_dir():
        return []
    found = [p / "trace.jsonl" for p in sessions.iterdir() if (p / "trace.jsonl").is_file()]
    return sorted(found, key=lambda p: p.parent.name, reverse=True)[:limit]


def trace_outcome(events: list[Event]) -> str | None:
    """A standalone trace's failure, in the evaluation's own words (core.evaluation.analysis, rules 1-2: the
    ones that need only how the session ended; the others need a task and its reward, which a trace has not).

    None when the session ended normally (the customer stopped, a transfer, the operator stopped it).
    """
    ended = next((e for e in reversed(events) if e.type == "session_ended"), None)
    if ended is None:
        return "unfinished: the trace has no session_ended event (the session crashed or is still running)"
    escalated = any(e.type == "gate_decision" and e.escalated for e in events)
    failure = ending_failure(ended.reason, escalated=escalated, subject="session")
    if failure is None:
        return None
    text = f"failed: {failure.category} — {failure.evidence} ({words(ended.reason)})"
    return f"{text}: {ended.detail}" if ended.detail else text


def trace_ending(path: Path) -> str:
    """How a recorded session ended, from its last line alone (a list of recent sessions reads many traces):
    "ended: …", "failed: …" (the evaluation's rules on how it ended) or "unfinished" (no session_ended: it
    crashed, or still runs)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace").rstrip("\n").rsplit("\n", 1)[-1]
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    try:
        last: Event | None = EVENT_ADAPTER.validate_python(strict_json.loads(tail))
    except ValueError:  # a torn last line (killed while writing) or no event at all
        last = None
    if not isinstance(last, SessionEnded):
        return "unfinished (no session_ended: it crashed, or still runs)"
    failure = ending_failure(last.reason, escalated=False, subject="session")
    if failure is not None:
        return f"failed: {failure.category} ({words(last.reason)})"
    return f"ended: {words(last.reason)}"


TAIL_BYTES = 64 * 1024  # the last line of a trace is a session_ended event, far smaller than this


class StepSlider(Widget, can_focus=True):
    """A keyboard slider over the session's steps (←/→ one step, Home/End, PageUp/PageDown ten)."""

    DEFAULT_CSS = "StepSlider { height: 1; width: 100%; }"
    BINDINGS = [Binding("left", "move(-1)", "Back"), Binding("right", "move(1)", "Forward"),
                Binding("pageup", "move(-10)", show=False), Binding("pagedown", "move(10)", show=False),
                Binding("home", "first", show=False), Binding("end", "last", "End")]

    value: reactive[int] = reactive(0)

    class Moved(Message):
        def __init__(self, value: int) -> None:
            super().__init__()
            self.value = value

    def __init__(self, steps: list[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.steps = steps or [0]
        self.set_reactive(StepSlider.value, len(self.steps) - 1)

    def render(self) -> Text:
        width = max(self.size.width - 22, 10)
        position = round(self.value / max(len(self.steps) - 1, 1) * (width - 1))
        colours = palette_of(self)
        bar = Text("━" * position, colours.text(INFO, "bold"))
        bar.append("●", colours.text("foreground", "bold"))
        bar.append("─" * (width - 1 - position), "dim")
        return Text.assemble(f"step {self.steps[self.value]:>4} / {self.steps[-1]:<4} ", bar)

    def watch_value(self, value: int) -> None:
        self.post_message(self.Moved(value))

    def action_move(self, delta: int) -> None:
        self.value = min(max(self.value + delta, 0), len(self.steps) - 1)

    def action_first(self) -> None:
        self.value = 0

    def action_last(self) -> None:
        self.value = len(self.steps) - 1


class ReplayScreen(Screen[None]):
    """A recorded session, step by step. Its keys are its own: the live session's keys do not exist here."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close replay"),
                Binding("a", "audit", "Audit (this session)"),
                Binding("l", "cycle_pane", "Next pane"),
                Binding("slash", "filter", "Filter")]

    def __init__(self, events: list[Event], domain: Domain, source: Path, outcome: str | None = None) -> None:
        super().__init__()
        self.events = events
        self.domain = domain
        self.source = source
        self.outcome = outcome if outcome is not None else trace_outcome(events)
        started = next((e for e in events if e.type == "session_started"), None)
        self.has_ledger = started is None or started.agent != "fc"
        self.timeline = LedgerTimeline.build(events, domain.path_map)
        self.steps = self.timeline.steps()

    def compose(self) -> ComposeResult:
        title = Text.assemble(("replay ", palette_of(self).text(INFO, "bold")), str(self.source))
        if not self.has_ledger:
            title.append("   no ledger (baseline agent)", palette_of(self).text("warning", "bold"))
        yield Static(title, classes="screen-title")
        if self.outcome:
            state = "-passed" if self.outcome == "passed" else "-failed"
            yield Static(Text(self.outcome), id="replay-outcome", classes=f"screen-title {state}")
        yield StepSlider(self.steps, id="slider")
        yield SessionPanes(id="panes")
        yield FilterBar(id="filter-bar")
        yield Footer()

    @property
    def panes(self) -> SessionPanes:
        return self.query_one(SessionPanes)

    def on_mount(self) -> None:
        self.query_one(StepSlider).focus()
        self.show_step(self.steps[-1] if self.steps else 0)

    def show_step(self, step: int) -> None:
        seq = self.timeline.last_seq_of_step(step) or self.timeline.last_seq
        panes = self.panes
        with self.app.batch_update():
            panes.clear(ledger=False)
            for event in self.timeline.events_until(seq):
                panes.add_event(event)
            if self.has_ledger:
                panes.ledger.sync(self.timeline.at(seq), flash=self.timeline.step_changes(step).added)
            else:
                panes.ledger.show_no_ledger()
        self.shown_step = step

    def shown_events(self) -> list[Event]:
        seq = self.timeline.last_seq_of_step(self.shown_step) or self.timeline.last_seq
        return list(self.timeline.events_until(seq))

    def action_audit(self) -> None:
        from console.screens.audit import AuditScreen

        self.app.push_screen(AuditScreen(self.events))

    def action_cycle_pane(self) -> None:
        self.panes.cycle()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.Applied)
    def _filtered(self, message: FilterBar.Applied) -> None:
        apply_filter(self.panes, self.panes.front, message.text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cycle_pane":
            return self.panes.narrow
        return True

    @on(StepSlider.Moved)
    def _moved(self, message: StepSlider.Moved) -> None:
        self.show_step(self.steps[message.value])

    @on(GatePane.EvidenceSelected)
    def _evidence(self, message: GatePane.EvidenceSelected) -> None:
        self.panes.ledger.highlight(message.evidence)


def load_replay(path: Path) -> tuple[list[Event], Domain, list[str]]:
    """Events and domain of a trace file; unreadable lines are skipped and reported, not fatal."""
    events: list[Event] = []
    problems: list[str] = []
    for item in iter_trace(path):
        if isinstance(item, TraceProblem):
            problems.append(f"line {item.line}: {item.message}")
        else:
            events.append(item)
    started = next((e for e in events if e.type == "session_started"), None)
    if started is None:
        raise ValueError(f"{path} has no session_started event: not a LedgerAgent trace")
    try:
        domain = load_domain(started.domain)
    except UnknownDomain as exc:
        raise ValueError(str(exc.args[0])) from exc
    return events, domain, problems
