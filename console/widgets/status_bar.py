"""One line that answers "what is going on": domain, model, mode, seat, phase, steps and tokens.

A plain Widget that renders stored text and refreshes without a layout pass: it changes on almost every
event, and a Static.update would re-lay out the whole screen each time.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from console.theme import INFO, OPERATOR, palette_of

PHASE_ROLE = {"running": "success", "paused": "warning", "waiting for operator": OPERATOR, "ready": INFO,
              "your turn": OPERATOR, "replay": INFO}  # a phase's colour role; "ended" and others stay plain


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
        colours = palette_of(self)
        role = PHASE_ROLE.get(str(phase))
        if str(phase) == "model error":
            phase_style = colours.badge("BLOCK")
        else:
            phase_style = colours.text(role, "bold") if role else "bold"
        text.append(f" {phase}{' — press space' if ready_hint else ''} ", phase_style)
        if spinner:
            text.append(f"{spinner} waiting for the model ", colours.text(INFO, "bold"))
        if error:
            text.append(f" {error} ", colours.text("error", "bold"))
        if disabled:
            text.append(f" {disabled} rule(s) DISABLED ", colours.badge("REVISE"))
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
