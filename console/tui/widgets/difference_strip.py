"""The difference strip of a compare run: what the baseline did that LedgerAgent's gate refused, as it happens,
and at the end how the two databases differ from the expected end state.

It shows `console.runtime.compare_run.strip_lines` (computed from the two traces), one line each, coloured by role
through the theme's verdict colours; stakeholder words come first in every line, rule ids second.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from console.tui.theme import palette_of

ROLE_STYLE = {"baseline": "error", "ledger": "success", "end": "warning"}


class DifferenceStrip(Static):
    """Set with `show(lines)`; `lines` is kept (tests and the export read what the strip says)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.lines: list[tuple[str, str]] = []
        self.border_title = "What differs"

    def show(self, lines: Sequence[tuple[str, str]]) -> None:
        self.lines = list(lines)
        palette = palette_of(self)
        text = Text()
        for number, (role, line) in enumerate(self.lines):
            role_style = ROLE_STYLE.get(role)
            if number:
                text.append("\n")
            text.append("● ", palette.text(role_style, "bold") if role_style else "")
            text.append(line)
        self.update(text)

    def recolour(self) -> None:
        self.show(self.lines)
