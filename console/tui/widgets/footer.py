"""Textual's Footer, rebuilt only when the keys it shows change, and cheaply when they do.

Textual's Footer recomposes itself (every key removed and mounted again) on each `refresh_bindings()`, and
the console calls that often (each resize, each phase of a session), mostly with the same keys as before.
Each new key also restyled itself twice on mount (its `compact` reactive starts True and is then bound to
the footer's False), tens of milliseconds per rebuild with ~25 keys. This footer keeps the keys when
nothing it shows changed, gives new keys the footer's `compact` before they mount, and lets the screen
rebuild it before a layout pass (`sync`) so a resize that changes the keys draws them in its first frame.

Its keys wrap (`KeyRows`): a key that would cross the right edge starts a new row, so the footer is as many
rows as its keys need (two at 80 columns for the console, the compare view and the desk) and every key shows
whole with what it does. Textual's Footer is one row that cuts the keys past its edge: at 80 columns the
compare view lost `2 Step LedgerAgent`, `e Export`, `? Keys` and `q Quit`.
"""

from __future__ import annotations

from collections.abc import Iterator
from difflib import SequenceMatcher

from textual._context import active_message_pump
from textual._resolve import resolve_box_models
from textual.binding import Binding
from textual.geometry import NULL_OFFSET, Region, Size
from textual.layout import ArrangeResult, Layout, WidgetPlacement
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

Key = tuple[str, str, str, bool, str]  # key, action, description, enabled, tooltip: what one FooterKey shows


class KeyRows(Layout):
    """Textual's horizontal layout, wrapped: the keys left to right, each at its own width and margins, and one
    that would cross the right edge starts the next row (a key wider than the whole row stays alone on its own).
    The footer's height (`auto`) is then the rows' count: `Layout.get_content_height` arranges the keys."""

    name = "key-rows"

    def arrange(self, parent: Widget, children: list[Widget], size: Size, greedy: bool = True) -> ArrangeResult:
        parent.pre_layout(self)
        boxes = resolve_box_models([child.styles.width for child in children], children, size,
                                   parent.app.viewport_size, Size(0, 0), resolve_dimension="width", greedy=False)
        placements: list[WidgetPlacement] = []
        x = y = row_height = 0
        for child, (width, height, margin) in zip(children, boxes, strict=True):
            wide, high = int(width), int(height)
            if x and x + margin.left + wide > size.width:
                x, y, row_height = 0, y + row_height, 0
            region = Region(x + margin.left, y + margin.top, wide, high)
            placements.append(WidgetPlacement(region, NULL_OFFSET, margin, child))
            x = region.right + margin.right
            row_height = max(row_height, margin.top + high + margin.bottom)
        return placements


class ConsoleFooter(Footer):
    DEFAULT_CSS = "ConsoleFooter { height: auto; }"  # as many rows as `KeyRows` makes

    def __init__(self) -> None:
        super().__init__()
        self._shown: tuple[Key, ...] | None = None
        self._rows = KeyRows()

    @property
    def layout(self) -> Layout:
        """The keys wrap into rows (Footer's CSS says `layout: horizontal`: one row, cut at its edge)."""
        return self._rows

    def _keys(self) -> tuple[list[tuple[Binding, bool, str]], bool]:
        """The keys `Footer.compose` would make now, in its order (one per action, the first binding of each),
        and whether any binding belongs to a group (then the footer has KeyGroups, and is only recomposed)."""
        first: dict[str, tuple[Binding, bool, str]] = {}
        grouped = False
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                first.setdefault(binding.action, (binding, enabled, tooltip))
                grouped = grouped or binding.group is not None
        return list(first.values()), grouped

    def _wanted(self) -> tuple[Key, ...]:
        return tuple((b.key, b.action, b.description, enabled, tooltip) for b, enabled, tooltip in self._keys()[0])

    def compose(self) -> Iterator[Widget]:
        if self._bindings_ready:
            self._shown = self._wanted()
        for widget in super().compose():
            # the keys bound to the footer's `compact` (the command palette's key is not: it stays compact)
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self._bindings_ready and self.is_attached and screen is self.screen and self._wanted() == self._shown:
            return
        super().bindings_changed(screen)

    async def sync(self) -> None:
        """Update now (not after the next frame, as `bindings_changed` does) if the keys to show changed:
        only the keys that come or go are removed or mounted when that is all that changed."""
        if not (self._bindings_ready and self.app.app_focus and self.is_attached):
            return
        keys, grouped = self._keys()
        wanted = tuple((b.key, b.action, b.description, enabled, tooltip) for b, enabled, tooltip in keys)
        if wanted == self._shown:
            return
        # Run as if from the footer's own handler (as `call_after_refresh` would): each key's
        # `data_bind(compact=Footer.compact)` binds to the active message pump, which must be this footer.
        token = active_message_pump.set(self)
        try:
            shown_keys = [w for w in self.children if isinstance(w, FooterKey) and not w.has_class("-command-palette")]
            if grouped or self._shown is None or len(shown_keys) != len(self._shown):
                await self.recompose()
                return
            await self._patch(self._shown, wanted, keys, shown_keys)
        finally:
            active_message_pump.reset(token)

    async def _patch(self, shown: tuple[Key, ...], wanted: tuple[Key, ...], keys: list[tuple[Binding, bool, str]],
                     widgets: list[FooterKey]) -> None:
        """Turn the keys on screen (`widgets`, showing `shown`) into `wanted` by removing and mounting keys.

        `_shown` is `wanted` from the start: a bindings signal that comes while this awaits the mounts (a focus
        moved by the same resize) then sees the keys it would show already on their way, instead of the old
        ones, and does not queue a rebuild of every key behind this patch."""
        self._shown = wanted
        tail = [w for w in self.children if isinstance(w, FooterKey) and w.has_class("-command-palette")]
        for tag, i1, i2, j1, j2 in SequenceMatcher(a=shown, b=wanted, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if tag in ("delete", "replace"):
                await self.remove_children(widgets[i1:i2])
            if tag in ("insert", "replace"):
                anchor = widgets[i2] if i2 < len(widgets) else (tail[0] if tail else None)
                new = [self._make_key(*keys[j]) for j in range(j1, j2)]
                await (self.mount_all(new, before=anchor) if anchor is not None else self.mount_all(new))
        # As `Footer.compose` does, but without the property's repaint of every key: the footer's layout is
        # horizontal, so the grid size changes nothing on screen, and the keys that stay keep their drawing
        # (mounting and removing keys already lays the footer out again).
        self.styles.set_rule("grid_size_columns", len(wanted))

    def _make_key(self, binding: Binding, enabled: bool, tooltip: str) -> FooterKey:
        """A key exactly as `Footer.compose` makes an ungrouped one, with the footer's `compact` preset."""
        key = FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                        disabled=not enabled, tooltip=tooltip).data_bind(compact=Footer.compact)
        key.set_reactive(FooterKey.compact, self.compact)
        return key
