"""The frame every console dialog uses, so that its inputs and buttons are on screen at any terminal size.

A dialog is one scrolling column: what it is about (title, class `dialog-top`) is docked on top, what the
operator acts with (the box they type in, the buttons, the result of a dry-run or an error: a `DialogActions`)
is docked at the bottom, and only the middle (the details, a long form) scrolls. With `height: auto` and
`max-height: 100%` the dialog is as tall as its content while that fits, and never taller than the terminal:
in a small terminal the middle gives up the rows, never the buttons.

The frame itself never takes the focus: Tab goes from field to field in the order they are drawn (the middle
top to bottom, then the actions), and a key typed after Tab lands in the field that shows the cursor (a
focusable container was an invisible Tab stop that swallowed what was typed next). A field that gets the
focus is scrolled into the middle's visible part, never left under the docked actions.
"""

from __future__ import annotations

import sys

from textual import events
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget


class DialogActions(Vertical):
    """The bottom of a dialog: always on screen, and last in the Tab order.

    Textual orders Tab by where widgets are in their parent's unscrolled content, and a docked widget's place
    is its place in the window, which says nothing about where it is drawn relative to the scrolled fields:
    the buttons came between two fields. Here the bottom sorts after everything it is drawn below."""

    DEFAULT_CSS = "DialogActions { dock: bottom; height: auto; }"

    @property
    def _focus_sort_key(self) -> tuple[int, int]:
        return sys.maxsize, 0


class DialogFrame(VerticalScroll, can_focus=False):
    DEFAULT_CSS = """
    DialogFrame { height: auto; max-height: 100%; }
    DialogFrame > .dialog-top { dock: top; height: auto; }
    """

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Bring a focused field of the middle into view above the docked actions. (Textual's own scroll on
        focus misses them for a field inside a row of the middle: it was left under the buttons.)"""
        if not self._docked(event.widget):
            self.call_after_refresh(self.scroll_to_widget, event.widget, animate=False)

    def _docked(self, widget: Widget) -> bool:
        node: Widget | None = widget
        while node is not None and node is not self:
            if node.styles.dock != "none":
                return True
            parent = node.parent
            node = parent if isinstance(parent, Widget) else None
        return False
