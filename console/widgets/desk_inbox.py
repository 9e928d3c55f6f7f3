"""The approval inbox: every call (or step) waiting for a human, oldest first.

Rows are keyed by item id: a new item is appended (the newest is always last), a decided one removed, and
the waited / claimed-by cells are updated in place as the clock ticks, so the cursor stays on its item.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from console.desk.view import DeskSnapshot, ItemKind, ItemView
from console.theme import Palette, palette_of
from console.widgets.desk_format import verdict_text, waited_text
from console.widgets.desk_table import InPlaceTable, cell

COLUMNS = (("waited", "waited"), ("verdict", "verdict"), ("session", "session"), ("tool", "tool"),
           ("claimed", "claimed by"), ("rules", "failing rules"))


def claimed_text(item: ItemView, operator: str) -> Text:
    if item.claimed_by is None:
        return Text("—", "dim")
    if item.claimed_by == operator:
        return Text("you", "bold")
    return Text(item.claimed_by, "bold italic")


class InboxTable(InPlaceTable):
    def __init__(self, operator: str, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.operator = operator
        self._order: list[str] = []
        self._cells: dict[str, tuple[Any, ...]] = {}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)
        self.border_title = "Inbox"

    def cells(self, item: ItemView, snapshot: DeskSnapshot, colours: Palette) -> tuple[Any, ...]:
        if item.kind is ItemKind.STEP:
            verdict: Any = Text("step", "bold")
            rules = item.tool
        else:
            verdict = verdict_text(item.verdict, colours)
            rules = ", ".join(r.id for r in item.failing) or "—"
        return (waited_text(item.waited(snapshot.now), snapshot.service(item), colours), verdict, item.session_id,
                item.tool if item.kind is ItemKind.WRITE else "(step)", claimed_text(item, self.operator), rules)

    def show(self, snapshot: DeskSnapshot) -> None:
        colours = palette_of(self)
        order = [i.id for i in snapshot.items]
        wanted = {i.id: self.cells(i, snapshot, colours) for i in snapshot.items}
        selected = self.selected_id
        if order[:len(self._order)] != self._order or any(k not in wanted for k in self._order):
            kept = [k for k in self._order if k in wanted]
            for gone in (k for k in self._order if k not in wanted):
                self.remove_row(gone)
                self._cells.pop(gone, None)
            self._order = kept
            if order[:len(kept)] != kept:  # not just removals: rebuild in the desk's order
                self.clear()
                self._order, self._cells = [], {}
        for item_id in order[len(self._order):]:
            self.add_row(*map(cell, wanted[item_id]), key=item_id)
            self._cells[item_id] = wanted[item_id]
            self._order.append(item_id)
        changes: dict[str, dict[str, Any]] = {}
        for item_id, cells in wanted.items():
            old = self._cells[item_id]
            for (column, _), value, before in zip(COLUMNS, cells, old, strict=True):
                if value != before:
                    changes.setdefault(item_id, {})[column] = value
            self._cells[item_id] = cells
        self.set_cells(changes)
        if selected in self._order and self.selected_id != selected:
            self.move_cursor(row=self._order.index(selected), animate=False)
        self.border_title = f"Inbox · {len(order)} waiting" if order else "Inbox · empty"

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The items shown, top to bottom."""
        return tuple(self._order)

    def row_of(self, item_id: str) -> int:
        return self._order.index(item_id)

    @property
    def selected_id(self) -> str | None:
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]
