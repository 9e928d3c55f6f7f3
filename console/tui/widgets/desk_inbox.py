"""The approval inbox: every call (or step) waiting for a human, oldest first.

Rows are keyed by item id: a new item is appended (the newest is always last), a decided one removed, and
the waited / claimed-by cells are updated in place as the clock ticks, so the cursor stays on its item. A row
table (`RowTable`): only a row whose cells changed is rendered again, and no change lays the screen out.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from console.runtime.desk.view import DeskSnapshot, ItemKind, ItemView
from console.runtime.facts import refusal_words
from console.tui.theme import Palette, palette_of
from console.tui.widgets.desk_format import verdict_text, waited_text
from console.tui.widgets.desk_grid import RowTable

COLUMNS = (("waited", "waited"), ("verdict", "verdict"), ("session", "session"), ("tool", "tool"),
           ("claimed", "claimed by"), ("rules", "failing rules"))


def claimed_text(item: ItemView, operator: str) -> Text:
    if item.claimed_by is None:
        return Text("—", "dim")
    if item.claimed_by == operator:
        return Text("you", "bold")
    return Text(item.claimed_by, "bold italic")


class InboxTable(RowTable):
    def __init__(self, operator: str, **kwargs: Any) -> None:
        super().__init__(COLUMNS, **kwargs)
        self.operator = operator

    def on_mount(self) -> None:
        self.border_title = "Inbox"

    def cells(self, item: ItemView, snapshot: DeskSnapshot, colours: Palette) -> tuple[Any, ...]:
        if item.kind is ItemKind.STEP:
            verdict: Any = Text("step", "bold")
            rules = item.tool
        else:
            verdict = verdict_text(item.verdict, colours).append(f" {refusal_words(item.refusal)}".rstrip())
            rules = ", ".join(r.id for r in item.failing) or "—"
        return (waited_text(item.waited(snapshot.now), snapshot.service(item), colours), verdict, item.session_id,
                item.tool if item.kind is ItemKind.WRITE else "(step)", claimed_text(item, self.operator), rules)

    def show(self, snapshot: DeskSnapshot) -> None:
        colours = palette_of(self)
        order = [i.id for i in snapshot.items]
        selected = self.selected_id
        self.set_rows(order, {i.id: self.cells(i, snapshot, colours) for i in snapshot.items})
        if selected in order and self.selected_id != selected:
            self.move_cursor(row=order.index(selected), animate=False)
        self.border_title = f"Inbox · {len(order)} waiting" if order else "Inbox · empty"

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The items shown, top to bottom."""
        return self.rows

    def row_of(self, item_id: str) -> int:
        return self._order.index(item_id)
