"""Resizing across the 110-column breakpoint draws the new layout in its first frame.

Textual lays the screen out and draws it inside its own Resize handler; the panes used to switch only when
their own Resize message came after that, so the first frame at the new size showed the old layout squeezed
(and the transcript wrapped for its old width, and the footer without/with "Next pane"). What counts here is
the order of frames, not their timing: every frame handed to the display is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.widgets._footer import FooterKey

from console.tui.app import OperatorConsole
from console.tui.widgets.footer import ConsoleFooter
from tests.support.pilot import wait_for


def footer_keys(footer: ConsoleFooter) -> list[tuple[str, str, bool, bool, str]]:
    return [(k.key, k.description, k.disabled, k.compact, " ".join(sorted(k.classes)))
            for k in footer.query(FooterKey)]


def rebuilt(footer: ConsoleFooter, before: set[FooterKey]) -> bool:
    """The footer has keys again, none of them one it had before."""
    now = set(footer.query(FooterKey))
    return bool(now) and not before & now


def frame_facts(app: OperatorConsole) -> dict[str, Any]:
    """What the frame being displayed was drawn from: the screen's width, the panes on it with their widths,
    whether the transcript's lines are wrapped for its width, and whether the footer offers "Next pane"."""
    screen = app.main
    shown = screen._compositor.visible_widgets
    transcript = app.transcript
    return {
        "width": screen._compositor.size.width,
        "panes": {p.id: shown[p][0].width for p in (app.transcript, app.ledger_pane, app.gate_pane) if p in shown},
        "wrapped": transcript._width == transcript._content_width(),
        "next_pane_key": any(isinstance(w, FooterKey) and w.action == "cycle_pane" for w in shown),
    }


async def test_the_first_frame_after_crossing_the_breakpoint_shows_the_new_layout(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        await pilot.pause()
        frames: list[dict[str, Any]] = []
        display = app._display

        def recording(screen: Any, renderable: Any) -> None:
            if screen is app.main and renderable is not None:
                frames.append(frame_facts(app))
            display(screen, renderable)

        app._display = recording  # type: ignore[method-assign]
        footer = app.main.query_one(ConsoleFooter)
        for width, stacked in ((100, True), (120, False)):
            frames.clear()
            await pilot.resize_terminal(width, 35)
            await pilot.pause()
            first = next(frame for frame in frames if frame["width"] == width)
            if stacked:
                assert first["panes"] == {"transcript": 100}, first
            else:
                assert set(first["panes"]) == {"transcript", "ledger", "gate"}, first
                assert sum(first["panes"].values()) == 120, first
            assert first["wrapped"] and first["next_pane_key"] == stacked, first
            # the footer updated in place shows exactly the keys a full rebuild would
            patched = footer_keys(footer)
            footer._shown = None  # forget what it shows: Textual's own path rebuilds it from scratch
            app.main.refresh_bindings()
            await wait_for(pilot, partial(rebuilt, footer, set(footer.query(FooterKey))))
            assert footer_keys(footer) == patched

