"""The screen as plain text, one line per terminal row: what a person reads (and what tmux capture-pane gives)."""

from __future__ import annotations

from typing import Any


def screen_text(app: Any) -> str:
    """Every row of the screen in front as drawn now (modals over what is under them), as text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
