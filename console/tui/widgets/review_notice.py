"""The line that says a write waits for the operator, and how to take it: F3, or a click on the line.

The session asks for a review whenever its supervision mode says so, and that moment is not the operator's:
they may be typing the customer's next sentence, a filter, a form. A dialog that opened then would take the
keys meant for the box (a letter of the sentence became a decision, and the text was lost). So the review is
announced here instead, keys go on to where they were going, and the review dialog opens only when the
operator asks for it by a key the footer names (F3, which no text box takes) or by a click on this line.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import Static

from console.tui.theme import palette_of
from core.strict_json import inert

TAKE_KEY = "f3"


class ReviewNotice(Static):
    DEFAULT_CSS = "ReviewNotice { height: auto; padding: 0 1; display: none; }"

    class Taken(Message):
        """The operator clicked the notice: open the review."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[str, str | None] | None = None

    def on_mount(self) -> None:
        # The text carries the theme's colours: on a switch it is built again.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())

    def announce(self, tool: str, verdict: str | None) -> None:
        self._shown = (tool, verdict)
        self._draw()
        self.display = True

    def _draw(self) -> None:
        if self._shown is None:
            return
        tool, verdict = self._shown
        colours = palette_of(self)
        text = Text("⚑ A write waits for your review: ", colours.text("warning", "bold"))
        text.append(inert(tool), "bold")
        if verdict is not None:
            text.append("  gate ")
            text.append(f" {verdict} ", colours.badge(verdict))
        text.append(f"   Press {TAKE_KEY.upper()} (or click here) to review it; until then your keys stay "
                    "where you type.")
        self.update(text)

    def clear(self) -> None:
        self._shown = None
        self.display = False

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Taken())
