"""A width change re-wraps the transcript lazily, and the pane still shows and counts exactly what it holds.

A layout switch (its figure: < 50 ms) used to re-wrap every entry before its first frame, a cost that
grew with the transcript. Now only the entries on screen are re-wrapped at once; the others are re-wrapped
after that frame, or before they are drawn when a scroll brings them on screen first. Every check compares
with a pane that was built at the new width from the start, never with a guess; frames are told apart by the
order they are handed to the display, never by their timing.
"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from console.tui.widgets.transcript import Entry, TranscriptPane
from core.events import MessageSent
from tests.support.pilot import wait_for

HEIGHT = 20
ENTRIES = 400  # about 1,500 lines at 60 columns: several catch-up chunks


class OnePane(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")


def fill(pane: TranscriptPane) -> None:
    for n in range(ENTRIES):
        pane.add_event(MessageSent(role="user", text=f"message {n}: " + "word " * (n % 23 + 2)))


async def reference(width: int) -> dict[str, Any]:
    """What a pane built at `width` from the start shows: its text, line count, and first screen of lines."""
    app = OnePane()
    async with app.run_test(size=(width, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        fill(pane)
        await pilot.pause()
        lines = pane.virtual_size.height
        bar = pane.vertical_scrollbar.window_virtual_size
        pane.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        top = [pane.render_line(y).text for y in range(HEIGHT)]
        return {"text": pane.text(), "lines": lines, "bar": bar, "top": top}


def spy_wraps(pane: TranscriptPane) -> list[Entry]:
    """The entries the pane (re-)wraps, in order."""
    wrapped: list[Entry] = []
    original = pane._render_entry

    def render_entry(entry: Entry, width: int) -> Any:
        wrapped.append(entry)
        return original(entry, width)

    pane._render_entry = render_entry  # type: ignore[method-assign]
    return wrapped


def on_frames(app: App[None], seen: Any) -> None:
    """Call `seen(width)` after each frame handed to the display, with the screen's width in that frame."""
    display = app._display

    def recording(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None:
            seen(screen._compositor.size.width)

    app._display = recording  # type: ignore[method-assign]


async def test_a_width_change_rewraps_the_screen_before_its_frame_and_the_rest_after() -> None:
    wanted = await reference(90)
    app = OnePane()
    async with app.run_test(size=(60, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        fill(pane)
        await pilot.pause()
        wrapped = spy_wraps(pane)
        at_first_frame: list[int] = []
        on_frames(app, lambda width: width == 90 and not at_first_frame and at_first_frame.append(len(wrapped)))
        await pilot.resize_terminal(90, HEIGHT)
        await wait_for(pilot, lambda: bool(at_first_frame))
        assert 0 < at_first_frame[0] <= HEIGHT, at_first_frame  # the entries on screen, not all 400
        await wait_for(pilot, lambda: len({id(e) for e in wrapped}) == ENTRIES)  # the catch-up, after that frame
        await pilot.pause()
        assert pane.virtual_size.height == wanted["lines"]
        assert pane.vertical_scrollbar.window_virtual_size == wanted["bar"]
        assert pane.scroll_y == pane.max_scroll_y  # still following the tail
        assert pane.text() == wanted["text"]
        assert len(wrapped) == ENTRIES  # each entry re-wrapped once


async def test_an_entry_scrolled_into_view_after_a_width_change_shows_wrapped_at_the_new_width() -> None:
    wanted = await reference(90)
    app = OnePane()
    async with app.run_test(size=(60, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        fill(pane)
        await pilot.pause()
        wrapped = spy_wraps(pane)
        first = pane.items[0]
        drawn: dict[int, str] = {}
        original_line = pane.render_line

        def render_line(y: int) -> Any:
            strip = original_line(y)
            drawn[y] = strip.text
            return strip

        pane.render_line = render_line  # type: ignore[method-assign]
        frames: list[dict[str, Any]] = []

        def seen(width: int) -> None:
            if width != 90:
                return
            frames.append({"first_wrapped": first in wrapped, "drawn": dict(drawn)})
            if len(frames) == 1:  # the operator scrolls to the top as soon as the new layout shows
                pane.scroll_home(animate=False, immediate=True)
            drawn.clear()

        on_frames(app, seen)
        await pilot.resize_terminal(90, HEIGHT)
        await wait_for(pilot, lambda: len(frames) >= 2)
        assert not frames[0]["first_wrapped"]  # the top of the transcript was off screen: not re-wrapped yet
        assert [frames[1]["drawn"][y] for y in range(HEIGHT)] == wanted["top"]


async def test_scrolled_up_the_entry_on_top_stays_on_top_across_a_width_change() -> None:
    app = OnePane()
    async with app.run_test(size=(60, HEIGHT)) as pilot:
        pane = app.query_one(TranscriptPane)
        fill(pane)
        await pilot.pause()
        index = ENTRIES // 2
        pane.scroll_to(y=pane._starts[index] + 1, animate=False)  # its first line (after the blank gap line)
        pane.add_event(MessageSent(role="user", text="one more, while the operator reads above"))
        await pilot.pause()
        top = pane.render_line(0).text
        assert top.startswith(f"▌ Customer: message {index}:"), top
        for width in (90, 45, 60):
            wrapped = spy_wraps(pane)
            await pilot.resize_terminal(width, HEIGHT)
            await wait_for(pilot, lambda wrapped=wrapped: len({id(e) for e in wrapped}) == ENTRIES + 1)  # all of them
            await pilot.pause()
            assert pane.render_line(0).text.startswith(f"▌ Customer: message {index}:"), (width, pane.render_line(0))
