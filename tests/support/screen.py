"""The text a Textual app shows, as the terminal would: the whole screen, or the part one widget covers.

For tests that must say "this is on screen, whole": a value cut by a pane's edge or an ellipsis is visible here,
where a widget's own data would still hold it in full."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console


def screen_lines(app: Any) -> list[str]:
    """Every line of the screen in front, as plain text (the compositor's full frame)."""
    width, height = app.size
    console = Console(file=io.StringIO(), width=width, height=height, record=True, color_system=None,
                      legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()[:height]


def region_lines(app: Any, widget: Any) -> list[str]:
    """The lines of the screen that `widget` covers, cropped to its columns."""
    region = widget.region
    lines = screen_lines(app)
    return [line[region.x:region.x + region.width].ljust(region.width)
            for line in lines[region.y:region.y + region.height]]


def decision_keys_shown(screen: str) -> bool:
    """Whether a screen's text (a terminal's capture) shows the review dialog's footer with its decision keys,
    which it lists only while the cursor is on the buttons: a row starting with what `a` does for this verdict.
    The footer's keys wrap into rows (two at 80 columns) and `a` starts the first, which is not the screen's last
    line then."""
    return any(line.lstrip().startswith(("a Approve (run it)", "a Accept ")) for line in screen.splitlines())
