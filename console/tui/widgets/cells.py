"""A DataTable cell that shows its text as it is.

Textual's DataTable reads a `str` cell as Rich markup: `[red]x` styles the cell, `[link=…]` turns it into a link,
`[/b]` with nothing open raises and stops the app. The consoles' tables show text from outside (session folder
names, trace endings, eval results files, rule ids and reasons, recorded conversations), so every such cell is a
`Text` built here: never parsed for markup, its control characters inert (`core.strict_json.inert`: an ESC in it
is drawn as `␛`, never sent to the terminal). A table row is one line, so a newline is shown as `␊` too rather
than hiding what follows it.
"""

from __future__ import annotations

from rich.style import StyleType
from rich.text import Text

from core.strict_json import inert


def literal(value: str, style: StyleType = "") -> Text:
    """`value` as a one-line table cell in `style`, its text shown literally."""
    return Text(inert(value), style=style)


__all__ = ["literal"]
