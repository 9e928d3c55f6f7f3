"""`?`: the keys of the screen in front (and the global ones), as lazygit and k9s show them."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.actions import parse
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Footer, Static

NAMED = {"escape": "esc", "enter": "enter", "space": "space", "tab": "tab", "backspace": "backspace"}


def key_as_typed(key: str) -> str:
    """One key as the operator types it: `slash` is `/`, `question_mark` is `?`, `ctrl+e` stays `ctrl+e`."""
    *modifiers, name = key.split("+")
    return "+".join([*modifiers, NAMED.get(name, format_key(name))])


def binding_keys(binding: Binding) -> str:
    """Every key of a binding, as typed ("escape,w" is `esc` and `w`)."""
    if binding.key_display:
        return binding.key_display
    return " ".join(key_as_typed(k.strip()) for k in binding.key.split(",") if k.strip())


def _where(widget: Widget) -> str:
    """Where a widget's own keys work: its pane title ("Transcript"), else its kind in words."""
    title = getattr(widget, "BORDER_TITLE", "") or ""
    if title:
        return str(title)
    name = type(widget).__name__
    return "".join(f" {c.lower()}" if c.isupper() else c for c in name).strip()


def does_something(source: Any, binding: Binding) -> bool:
    """Whether the key does something here now: a binding its screen's `check_action` turns off (a key with
    another meaning for another verdict, say) is not listed."""
    namespace, action, parameters = parse(binding.action)
    return namespace != "" or source.check_action(action, parameters) is not False


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str]]:
    """(key, what it does) for the screen's own bindings, then those of the console's widgets on it (a pane's
    keys are listed whether or not it has the focus, with where they work), then the App's."""
    seen: list[tuple[str, str]] = []
    meanings: set[tuple[str, str]] = set()

    def add(source: Any, where: str = "") -> None:
        for binding in getattr(source, "BINDINGS", []):
            if isinstance(binding, Binding) and binding.description and does_something(source, binding):
                keys = binding_keys(binding)
                if (keys, binding.description) not in meanings:  # the same key may mean two things in two places
                    meanings.add((keys, binding.description))
                    seen.append((keys, binding.description + (f" ({where})" if where else "")))

    add(screen)
    for widget in screen.walk_children(Widget):
        if type(widget).__module__.startswith("console.") and "BINDINGS" in vars(type(widget)):
            add(widget, _where(widget))
    add(screen.app)
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
            table.add_row(Text(key), Text(what))  # a key is shown as typed: "[" is a key here, not markup
        with VerticalScroll(id="help-dialog"):
            yield Static(table, id="help-keys")
        yield Footer()
