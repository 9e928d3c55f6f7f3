"""A DataTable whose cell updates repaint only their own rows.

Textual's `DataTable.update_cell` bumps one table-wide update counter that every render cache is keyed on, so
changing one cell re-renders every visible cell of the table on the next frame: with fifty busy sessions that
was most of the desk's CPU (a full re-render of two tables per frame, ~100 ms per redraw at load 3-4).
`set_cells` writes the new values and drops only the changed rows' cached renders, so the next frame renders
those rows and reuses every other row's cache. A value wider than its column goes through `update_cell`
(the column must grow: everything moves anyway). Plain strings become `Text` here, so no cell is parsed for
markup on each render.

This reaches into DataTable's private caches (Textual is pinned, 8.2.8). The desk snapshots check that an
in-place update shows on screen: their "45s amber" waits are cells updated in place after the clock moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets._data_table import ColumnKey, RowKey


def cell(value: Any) -> Any:
    return Text(value) if isinstance(value, str) else value


class InPlaceTable(DataTable[Any]):
    """Sized by the stylesheet (the desk gives both tables fixed shares of the screen), so adding or removing a
    row does not change the screen's layout: it repaints this table only. (DataTable asks for a layout of the
    whole screen on each, which repaints every widget on it: with fifty sessions coming and going in the inbox
    that was every frame.) When the rows no longer fit, or fit again, the size change still lays out, so the
    scrollbars come and go as before."""

    _quiet = False

    def refresh(self, *regions: Any, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Any:
        return super().refresh(*regions, repaint=repaint, layout=layout and not self._quiet, recompose=recompose)

    def add_row(self, *cells: Any, **kwargs: Any) -> RowKey:
        self._quiet = True
        try:
            return super().add_row(*cells, **kwargs)
        finally:
            self._quiet = False

    def remove_row(self, row_key: RowKey | str) -> None:
        self._quiet = True
        try:
            super().remove_row(row_key)
        finally:
            self._quiet = False

    def set_cells(self, changes: Mapping[str, Mapping[str, Any]]) -> int:
        """{row key: {column key: value}}: update the cells; returns how many changed."""
        rows: set[RowKey] = set()
        count = 0
        for row_id, values in changes.items():
            row_key = RowKey(row_id)
            for column_id, value in values.items():
                column_key = ColumnKey(column_id)
                value = cell(value)
                column = self.columns[column_key]
                width = value.cell_len if isinstance(value, Text) else len(str(value))
                if width > column.content_width:
                    self.update_cell(row_key, column_key, value, update_width=True)
                else:
                    self._data[row_key][column_key] = value
                    rows.add(row_key)
                count += 1
        if rows:
            self._forget_rows(rows)
            self.refresh()
        return count

    def _forget_rows(self, rows: set[RowKey]) -> None:
        indices = {self._row_locations.get(key) for key in rows}
        for key in [k for k in self._cell_render_cache.keys() if k[0] in rows]:
            self._cell_render_cache.discard(key)
        for row_key in [k for k in self._row_render_cache.keys() if k[0] in rows]:
            self._row_render_cache.discard(row_key)
        for index in [k for k in self._row_renderable_cache.keys() if k[1] in indices]:
            self._row_renderable_cache.discard(index)
        self._line_cache.clear()  # lines are cheap to reassemble from the row caches
