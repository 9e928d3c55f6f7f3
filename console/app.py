"""The operator console: transcript, ledger and gate side by side, with human override controls.

The App owns the session worker and turns core events into method calls down on the panes (messages go
up, calls go down). The agent loop runs as one async worker on the App's loop; it never blocks the UI.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Input
from textual.worker import Worker, WorkerState

from console.export import transcript_markdown
from console.live import LiveSession, PendingReview, SessionSpec, SupervisionMode
from console.screens.review import ReviewScreen
from console.widgets.gate_log import GatePane
from console.widgets.ledger_tree import LedgerPane
from console.widgets.status_bar import StatusBar
from console.widgets.transcript import TranscriptPane
from core.llm.base import ChatModel, ModelError
from core.supervisor import Decision, Resolution

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@dataclass
class SessionEvent(Message):
    """A core event, delivered to the App in order."""

    event: Any


class StateChanged(Message):
    """The live session's phase, counters or mode changed."""


@dataclass
class ReviewRequested(Message):
    review: PendingReview


@dataclass
class ModelFailed(Message):
    error: ModelError


class OperatorConsole(App[None]):
    TITLE = "LedgerAgent Console"
    CSS_PATH = "console.tcss"
    BINDINGS = [
        Binding("space", "start_or_pause", "Start/Pause"),
        Binding("n", "step", "Step"),
        Binding("m", "cycle_mode", "Mode"),
        Binding("r", "retry", "Retry", show=False),
        Binding("a", "audit", "Audit"),
        Binding("w", "workbench", "Predicates"),
        Binding("c", "compose", "Compose call"),
        Binding("p", "phone", "Phone"),
        Binding("f2", "phone", "Phone (while typing)", show=False, priority=True),
        Binding("ctrl+n", "new_session", "New"),
        Binding("o", "open_trace", "Open trace or results", show=False),
        Binding("e", "export_markdown", "Export"),
        Binding("t", "toggle_theme", "Theme", show=False),
        Binding("1", "focus_pane('transcript')", "Transcript", show=False),
        Binding("2", "focus_pane('ledger-tree')", "Ledger", show=False),
        Binding("3", "focus_pane('gate-table')", "Gate", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, spec: SessionSpec | None = None, *, operator: str = "operator", root: Path | None = None,
                 autostart: bool = False, model_factory: Callable[[SessionSpec], ChatModel] | None = None) -> None:
        super().__init__()
        self.spec = spec or SessionSpec()
        self.operator = operator
        self.root = root
        self.autostart = autostart
        self.model_factory = model_factory
        self.live: LiveSession | None = None
        self.started = False
        self.review_screen: ReviewScreen | None = None
        self._panes: tuple[TranscriptPane, LedgerPane, GatePane, StatusBar] | None = None
        self._spinner_frame = 0

    # ------------------------------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield StatusBar(id="status")
        with Horizontal(id="panes"):
            yield TranscriptPane(id="transcript")
            yield LedgerPane(id="ledger")
            yield GatePane(id="gate")
        yield Input(placeholder="Type the customer's message and press Enter", id="customer-input")
        yield Footer()

    def _panes_gone(self) -> bool:
        """True while the app tears down: messages still arrive, the panes are already gone."""
        return self._panes is None or not self._panes[0].is_attached

    @property
    def main_screen(self) -> Screen[Any]:
        """The screen holding the panes, whatever modal or screen is on top of it."""
        return self.screen_stack[0]

    def _pane_refs(self) -> tuple[TranscriptPane, LedgerPane, GatePane, StatusBar]:
        # Looked up once: a DOM query per event would walk thousands of transcript widgets.
        if self._panes is None:
            main = self.main_screen
            self._panes = (main.query_one(TranscriptPane), main.query_one(LedgerPane), main.query_one(GatePane),
                           main.query_one(StatusBar))
        return self._panes

    @property
    def transcript(self) -> TranscriptPane:
        return self._pane_refs()[0]

    @property
    def ledger_pane(self) -> LedgerPane:
        return self._pane_refs()[1]

    @property
    def gate_pane(self) -> GatePane:
        return self._pane_refs()[2]

    async def on_mount(self) -> None:
        self._pane_refs()
        self.set_interval(0.12, self._spin)
        await self.load_session(self.spec)
        if self.autostart:
            self.action_start_or_pause()

    async def load_session(self, spec: SessionSpec) -> None:
        """Prepare a new live session (folder, database, model); it starts when the operator says so."""
        await self._close_live()
        self.spec = spec
        self.started = False
        self.transcript.clear()
        self.gate_pane.clear()
        self.live = LiveSession(
            spec, operator=self.operator, root=self.root, model_factory=self.model_factory,
            on_event=lambda e: self.post_message(SessionEvent(e)),
            on_review=lambda r: self.post_message(ReviewRequested(r)),
            on_state=lambda: self.post_message(StateChanged()),
            on_model_error=lambda e: self.post_message(ModelFailed(e)))
        await self.live.open()
        self.ledger_pane.sync(self.live.agent.ledger)
        scenario = self.live.scenario
        hints = ("Press space to start (and to pause / resume), n to step one model call, m to change the "
                 "supervision mode, w for the predicate workbench, ctrl+p for every command.")
        if spec.seat == "customer":
            phone = " Press F2 (or p) to act on your phone." if self.live.domain.user_tools() else ""
            hints = f"You are the customer: type below and press Enter.{phone} " + hints
        if spec.model == "operator":
            hints = "You are the agent: press space, then c to write a message or compose a tool call. " + hints
        self.transcript.show_intro(scenario.title if scenario else "Free chat", scenario.description
                                   if scenario else "", hints)
        input_box = self.main_screen.query_one("#customer-input", Input)
        input_box.display = spec.seat == "customer"
        self.sub_title = f"{spec.domain} · {spec.scenario or 'free chat'}"
        self.refresh_status()
        self.refresh_bindings()

    async def _close_live(self) -> None:
        """Stop the running session (its trace is already on disk) and close its database."""
        running = [w for w in self.workers if w.group == "session" and not w.is_finished]
        for worker in running:
            worker.cancel()
        for worker in running:
            with contextlib.suppress(Exception):
                await worker.wait()
        if self.live is not None:
            await self.live.close()

    async def on_unmount(self) -> None:
        await self._close_live()

    # ------------------------------------------------------------------------------------------ events

    @on(SessionEvent)
    def _event(self, message: SessionEvent) -> None:
        if self._panes_gone():
            return  # shutting down: the trace already has the event
        event = message.event
        self.transcript.add_event(event)
        if event.type == "gate_decision":
            self.gate_pane.add_decision(event)
        elif event.type == "supervisor_decision":
            self.gate_pane.note_override(event)
        elif event.type in ("ledger_updated", "ledger_staled") and self.live is not None:
            if event.type == "ledger_updated":
                flash, touched = list(event.added) + list(event.changed), list(event.refreshed)
            else:
                flash, touched = list(event.paths), []
            self.ledger_pane.sync(self.live.agent.ledger, flash=flash, paths=flash + touched)
        self.refresh_status()

    @on(StateChanged)
    def _state(self) -> None:
        if self._panes_gone():
            return
        self.refresh_status()
        self.refresh_bindings()

    def _spin(self) -> None:
        if self.live is not None and self.live.state.thinking:
            self._spinner_frame += 1
            self.refresh_status()

    def refresh_status(self) -> None:
        live = self.live
        if live is None or self._panes_gone():
            return
        bar = self._pane_refs()[3]
        state = live.state
        phase = state.phase
        if live.operator_agent is not None and live.operator_agent.waiting:
            phase = "your turn"
        elif live.human is not None and live.human.waiting:
            phase = "your turn"
        bar.show(
            domain=live.spec.domain, scenario=live.spec.scenario, agent=live.spec.agent,
            model=live.model.name, mode=live.supervisor.mode.value,
            seat={"watch": "watching", "customer": "you: customer"}.get(live.spec.seat, live.spec.seat)
            if live.operator_agent is None else "you: agent",
            phase=phase if self.started or phase != "ready" else "ready — press space",
            steps=state.steps, tokens=state.prompt_tokens + state.completion_tokens, error=state.error,
            spinner=SPINNER[self._spinner_frame % len(SPINNER)] if state.thinking else "")

    @on(ReviewRequested)
    def _review(self, message: ReviewRequested) -> None:
        if self._panes_gone():
            return
        live = self.live
        assert live is not None
        review = message.review
        screen = ReviewScreen(review.call, review.decision, live.domain, self.operator)
        self.review_screen = screen

        def done(resolution: Resolution | None) -> None:
            self.review_screen = None
            review.resolve(resolution or Resolution(Decision.APPROVE, who=self.operator))

        self.push_screen(screen, done)

    @on(ModelFailed)
    def _model_failed(self, message: ModelFailed) -> None:
        if self._panes_gone():
            return
        self.notify(f"The model failed: {message.error.message}. Press r to retry, or q to quit.",
                    title=f"model {message.error.kind}", severity="error", timeout=10)
        self.refresh_bindings()

    @on(GatePane.EvidenceSelected)
    def _evidence(self, message: GatePane.EvidenceSelected) -> None:
        if self._panes_gone():
            return
        self.ledger_pane.highlight(message.evidence)

    @on(Input.Submitted, "#customer-input")
    def _customer_says(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        if not text or self.live is None:
            return
        if not self.started:
            self.action_start_or_pause()
        self.live.say_as_customer(text)
        message.input.value = ""

    # ------------------------------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        live = self.live
        if live is None:
            return True
        if action == "retry":
            return live.state.phase == "model error"
        if action == "compose":
            return live.operator_agent is not None
        if action == "phone":
            return live.human is not None and bool(live.domain.user_tools())
        if action in ("step", "start_or_pause"):
            return live.state.phase != "ended" or not self.started
        return True

    def action_start_or_pause(self) -> None:
        live = self.live
        if live is None:
            return
        if not self.started:
            self.started = True
            self._run_session()
            self.refresh_status()
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

    @work(group="session", exit_on_error=False, name="session")
    async def _run_session(self) -> None:
        assert self.live is not None
        await self.live.run()

    @on(Worker.StateChanged)
    def _worker(self, event: Worker.StateChanged) -> None:
        if event.worker.name == "session" and event.state is WorkerState.ERROR:
            self.notify(f"The session stopped on an internal error: {event.worker.error}", severity="error",
                        timeout=15)

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

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme != "textual-light" else "textual-dark"

    def action_focus_pane(self, widget_id: str) -> None:
        self.query_one(f"#{widget_id}").focus()

    def action_export_markdown(self) -> None:
        live = self.live
        if live is None or live.folder is None:
            return
        path = live.folder / "transcript.md"
        path.write_text(transcript_markdown(live.bus.history, title=self.sub_title), encoding="utf-8")
        if self.is_web:
            self.deliver_text(path.open(encoding="utf-8"), save_filename="transcript.md")
        self.notify(f"Transcript written to {path}", timeout=6)

    def action_audit(self) -> None:
        from console.screens.audit import AuditScreen

        if self.live is not None:
            self.push_screen(AuditScreen(self.live.bus.history))

    def action_workbench(self) -> None:
        from console.screens.workbench import WorkbenchScreen

        if self.live is not None:
            self.push_screen(WorkbenchScreen(self.live))

    def action_compose(self) -> None:
        from console.screens.compose import ComposeScreen

        if self.live is not None and self.live.operator_agent is not None:
            self.push_screen(ComposeScreen(self.live))

    def action_phone(self) -> None:
        from console.screens.phone import PhoneScreen

        if self.live is not None and self.live.human is not None and self.live.domain.user_tools():
            if not self.started:
                self.action_start_or_pause()
            self.push_screen(PhoneScreen(self.live))

    def action_new_session(self) -> None:
        from console.screens.new_session import NewSessionScreen

        def chosen(spec: SessionSpec | None) -> None:
            if spec is not None:
                self.call_later(self.load_session, spec)

        self.push_screen(NewSessionScreen(self.spec), chosen)

    def action_open_trace(self) -> None:
        from console.screens.replay import OpenTraceScreen

        self.push_screen(OpenTraceScreen(self.live.domain if self.live else None))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action == "quit":
                continue
            action = binding.action
            yield SystemCommand(binding.description or action, f"key: {binding.key}",
                                lambda a=action: self.run_action(a))
        for mode in SupervisionMode:
            yield SystemCommand(f"Supervision: {mode.value}", "how the operator is asked about writes",
                                lambda m=mode: self.set_mode(m))


def make_app(domain: str = "retail", scenario: str | None = "refund-to-original-payment", *, agent: str = "ledger",
             model: str = "scripted", base_url: str | None = None, seat: str = "watch",
             mode: SupervisionMode = SupervisionMode.AUTOPILOT, operator: str = "operator",
             root: Path | None = None, autostart: bool = False, db: Path | None = None,
             pace: float = 0.0) -> OperatorConsole:
    """The one factory used by the CLI, the tests and the web server."""
    spec = replace(SessionSpec(), domain=domain, scenario=scenario, agent=agent, model=model, base_url=base_url,
                   seat=seat, mode=mode, db=db, pace=pace)
    return OperatorConsole(spec, operator=operator, root=root, autostart=autostart)
