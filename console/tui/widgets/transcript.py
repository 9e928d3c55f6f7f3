"""Transcript pane: the conversation, tool calls with their arguments, gate verdicts inline, results folded.

A line-API widget (like Textual's Log and toolong's log view): every entry is rendered to strips once, at
the pane's width, and only the visible lines are drawn. Appending an entry never lays out the others, so
an event costs the same with 20 entries or 5,000. A click on a tool result (or `x` for all of them) folds /
unfolds it.

It follows the tail until the operator scrolls away from it, and only the operator's own act changes that:
scrolling up (a key, PgUp, Home, the mouse wheel, the scrollbar) stops following, and scrolling back to the
last line (End, or any scroll that reaches it) follows again. Whatever moves the tail without the operator
(the pane getting shorter as the compare view's "What differs" strip grows under it, a layout switch, a
terminal resize, a re-wrap, new entries) keeps the tail in view while following, and keeps the view where the
operator left it otherwise. (Judging from the scroll position instead, as each entry arrived, took a pane that
had just got shorter for one the operator had scrolled up.) Unfolding an entry is the operator's act too: if
it pushes the tail below the screen, the view stays on what they unfolded and the pane stops following.

A width change (a layout switch, a terminal resize) re-wraps at once only the entries on screen, so its
frame costs the same with 30 entries or 5,000; the others are re-wrapped after that frame, a chunk per
frame, and any of them scrolled into view first is re-wrapped before it is drawn. The screen keeps showing
the same entry at its top meanwhile (or the tail, when following). Until the catch-up is done (one frame for
a short transcript, about one per 200 lines for a long one) the entries not re-wrapped yet still count with
their old line counts, so the scrollbar is then approximate; after it, it is exactly that of the new width.
"""

from __future__ import annotations

import bisect
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.color import Color
from rich.console import RenderableType
from rich.markdown import Markdown
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

from console.runtime.facts import decision_summary, outcome_summary, read_by_gate, verdict_summary, words
from console.runtime.textview import format_call, shorten
from console.tui.theme import AGENT, INFO, OPERATOR, USER, VERDICT_ROLE, palette_of
from core.events import (
    AssistantTurnEvent,
    EnvironmentSynced,
    Event,
    GateDecided,
    LedgerStaled,
    LedgerUpdated,
    MessageSent,
    ModelFailed,
    ModelRetry,
    SessionEnded,
    SupervisorDecided,
    ToolResultEvent,
)

MAX_ENTRIES = 5_000  # kept in the pane; the full session is always in trace.jsonl
MARGIN = 2  # lines re-wrapped beyond the screen on a width change (the rest wait for the catch-up)
CATCH_UP_LINES = 200  # lines re-wrapped per catch-up chunk (one chunk per frame, after the width change's)
BAR = {"user": USER, "agent": AGENT, **{f"gate-{v}": role for v, role in VERDICT_ROLE.items()}, "override": OPERATOR,
       "error": "error", "warning": "warning", "intro": INFO}  # the left bar's colour role, per kind of entry


@dataclass
class Entry:
    """One transcript entry. `render(expanded)` builds its renderable; foldable entries start folded."""

    kind: str
    render: Callable[[bool], RenderableType]
    foldable: bool = False
    expanded: bool = False
    gap: bool = False  # a blank line before it (a new speaker)
    strips: list[Strip] = field(default_factory=list)
    width: int = 0  # the pane width `strips` were wrapped at (another width: they wait to be re-wrapped)
    _shown: dict[bool, RenderableType] = field(default_factory=dict, repr=False)

    def renderable(self) -> RenderableType:
        """What the entry shows in its fold state, built once per state: a re-wrap at a new width then only
        wraps it again (a Markdown body is not parsed again, a quarter of a re-wrap's cost)."""
        shown = self._shown.get(self.expanded)
        if shown is None:
            shown = self._shown[self.expanded] = self.render(self.expanded)
        return shown

    def forget_render(self) -> None:
        """Render it again before it is next drawn (its colours come from the theme when it is rendered)."""
        self._shown.clear()
        self.width = -1  # no pane width: stale whatever the pane's width is


@dataclass
class _Frame:
    """What every line of one frame shares; the widget's style only when a line is not cached."""

    scroll_x: int
    scroll_y: int
    width: int
    _style: Style | None = None

    def style(self, pane: TranscriptPane) -> Style:
        if self._style is None:
            self._style = pane.rich_style
        return self._style


class TranscriptPane(ScrollView, can_focus=True):
    BORDER_TITLE = "Transcript"
    BINDINGS = [Binding("x", "toggle_results", "Fold/unfold results", show=False)]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items: list[Entry] = []  # the entries shown (all of them unless a filter is set)
        self.every: list[Entry] = []  # every entry kept, for the filter
        self.filter = ""
        self._starts: list[int] = []  # first line of each entry
        self._lines = 0
        self._width = 0
        self._follow = True  # changed only by the operator: a scroll (`_scroll_to`), a fold, a filter, a clear
        self._own_scroll = False  # inside `_keeping_view`: the pane's own scroll, not the operator's
        self._generation = 0  # bumped whenever lines move (fold, resize, trim): invalidates the line cache
        self._line_cache: LRUCache[tuple[int, int, int, int], Strip] = LRUCache(1024)
        self._frame: _Frame | None = None  # set while `render_lines` draws
        self._bar_batched = False  # inside `_one_scrollbar_update`: the scrollbar is judged at its end
        self._catch_up_due = False  # a catch-up chunk is scheduled (entries still wrapped at an old width)

    # ------------------------------------------------------------------------------------ rendering

    def _render_entry(self, entry: Entry, width: int) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(max(width - 2, 10))
        lines = console.render_lines(entry.renderable(), options, pad=False)
        bar = Segment("▌ ", Style.parse(palette_of(self).text(BAR[entry.kind], "bold"))) if entry.kind in BAR \
            else Segment("  ")
        strips = [Strip([bar, *line]) for line in lines] or [Strip.blank(width)]
        if entry.gap:
            strips.insert(0, Strip.blank(width))
        return strips

    def _wrap(self, entry: Entry) -> None:
        """(Re-)render one entry at the pane's current width."""
        width = self._width or self._content_width()
        entry.strips = self._render_entry(entry, width)
        entry.width = width

    def _resize_virtual(self) -> None:
        """Grow the scrollable area without a screen layout pass.

        Assigning `virtual_size` asks the whole screen to lay out again (tens of ms with busy panes); the
        pane's own box does not change when content grows, so updating the scrollbars is enough.
        """
        size = Size(0, self._lines)  # width 0: never scroll sideways
        if size != self.virtual_size:
            self.set_reactive(ScrollView.virtual_size, size)
            self._scroll_update(size)

    def _scroll_update(self, virtual_size: Size) -> None:
        """Textual's `Widget._scroll_update`, except that the vertical scrollbar is repainted only when what
        it draws changed. Textual calls this on every screen layout pass too (any widget's layout refresh),
        and then repainted the bar, and with it every line of the screen region it spans, each time."""
        self._refresh_scrollbars()
        width, height = self.container_size
        if self.show_vertical_scrollbar and self.styles.scrollbar_size_vertical:
            self._update_scrollbar(virtual=virtual_size.height, window=height - self.scrollbar_size_horizontal)
        if self.show_horizontal_scrollbar and self.styles.scrollbar_size_horizontal:  # not with overflow-x: hidden
            self.horizontal_scrollbar.window_virtual_size = virtual_size.width
            self.horizontal_scrollbar.window_size = width - self.scrollbar_size_vertical
            self.horizontal_scrollbar.refresh()
        self.scroll_x = self.validate_scroll_x(self.scroll_x)
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        """The screen's layout pass gave the pane its size (before drawing it): a shorter or taller pane moves the
        last line, so a pane following the tail scrolls to it again (a width change re-wraps in `render_lines`)."""
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        if self._follow and self.scroll_y != self.max_scroll_y:
            self._show_tail()
        return resized

    def _scroll_to(self, x: float | None = None, y: float | None = None, **kwargs: Any) -> bool:
        """Every scroll of the pane comes here: the keys, PgUp/PgDn, Home/End, the mouse wheel, the scrollbar's
        drag and clicks (Textual's handlers), and any code's `scroll_to` / `scroll_home`. Unless it is the pane's
        own keeping of its view (`_keeping_view`), it is where the operator put the view: the pane follows the
        tail from now on exactly when that is the last line."""
        if y is not None and not self._own_scroll:
            self._follow = self.validate_scroll_target_y(y) >= self.max_scroll_y
        return super()._scroll_to(x, y, **kwargs)

    def action_scroll_end(self) -> None:
        """End: the last line at once, following again (Textual's End waits a frame and then animates, and an
        entry arriving meanwhile found the pane not following yet). All of it fits: nothing to scroll, following."""
        if not self.allow_vertical_scroll:
            self._follow = True
            raise SkipAction()
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    @contextlib.contextmanager
    def _keeping_view(self) -> Iterator[None]:
        """The pane scrolls itself to keep its view (the tail, or the entry on top): not the operator's act."""
        own, self._own_scroll = self._own_scroll, True
        try:
            yield
        finally:
            self._own_scroll = own

    def _show_tail(self) -> None:
        with self._keeping_view():
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """ScrollView's watcher, with the scrollbar repainted only when what it draws changed."""
        if self.show_vertical_scrollbar:
            self._update_scrollbar(position=new_value)
        if round(old_value) != round(new_value):
            self.refresh(self.size.region)

    def _update_scrollbar(self, *, virtual: int | None = None, window: int | None = None,
                          position: float | None = None) -> None:
        """Give the vertical scrollbar its new numbers; repaint it only if what it draws changed.

        With thousands of lines, one appended entry moves the thumb by far less than the 1/8 cell a
        scrollbar can show, yet assigning the numbers repaints the whole bar (and, with it, every line of
        the screen region it spans): most of an append's drawing work. The bar's own drawing code decides.
        """
        bar = self.vertical_scrollbar
        before = None if self._bar_batched else _thumb(bar)
        if virtual is not None:
            bar.set_reactive(ScrollBar.window_virtual_size, virtual)
        if window is not None:
            bar.set_reactive(ScrollBar.window_size, window)
        if position is not None:
            bar.set_reactive(ScrollBar.position, bar.validate_position(position))
        if not self._bar_batched and (before is None or _thumb(bar) != before):
            bar.refresh()

    @contextlib.contextmanager
    def _one_scrollbar_update(self) -> Iterator[None]:
        """Growing the content and then following the tail move the thumb up and back down again: judge
        the scrollbar once, after both, against what it drew before."""
        if self._bar_batched or not self.show_vertical_scrollbar:
            yield
            return
        bar = self.vertical_scrollbar
        before = _thumb(bar)
        self._bar_batched = True
        try:
            yield
        finally:
            self._bar_batched = False
            if before is None or _thumb(bar) != before:
                bar.refresh()

    def _content_width(self) -> int:
        # Always leave the vertical scrollbar's column free, so lines never change width (and never need a
        # horizontal scrollbar) when the scrollbar appears.
        return max(self.content_region.width - self.styles.scrollbar_size_vertical, 20)

    def _reflow(self, start: int = 0) -> None:
        """Recompute line offsets from entry `start` on (after a fold or a resize)."""
        self._generation += 1
        del self._starts[start:]
        line = 0 if start == 0 else self._starts[start - 1] + len(self.items[start - 1].strips)
        for entry in self.items[start:]:
            self._starts.append(line)
            line += len(entry.strips)
        self._lines = line
        self._resize_virtual()

    def _fit_width(self) -> None:
        """If the pane's width changed: re-wrap the entries on screen now, the others in later frames."""
        width = self._content_width()
        if width != self._width:
            self._width = width
            self._generation += 1
            self._wrap_shown(tail=self._follow)
            if self._follow:  # also when nothing on screen needed a re-wrap (the pane's height may have changed)
                self._show_tail()
            self._schedule_catch_up()

    def _stale(self, index: int) -> bool:
        return self.items[index].width != self._width

    def _top(self) -> tuple[int, int]:
        """The entry drawn on the first line, and which of its lines that is."""
        line = min(round(self.scroll_y), max(self._lines - 1, 0))
        index = max(bisect.bisect_right(self._starts, line) - 1, 0)
        return index, line - self._starts[index]

    def _keep_view(self, top: tuple[int, int] | None) -> None:
        """After entries changed their line counts: the tail when following, else the same entry on top."""
        if top is None:
            self._show_tail()
            return
        index, offset = top
        line = self._starts[index] + min(offset, len(self.items[index].strips) - 1)
        if line != round(self.scroll_y):
            with self._keeping_view():
                self.scroll_to(y=line, animate=False, immediate=True)

    def _wrap_shown(self, tail: bool) -> None:
        """Re-wrap, at the current width, every entry on screen (and MARGIN lines more), then show the tail
        again (`tail`) or keep the entry on top on top.

        At the tail, the entries are taken from the last one up until they fill the screen at the new width.
        Otherwise from the entry on top down: the entries above it keep their line counts until the catch-up,
        so it stays on top; each pass re-wraps at least one entry, and repeats while the new line counts bring
        more old-width entries on screen (so at most once per entry)."""
        if not self.items:
            return
        height = max(self.scrollable_content_region.height, 1) + MARGIN
        if tail:
            wrapped: list[int] = []
            index, lines = len(self.items) - 1, 0
            while index >= 0 and lines < height:
                if self._stale(index):
                    self._wrap(self.items[index])
                    wrapped.append(index)
                lines += len(self.items[index].strips)
                index -= 1
            if wrapped:
                self._reflow(wrapped[-1])
                self._keep_view(None)
            return
        while True:
            top = self._top()
            last = max(bisect.bisect_right(self._starts, self._starts[top[0]] + top[1] + height - 1) - 1, top[0])
            stale = [i for i in range(top[0], last + 1) if self._stale(i)]
            if not stale:
                return
            for i in stale:
                self._wrap(self.items[i])
            self._reflow(stale[0])
            self._keep_view(top)

    def _schedule_catch_up(self) -> None:
        if not self._catch_up_due and any(entry.width != self._width for entry in self.items):
            self._catch_up_due = True
            self.call_after_refresh(self._catch_up)

    def _catch_up(self) -> None:
        """Re-wrap, after a frame, up to CATCH_UP_LINES lines of the entries still at an old width: the
        nearest to the screen first (below it, then upwards from it); the view stays where it was."""
        self._catch_up_due = False
        if not self.items or not self.is_attached:
            return
        top = None if self._follow else self._top()
        anchor = len(self.items) if top is None else top[0]
        order = [*range(anchor, len(self.items)), *range(anchor - 1, -1, -1)]
        done: list[int] = []
        lines = 0
        for i in order:
            if self._stale(i):
                self._wrap(self.items[i])
                done.append(i)
                lines += len(self.items[i].strips)
                if lines >= CATCH_UP_LINES:
                    break
        if done:
            self._reflow(min(done))
            self._keep_view(top)
            self.refresh()
        self._schedule_catch_up()

    def catch_up(self) -> None:
        """Re-wrap every entry still at an old width now (for `text()`: what it returns is the pane at its
        current width)."""
        if any(entry.width != self._width for entry in self.items):
            top = None if self._follow else self._top()
            for entry in self.items:
                if entry.width != self._width:
                    self._wrap(entry)
            self._reflow()
            self._keep_view(top)
            self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._fit_width()
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the visible lines: the scroll offset, width and style are looked up once per frame, not
        once per line (each is a chain of computed properties, and a frame after a scroll draws every line).

        The entries on screen are re-wrapped here first if the pane's width changed: the screen's layout pass
        sizes the pane and draws it in the same frame, before this pane's Resize message is handled, so without
        it the first frame after a resize (a layout switch included) showed lines wrapped for the old width.
        An entry still at an old width that a scroll brought on screen is re-wrapped here too, before it shows.
        """
        self._fit_width()
        self._wrap_shown(tail=self._follow)
        scroll_x, scroll_y = self.scroll_offset
        self._frame = _Frame(scroll_x, scroll_y, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        frame = self._frame
        if frame is None:  # called outside a frame
            scroll_x, scroll_y = self.scroll_offset
            frame = _Frame(scroll_x, scroll_y, self.scrollable_content_region.width)
        scroll_x, width = frame.scroll_x, frame.width
        line = frame.scroll_y + y
        if line >= self._lines or not self.items:
            return Strip.blank(width, frame.style(self))
        key = (line, scroll_x, width, self._generation)
        cached = self._line_cache.get(key)
        if cached is not None:
            return cached
        index = bisect.bisect_right(self._starts, line) - 1
        entry = self.items[index]
        strip = entry.strips[line - self._starts[index]]
        style = frame.style(self)
        drawn = strip.crop_extend(scroll_x, scroll_x + width, style).apply_style(style)
        self._line_cache[key] = drawn
        return drawn

    # ------------------------------------------------------------------------------------ entries

    def clear(self) -> None:
        self._generation += 1
        self.items.clear()
        self.every.clear()
        self._starts.clear()
        self._lines = 0
        self._follow = True
        self._resize_virtual()
        with self._keeping_view():
            self.scroll_to(0, 0, animate=False)
        self.refresh()

    def recolour(self) -> None:
        """The theme changed: every entry is rendered again, so its colours (the bar, badges, error text: all
        looked up when an entry is rendered) are the new theme's. As after a width change: the entries on
        screen now, the others in the catch-up (or before a scroll shows them)."""
        for entry in self.every:
            entry.forget_render()
        self._generation += 1
        self._wrap_shown(tail=self._follow)
        self._schedule_catch_up()
        self.refresh()

    def _add(self, entry: Entry) -> None:
        self._wrap(entry)
        self.every.append(entry)
        if len(self.every) > MAX_ENTRIES:
            del self.every[: len(self.every) - MAX_ENTRIES]
        if not self._matches(entry):
            return
        self.items.append(entry)
        self._starts.append(self._lines)
        self._lines += len(entry.strips)
        with self._one_scrollbar_update():
            if len(self.items) > MAX_ENTRIES:
                del self.items[: len(self.items) - MAX_ENTRIES]
                self._reflow()
            self._resize_virtual()
            if self._follow:
                self._show_tail()
        self.refresh()

    def _matches(self, entry: Entry) -> bool:
        if not self.filter or entry.kind == "intro":
            return True
        return self.filter in " ".join(strip.text for strip in entry.strips).lower()

    def set_filter(self, text: str) -> int:
        """Show only the entries containing `text` (case-insensitive); "" shows everything. Returns the count."""
        self.filter = text.strip().lower()
        self.items = [e for e in self.every if self._matches(e)]
        self._follow = True  # a new filter: its matches, from their tail
        self._reflow()
        self._show_tail()
        self._schedule_catch_up()  # entries filtered out during a width change come back at their old width
        self.refresh()
        return len(self.items)

    def _entry_at(self, y: int) -> Entry | None:
        line = self.scroll_y + y
        if line >= self._lines or not self.items:
            return None
        return self.items[bisect.bisect_right(self._starts, line) - 1]

    def _toggle(self, entry: Entry) -> None:
        entry.expanded = not entry.expanded
        self._wrap(entry)
        self._reflow(self.items.index(entry))
        self._folded()
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        entry = self._entry_at(event.y)
        if entry is not None and entry.foldable:
            self._toggle(entry)

    def action_toggle_results(self) -> None:
        foldable = [e for e in self.items if e.foldable]
        expand = not any(e.expanded for e in foldable)
        for entry in foldable:
            entry.expanded = expand
            self._wrap(entry)
        self._reflow()
        self._folded()
        self.refresh()

    def _folded(self) -> None:
        """The operator folded or unfolded: the view stays. If that pushed the tail below the screen, they are
        reading what they unfolded, so the pane stops following (End follows again)."""
        if self._follow and self.scroll_y < self.max_scroll_y:
            self._follow = False

    def text(self) -> str:
        """Everything in the pane as plain text (tests, copy-paste), at its current width."""
        self.catch_up()
        return "\n".join(strip.text.rstrip() for entry in self.items for strip in entry.strips)

    # ------------------------------------------------------------------------------------ events

    def show_intro(self, title: str, description: str, hints: str) -> None:
        """What the presenter sees before pressing a key: the scenario and what to press."""
        body = Text(title, "bold")
        if description:
            body.append("\n\n" + description)
        body.append("\n\n" + hints, "italic")
        self._add(Entry("intro", lambda _e: Panel(body, border_style=palette_of(self).text(INFO)), gap=True))

    def show_note(self, text: str) -> None:
        """A dim line of the pane's own (not an event): e.g. that a replay shows the last part of a long session."""
        note = Text(text, "dim italic")
        self._add(Entry("note", lambda _e: note))

    def add_event(self, event: Event) -> None:
        """One entry (or a few) per event; events the transcript does not show are ignored."""
        match event:
            case MessageSent():
                self._show_message(event)
            case AssistantTurnEvent():
                self._show_assistant_turn(event)
            case GateDecided():
                self._show_gate_decision(event)
            case SupervisorDecided():
                self._show_supervisor_decision(event)
            case ToolResultEvent():
                self._show_tool_result(event)
            case LedgerUpdated():
                self._show_ledger_updated(event)
            case LedgerStaled():
                self._show_ledger_staled(event)
            case EnvironmentSynced():
                self._show_environment_synced(event)
            case ModelRetry():
                self._show_model_retry(event)
            case ModelFailed():
                self._show_model_error(event)
            case SessionEnded():
                self._show_session_ended(event)
            case _:
                pass

    def _show_message(self, e: MessageSent) -> None:
        if e.role == "user":
            body = Text.assemble(("Customer: ", "bold"), e.text.replace("###STOP###", "(ends the conversation)"))
            self._add(Entry("user", lambda _e: body, gap=True))
        else:
            text = e.text
            self._add(Entry("agent", lambda _e: Markdown(f"**Agent:** {text}"), gap=True))

    def _show_assistant_turn(self, e: AssistantTurnEvent) -> None:
        if e.text:
            prefix = "**Agent:** " if not e.tool_calls else "**Agent** *(with tool calls)*: "
            text = prefix + e.text
            self._add(Entry("agent", lambda _e: Markdown(text), gap=True))
        for call in e.tool_calls:
            shown = format_call(call.name, call.arguments) if call.parse_error is None else (
                f"{call.name}({call.raw_arguments})")
            self._add(Entry("call", _fixed(Text.assemble(("→ ", "bold"), (shown, "bold")))))

    def _show_gate_decision(self, e: GateDecided) -> None:
        def render(_expanded: bool) -> RenderableType:
            text = Text.assemble(("gate ", "dim"), (f" {e.verdict} ", palette_of(self).badge(e.verdict)), " ",
                                 (e.call.name, "bold"))
            if e.repeated:
                text.append("  (repeated call)", "dim")
            if e.escalated:
                text.append("  (escalated after repeated REVISE)")
            text.append(f"\n  {verdict_summary(e)}", "dim")
            for r in e.results:
                if r.status not in ("pass", "disabled"):
                    text.append(f"\n  {r.predicate_id}: ", "bold")
                    text.append(r.reason)
            return text

        self._add(Entry(f"gate-{e.verdict}", render))

    def _show_supervisor_decision(self, e: SupervisorDecided) -> None:
        text = Text.assemble(("operator ", "bold"), decision_summary(e))
        if e.edited_arguments is not None:
            text.append(f" → {json.dumps(e.edited_arguments, sort_keys=True)}")
        self._add(Entry("override", lambda _e: text))

    def _show_tool_result(self, e: ToolResultEvent) -> None:
        if e.call.requestor == "user":
            name, args = e.call.name, e.call.arguments
            self._add(Entry("user", _fixed(Text.assemble(("📱 customer's phone: ", "bold"),
                                                         (format_call(name, args), "bold")))))
        if e.outcome == "ok":
            ran = " executed" if e.kind == "write" else ""
            by = f" ({read_by_gate(e)})" if read_by_gate(e) else ""
            summary = f"← {e.call.name}{ran}{by}: {shorten(e.content, 70)}"
            body = _pretty(e.content)

            def render(expanded: bool) -> RenderableType:
                head = Text(("▼ " if expanded else "▶ ") + summary, "dim")
                if expanded:
                    head.append("\n" + body, "")
                return head

            self._add(Entry("result", render, foldable=True))
        elif e.outcome in ("rejected", "vetoed", "undecided"):
            note = f"✗ {e.call.name} {outcome_summary(e)}"
            self._add(Entry("rejected", lambda _e: Text(note, palette_of(self).text("error", "italic"))))
        else:  # a long error is one line that unfolds (click, or x) to the whole message, never cut for good
            self._add(_with_detail("error", f"✗ {shorten(e.content, 300)}", f"✗ {e.content}",
                                   lambda: palette_of(self).text("error")))

    def _show_ledger_updated(self, e: LedgerUpdated) -> None:
        parts = [f"+{p}" for p in e.added] + [f"~{p}" for p in e.changed] + [f"={p}" for p in e.refreshed]
        note = "ledger " + " ".join(parts)
        self._add(Entry("ledger-note", lambda _e: Text(note, "dim")))

    def _show_ledger_staled(self, e: LedgerStaled) -> None:
        fields = getattr(e, "fields", {})
        note = "ledger stale: " + ", ".join(f"{p} ({', '.join(fields[p])})" if p in fields else p for p in e.paths)
        self._add(Entry("ledger-note", lambda _e: Text(note, "dim")))

    def _show_environment_synced(self, e: EnvironmentSynced) -> None:
        note = "sync (line ↔ phone): " + "; ".join(e.changes)
        self._add(Entry("ledger-note", lambda _e: Text(note, "dim")))

    def _show_model_retry(self, e: ModelRetry) -> None:
        note = f"model {e.kind}: retry {e.attempt} in {e.delay:.1f}s — {e.message}"
        self._add(_with_detail("warning", note, getattr(e, "detail", ""), lambda: palette_of(self).text("warning")))

    def _show_model_error(self, e: ModelFailed) -> None:
        note = f"model error ({e.kind}, {e.attempts} attempt(s)): {e.message}"
        self._add(_with_detail("error", note, getattr(e, "detail", ""), lambda: palette_of(self).text("error")))

    def _show_session_ended(self, e: SessionEnded) -> None:
        text = f"— session ended: {words(e.reason)} after {e.steps} steps"
        if e.detail:
            text += f" ({e.detail})"
        self._add(Entry("ended", lambda _e: Text(text, "bold"), gap=True))


def _with_detail(kind: str, note: str, detail: str, style: Callable[[], str]) -> Entry:
    """A one-line model failure; the server's full answer (when it sent more) unfolds on click or `x`.
    `style` is asked each time the entry is rendered: a theme switch renders it again in the new colours."""
    if not detail or detail == note:
        return Entry(kind, lambda _e: Text(note, style()))

    def render(expanded: bool) -> RenderableType:
        text = Text(("▼ " if expanded else "▶ ") + note, style())
        if expanded:
            text.append("\n" + detail, "dim")
        return text

    return Entry(kind, render, foldable=True)


def _thumb(bar: ScrollBar) -> list[Segment] | None:
    """What a vertical scrollbar draws now, computed by its own code (`ScrollBar.render` gives the numbers
    and colours, `ScrollBarRender.render_bar` the cells, as `ScrollBarRender.__rich_console__` does).
    None when it draws something else: then it is always repainted."""
    drawn = bar.render()
    if not isinstance(drawn, ScrollBarRender) or not isinstance(drawn.style, Style):
        return None
    cells = drawn.render_bar(size=bar.size.height, virtual_size=drawn.virtual_size, window_size=drawn.window_size,
                             position=drawn.position, thickness=bar.size.width, vertical=drawn.vertical,
                             back_color=drawn.style.bgcolor or Color.parse("#555555"),
                             bar_color=drawn.style.color or Color.parse("bright_magenta"))
    return list(cells.segments)


def _fixed(renderable: RenderableType) -> Callable[[bool], RenderableType]:
    """A render function for an entry that looks the same folded or not."""
    return lambda _expanded: renderable


def _pretty(content: str) -> str:
    try:
        return json.dumps(json.loads(content), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return content
