"""`/` filters what is in front (transcript, ledger, gate table, audit, results), as in k9s and lazygit.

A one-line Input, hidden until `/`; every keystroke applies the filter; Enter or escape closes the bar
(escape also clears the filter). The screen decides what the text filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    DEFAULT_CSS = "FilterBar { display: none; dock: bottom; height: 1; border: none; padding: 0 1; } " \
                  "FilterBar.-open { display: block; }"
    BINDINGS = [Binding("escape", "cancel", "Clear filter")]

    @dataclass
    class Applied(Message):
        text: str

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("placeholder", "filter: type to narrow what is shown; Enter keeps it, escape clears it")
        super().__init__(**kwargs)

    def open(self) -> None:
        self.add_class("-open")
        self.focus()

    def close(self) -> None:
        self.remove_class("-open")

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
