"""Open a recorded session and replay it with a step slider: every pane shows the state at that step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static

from console.runtime.facts import words
from console.runtime.storage import data_root
from console.tui.theme import INFO, palette_of
from console.tui.widgets.filter_bar import FilterBar
from console.tui.widgets.gate_log import GatePane
from console.tui.widgets.session_panes import SessionPanes, apply_filter
from core import strict_json
from core.domain import Domain
from core.evaluation.analysis import ending_failure
from core.events import EVENT_ADAPTER, Event, GateDecided, SessionEnded, SessionStarted
from core.recorded.audit import HYPOTHETICAL
from core.timeline import StepView, TraceTimeline
from core.trace import TraceProblem, iter_trace
from core.trace_index import TraceIndex
from domains.registry import UnknownDomain, load_domain

SYNC_EVENTS = 400  # a step that needs at most this many events read is shown at once, without a worker
OPEN_AT_END_EVENTS = 5_000  # a longer trace opens at its first step: its end is a long read (End reads it)


def recent_traces(limit: int = 50) -> list[Path]:
    sessions = data_root() / "sessions"
    if not sessions.is_dir():
        return []
    found = [p / "trace.jsonl" for p in sessions.iterdir() if (p / "trace.jsonl").is_file()]
    return sorted(found, key=lambda p: p.parent.name, reverse=True)[:limit]


def trace_outcome(events: Sequence[Event]) -> str | None:
    """A standalone trace's failure, in the evaluation's own words (core.evaluation.analysis, rules 1-2: the
    ones that need only how the session ended; the others need a task and its reward, which a trace has not).

    None when the session ended normally (the customer stopped, a transfer, the operator stopped it).
    """
    ended = next((e for e in reversed(events) if e.type == "session_ended"), None)
    escalated = any(e.type == "gate_decision" and e.escalated for e in events)
    return ending_outcome(ended, escalated)


def ending_outcome(ended: Event | None, escalated: bool) -> str | None:
    """`trace_outcome` from the two facts it needs: the session_ended event (None: there is none) and whether
    any gate decision was escalated."""
    if ended is None or not isinstance(ended, SessionEnded):
        return "unfinished: the trace has no session_ended event (the session crashed or is still running)"
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
    reading: reactive[bool] = reactive(False)  # the step asked for is being read (a far jump in a long trace)

    class Moved(Message):
        def __init__(self, value: int) -> None:
            super().__init__()
            self.value = value

    def __init__(self, steps: list[int], start: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.steps = steps or [0]
        self.set_reactive(StepSlider.value, len(self.steps) - 1 if start is None else start)

    def render(self) -> Text:
        width = max(self.size.width - 22, 10)
        position = round(self.value / max(len(self.steps) - 1, 1) * (width - 1))
        colours = palette_of(self)
        bar = Text("━" * position, colours.text(INFO, "bold"))
        bar.append("●", colours.text("foreground", "bold"))
        bar.append("─" * (width - 1 - position), "dim")
        shown = Text.assemble(f"step {self.steps[self.value]:>4} / {self.steps[-1]:<4} ", bar)
        if self.reading:
            shown.append("  reading…", "dim")
        return shown

    def watch_value(self, value: int) -> None:
        self.post_message(self.Moved(value))

    def action_move(self, delta: int) -> None:
        self.value = min(max(self.value + delta, 0), len(self.steps) - 1)

    def action_first(self) -> None:
        self.value = 0

    def action_last(self) -> None:
        self.value = len(self.steps) - 1


@dataclass
class StepLoaded(Message):
    """A step's view, built in a worker (a jump far into a big trace)."""

    view: StepView


@dataclass
class StepFailed(Message):
    step: int
    error: str


class ReplayScreen(Screen[None]):
    """A recorded session, step by step. Its keys are its own: the live session's keys do not exist here.

    It opens at the session's last step, or at its first when the trace is longer than OPEN_AT_END_EVENTS (its
    end needs the whole trace read; `End` reads it in the background). Every pane is drawn from the step's
    `StepView`, read from the trace for that step alone (`core.timeline.TraceTimeline`): a step that needs few
    events read is shown at once, a bigger one (a jump far into a long trace) is built in a worker and shown
    when it is ready."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close replay"),
                Binding("a", "audit", "Audit (this session)"),
                Binding("l", "cycle_pane", "Next pane"),
                Binding("slash", "filter", "Filter")]

    def __init__(self, events: Sequence[Event] | TraceTimeline, domain: Domain, source: Path,
                 outcome: str | None = None, *, hypothetical: str | None = None, focus_call: str | None = None) -> None:
        """`focus_call`: open at the step of that call's gate decision, its row highlighted in the gate pane (an
        audit report's finding opened in the console)."""
        super().__init__()
        # Set for an as-recorded audit (console/tui/screens/recorded.py): the verdicts are the gate's hypothetical ones,
        # the outcomes the recording's; the banner says so and the gate pane's title repeats it.
        self.hypothetical = hypothetical
        if isinstance(events, TraceTimeline):
            self.timeline = events
            self.events: Sequence[Event] | None = None  # read on demand: never all in memory
        else:
            self.events = events
            self.timeline = TraceTimeline.of_events(events, domain.path_map)
        self.domain = domain
        self.source = source
        self._outcome = outcome
        self.has_ledger = self.timeline.tracked
        self.steps = self.timeline.steps()
        self.shown_step: int | None = None
        at_end = len(self.timeline.index) <= OPEN_AT_END_EVENTS
        self.wanted_step = (self.steps[-1] if at_end else self.steps[0]) if self.steps else 0
        self.focus_call = focus_call
        decided = self._decision_step(focus_call) if focus_call is not None else None
        if decided is not None:
            self.wanted_step = decided

    def _decision_step(self, call_id: str) -> int | None:
        decisions = self.events if self.events is not None else self.timeline.of_type("gate_decision")
        steps = [e.step for e in decisions if isinstance(e, GateDecided) and e.call.id == call_id]
        return steps[-1] if steps else None

    @property
    def outcome(self) -> str | None:
        if self._outcome is None:
            if self.events is not None:
                self._outcome = trace_outcome(self.events) or ""
            else:
                ended = self.timeline.of_type("session_ended")
                self._outcome = ending_outcome(ended[-1] if ended else None, self.timeline.escalated()) or ""
        return self._outcome or None

    def compose(self) -> ComposeResult:
        title = Text.assemble(("replay ", palette_of(self).text(INFO, "bold")), str(self.source))
        if not self.has_ledger:
            title.append("   no ledger (baseline agent)", palette_of(self).text("warning", "bold"))
        yield Static(title, classes="screen-title")
        if self.outcome:
            state = "-passed" if self.outcome == "passed" else "-failed"
            yield Static(Text(self.outcome), id="replay-outcome", classes=f"screen-title {state}")
        if self.hypothetical:
            yield Static(Text(self.hypothetical), id="replay-hypothetical", classes="screen-title")
        yield StepSlider(self.steps, self.steps.index(self.wanted_step) if self.steps else 0, id="slider")
        yield SessionPanes(id="panes")
        yield FilterBar(id="filter-bar")
        yield Footer()

    @property
    def panes(self) -> SessionPanes:
        return self.query_one(SessionPanes)

    def on_mount(self) -> None:
        if self.hypothetical:
            self.panes.gate.border_title = f"Gate · {HYPOTHETICAL}"
        self.query_one(StepSlider).focus()
        self.show_step(self.wanted_step)

    def show_step(self, step: int) -> None:
        """Show the panes at `step`: at once when that is cheap, else from a worker (the last asked wins)."""
        self.wanted_step = step
        slider = self.query_one(StepSlider)
        if not slider.reading and self.timeline.cost(step, self.shown_step) <= SYNC_EVENTS:
            try:
                view = self.timeline.view(step, self.shown_step)
            except OSError as exc:  # the file went away or became unreadable since it was opened
                self.app.notify(f"cannot read step {step} of {self.source}: {exc.strerror or exc}", severity="error",
                                markup=False)
                return
            self._apply(view)
        else:  # (while a worker reads, every step goes through one: the timeline serves one reader at a time)
            slider.reading = True
            self._build(step)

    @work(thread=True, exclusive=True, group="replay-step", exit_on_error=False)
    def _build(self, step: int) -> None:
        try:
            self.post_message(StepLoaded(self.timeline.view(step)))
        except OSError as exc:  # the file went away or became unreadable since it was opened
            self.post_message(StepFailed(step, f"cannot read step {step} of {self.source}: {exc.strerror or exc}"))

    @on(StepFailed)
    def _failed(self, message: StepFailed) -> None:
        if message.step == self.wanted_step:
            self.query_one(StepSlider).reading = False
            self.app.notify(message.error, severity="error", markup=False)

    @on(StepLoaded)
    def _loaded(self, message: StepLoaded) -> None:
        if message.view.step == self.wanted_step:
            self.query_one(StepSlider).reading = False
            self._apply(message.view)

    def _apply(self, view: StepView) -> None:
        panes = self.panes
        if view.appended:  # the events after the step shown before: added, nothing cleared
            with self.app.batch_update():
                for event in view.events:
                    panes.add_event(event)
                self._show_ledger(view)
            self._shown(view)
            return
        with self.app.batch_update(), panes.gate.bulk():
            panes.clear(ledger=False)
            for event in view.gate_events:  # before the conversation's window: the gate pane's rows and counts
                panes.add_gate_event(event)
            if view.skipped:
                panes.transcript.show_note(f"… {view.skipped:,} earlier events of this session are not shown here "
                                           "(move the slider back to see them; the gate pane lists every verdict)")
            for event in view.events:
                panes.add_event(event)
            self._show_ledger(view)
        self._shown(view)

    def _show_ledger(self, view: StepView) -> None:
        if self.has_ledger:
            self.panes.ledger.sync(view.ledger, flash=list(view.flash))
        else:
            self.panes.ledger.show_no_ledger()

    def _shown(self, view: StepView) -> None:
        self.shown_step = view.step
        if self.focus_call is not None and self.panes.gate.select_call(self.focus_call):
            self.focus_call = None  # once: moving the slider afterwards keeps the operator's own row
        if view.problems:
            self.app.notify(f"{len(view.problems)} unreadable line(s) skipped: {view.problems[0]}",
                            severity="warning", markup=False)

    def action_audit(self) -> None:
        from console.tui.screens.audit import AuditScreen

        self.app.push_screen(AuditScreen(self.events if self.events is not None
                                         else self.timeline.of_type("supervisor_decision")))

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


def open_replay(path: Path) -> tuple[TraceTimeline, Domain, list[str]]:
    """The timeline and domain of a trace file, read through its index (one pass over its bytes; events are
    read when a step needs them). Lines the index could not read are reported, not fatal; ValueError for a
    file that is no LedgerAgent trace."""
    index = TraceIndex.of_file(path)
    domain = _domain_of(path, index.read([0])[0] if len(index) else None)
    timeline = TraceTimeline(index, domain.path_map)
    return timeline, domain, [f"line {p.line}: {p.message}" for p in index.problems]


def _domain_of(path: Path, first: Event | TraceProblem | None) -> Domain:
    if not isinstance(first, SessionStarted):
        raise ValueError(f"{path} has no session_started event: not a LedgerAgent trace")
    try:
        return load_domain(first.domain)
    except UnknownDomain as exc:
        raise ValueError(str(exc.args[0])) from exc


def load_replay(path: Path) -> tuple[list[Event], Domain, list[str]]:
    """Events and domain of a trace file; unreadable lines are skipped and reported, not fatal."""
    events: list[Event] = []
    problems: list[str] = []
    for item in iter_trace(path):
        if isinstance(item, TraceProblem):
            problems.append(f"line {item.line}: {item.message}")
        else:
            events.append(item)
    return events, _domain_of(path, next((e for e in events if e.type == "session_started"), None)), problems
