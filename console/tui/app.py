"""The operator console App: global keys only (quit, theme, help, palette, new session, open).

Everything about the live session (panes, operator keys, `check_action`, the session worker) lives on
`MainScreen` (console/tui/screens/main.py), the default screen, so those keys exist only while it is in front.
The properties below reach into that screen for callers (tests, the web server) that hold the App.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from console.runtime.audit_replay import At
from console.runtime.live import LiveSession, SessionSpec, SupervisionMode
from console.runtime.rules import LiveRules
from console.tui.app_keys import ThemeAndHelpKeys
from console.tui.screens.main import MainScreen
from console.tui.screens.review import ReviewScreen
from console.tui.widgets.gate_log import GatePane
from console.tui.widgets.ledger_tree import LedgerPane
from console.tui.widgets.review_notice import TAKE_KEY
from console.tui.widgets.transcript import TranscriptPane
from core.llm.base import ChatModel


@dataclass(frozen=True)
class RecordedRequest:
    """`ledgeragent console --recorded FILE [--db DB] [--at C:I]`: a recording to audit and show at start-up."""

    path: Path
    database: Path | None = None
    at: At | None = None


class OperatorConsole(ThemeAndHelpKeys):
    TITLE = "LedgerAgent Console"
    CSS_PATH = "console.tcss"
    BINDINGS = [
        # Priority: it works from inside a text box and over any screen, and no text box takes F3. The main
        # screen shows it first in its footer (its own binding of the key); elsewhere the notification names it.
        Binding(TAKE_KEY, "take_review", "Review the write", show=False, priority=True, id="take-review"),
        Binding("ctrl+n", "new_session", "New", id="new-session"),
        Binding("t", "toggle_theme", "Theme", show=False, id="theme"),
        Binding("question_mark", "help", "Keys", id="help"),
        Binding("q", "request_quit", "Quit", id="quit"),
    ]

    def __init__(self, spec: SessionSpec | None = None, *, operator: str = "operator", root: Path | None = None,
                 autostart: bool = False, model_factory: Callable[[SessionSpec], ChatModel] | None = None,
                 recorded: RecordedRequest | None = None) -> None:
        super().__init__()
        self.recorded = recorded
        self.spec = spec or SessionSpec()
        self.operator = operator
        self.root = root
        self.autostart = autostart
        self.model_factory = model_factory
        self.rules: dict[str, LiveRules] = {}  # per domain: rules reloaded in the workbench, for later sessions
        self.main = MainScreen(self.spec, operator=operator, root=root, autostart=autostart,
                               model_factory=model_factory)

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def on_mount(self) -> None:
        if self.recorded is not None:
            self.notify(f"auditing {self.recorded.path} …", markup=False)
            self._audit_recorded(self.recorded)

    @work(thread=True, exclusive=True, group="recorded", exit_on_error=False)
    def _audit_recorded(self, request: RecordedRequest) -> None:
        """The recording audited in a thread (a file of many conversations re-executed on a database takes
        seconds), its screens pushed when it is done; a file that cannot be audited is one error notice."""
        from console.tui.screens.recorded import audit_recording

        try:
            audited = audit_recording(request.path, request.database, request.at)
        except (OSError, ValueError) as exc:
            self.call_from_thread(self.notify, f"cannot open {request.path}: {exc}", severity="error",
                                  timeout=30, markup=False)
            return
        self.call_from_thread(self._show_recorded, audited)

    def _show_recorded(self, audited: Any) -> None:
        from console.tui.screens.recorded import screens_for

        if audited.problems:
            self.notify(f"{len(audited.problems)} problem(s) in the recording: {audited.problems[0]}",
                        severity="warning", markup=False)
        for screen in screens_for(audited):
            self.push_screen(screen)

    # ------------------------------------------------------------------------ the main screen's session

    @property
    def main_screen(self) -> MainScreen:
        return self.main

    @property
    def live(self) -> LiveSession | None:
        return self.main.live

    @property
    def started(self) -> bool:
        return self.main.started

    @property
    def review_screen(self) -> ReviewScreen | None:
        return self.main.review_screen

    @property
    def transcript(self) -> TranscriptPane:
        return self.main.transcript

    @property
    def ledger_pane(self) -> LedgerPane:
        return self.main.ledger_pane

    @property
    def gate_pane(self) -> GatePane:
        return self.main.gate_pane

    async def load_session(self, spec: SessionSpec) -> None:
        self.spec = spec
        await self.main.load_session(spec)

    def set_mode(self, mode: SupervisionMode) -> None:
        self.main.set_mode(mode)

    def refresh_status(self) -> None:
        self.main.refresh_status()

    # ------------------------------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "take_review":
            return self.main.review_waiting
        return True

    def action_take_review(self) -> None:
        """F3: open the review the session waits on (announced on the main screen)."""
        self.main.take_review()

    async def action_request_quit(self) -> None:
        """Quit; a running session asks first, and its trace always gets its `session_ended`."""
        from console.tui.screens.confirm import ConfirmScreen

        if not self.main.session_running:
            await self.main.close_live("quit")
            self.exit()
            return

        async def answered(yes: bool | None) -> None:
            if yes:
                await self.main.close_live("quit")
                self.exit()

        self.push_screen(ConfirmScreen("A session is running. Quit and end it? (its trace is kept)"), answered)

    def action_new_session(self) -> None:
        from console.tui.screens.new_session import NewSessionScreen

        def chosen(spec: SessionSpec | None) -> None:
            if spec is not None:
                self.call_later(self.load_session, spec)

        self.push_screen(NewSessionScreen(self.spec), chosen)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        from console.tui.screens.help import binding_keys

        yield from super().get_system_commands(screen)
        seen: set[str] = set()  # a key both here and on the main screen (F3) is one command
        for binding in [*self.BINDINGS, *(MainScreen.BINDINGS if screen is self.main else [])]:
            assert isinstance(binding, Binding)
            if binding.action in ("request_quit",) or not binding.description or binding.description in seen:
                continue
            seen.add(binding.description)
            action = binding.action
            target = self if binding in self.BINDINGS else self.main
            yield SystemCommand(binding.description, f"key: {binding_keys(binding)}",
                                lambda a=action, t=target: t.run_action(a))
        if screen is self.main:
            for mode in SupervisionMode:
                yield SystemCommand(f"Supervision: {mode.value}", "how the operator is asked about writes",
                                    lambda m=mode: self.set_mode(m))


def make_app(domain: str = "retail", scenario: str | None = "refund-to-original-payment", *, agent: str = "ledger",
             model: str = "scripted", base_url: str | None = None, seat: str = "watch",
             mode: SupervisionMode = SupervisionMode.AUTOPILOT, operator: str = "operator",
             root: Path | None = None, autostart: bool = False, db: Path | None = None,
             pace: float = 0.0, evidence: str | None = None,
             recorded: RecordedRequest | None = None) -> OperatorConsole:
    """The one factory used by the CLI, the tests and the web server."""
    spec = replace(SessionSpec(), domain=domain, scenario=scenario, agent=agent, model=model, base_url=base_url,
                   seat=seat, mode=mode, db=db, pace=pace, evidence=evidence)
    return OperatorConsole(spec, operator=operator, root=root, autostart=autostart, recorded=recorded)
