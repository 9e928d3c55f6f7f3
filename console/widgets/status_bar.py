"""One line that answers "what is going on": domain, model, mode, seat, phase, steps and tokens.

A plain Widget that renders stored text and refreshes without a layout pass: it changes on almost every
event, and a Static.update would re-lay out the whole screen each time.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

PHASE_STYLE = {
    "running": "bold green", "paused": "bold yellow", "waiting for operator": "bold magenta",
    "model error": "bold white on red", "ended": "bold", "ready": "bold cyan", "your turn": "bold magenta",
    "replay": "bold cyan",
}


class StatusBar(Widget):
    DEFAULT_CSS = "StatusBar { height: 1; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._text = Text()

    def render(self) -> Text:
        return self._text

    def show(self, *, domain: str, scenario: str | None, agent: str, model: str, mode: str, seat: str,
             phase: str, steps: int, tokens: int, error: str | None = None, spinner: str = "",
             ready_hint: bool = False, disabled: int = 0, rules: str = "") -> None:
        """Most important first: phase, step, tokens and disabled rules come before the long names, so a
        narrow terminal cuts the scenario name, not the facts."""
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {phase}{' — press space' if ready_hint else ''} ", PHASE_STYLE.get(str(phase), "bold"))
        if spinner:
            text.append(f"{spinner} waiting for the model ", "bold cyan")
        if error:
            text.append(f" {error} ", "bold red")
        if disabled:
            text.append(f" {disabled} rule(s) DISABLED ", "bold black on yellow")
        for label, value in (("step", str(steps)), ("tokens", f"{tokens:,}"), ("mode", mode), ("seat", seat),
                             ("domain", domain), ("scenario", scenario or "free chat"), ("agent", agent),
                             ("model", model)):
            text.append(f"  {label} ", "dim")
            text.append(value)
        if rules:
            text.append(f"  rules {rules}", "dim")
        if text != self._text:
            self._text = text
            self.refresh()
