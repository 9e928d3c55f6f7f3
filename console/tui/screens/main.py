"""The live session's screen: status bar, the three panes, the customer's input box, operator keys.

The operator keys live here, not on the App, so they exist only while this screen is in front: from
Replay, `n` cannot step the hidden live session, and a modal's footer shows the modal's keys. The screen
owns the LiveSession and its worker; core events arrive as messages and go down into SessionPanes.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from console.runtime.export import transcript_markdown
from console.runtime.live import LiveSession, PendingReview, Phase, SessionSpec, SupervisionMode
from console.runtime.rules import LiveRules
from console.runtime.session_stop import stopped_words
from console.tui.screens.review import ReviewScreen
from console.tui.widgets.customer_input import CustomerInput
from console.tui.widgets.filter_bar import FilterBar
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.gate_log import GatePane
from console.tui.widgets.header import SessionHeader
from console.tui.widgets.ledger_tree import LedgerPane
from console.tui.widgets.review_notice import TAKE_KEY, ReviewNotice
from console.tui.widgets.session_panes import SessionPanes, apply_filter
from console.tui.widgets.status_bar import StatusBar
from console.tui.widgets.transcript import TranscriptPane
from core.events import Event
from core.llm.base import ChatModel, ModelError
from core.private_files import write_text
from core.strict_json import inert
from core.supervisor import Resolution

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STOP = "###STOP###"


@dataclass
class SessionEvent(Message):
    """A core event, delivered to the screen in order."""

    event: Event


class StateChanged(Message):
    """The live session's phase, counters or mode changed."""


@dataclass
class ReviewRequested(Message):
    review: PendingReview


@dataclass
class RetryOffered(Message):
    """The model call failed (its retries exhausted) and the session waits: the operator may retry. The
    failure itself is core.events.ModelFailed in the trace; this message only offers the retry."""

    error: ModelError


class MainScreen(Screen[None]):
    BINDINGS = [
        # Shown first while a review waits, so even an 80-column footer names it. The key itself is the App's
        # (priority: it works from a text box and over any screen), which runs before this one.
        Binding(TAKE_KEY, "take_review", "Review the write", priority=True, id="take-review-main"),
        Binding("space", "start_or_pause", "Start/Pause", id="start-pause"),
        Binding("n", "step", "Step", id="step"),
        Binding("m", "cycle_mode", "Mode", id="mode"),
        Binding("r", "retry", "Retry", id="retry"),
        Binding("a", "audit", "Audit", id="audit"),
        Binding("w", "workbench", "Predicates", id="workbench"),
        Binding("c", "compose", "Compose call", id="compose"),
        Binding("p", "phone", "Phone", id="phone"),
        Binding("f2", "phone", "Phone (while typing)", show=False, priority=True, id="phone-typing"),
        Binding("ctrl+e", "end_conversation", "End conversation", priority=True, id="end-conversation"),
        Binding("o", "open_trace", "Open trace or results", show=False, id="open"),
        Binding("e", "export_markdown", "Export", id="export"),
        Binding("l", "cycle_pane", "Next pane", id="cycle-pane"),
        Binding("1", "focus_pane('transcript')", "Transcript", show=False, id="focus-transcript"),
        Binding("2", "focus_pane('ledger-tree')", "Ledger", show=False, id="focus-ledger"),
        Binding("3", "focus_pane('gate-table')", "Gate", show=False, id="focus-gate"),
        Binding("escape", "leave_input", "Leave the input box", show=False, id="leave-input"),
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("y", "copy_ledger('path')", "Copy ledger path", show=False, id="copy-path"),
        Binding("Y", "copy_ledger('value')", "Copy ledger value", show=False, id="copy-value"),
    ]

    def __init__(self, spec: SessionSpec, *, operator: str, root: Path | None, autostart: bool,
                 model_factory: Callable[[SessionSpec], ChatModel] | None) -> None:
        super().__init__()
        self.spec = spec
        self.operator = operator
        self.root = root
        self.autostart = autostart
        self.model_factory = model_factory
        self.live: LiveSession | None = None
        self.started = False
        self.review_screen: ReviewScreen | None = None
        self.pending: PendingReview | None = None  # the review the session waits on (announced, maybe open)
        self._asked = 0.0
        self._spinner_frame = 0
        self._mounted = False

    @property
    def rules(self) -> dict[str, LiveRules]:
        """The App's rules reloaded per domain (the App owns them, so they outlive this session)."""
        rules: dict[str, LiveRules] = getattr(self.app, "rules", {})
        return rules

    # ------------------------------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield SessionHeader(show_clock=False)
        yield StatusBar(id="status")
        yield ReviewNotice(id="review-notice")
        yield SessionPanes(id="panes")
        yield CustomerInput(placeholder="Type the customer's message and press Enter (ctrl+e ends the "
                            "conversation)", id="customer-input", select_on_focus=False)
        yield FilterBar(id="filter-bar")
        yield ConsoleFooter()

    @property
    def panes(self) -> SessionPanes:
        return self._panes

    @property
    def transcript(self) -> TranscriptPane:
        return self._panes.transcript

    @property
    def ledger_pane(self) -> LedgerPane:
        return self._panes.ledger

    @property
    def gate_pane(self) -> GatePane:
        return self._panes.gate

    @property
    def input_box(self) -> Input:
        return self._input

    def _gone(self) -> bool:
        """True while the app tears down: messages still arrive, the panes are already gone."""
        return not self._mounted or not self._panes.is_attached

    async def on_mount(self) -> None:
        if not self.query(SessionPanes):
            return  # the app quit before this screen's widgets were mounted (a browser tab closed while starting)
        # Looked up once: a DOM query per event would walk thousands of transcript widgets.
        self._panes = self.query_one(SessionPanes)
        self._status = self.query_one(StatusBar)
        self._input = self.query_one("#customer-input", Input)
        self._mounted = True
        self.set_interval(0.12, self._spin)
        await self.load_session(self.spec)
        if self.autostart:
            self.action_start_or_pause()

    async def load_session(self, spec: SessionSpec) -> None:
        """Prepare a new live session (folder, database, model); it starts when the operator says so."""
        await self.close_live()
        self.spec = spec
        self.started = False
        self.pending = None
        self.query_one(ReviewNotice).clear()
        self._panes.clear()
        self.live = LiveSession(
            spec, operator=self.operator, root=self.root, model_factory=self.model_factory,
            on_event=lambda e: self.post_message(SessionEvent(e)),
            on_review=lambda r: self.post_message(ReviewRequested(r)),
            on_state=lambda: self.post_message(StateChanged()),
            on_model_error=lambda e: self.post_message(RetryOffered(e)),
            rules=self.rules)
        await self.live.open()
        if self._gone():  # the app quit while the session was opening: nothing left to draw on
            await self.close_live()
            return
        if spec.agent == "fc":
            self.ledger_pane.show_no_ledger()
        else:
            self.ledger_pane.sync(self.live.agent.ledger)
        scenario = self.live.scenario
        keys = ("n to step one model call, m to change the supervision mode, w for the predicate workbench, ? "
                "for every key.")
        hints = "Press space to start (and to pause / resume), " + keys
        if spec.seat == "customer":  # the box has the keys: space is a letter there, Enter sends and starts
            phone = " Press F2 to act on your phone." if self.live.domain.user_tools() else ""
            hints = ("You are the customer: type below and press Enter to send; your first message starts the "
                     "session. ctrl+e ends the conversation; escape leaves the box for the operator keys (m "
                     f"supervision mode, w predicate workbench, ? every key).{phone}")
        if spec.model == "operator":
            hints = "You are the agent: press space, then c to write a message or compose a tool call. " + hints
        about = scenario.description if scenario else ""
        if scenario is None and spec.seat == "customer":
            about = f"The offline agent answers what you type. {self.live.offline_hint}".strip()
        self.transcript.show_intro(scenario.title if scenario else "Free chat", about, hints)
        self._input.display = spec.seat == "customer"
        self.sub_title = f"{spec.domain} · {spec.scenario or 'free chat'}"
        self.app.sub_title = self.sub_title
        self.refresh_status()
        self.refresh_bindings()
        self._focus_input_if_turn()

    async def close_live(self, reason: str | None = None) -> None:
        """Stop the running session and close its database; with `reason`, end its trace with it."""
        live = self.live
        if live is not None:
            live.cancel_reason = reason or "cancelled"
        running = [w for w in self.workers if w.group == "session" and not w.is_finished]
        for worker in running:
            worker.cancel()
        for worker in running:
            with contextlib.suppress(Exception):
                await worker.wait()
        if live is not None:
            await live.close()

    async def on_unmount(self) -> None:
        await self.close_live()

    # ------------------------------------------------------------------------------------------ events

    @on(SessionEvent)
    def _event(self, message: SessionEvent) -> None:
        if self._gone():
            return  # shutting down: the trace already has the event
        live = self.live
        ledger = live.agent.ledger if live is not None and live.session is not None else None
        self._panes.add_event(message.event, ledger)
        self.refresh_status()

    @on(StateChanged)
    def _state(self) -> None:
        if self._gone():
            return
        self.refresh_status()
        self.refresh_bindings()
        self._focus_input_if_turn()

    def _customer_turn(self) -> bool:
        live = self.live
        return live is not None and live.human is not None and live.human.waiting

    def _focus_input_if_turn(self) -> None:
        """Input mode: whenever the customer (you) must speak, the box has the focus."""
        if self._input.display and self.app.screen is self and (self._customer_turn() or not self.started):
            self._input.focus()

    def _spin(self) -> None:
        if self.live is not None and self.live.state.thinking:
            self._spinner_frame += 1
            self.refresh_status()

    def refresh_status(self) -> None:
        live = self.live
        if live is None or self._gone():
            return
        state = live.state
        phase = state.phase
        if live.operator_agent is not None and live.operator_agent.waiting:
            phase = Phase.YOUR_TURN
        elif live.human is not None and live.human.waiting:
            phase = Phase.YOUR_TURN
        self._status.show(
            domain=live.spec.domain, scenario=live.spec.scenario, agent=live.spec.agent,
            model=live.model.name, mode=live.supervisor.mode.value,
            seat={"watch": "watching", "customer": "you: customer"}.get(live.spec.seat, live.spec.seat)
            if live.operator_agent is None else "you: agent",
            phase=Phase(phase), ready_hint=self._ready_hint(phase), front=self._panes.stacked_front,
            others=self._panes.behind,
            steps=state.steps, tokens=state.prompt_tokens + state.completion_tokens, error=state.error,
            spinner=SPINNER[self._spinner_frame % len(SPINNER)] if state.thinking else "",
            disabled=live.disabled_rules, rules=live.rules_version)

    def _ready_hint(self, phase: str) -> str:
        """What starts the session: space, or in the customer seat (the box has the keys) Enter."""
        if self.started or phase != Phase.READY:
            return ""
        return "type and press Enter" if self.spec.seat == "customer" else "press space"

    @on(SessionPanes.Arranged)
    def _arranged(self) -> None:
        self.refresh_status()

    @on(ReviewRequested)
    def _review(self, message: ReviewRequested) -> None:
        """Announce the review; it opens when the operator takes it (`take_review`), never by itself."""
        if self._gone():
            return
        self.pending = message.review
        self._asked = time.monotonic()
        self._panes.gate.set_waiting(message.review.call.id)
        self._announce()

    @property
    def review_waiting(self) -> bool:
        """A review is announced and not open: F3 (or a click on the notice) opens it."""
        pending = self.pending
        return pending is not None and self.review_screen is None and not pending.future.done()

    def _announce(self) -> None:
        review = self.pending
        if review is None:
            return
        verdict = None if review.decision is None else review.decision.verdict.value
        self.query_one(ReviewNotice).announce(review.call.name, verdict)
        self.refresh_bindings()
        if self.app.screen is not self:
            self.app.notify(inert(f"A write waits for your review ({review.call.name}): press {TAKE_KEY.upper()}."),
                            title="review", timeout=8, markup=False)

    def action_take_review(self) -> None:
        self.take_review()

    @on(ReviewNotice.Taken)
    def take_review(self) -> None:
        """Open the announced review. Its answer goes to the session; left undecided (escape), it stays
        announced and the call keeps waiting: nothing is ever decided for the operator."""
        review = self.pending
        live = self.live
        if review is None or live is None or not self.review_waiting:
            return
        screen = ReviewScreen(review.call, review.decision, live.domain, self.operator)
        self.review_screen = screen
        self.query_one(ReviewNotice).clear()

        def done(resolution: Resolution | None) -> None:
            self.review_screen = None
            if resolution is None:
                self._announce()
                return
            self.pending = None
            review.resolve(replace(resolution, waited_s=round(time.monotonic() - self._asked, 3)))
            self.refresh_bindings()

        self.app.push_screen(screen, done)

    @on(RetryOffered)
    def _model_failed(self, message: RetryOffered) -> None:
        if self._gone():
            return
        self.notify(inert(f"The model failed: {message.error.message}. Press r to retry, or q to quit."),
                    title=f"model {message.error.kind}", severity="error", timeout=10, markup=False)  # the
        # endpoint's words: untrusted text
        self.refresh_bindings()

    @on(GatePane.EvidenceSelected)
    def _evidence(self, message: GatePane.EvidenceSelected) -> None:
        if self._gone():
            return
        self.ledger_pane.highlight(message.evidence)

    @on(Input.Submitted, "#customer-input")
    def _customer_says(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        if not text or self.live is None:
            return
        if not self.started:
            self.action_start_or_pause()
        self.live.say_as_customer(text)  # the box emptied itself at that Enter (CustomerInput)
        message.input.focus()

    async def on_resize(self, event: events.Resize) -> None:
        """Switch the panes' layout, and the footer's keys with it ("Next pane" is stacked-only), before Textual
        lays the screen out at its new size: that one layout pass and frame show the new layout complete."""
        if self._mounted and self._panes.fit(event.size.width):
            await self.query_one(ConsoleFooter).sync()
        self.refresh_bindings()

    # ------------------------------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        live = self.live
        if action == "take_review":
            return self.review_waiting
        if action == "cycle_pane":
            return self._panes.narrow if self._mounted else False
        if live is None:
            return True
        if action == "retry":
            return live.state.phase == Phase.MODEL_ERROR
        if action == "compose":
            return live.operator_agent is not None
        if action == "phone":
            return live.human is not None and bool(live.domain.user_tools())
        if action == "end_conversation":
            return live.human is not None and live.state.phase != Phase.ENDED
        if action in ("step", "start_or_pause"):
            return live.state.phase != Phase.ENDED or not self.started
        return True

    def action_start_or_pause(self) -> None:
        live = self.live
        if live is None:
            return
        if not self.started:
            self.started = True
            self._run_session()
            self.refresh_status()
            self._focus_input_if_turn()
            return
        if live.pacer.paused:
            live.pacer.resume()
        else:
            live.pacer.pause()

    def action_step(self) -> None:
        if self.live is None:
            return
        if not self.started:
            self.live.pacer.pause()
            self.started = True
            self._run_session()
        self.live.pacer.step()

    def action_end_conversation(self) -> None:
        """The customer (you) ends the conversation, as a simulated customer does with its stop token."""
        live = self.live
        if live is None or live.human is None or live.state.phase == Phase.ENDED:
            return
        if not self.started:
            self.action_start_or_pause()
        live.say_as_customer(STOP)

    def action_leave_input(self) -> None:
        if self.focused is self._input:
            self.transcript.focus()

    @work(group="session", exit_on_error=False, name="session")
    async def _run_session(self) -> None:
        assert self.live is not None
        await self.live.run()

    @on(Worker.StateChanged)
    def _worker(self, event: Worker.StateChanged) -> None:
        if event.worker.name == "session" and event.state is WorkerState.ERROR:
            self.notify(inert(stopped_words(event.worker.error)), severity="error", timeout=15, markup=False)

    def action_cycle_mode(self) -> None:
        if self.live is not None:
            self.live.set_mode(self.live.supervisor.mode.next())
            self.notify(f"Supervision mode: {self.live.supervisor.mode.value}", timeout=2)

    def set_mode(self, mode: SupervisionMode) -> None:
        if self.live is not None:
            self.live.set_mode(mode)

    def action_retry(self) -> None:
        if self.live is not None and self.live.retry(True):
            self.notify("Retrying the model call…", timeout=2)

    def action_focus_pane(self, widget_id: str) -> None:
        if self._panes.narrow:
            self._panes.set_front({"ledger-tree": "ledger", "gate-table": "gate"}.get(widget_id, widget_id))
        self.query_one(f"#{widget_id}").focus()

    def action_cycle_pane(self) -> None:
        front = self._panes.cycle()
        target = {"transcript": "#transcript", "ledger": "#ledger-tree", "gate": "#gate-table"}[front]
        self.query_one(target).focus()

    def action_filter(self) -> None:
        """`/`: filter the pane in front (the focused one; in the stacked layout, the visible one)."""
        focused = self.focused
        self._filter_target = self._panes.front
        for name, pane in (("transcript", self.transcript), ("ledger", self.ledger_pane), ("gate", self.gate_pane)):
            if focused is not None and (focused is pane or pane in focused.ancestors):
                self._filter_target = name
        self.query_one(FilterBar).open()

    @on(FilterBar.Applied)
    def _filtered(self, message: FilterBar.Applied) -> None:
        apply_filter(self._panes, getattr(self, "_filter_target", "transcript"), message.text)

    def action_copy_ledger(self, what: str) -> None:
        """Copy the selected ledger entry's path (`y`) or its value as JSON (`Y`) to the clipboard."""
        node = self.ledger_pane.ledger_tree.cursor_node
        reader = self.ledger_pane.ledger_tree.reader
        if node is None or not node.data or reader is None:
            self.notify("Select a ledger entry first.", timeout=3)
            return
        entry = reader.entry(node.data)
        text = node.data if what == "path" or entry is None else json.dumps(entry.value, ensure_ascii=False,
                                                                              sort_keys=True)
        self.app.copy_to_clipboard(text)
        self.notify(inert(f"Copied {what}: {text[:60]}"), timeout=3, markup=False)

    def action_export_markdown(self) -> None:
        live = self.live
        if live is None or live.folder is None:
            return
        path = live.folder / "transcript.md"
        write_text(path, transcript_markdown(live.bus.history, title=self.sub_title or ""))  # 0600, as the trace
        if self.app.is_web:
            self.app.deliver_text(path.open(encoding="utf-8"), save_filename="transcript.md")
        self.notify(f"Transcript written to {path}", timeout=6)

    def action_audit(self) -> None:
        from console.tui.screens.audit import AuditScreen

        if self.live is not None:
            self.app.push_screen(AuditScreen(self.live.bus.history))

    def action_workbench(self) -> None:
        from console.tui.screens.workbench import WorkbenchScreen

        if self.live is not None:
            self.app.push_screen(WorkbenchScreen(self.live))

    def action_compose(self) -> None:
        from console.tui.screens.compose import ComposeScreen

        if self.live is not None and self.live.operator_agent is not None:
            self.app.push_screen(ComposeScreen(self.live))

    def action_phone(self) -> None:
        from console.tui.screens.phone import PhoneScreen

        if self.live is not None and self.live.human is not None and self.live.domain.user_tools():
            if not self.started:
                self.action_start_or_pause()
            self.app.push_screen(PhoneScreen(self.live))

    def action_open_trace(self) -> None:
        from console.tui.screens.open_trace import OpenTraceScreen

        self.app.push_screen(OpenTraceScreen(self.live.domain if self.live else None))

    @property
    def session_running(self) -> bool:
        """A started session that has not ended: quitting it must ask, and must end its trace."""
        live = self.live
        return self.started and live is not None and live.result is None and live.state.phase != Phase.ENDED

    def bindings_help(self) -> list[tuple[str, str]]:
        return [(b.key, b.description) for b in self.BINDINGS if isinstance(b, Binding) and b.description]

