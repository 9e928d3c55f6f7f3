"""The desk's sessions table: one row per session, updated in place, sortable and filterable.

The desk calls its listeners on every event of every session; the screen coalesces those into at most one
`show(snapshot)` per refresh, and `show` touches only the cells that changed (`set_cells`: a `RowTable` renders
only the rows whose cells changed, and lays nothing out). Rows are
rebuilt only when the set or the order of the rows shown changes (a filter, a sort, a session whose sort
value moved), so fifty busy sessions cost a few cell updates per frame, not a table rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.binding import Binding

from console.runtime.desk.view import DeskSnapshot, ItemView, RowView
from console.tui.theme import Palette, palette_of
from console.tui.widgets.desk_format import phase_text, waited_text
from console.tui.widgets.desk_grid import RowTable, same

COLUMNS = (("id", "id"), ("phase", "phase"), ("waited", "waited"), ("pending", "pending"), ("domain", "domain"),
           ("label", "scenario / task"), ("customer", "customer"), ("steps", "step"), ("allow", "ALLOW"),
           ("revise", "REVISE"), ("block", "BLOCK"), ("overridden", "overridden"), ("note", "ended / failure"))
"""Most telling first (what waits, and how long), so a narrow terminal cuts the names, not the facts."""

# what each sort position orders by (the `s` key cycles through them)
SORTS: tuple[tuple[str, Callable[[RowView, float], Any]], ...] = (
    ("id", lambda r, now: r.id),
    ("waited", lambda r, now: -(now - r.pending_since) if r.pending_since is not None else 0.0),
    ("phase", lambda r, now: (r.phase.value, r.id)),
    ("domain", lambda r, now: (r.domain, r.label, r.id)),
    ("scenario / task", lambda r, now: (r.label, r.id)),
    ("customer", lambda r, now: (r.customer, r.id)),
    ("step", lambda r, now: (-r.steps, r.id)),
)


def note_of(row: RowView) -> str:
    if row.failure:
        return row.failure[:80]
    return row.end_reason or ""


class SessionsTable(RowTable):
    BINDINGS = [Binding("s", "cycle_sort", "Sort", id="desk-sort")]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(COLUMNS, **kwargs)
        self.sort_index = 0
        self.filter_text = ""
        self._shown: dict[str, tuple[Any, ...]] = {}
        self._last: DeskSnapshot | None = None
        self._views: dict[str, RowView] = {}
        self._colours: Palette | None = None  # the theme's palette the shown cells were coloured with
        self.cell_updates = 0  # cells changed in place, and times the rows were rebuilt (tests and benchmarks)
        self.rebuilds = 0

    def on_mount(self) -> None:
        self.border_title = "Sessions"

    @property
    def sort_name(self) -> str:
        return SORTS[self.sort_index][0]

    def cells(self, row: RowView, snapshot: DeskSnapshot, colours: Palette,
              items: dict[str, ItemView]) -> tuple[Any, ...]:
        item = items.get(row.pending) if row.pending else None
        if item is not None:
            waited: Any = waited_text(item.waited(snapshot.now), snapshot.service(item), colours)
            pending = f"{item.id} {item.tool}"
        else:
            waited, pending = Text("—", "dim"), ""
        return (row.id, phase_text(row.phase, colours), waited, pending, row.domain, row.label, row.customer or "—",
                str(row.steps), str(row.allow), str(row.revise), str(row.block), str(row.overridden), note_of(row))

    def _visible(self, snapshot: DeskSnapshot) -> list[RowView]:
        needle = self.filter_text.strip().lower()
        rows = [r for r in snapshot.rows if not needle or needle in " ".join(
            (r.id, r.domain, r.label, r.customer, r.phase.value, r.failure, r.end_reason or "",
             r.pending or "")).lower()]
        key = SORTS[self.sort_index][1]
        return sorted(rows, key=lambda r: key(r, snapshot.now))

    def show(self, snapshot: DeskSnapshot) -> None:
        """Draw `snapshot`: changed cells in place, or the rows again when which rows / their order changed."""
        self._last = snapshot
        colours = palette_of(self)
        rows = self._visible(snapshot)
        order = [r.id for r in rows]
        items = {i.id: i for i in snapshot.items}
        known, shown = self._views, self._shown
        # a row whose view did not change and that waits on nothing shows what it showed: its cells are reused,
        # unless the theme changed since (they carry the old theme's colours)
        reuse = colours is self._colours
        self._colours = colours
        wanted = {r.id: shown[r.id] if reuse and r.pending is None and known.get(r.id) == r and r.id in shown
                  else self.cells(r, snapshot, colours, items) for r in rows}
        self._views = {r.id: r for r in rows}
        if order != self._order:
            selected = self.selected_id
            self.set_rows(order, wanted)
            self._shown = wanted
            self.rebuilds += 1
            if selected in order:
                self.move_cursor(row=order.index(selected), animate=False)
            return
        changes: dict[str, dict[str, Any]] = {}
        for row_id, cells in wanted.items():
            old = self._shown.get(row_id)
            if cells is old:
                continue
            for (column, _), value, before in zip(COLUMNS, cells, old or (None,) * len(cells), strict=True):
                if not same(value, before):
                    changes.setdefault(row_id, {})[column] = value
            self._shown[row_id] = cells
        self.cell_updates += self.set_cells(changes)

    @property
    def row_ids(self) -> tuple[str, ...]:
        """The sessions shown, top to bottom (after the filter and the sort)."""
        return self.rows

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        if self._last is not None:
            self.show(self._last)

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.border_title = f"Sessions · sorted by {self.sort_name}"
        if self._last is not None:
            self.show(self._last)
        self.notify(f"Sessions sorted by {self.sort_name}", timeout=2)
