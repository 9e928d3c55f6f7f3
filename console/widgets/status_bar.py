"""One line that answers "what is going on": domain, model, mode, seat, phase, steps and tokens."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

PHASE_STYLE = {
    "running": "bold green", "paused": "bold yellow", "waiting for operator": "bold magenta",
    "model error": "bold white on red", "ended": "bold", "ready": "bold cyan", "your turn": "bold magenta",
    "replay": "bold cyan",
}


class StatusBar(Static):
    def show(self, *, domain: str, scenario: str | None, agent: str, model: str, mode: str, seat: str,
             phase: str, steps: int, tokens: int, error: str | None = None) -> None:
        text = Text()
        text.append(f" {phase} ", PHASE_STYLE.get(phase, "bold"))
        for label, value in (("domain", domain), ("scenario", scenario or "free chat"), ("agent", agent),
                             ("model", model), ("mode", mode), ("seat", seat), ("step", str(steps)),
                             ("tokens", f"{tokens:,}")):
            text.append(f"  {label} ", "dim")
            text.append(value)
        if error:
            text.append(f"  {error}", "bold red")
        self.update(text)
