"""Textual's Footer, rebuilt only when the keys it shows change, and cheaply when they do.

Textual's Footer recomposes itself (every key removed and mounted again) on each `refresh_bindings()`, and
the console calls that often (each resize, each phase of a session), mostly with the same keys as before.
Each new key also restyled itself twice on mount (its `compact` reactive starts True and is then bound to
the footer's False), tens of milliseconds per rebuild with ~25 keys. This footer keeps the keys when
nothing it shows changed, gives new keys the footer's `compact` before they mount, and lets the screen
rebuild it before a layout pass (`sync`) so a resize that changes the keys draws them in its first frame.
"""

from __future__ import annotations

from collections.abc import Iterator

from textual._context import active_message_pump
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

Shown = tuple[tuple[str, str, str, bool, str], ...]


class ConsoleFooter(Footer):
    def __init__(self) -> None:
        super().__init__()
        self._shown: Shown | None = None

    def _wanted(self) -> Shown:
        """What `Footer.compose` would show now: every shown binding with its enabled state and tooltip."""
        return tuple((binding.key, binding.action, binding.description, enabled, tooltip)
                     for _, binding, enabled, tooltip in self.screen.active_bindings.values() if binding.show)

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
        """Rebuild now (not after the next frame, as `bindings_changed` does) if the keys to show changed."""
        if self._bindings_ready and self.app.app_focus and self.is_attached and self._wanted() != self._shown:
            # Composed as if from the footer's own handler (as `call_after_refresh` would run it): each key's
            # `data_bind(compact=Footer.compact)` binds to the active message pump, which must be this footer.
            token = active_message_pump.set(self)
            try:
                await self.recompose()
            finally:
                active_message_pump.reset(token)
