"""The supervision desk App: global keys (quit, theme, help) and the desk's lifetime.

The screens only know a `DeskAPI`. Running the sessions and closing them is the job of whoever owns the
desk: in `ledgeragent supervise` that is this process (`lifecycle` is the in-process `Desk`, whose `run()`
this App starts as a worker and whose `close()` it awaits before exiting, so every session's trace ends with
`session_ended`); a second operator's App on the same desk passes no lifecycle and only decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from textual.binding import Binding
from textual.screen import Screen

from console.runtime.desk.view import DeskAPI, RowPhase, RowView
from console.tui.app_keys import ThemeAndHelpKeys
from console.tui.screens.desk import DeskScreen


class DeskLifecycle(Protocol):
    async def run(self) -> None: ...

    async def close(self) -> None: ...


class SupervisorApp(ThemeAndHelpKeys):
    TITLE = "LedgerAgent Desk"
    CSS_PATH = "console.tcss"
    BINDINGS = [
        Binding("t", "toggle_theme", "Theme", show=False, id="theme"),
        Binding("question_mark", "help", "Keys", id="help"),
        Binding("q", "request_quit", "Quit", id="quit"),
    ]

    def __init__(self, api: DeskAPI, *, operator: str, lifecycle: DeskLifecycle | None = None) -> None:
        super().__init__()
        self.api = api
        self.operator = operator
        self.lifecycle = lifecycle
        self.desk_screen = DeskScreen(api, operator)
        self._closed = False

    def get_default_screen(self) -> Screen[Any]:
        return self.desk_screen

    def on_mount(self) -> None:
        self.sub_title = f"operator {self.operator}"
        if self.lifecycle is not None:
            self.run_worker(self.lifecycle.run(), group="desk", name="desk", exit_on_error=False)

    async def close_desk(self) -> None:
        """Give up this screen's claim and, if this App owns the desk, end every session still running.

        Only this screen's claim: the same operator may hold others in another tab (a desk host releases an
        operator's claims when their last connection closes)."""
        if self._closed:
            return
        self._closed = True
        await self.desk_screen.release_claim()
        if self.lifecycle is not None:
            await self.lifecycle.close()

    async def on_unmount(self) -> None:
        await self.close_desk()

    async def action_request_quit(self) -> None:
        """Quit; while sessions run it asks first (they are ended, their traces kept)."""
        from console.tui.screens.confirm import ConfirmScreen

        snapshot = self.api.snapshot()
        if snapshot.done or self.lifecycle is None:
            await self.close_desk()
            self.exit()
            return

        async def answered(yes: bool | None) -> None:
            if yes:
                await self.close_desk()
                self.exit()

        self.push_screen(ConfirmScreen(quit_question(snapshot.rows)), answered)


def quit_question(rows: Sequence[RowView]) -> str:
    """What quitting ends, from the rows' phases: started sessions are ended (their traces kept); queued ones
    were never started, so they never will be and leave no folder. A session paused in step mode waits on its
    step item in the inbox, so it counts as waiting on the inbox."""
    running = sum(1 for r in rows if r.phase is RowPhase.RUNNING)
    waiting = sum(1 for r in rows if r.phase in (RowPhase.WAITING, RowPhase.PAUSED))
    queued = sum(1 for r in rows if r.phase is RowPhase.QUEUED)
    started = [f"{n} {what}" for n, what in ((running, "running"), (waiting, "waiting on the inbox")) if n]
    parts = []
    if started:
        parts.append(f"{running + waiting} session(s) started ({', '.join(started)}): quitting ends them "
                     "(their traces are kept).")
    if queued:
        parts.append(f"{queued} queued, not started: they never will, and leave no folder.")
    return " ".join(parts) + " Quit?"
