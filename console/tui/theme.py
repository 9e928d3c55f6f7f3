"""One colour map for verdicts, phases and speakers, resolved from the App's theme, so every theme reads well.

Nothing in the console's screens and widgets names a colour: they name a *role* (`success`, `warning`,
`error`, `primary`, ...) and this module turns it into the current theme's colour, the same variables the
tcss uses (`$success`, `$text-error`, ...). So a light theme gets dark text tints and a dark theme light
ones, and both read well.

- Verdict badges (` ALLOW `, ` REVISE `, ` BLOCK `) are a solid `$success` / `$warning` / `$error`
  background with the theme's contrasting text colour on it.
- Coloured text uses the theme's `$text-<role>` variables, which Textual derives for legibility on the
  theme's own background.

Rich `Text` in widgets is styled when it is built, so what is already shown carries the colours of the
theme it was built under: on the App's `theme_changed_signal` the widgets build it again (the desk's
tables and status redraw; the session panes' `recolour`: transcript entries, ledger labels, gate rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.color import Color

VERDICT_ROLE = {"ALLOW": "success", "REVISE": "warning", "BLOCK": "error", "ERROR": "secondary"}
"""The one verdict colour map: every pane, modal and screen colours a verdict through it."""

# what else carries a colour, by role
USER = "primary"
AGENT = "secondary"
OPERATOR = "accent"
INFO = "primary"

_CACHE: dict[tuple[str, int], Palette] = {}


@dataclass(frozen=True)
class Palette:
    """Rich style strings for one theme's variables."""

    variables: Mapping[str, str]

    def color(self, role: str) -> str:
        """The theme's text tint for `role` (`$text-success`, ...), or the role's own colour."""
        return self.variables.get(f"text-{role}") or self.variables.get(role) or self.variables["foreground"]

    def text(self, role: str, extra: str = "") -> str:
        """A Rich style: text in the role's colour, with extra attributes (`bold`, `italic`)."""
        return f"{extra} {self.color(role)}".strip()

    def badge(self, verdict: str) -> str:
        """A verdict badge: the verdict's role as a solid background, contrasting text on it."""
        role = VERDICT_ROLE.get(verdict)
        if role is None:
            return "bold reverse"
        background = self.variables[role]
        foreground = Color.parse(background).get_contrast_text(1.0).hex
        return f"bold {foreground} on {background}"

    def verdict_text(self, verdict: str) -> str:
        """A verdict's colour as text (no background), for a marker or a word."""
        return self.text(VERDICT_ROLE.get(verdict, "foreground"), "bold")


def palette(app: Any) -> Palette:
    """The palette of `app`'s current theme (cached per theme: building the variables takes a while)."""
    key = (str(app.theme), id(app.get_theme(app.theme)))
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = Palette(dict(app.get_css_variables()))
    return found


def palette_of(widget: Any) -> Palette:
    """The palette for a widget: its App's theme, or Textual's default theme outside an App (unit tests)."""
    from textual._context import NoActiveAppError

    try:
        app = widget.app
    except NoActiveAppError:
        global _DEFAULT_APP
        if _DEFAULT_APP is None:
            from textual.app import App

            _DEFAULT_APP = App()
        app = _DEFAULT_APP
    return palette(app)


_DEFAULT_APP: Any = None
