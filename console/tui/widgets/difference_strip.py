"""The difference strip of a compare run: what the baseline did that LedgerAgent's gate refused, as it happens,
and at the end how the two databases differ from the expected end state.

It shows `ComparePair.difference_lines()` (computed from the two traces; the export writes the same lines), each
line whole: wrapped at its words under its bullet, never cut. When the lines are more than the strip's rows, the
strip scrolls: it takes the focus (Tab, a click, or the screen's `d`, which also gives it the whole screen) and
then ↑ ↓ PgUp PgDn Home End move it. Stakeholder words come first in every line, rule ids second; each bullet is
coloured by its role through the theme's verdict colours.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.tui.theme import palette_of

ROLE_STYLE = {"baseline": "error", "ledger": "success", "end": "warning"}
HINT = "d: full view"
HINT_OPEN = "d / esc: back"
SCROLL_HINT = " · ↑↓ scroll"  # added while some lines are out of view


class DifferenceStrip(VerticalScroll, can_focus=True):
    """Set with `show(lines)`; `lines` is kept (tests read what the strip says)."""

    BORDER_TITLE = "What differs"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.lines: list[tuple[str, str]] = []
        self.body = Static("", id="difference-lines")
        self.full = False
        self.border_subtitle = HINT

    def compose(self) -> ComposeResult:
        yield self.body

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.recolour())  # the bullets' colours

    def show(self, lines: Sequence[tuple[str, str]]) -> None:
        self.lines = list(lines)
        palette = palette_of(self)
        grid = Table.grid(expand=True)
        grid.add_column(width=2, no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")  # wraps at words; only a word wider than the strip folds
        for role, line in self.lines:
            role_style = ROLE_STYLE.get(role)
            grid.add_row(Text("●", palette.text(role_style, "bold") if role_style else ""), Text(line))
        self.body.update(grid)
        self.call_after_refresh(self._hint)

    def opened(self, full: bool) -> None:
        """The screen gave the strip all its room (`d`), or took it back."""
        self.full = full
        self._hint()
        self.call_after_refresh(self._hint)

    def on_resize(self) -> None:
        self._hint()

    def _hint(self) -> None:
        """The subtitle names the keys that show more: `d`, and the arrows while some lines are out of view."""
        self.border_subtitle = (HINT_OPEN if self.full else HINT) + (SCROLL_HINT if self.max_scroll_y > 0 else "")

    def recolour(self) -> None:
        self.show(self.lines)
