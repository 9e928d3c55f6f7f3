"""The transcript's scrollbar is repainted exactly when what it draws changes (an append's drawing
work is a figure in benchmarks/console.py).

With thousands of lines one more entry moves the thumb by less than the 1/8 cell a scrollbar can show;
Textual repainted the bar anyway on every append and on every screen layout pass, and that repaint was a
large part of an append's drawing work. A bar that does move must still be repainted: both are checked
against the bar's own drawing code (`ScrollBar.render`), never against a guess of where the thumb is.
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.scrollbar import ScrollBar

from console.tui.widgets.transcript import TranscriptPane
from core.events import MessageSent


class OnePane(App[None]):
    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")


def drawn_cells(bar: ScrollBar) -> list[Segment]:
    """The cells the bar draws right now, through Rich, as the screen would get them."""
    lines = bar.app.console.render_lines(bar.render(), bar.app.console.options.update(
        width=bar.size.width, height=bar.size.height), pad=False)
    return [segment for line in lines for segment in line]


def spy_refreshes(bar: ScrollBar) -> list[int]:
    calls: list[int] = []
    original = bar.refresh

    def refresh(*regions: Any, **kwargs: Any) -> ScrollBar:
        calls.append(1)
        return original(*regions, **kwargs)

    bar.refresh = refresh  # type: ignore[method-assign]
    return calls


async def test_the_scrollbar_is_repainted_only_when_its_thumb_moves() -> None:
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(TranscriptPane)
        bar = pane.vertical_scrollbar
        calls = spy_refreshes(bar)
        moved = unmoved = 0
        for n in range(300):  # from a short transcript (the thumb moves on each entry) to a long one (it does not)
            shown = bar.display and bar.size.height > 0  # (the bar's first appearance is a repaint of its own)
            before = drawn_cells(bar)
            calls.clear()
            pane.add_event(MessageSent(role="user", text=f"message {n}"))
            if shown:
                changed = drawn_cells(bar) != before
                moved, unmoved = moved + changed, unmoved + (not changed)
                assert bool(calls) == changed, f"entry {n}: thumb changed={changed}, repainted={bool(calls)}"
            await pilot.pause(0)  # every message the entry queued handled and the screen updated (no idle wait)
        assert moved > 10 and unmoved > 100  # both cases were exercised
        # A screen layout pass (any widget's layout refresh) does not repaint an unchanged bar either.
        await pilot.pause()
        calls.clear()
        app.screen.refresh(layout=True)
        await pilot.pause()
        assert not calls
