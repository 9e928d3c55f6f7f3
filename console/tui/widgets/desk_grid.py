"""The desk's table: a Line-API row table whose frame costs only the rows that changed.

Textual's DataTable renders every changed cell through Rich and lays out the whole screen when a row comes or
goes or a column grows; with fifty busy sessions nearly every row changes on every redraw, so each frame cost
tens of milliseconds, over the desk's targets (`benchmarks.desk`: a redraw under 16 ms, an inbox item visible
under 100 ms). Here each cell is one styled string (a `Text` with one style, or a plain string) cut or padded
to its column's width, a row is one cached `Strip` of segments built directly, and only a row whose cells
changed has its strip rebuilt. Columns grow to their widest cell (as DataTable's do) but the widget's own size
never depends on its content (the stylesheet sizes it), so no content change lays the screen out again: a grown
column only rebuilds this table's strips.

The header is line 0 and stays put while the rows scroll under it; the cursor is a whole row (the highlighted
row gets the `desk-grid--cursor` component style on top of its cells', as DataTable's does); up / down /
page keys, home / end and enter move or select it; clicking a row highlights it, clicking the highlighted row
selects it. `RowHighlighted` / `RowSelected` carry the row's key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from core.strict_json import inert

PAD = 1  # blank cells either side of a cell's text, as DataTable draws them


def cell(value: Any) -> Any:
    """A cell as stored: strings become `Text` (so a cell is never parsed for markup), the rest as given; the
    text of either inert (`core.strict_json.inert`): a desk's cells hold what sessions and clients said, and
    this is where every one of them enters the table."""
    if isinstance(value, str):
        return Text(value if value.isprintable() else inert(value, lines=True))
    if isinstance(value, Text):
        plain = value.plain
        if not plain.isprintable():
            safe = inert(plain, lines=True)
            if safe is not plain:
                return Text(safe, style=value.style)
    return value


def same(a: Any, b: Any) -> bool:
    """Whether two cells show the same: the same text in the same style (`Text.__eq__` ignores the style)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.spans == b.spans
    return type(a) is type(b) and bool(a == b)


def _plain_and_style(value: Any) -> tuple[str, Style]:
    if isinstance(value, Text):
        style = value.style
        return value.plain, style if isinstance(style, Style) else Style.parse(style)
    return str(value), Style.null()


class RowTable(ScrollView, can_focus=True):
    """Rows keyed by id, each a tuple of cells in column order; see the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"desk-grid--header", "desk-grid--cursor"}
    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        & > .desk-grid--cursor {
            background: $block-cursor-blurred-background;
        }
        & > .desk-grid--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .desk-grid--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .desk-grid--header {
                background-tint: $foreground 5%;
            }
        }
    }
    """

    class _RowMessage(Message):
        """A row of `table` (its key and where the cursor is); `control` lets `@on(..., "#id")` select it."""

        def __init__(self, table: RowTable, row_key: str, cursor_row: int) -> None:
            super().__init__()
            self.table, self.row_key, self.cursor_row = table, row_key, cursor_row

        @property
        def control(self) -> RowTable:
            return self.table

    class RowHighlighted(_RowMessage):
        pass

    class RowSelected(_RowMessage):
        pass

    def __init__(self, columns: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.column_keys = tuple(key for key, _ in columns)
        self._labels = tuple(label for _, label in columns)
        self._widths = [len(label) for label in self._labels]
        self._order: list[str] = []
        self._cells: dict[str, tuple[Any, ...]] = {}
        self._strips: dict[tuple[str, bool], Strip] = {}  # (row key, under the cursor)
        self._header: Strip | None = None
        self._style_key: tuple[Any, ...] | None = None
        self.cursor_row = 0
        self._base = Style.null()
        self.strips_built = 0  # row strips built since mount (tests: only a changed row is built again)

    # ------------------------------------------------------------------------------------------ content

    @property
    def rows(self) -> tuple[str, ...]:
        """The row keys, top to bottom."""
        return tuple(self._order)

    @property
    def row_count(self) -> int:
        return len(self._order)

    def get_cell(self, row_key: str, column_key: str) -> Any:
        return self._cells[row_key][self.column_keys.index(column_key)]

    def set_rows(self, order: Iterable[str], cells: Mapping[str, Sequence[Any]]) -> None:
        """Show exactly these rows in this order; a row whose cells are unchanged keeps its rendered strip."""
        order = list(order)
        kept = set(order)
        for gone in [k for k in self._cells if k not in kept]:
            del self._cells[gone]
            self._forget(gone)
        grew, changed = False, set()
        for key in order:
            values = tuple(map(cell, cells[key]))
            old = self._cells.get(key)
            if old is None or not all(map(same, old, values)):
                self._cells[key] = values
                self._forget(key)
                changed.add(key)
                grew |= self._grow(values)
        moved = order != self._order
        self._order = order
        self._after_change(grew, None if moved else changed)

    def set_cells(self, changes: Mapping[str, Mapping[str, Any]]) -> int:
        """{row key: {column key: value}}: update those cells in place; returns how many changed."""
        count = 0
        grew = False
        for row_key, values in changes.items():
            row = list(self._cells[row_key])
            for column_key, value in values.items():
                row[self.column_keys.index(column_key)] = cell(value)
                count += 1
            self._cells[row_key] = tuple(row)
            self._forget(row_key)
            grew |= self._grow(self._cells[row_key])
        if count:
            self._after_change(grew, set(changes))
        return count

    def _forget(self, key: str) -> None:
        self._strips.pop((key, False), None)
        self._strips.pop((key, True), None)

    def _grow(self, values: Sequence[Any]) -> bool:
        grew = False
        for index, value in enumerate(values):
            width = value.cell_len if isinstance(value, Text) else cell_len(str(value))
            if width > self._widths[index]:
                self._widths[index] = width
                grew = True
        return grew

    def _after_change(self, grew: bool, rows: set[str] | None) -> None:
        """Repaint what changed: the lines of the `rows` whose cells changed, or (rows moved, or a column grew
        and every row's strip has the old column positions) the whole table."""
        if grew:
            self._strips.clear()
            self._header = None
        if self._order:
            self.cursor_row = max(0, min(self.cursor_row, len(self._order) - 1))
        self._resize(Size(sum(w + 2 * PAD for w in self._widths), len(self._order) + 1))
        if grew or rows is None:
            self.refresh()
            return
        top, height, width = int(self.scroll_y), self.size.height, self.size.width
        lines = [i + 1 - top for i, key in enumerate(self._order) if key in rows]
        regions = [Region(0, y, width, 1) for y in lines if 1 <= y < height]
        if regions:
            self.refresh(*regions)

    def _overflows(self, size: Size) -> tuple[bool, bool]:
        return size.width > self.size.width, size.height > self.size.height

    def _resize(self, size: Size) -> None:
        """A new virtual size. Setting `virtual_size` lays the whole screen out (it is a layout reactive); the
        stylesheet sizes this widget, so only a change in which scrollbars show needs that: otherwise the
        scrollbars are updated in place."""
        if size == self.virtual_size:
            return
        if not self.size or self._overflows(size) != self._overflows(self.virtual_size):
            self.virtual_size = size
            return
        self.set_reactive(RowTable.virtual_size, size)
        self._scroll_update(size)

    # ------------------------------------------------------------------------------------------ cursor

    @property
    def selected_id(self) -> str | None:
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def move_cursor(self, *, row: int, animate: bool = False) -> None:
        if not self._order:
            return
        row = max(0, min(row, len(self._order) - 1))
        if row != self.cursor_row:
            self.cursor_row = row
            self.refresh()
            self.post_message(self.RowHighlighted(self, self._order[row], row))
        self._scroll_cursor_visible(animate)

    def _scroll_cursor_visible(self, animate: bool) -> None:
        if self.size.height <= 1:
            return
        top, rows = int(self.scroll_y), self.size.height - 1
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=animate)
        elif self.cursor_row >= top + rows:
            self.scroll_to(y=self.cursor_row - rows + 1, animate=animate)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - max(1, self.size.height - 1))

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + max(1, self.size.height - 1))

    def action_scroll_home(self) -> None:
        self.move_cursor(row=0)

    def action_scroll_end(self) -> None:
        self.move_cursor(row=len(self._order) - 1)

    def action_select_cursor(self) -> None:
        key = self.selected_id
        if key is not None:
            self.post_message(self.RowSelected(self, key, self.cursor_row))

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = offset.y - 1 + int(self.scroll_y)
        if not 0 <= row < len(self._order):
            return
        if row == self.cursor_row:
            self.action_select_cursor()
        else:
            self.move_cursor(row=row)

    def on_focus(self) -> None:
        self.refresh()  # the cursor's style depends on focus

    def on_blur(self) -> None:
        self.refresh()

    # ------------------------------------------------------------------------------------------ drawing

    def _strip(self, values: Sequence[Any], base: Style, cursor: Style | None = None) -> Strip:
        """One row: a cell's style covers its text, the padding has the row's (base, plus the cursor's on the
        cursor row); a cell's pieces that end up in one style are one segment, as DataTable draws them."""
        row = base + cursor if cursor is not None else base
        segments: list[Segment] = []
        for value, width in zip(values, self._widths, strict=True):
            text, style = _plain_and_style(value)
            text = text.replace("\n", " ")
            if cell_len(text) > width:
                text = set_cell_size(text, width)  # terminal cells, not code points: a wide character is two
            fill = width - cell_len(text)
            if style or cursor is not None:
                # under the cursor the cursor's text colour wins, a cell's own background (a badge) stays
                over = row + style + Style(color=cursor.color) if cursor is not None else base + style
                segments += Segment.simplify([Segment(" " * PAD, row), Segment(text, over),
                                              Segment(" " * (fill + PAD), row)])
            else:
                segments.append(Segment(" " * PAD + text + " " * (fill + PAD), base))
        return Strip(segments, sum(w + 2 * PAD for w in self._widths))

    def _check_styles(self, base: Style) -> None:
        """Row strips bake in the widget's base style: a theme or focus change builds them again."""
        key = (base, self.get_component_rich_style("desk-grid--header"),
               self.get_component_rich_style("desk-grid--cursor"))
        if key != self._style_key:
            self._style_key = key
            self._strips.clear()
            self._header = None

    def render_lines(self, crop: Region) -> list[Strip]:
        self._base = self.rich_style  # once per paint, not per line (it is recomputed after each refresh)
        self._check_styles(self._base)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x = int(self.scroll_x)
        base = self._base
        if y == 0:
            if self._header is None:
                self._header = self._strip(self._labels, base + self.get_component_rich_style("desk-grid--header"))
            strip = self._header
        else:
            index = y - 1 + int(self.scroll_y)
            if not 0 <= index < len(self._order):
                return Strip.blank(width, base)
            strip = self._row_strip(self._order[index], base, index == self.cursor_row)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _row_strip(self, key: str, base: Style, under_cursor: bool) -> Strip:
        strip = self._strips.get((key, under_cursor))
        if strip is None:
            cursor = self.get_component_rich_style("desk-grid--cursor") if under_cursor else None
            strip = self._strips[key, under_cursor] = self._strip(self._cells[key], base, cursor)
            self.strips_built += 1
        return strip

    def row_region(self, row: int) -> Region:
        """Where row `row` sits in the virtual canvas (below the header)."""
        return Region(0, row + 1, self.virtual_size.width, 1)
