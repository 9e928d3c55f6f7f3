"""The supervision desk: the sessions table, the approval inbox with the highlighted item's detail, and the
desk's status line; the decision keys act on the highlighted inbox item.

The screen holds a `DeskAPI`, never a `Desk`: it renders snapshots and calls the API's async methods, so a
desk served to browser tabs draws the same. The desk calls its listeners on every event of every session;
the screen coalesces them into one redraw after the messages already queued (`_schedule`: not after the next
refresh, which kept a new inbox item off screen for one frame more), and a one-second clock tick redraws so
waits and their amber / red move. Highlighting an inbox item claims it for this operator; moving away
releases it. A remote desk whose host is gone (or not answering) says so in the status line and a
notification at once; its waits stand still, the decision keys are off, and a gone desk's clock tick stops.
"""

from __future__ import annotations

import contextlib

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen

from console.runtime.desk.view import DeskAPI, DeskRefused, DeskSnapshot, ItemView
from console.runtime.textview import shown
from console.tui.key_order import KeyInterpreter
from console.tui.screens.desk_decide import DeskDecisions
from console.tui.widgets.desk_detail import ItemDetail
from console.tui.widgets.desk_grid import RowTable
from console.tui.widgets.desk_inbox import InboxTable
from console.tui.widgets.desk_sessions import SessionsTable
from console.tui.widgets.desk_status import DeskStatus
from console.tui.widgets.filter_bar import FilterBar
from console.tui.widgets.footer import ConsoleFooter

TICK_S = 1.0
RENEW_BEFORE_S = 10.0  # a held claim is renewed on the tick once it has less than this left


DECIDING = frozenset({"approve", "veto", "edit", "force", "step", "resume", "bulk"})


class DeskScreen(KeyInterpreter, Screen[None]):
    """The desk's keys are taken in the order typed (console/tui/key_order.py): a decision key acts on the item
    the screen shows when the key is handled, and one typed before the screen showed that item (the inbox
    changed under the cursor, the cursor moved, the desk said something) is refused, with a word why."""

    BINDINGS = [
        Binding("a", "approve", "Approve/accept", id="desk-approve"),
        Binding("v", "veto", "Veto", id="desk-veto"),
        Binding("e", "edit", "Edit & re-gate", id="desk-edit"),
        Binding("f", "force", "Force-allow", id="desk-force"),
        Binding("n", "step", "Step", id="desk-step"),
        Binding("r", "resume", "Resume (leave step mode)", show=False, id="desk-resume"),
        Binding("A", "bulk", "Bulk-approve ALLOWs", id="desk-bulk"),
        Binding("i", "focus_inbox", "Inbox", id="desk-inbox"),
        Binding("S", "focus_sessions", "Sessions", show=False, id="desk-sessions"),
        Binding("slash", "filter", "Filter", id="desk-filter"),
    ]

    def __init__(self, api: DeskAPI, operator: str) -> None:
        super().__init__()
        self.api = api
        self.operator = operator
        self.decisions = DeskDecisions(self, api, operator)
        self.snapshot: DeskSnapshot = api.snapshot()
        self.claimed: str | None = None  # the inbox item this screen holds a claim on
        self.redraws = 0  # every redraw, and those the clock tick made (tests tell coalesced ones apart)
        self.ticks = 0
        self._pending = False
        self._mounted = False
        self._lost = ""  # what this screen last said of a lost desk ("" while the desk can be worked)
        self.ticking = True  # the one-second clock tick runs (it stops for good once the desk is gone)

    def compose(self) -> ComposeResult:
        yield DeskStatus(id="desk-status")
        with Vertical(id="desk-body"):
            yield SessionsTable(id="desk-sessions")
            with Horizontal(id="desk-lower"):
                yield InboxTable(self.operator, id="desk-inbox")
                with VerticalScroll(id="desk-detail-scroll"):
                    yield ItemDetail(id="desk-detail")
        yield FilterBar(id="filter-bar")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self.sessions = self.query_one(SessionsTable)
        self.inbox = self.query_one(InboxTable)
        self.detail = self.query_one(ItemDetail)
        self.status = self.query_one(DeskStatus)
        self.query_one("#desk-detail-scroll").border_title = "Item"
        self._mounted = True
        self.api.subscribe(self._schedule)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._schedule())  # recolour what is shown
        self._ticker = self.set_interval(TICK_S, self._tick)
        self.redraw()
        self.inbox.focus()
        self.keys_ready(self.app)

    def on_screen_resume(self) -> None:
        """Back from a session view (which may have released what it claimed): claim the highlighted item again."""
        self.changed()
        if self._mounted:
            self.claimed = None
            self.redraw()

    async def interpret(self, event: events.Key) -> bool:
        return await self.decisions.take_key(self, event, DECIDING)

    def on_unmount(self) -> None:
        self._mounted = False
        self.api.unsubscribe(self._schedule)

    # ------------------------------------------------------------------------------------------ drawing

    def _schedule(self) -> None:
        """The desk changed: redraw once, as soon as the messages already queued are handled, however many
        changes arrive before it. (The frame it causes is still at most one per refresh interval; redrawing is
        cheap because the tables repaint only changed rows.)"""
        if self._pending or not self._mounted:
            return
        self._pending = True
        self.call_later(self._flush)

    def _flush(self) -> None:
        self._pending = False
        if self._mounted:
            self.redraw()

    def redraw(self) -> None:
        before = self.selected_item.decision_facts() if self.selected_item is not None else None
        snapshot = self.snapshot = self.api.snapshot()
        self.redraws += 1
        with self.app.batch_update():  # what is drawn is inert: the tables' cells (desk_grid.cell), the item shown
            self.status.show(snapshot)
            self.sessions.show(snapshot)
            self.inbox.show(snapshot)
            self.detail.show(shown(self.selected_item), snapshot, self.operator)
        if snapshot.lost != self._lost:
            self._link_changed(snapshot.lost)
        after = self.selected_item.decision_facts() if self.selected_item is not None else None
        if after != before:  # another item (or none) under the cursor, or what deciding on it means changed
            self.changed()
        self.call_later(self._follow_cursor)

    def _link_changed(self, lost: str) -> None:
        """The desk went (or came back from not answering): say it at once, in plain words, and take or give
        back the decision keys. A desk that is gone stays gone: the clock tick stops too (nothing moves)."""
        self._lost = lost
        self.refresh_bindings()
        if lost:
            self.decisions.say(lost[:1].upper() + lost[1:] + ".", error=True)
        else:
            self.decisions.say("The desk answers again: decisions can be taken.")
        if lost and getattr(self.api, "gone", False):
            self._ticker.stop()
            self.ticking = False

    DECIDING = frozenset({"approve", "veto", "edit", "force", "step", "resume", "bulk"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The decision keys are off (shown dimmed) while the desk is gone or not answering."""
        if action in self.DECIDING and self._lost:
            return None
        return True

    async def _tick(self) -> None:
        self.ticks += 1
        self.redraw()
        item = self.selected_item
        if self._lost:
            return  # no claim can be renewed on a desk that does not answer
        if item is not None and item.id == self.claimed and (
                item.claim_until is None or item.claim_until - self.snapshot.now < RENEW_BEFORE_S):
            await self._claim(item.id, quiet=True)

    @property
    def selected_item(self) -> ItemView | None:
        item_id = self.inbox.selected_id if self._mounted else None
        return self.snapshot.item(item_id) if item_id is not None else None

    # ------------------------------------------------------------------------------------------ claims

    async def _follow_cursor(self) -> None:
        """Hold a claim on the highlighted item only (inbox rows come and go under the cursor)."""
        wanted = self.inbox.selected_id if self._mounted else None
        if wanted == self.claimed or self._lost:
            return  # (a desk that does not answer takes no claim; the host drops a lost connection's own)
        if self.claimed is not None:
            await self.api.release(self.claimed, self.operator)
            self.claimed = None
        if wanted is not None:
            await self._claim(wanted)

    async def _claim(self, item_id: str, quiet: bool = False) -> None:
        item = self.snapshot.item(item_id)
        if item is not None and item.claimed_by not in (None, self.operator):
            return  # someone else's: shown as theirs, and its keys are refused
        try:
            await self.api.claim(item_id, self.operator)
            self.claimed = item_id
        except DeskRefused as exc:
            if not quiet:
                self.decisions.say(str(exc), error=True)

    @on(RowTable.RowHighlighted, "#desk-inbox")
    async def _inbox_moved(self) -> None:
        if self._mounted:
            self.detail.show(shown(self.selected_item), self.snapshot, self.operator)
            await self._follow_cursor()

    @on(RowTable.RowSelected, "#desk-sessions")
    def _session_chosen(self, event: RowTable.RowSelected) -> None:
        self.open_session(event.row_key)

    def open_session(self, session_id: str) -> None:
        from console.tui.screens.desk_session import SessionViewScreen

        self.app.push_screen(SessionViewScreen(self.api, session_id, self.operator))

    async def release_claim(self) -> None:
        if self.claimed is not None:
            claimed, self.claimed = self.claimed, None
            with contextlib.suppress(DeskRefused):  # a desk that is gone holds no claim of ours any more
                await self.api.release(claimed, self.operator)

    # ------------------------------------------------------------------------------------------ actions

    def _domain_of(self, item: ItemView) -> str:
        row = self.snapshot.row(item.session_id)
        return row.domain if row is not None else ""

    async def action_approve(self) -> None:
        await self.decisions.approve(self.selected_item)
        self.redraw()

    async def action_step(self) -> None:
        await self.decisions.step(self.selected_item)
        self.redraw()

    async def action_resume(self) -> None:
        """The highlighted session's, when the sessions table has the focus; else the highlighted item's."""
        if self.sessions.has_focus:
            session_id = self.sessions.selected_id
        else:
            item = self.selected_item
            session_id = item.session_id if item is not None else None
        await self.decisions.resume(session_id)
        self.redraw()

    def _review(self, start: str) -> None:
        item = self.selected_item
        self.decisions.review(item, start, self._domain_of(item) if item is not None else "")

    def action_veto(self) -> None:
        self._review("veto")

    def action_edit(self) -> None:
        self._review("edit")

    def action_force(self) -> None:
        self._review("force")

    def action_bulk(self) -> None:
        self.decisions.bulk(self.selected_item, self.snapshot)

    def action_focus_inbox(self) -> None:
        self.inbox.focus()

    def action_focus_sessions(self) -> None:
        self.sessions.focus()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(FilterBar.Applied)
    def _filtered(self, message: FilterBar.Applied) -> None:
        self.sessions.set_filter(message.text)

    def bindings_help(self) -> list[tuple[str, str]]:
        return [(b.key, b.description) for b in self.BINDINGS if isinstance(b, Binding) and b.description]
