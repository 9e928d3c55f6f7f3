"""`/` filters what is in front (transcript, ledger, gate table, audit, results), as in k9s and lazygit.

A one-line Input, hidden until `/`; every keystroke applies the filter; Enter or escape closes the bar
(escape also clears the filter). The screen decides what the text filters.

It is a compact Input (no border, one row) in the screen's flow, under what it filters: the focused Input's
tall border in one row showed only its top edge, and docked at the bottom it lay under the footer, so the query
typed was invisible. Closing it gives the keys back to what had them before `/`: a hidden
box that kept the focus took the keys meant for the screen (End in replay went into it, not to the slider).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input


class FilterBar(Input):
    DEFAULT_CSS = ("FilterBar { display: none; } FilterBar.-open { display: block; } "
                   "FilterBar.-textual-compact { padding: 0 1; background: $boost; }")
    BINDINGS = [Binding("escape", "cancel", "Clear filter")]

    @dataclass
    class Applied(Message):
        text: str

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("placeholder", "filter: type to narrow what is shown; Enter keeps it, escape clears it")
        kwargs.setdefault("compact", True)
        super().__init__(**kwargs)
        self._before: Widget | None = None

    def open(self) -> None:
        focused = self.screen.focused
        self._before = focused if focused is not self else self._before
        self.add_class("-open")
        self.focus()

    def close(self) -> None:
        self.remove_class("-open")
        before, self._before = self._before, None
        if self.has_focus:
            if before is not None and before.is_attached and before.display:
                self.screen.set_focus(before)
            else:
                self.screen.set_focus(None)

    def action_cancel(self) -> None:
        self.value = ""
        self.post_message(self.Applied(""))
        self.close()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Applied(event.value))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.close()
