"""`?`: the keys of the screen in front (and the global ones), as lazygit and k9s show them."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from textual.actions import parse
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static


def does_something(source: Any, binding: Binding) -> bool:
    """Whether the key does something here now: a binding its screen's `check_action` turns off (a key with
    another meaning for another verdict, say) is not listed."""
    namespace, action, parameters = parse(binding.action)
    return namespace != "" or source.check_action(action, parameters) is not False


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str]]:
    """(key, what it does) for the screen's own bindings, then its focused widget's, then the App's."""
    seen: list[tuple[str, str]] = []
    sources: list[Any] = [screen]
    if screen.focused is not None:
        sources.append(screen.focused)
    sources.append(screen.app)
    for source in sources:
        for binding in getattr(source, "BINDINGS", []):
            if isinstance(binding, Binding) and binding.description and does_something(source, binding):
                item = (binding.key_display or binding.key, binding.description)
                if item not in seen:
                    seen.append(item)
    return seen


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, shown_for: Screen[Any]) -> None:
        super().__init__()
        self.keys = screen_keys(shown_for)
        self.title_text = f"Keys: {type(shown_for).__name__.removesuffix('Screen') or 'Main'}"

    def compose(self) -> ComposeResult:
        table = Table(title=self.title_text, show_header=False, box=None, padding=(0, 2))
        for key, what in self.keys:
            table.add_row(key, what)
        with VerticalScroll(id="help-dialog"):
            yield Static(table, id="help-keys")
        yield Footer()
