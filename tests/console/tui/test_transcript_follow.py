"""The transcript follows its tail until the operator scrolls away, and only the operator's act changes that.

The pane getting shorter (the compare view's "What differs" strip growing under it), a terminal resize, or a
width change that re-wraps the entries moves the tail below the old scroll position without anyone scrolling:
the pane keeps showing the tail through all of them. Scrolled up (a key, the mouse wheel, the scrollbar), the
view stays where the operator put it while the geometry changes and entries arrive; End follows the tail again.
Every check reads the screen as the terminal shows it, and waits for conditions, never for time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Static

from console.tui.widgets.transcript import TranscriptPane
from core.events import MessageSent, ModelFailed
from tests.support.pilot import wait_for
from tests.support.screen import region_lines

WIDTH, HEIGHT = 60, 20
LONG = "a customer message long enough to wrap over more lines when the pane is narrower " * 2


class PaneOverStrip(App[None]):
    """A transcript above a strip that grows, as the compare view's transcripts sit above "What differs"."""

    CSS = "TranscriptPane { height: 1fr; } #strip { height: 2; }"

    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")
        yield Static("", id="strip")


class Counter:
    """The entries as they arrive: each one says its number; some wrap over several lines, never the newest of a
    batch (60 to start, then 2 at a time: an odd number), so the last line on screen says which entry it is."""

    def __init__(self, pane: TranscriptPane) -> None:
        self.pane, self.n = pane, 0

    def add(self, count: int = 1) -> None:
        for _ in range(count):
            text = f"message {self.n}" + (f": {LONG}" if self.n % 4 == 2 else "")
            self.pane.add_event(MessageSent(role="user", text=text))
            self.n += 1


def shown(app: Any, pane: TranscriptPane) -> list[str]:
    """The pane's lines on screen, without its scrollbar's column (its thumb moves as the content grows)."""
    width = pane.scrollable_content_region.width
    return [line[:width].rstrip() for line in region_lines(app, pane)]


def last_shown(app: Any, pane: TranscriptPane) -> str:
    return next(line for line in reversed(shown(app, pane)) if line.strip())


async def settle(pilot: Any, pane: TranscriptPane) -> None:
    """Until the app has handled what is queued (a new size laid out, a key) and no scroll is still moving."""
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


async def grow_strip(pilot: Any, app: App[None], rows: int) -> None:
    strip = app.query_one("#strip", Static)
    strip.styles.height = rows
    await wait_for(pilot, lambda: strip.size.height == rows)


async def resize(pilot: Any, width: int, height: int) -> None:
    await pilot.resize_terminal(width, height)
    pane = pilot.app.query_one(TranscriptPane)
    await wait_for(pilot, lambda: pilot.app.size == (width, height) and pane.outer_size.width == width
                   and pane.region.bottom < height)


def geometry_changes(app: App[None]) -> list[tuple[str, Callable[[Any], Awaitable[None]]]]:
    """What moves the tail without the operator: the pane shrinking, the terminal narrower, wider, shorter."""
    return [
        ("strip 4 rows", lambda pilot: grow_strip(pilot, app, 4)),
        ("strip 7 rows", lambda pilot: grow_strip(pilot, app, 7)),
        ("45 columns", lambda pilot: resize(pilot, 45, HEIGHT)),
        ("90 columns", lambda pilot: resize(pilot, 90, HEIGHT)),
        ("16 rows", lambda pilot: resize(pilot, 90, 16)),
        ("strip 3 rows", lambda pilot: grow_strip(pilot, app, 3)),
        ("30 rows", lambda pilot: resize(pilot, 90, 30)),
    ]


async def test_following_the_tail_survives_a_shorter_pane_a_resize_and_a_rewrap() -> None:
    app = PaneOverStrip()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        entries = Counter(pane)
        entries.add(60)
        await settle(pilot, pane)
        assert last_shown(app, pane).startswith("▌ Customer: message 59"), shown(app, pane)
        for change, make in geometry_changes(app):
            await make(pilot)
            await settle(pilot, pane)
            assert pane.scroll_y == pane.max_scroll_y, (change, "before the next entry")
            assert last_shown(app, pane).startswith(f"▌ Customer: message {entries.n - 1}"), (change, shown(app, pane))
            entries.add(2)  # entries arrive after the change
            await settle(pilot, pane)
            assert pane.scroll_y == pane.max_scroll_y, change
            assert last_shown(app, pane).startswith(f"▌ Customer: message {entries.n - 1}"), (change, shown(app, pane))


async def drag_scrollbar_up(pilot: Any, pane: TranscriptPane) -> None:
    """Grab the scrollbar's thumb (at the bottom: the tail) and drag it up by five rows."""
    bar = pane.vertical_scrollbar
    bottom = bar.size.height - 1
    await pilot.mouse_down(bar, offset=(0, bottom))
    await pilot.hover(bar, offset=(0, bottom - 5))
    await pilot.mouse_up(bar, offset=(0, bottom - 5))


async def wheel_up(pilot: Any, pane: TranscriptPane) -> None:
    # Pilot has no wheel of its own: its mouse-event poster, as `click` and `hover` use it.
    await pilot._post_mouse_events([events.MouseScrollUp], pane, offset=(5, 5))


SCROLL_UP: dict[str, Callable[[Any, TranscriptPane], Awaitable[None]]] = {
    "up": lambda pilot, _pane: pilot.press("up"),
    "pageup": lambda pilot, _pane: pilot.press("pageup"),
    "home": lambda pilot, _pane: pilot.press("home"),
    "wheel": wheel_up,
    "scrollbar": drag_scrollbar_up,
}


@pytest.mark.parametrize("act", list(SCROLL_UP))
async def test_scrolled_up_by_the_operator_the_view_stays_put_until_end(act: str) -> None:
    app = PaneOverStrip()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        entries = Counter(pane)
        entries.add(60)
        await settle(pilot, pane)
        pane.focus()
        await SCROLL_UP[act](pilot, pane)
        await settle(pilot, pane)
        assert pane.scroll_y < pane.max_scroll_y, act
        top, view = pane.scroll_y, shown(app, pane)
        for change, make in geometry_changes(app)[:2]:  # the pane shorter: nothing above moves
            entries.add(2)
            await make(pilot)
            entries.add(2)
            await settle(pilot, pane)
            assert pane.scroll_y == top, (act, change)
            assert shown(app, pane) == view[:len(shown(app, pane))], (act, change)
        await pilot.press("end")  # following again: the tail, and it stays there
        await settle(pilot, pane)
        assert last_shown(app, pane).startswith(f"▌ Customer: message {entries.n - 1}"), shown(app, pane)
        for change, make in geometry_changes(app)[2:]:
            await make(pilot)
            entries.add(2)
            await settle(pilot, pane)
            assert pane.scroll_y == pane.max_scroll_y, (act, change)
            assert last_shown(app, pane).startswith(f"▌ Customer: message {entries.n - 1}"), (act, change)


async def test_scrolled_up_the_view_keeps_its_top_entry_across_a_rewrap_while_entries_arrive() -> None:
    app = PaneOverStrip()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        entries = Counter(pane)
        entries.add(60)
        await settle(pilot, pane)
        pane.focus()
        await pilot.press("pageup", "pageup")
        await settle(pilot, pane)
        while not shown(app, pane)[0].startswith("▌ Customer: message"):  # an entry's first line on top
            await pilot.press("up")
            await settle(pilot, pane)
        number = shown(app, pane)[0].split("message ", 1)[1].split(":")[0]
        for change, make in geometry_changes(app)[2:]:
            await make(pilot)
            entries.add(2)
            await settle(pilot, pane)
            top = next(line for line in shown(app, pane) if line.strip())
            assert top.startswith(f"▌ Customer: message {number}"), (change, shown(app, pane))


async def test_unfolding_the_last_entry_at_the_tail_keeps_it_in_view_until_end() -> None:
    """Unfolding is the operator's act: what they unfolded stays where they clicked it, the entries arriving
    after it do not push it away; End follows the tail again."""
    app = PaneOverStrip()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        entries = Counter(pane)
        entries.add(60)
        detail = "\n".join(f"server line {n}" for n in range(40))
        pane.add_event(ModelFailed(kind="http", message="down", detail=detail))
        await settle(pilot, pane)
        row = len(shown(app, pane)) - 1
        assert "▶ model error (http, 1 attempt(s)): down" in shown(app, pane)[row]
        await pilot.click(pane, offset=(4, row))  # unfold it: its 40 lines go below the screen
        await settle(pilot, pane)
        view = shown(app, pane)
        assert view[row].startswith("▌ ▼ model error") and view[row + 1:] == [f"▌ server line {n}" for n in
                                                                               range(len(view) - row - 1)]
        entries.add(2)
        await grow_strip(pilot, app, 4)
        await settle(pilot, pane)
        assert shown(app, pane) == view[:len(shown(app, pane))]  # what they unfolded stays in view
        await pilot.press("end")
        await settle(pilot, pane)
        assert last_shown(app, pane).startswith(f"▌ Customer: message {entries.n - 1}"), shown(app, pane)
