"""One desk session in the console's three panes, live, from `api.session_events(id, since)` alone.

The panes are the console's own `SessionPanes`, fed event by event exactly as the main screen feeds them;
the ledger they show is rebuilt from the events (`core.timeline.apply_event`, as replay does), so no
`LiveSession` is needed and a remote desk works the same. The session's pending inbox item can be decided
here with the desk's keys; Esc returns to the desk.
"""

from __future__ import annotations

import contextlib

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from console.runtime.desk.view import DeskAPI, DeskRefused, DeskSnapshot, ItemView
from console.runtime.textview import shown
from console.tui.key_order import KeyInterpreter
from console.tui.screens.desk_decide import DeskDecisions, domain_of
from console.tui.theme import palette_of
from console.tui.widgets.desk_detail import keys_line
from console.tui.widgets.desk_format import duration, phase_text
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.gate_log import GatePane
from console.tui.widgets.session_panes import SessionPanes
from core.events import EVENT_ADAPTER, Event
from core.ledger import Ledger
from core.timeline import apply_event

DECIDING = frozenset({"approve", "veto", "edit", "force", "step", "resume"})


class SessionViewScreen(KeyInterpreter, Screen[None]):
    """Its decision keys act on the item the view shows as pending, in the order typed (as on the desk)."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back to the desk", id="session-back"),
        Binding("a", "approve", "Approve/accept", id="session-approve"),
        Binding("v", "veto", "Veto", id="session-veto"),
        Binding("e", "edit", "Edit & re-gate", id="session-edit"),
        Binding("f", "force", "Force-allow", id="session-force"),
        Binding("n", "step", "Step", id="session-step"),
        Binding("r", "resume", "Resume (leave step mode)", show=False, id="session-resume"),
        Binding("l", "cycle_pane", "Next pane", id="session-cycle-pane"),
    ]

    def __init__(self, api: DeskAPI, session_id: str, operator: str) -> None:
        super().__init__()
        self.api = api
        self.session_id = session_id
        self.operator = operator
        self.decisions = DeskDecisions(self, api, operator)
        self.snapshot: DeskSnapshot = api.snapshot()
        row = self.snapshot.row(session_id)
        self.domain = domain_of(row.domain) if row is not None else None
        self.ledger = Ledger(self.domain.path_map) if self.domain is not None else None
        self.events: list[Event] = []
        self._pending = False
        self._fetching = False
        self._again = False
        self._mounted = False
        self.claimed: str | None = None  # the pending item this view claimed (released when it closes)
        self._lost = ""  # what the title last said of a lost desk
        self.shown_item: str | None = None  # the pending item the title shows (the one a key acts on)

    def compose(self) -> ComposeResult:
        yield Static("", id="session-title", classes="screen-title")
        yield SessionPanes(id="panes")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.panes = self.query_one(SessionPanes)
        self.title_bar = self.query_one("#session-title", Static)
        self._mounted = True
        self.api.subscribe(self._schedule)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._show_title())  # (the panes: their own)
        self._show_title()
        self.set_interval(1.0, self._tick)
        self._schedule()
        self.keys_ready(self.app)

    async def interpret(self, event: events.Key) -> bool:
        return await self.decisions.take_key(self, event, DECIDING)

    def _tick(self) -> None:
        self.snapshot = self.api.snapshot()
        self._show_title()

    async def on_unmount(self) -> None:
        self._mounted = False
        self.api.unsubscribe(self._schedule)
        if self.claimed is not None:  # the desk screen claims again whatever its own cursor is on
            with contextlib.suppress(DeskRefused):  # a desk that is gone holds no claim of ours any more
                await self.api.release(self.claimed, self.operator)

    def _schedule(self) -> None:
        if self._pending or not self._mounted:
            return
        self._pending = True
        self.call_after_refresh(self._fetch)

    @work(group="session-view", exclusive=False, exit_on_error=False)
    async def _fetch(self) -> None:
        """New events since the last fetch, in order, into the panes (one fetch in flight at a time)."""
        self._pending = False
        if self._fetching:
            self._again = True
            return
        self._fetching = True
        try:
            self._again = True
            while self._again and self._mounted:
                self._again = False
                await self._fetch_once()
        finally:
            self._fetching = False

    async def _fetch_once(self) -> None:
        try:
            fresh = await self.api.session_events(self.session_id, len(self.events))
        except DeskRefused as exc:
            self.decisions.say(str(exc), error=True)
            return
        if not self._mounted:
            return
        with self.app.batch_update():
            for data in fresh:
                event = EVENT_ADAPTER.validate_python(data)
                self.events.append(event)
                if self.ledger is not None:
                    apply_event(self.ledger, event)
                self.panes.add_event(event, self.ledger)
        self.snapshot = self.api.snapshot()
        self._show_title()

    def _show_title(self) -> None:
        row = shown(self.snapshot.row(self.session_id))  # drawn: its text inert
        colours = palette_of(self)
        lost = self.snapshot.lost  # a remote desk whose host is gone or not answering: said first, keys off
        if lost != self._lost:
            self._lost = lost
            self.refresh_bindings()
        text = Text()
        if lost:
            text.append(f"{lost[:1].upper()}{lost[1:]}.  ", colours.text("error", "bold reverse"))
        text.append_text(Text.assemble(("session ", "bold"), (self.session_id, "bold")))
        if row is None:
            text.append("  not at this desk")
        else:
            text.append(f"  {row.domain} · {row.label} · {row.customer or '—'}  ")
            text.append_text(phase_text(row.phase, colours))
            text.append(f"  step {row.steps}")
            if row.failure:
                text.append(f"  {row.failure}", colours.text("error", "bold"))
            elif row.end_reason:
                text.append(f"  ({row.end_reason})", "dim")
        item = self.pending_item
        if (item.id if item is not None else None) != self.shown_item:
            self.shown_item = item.id if item is not None else None
            self.changed()
        if item is not None:
            text.append(f"   waits {duration(item.waited(self.snapshot.now))} on {item.id}: ", "bold")
            text.append(keys_line(shown(item)), "dim")
        self.title_bar.update(text)
        self.panes.gate.set_waiting(item.call_id or None if item is not None else None)

    @property
    def pending_item(self) -> ItemView | None:
        row = self.snapshot.row(self.session_id)
        return self.snapshot.item(row.pending) if row is not None and row.pending else None

    async def _claim_pending(self) -> ItemView | None:
        """The session's pending item, claimed for this operator before a key acts on it."""
        self.snapshot = self.api.snapshot()
        item = self.pending_item
        if item is None:
            self.decisions.say("This session waits on nothing right now.")
            return None
        if item.id != self.shown_item:  # it came after the key was typed: the operator has not seen it
            self._show_title()
            self.decisions.say(f"The session now waits on {item.id}, not shown when you pressed the key: press it "
                               "again if you mean it.", error=True)
            return None
        if item.claimed_by in (None, self.operator):
            try:
                await self.api.claim(item.id, self.operator)
                self.claimed = item.id
            except DeskRefused as exc:
                self.decisions.say(str(exc), error=True)
                return None
        return item

    async def action_approve(self) -> None:
        item = await self._claim_pending()
        if item is not None:
            await self.decisions.approve(item)

    async def action_step(self) -> None:
        item = await self._claim_pending()
        if item is not None:
            await self.decisions.step(item)

    async def action_resume(self) -> None:
        await self.decisions.resume(self.session_id)
        self.snapshot = self.api.snapshot()
        self._show_title()

    async def _review(self, start: str) -> None:
        item = await self._claim_pending()
        if item is not None:
            row = self.snapshot.row(self.session_id)
            self.decisions.review(item, start, row.domain if row is not None else "")

    async def action_veto(self) -> None:
        await self._review("veto")

    async def action_edit(self) -> None:
        await self._review("edit")

    async def action_force(self) -> None:
        await self._review("force")

    def action_cycle_pane(self) -> None:
        self.panes.cycle()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cycle_pane":
            return self.panes.narrow if self._mounted else False
        if action in ("approve", "veto", "edit", "force", "step", "resume") and self._lost:
            return None  # off (dimmed) while the desk is gone or not answering
        return True

    @on(GatePane.EvidenceSelected)
    def _evidence(self, message: GatePane.EvidenceSelected) -> None:
        self.panes.ledger.highlight(message.evidence)
