"""The lines that answer "what is going on": phase, step, tokens, mode, seat, domain, scenario, model, rules.

A plain Widget that renders stored fields and refreshes without a layout pass unless its number of lines
changes: it changes on almost every event, and a Static.update would re-lay out the whole screen each time.
Fields are never cut: from NARROW_WIDTH columns on they wrap onto a second line, at a field's boundary. Below
that (the stacked layout, one pane at a time) the bar keeps one line, with the facts first and the pane in
front named next to them, so a narrow terminal loses the long names at the end, never the facts.
"""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from console.tui.theme import INFO, OPERATOR, palette_of
from console.tui.widgets.session_panes import NARROW_WIDTH
from core.strict_json import inert

PHASE_ROLE = {"running": "success", "paused": "warning", "waiting for operator": OPERATOR, "ready": INFO,
              "your turn": OPERATOR, "replay": INFO}  # a phase's colour role; "ended" and others stay plain
GAP = "  "


class StatusBar(Widget):
    DEFAULT_CSS = "StatusBar { height: auto; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._fields: list[Text] = []
        self._shown: tuple[int, Text] | None = None  # (width, text) last laid out

    def render(self) -> Text:
        return self._layout(self.content_region.width or self.size.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._layout(width).split())

    def _layout(self, width: int) -> Text:
        """The fields in lines of at most `width` cells, each field whole (one line below WRAP_FROM)."""
        if self._shown is not None and self._shown[0] == width:
            return self._shown[1]
        if width + 2 < NARROW_WIDTH or width <= 0:  # the bar's own padding: the terminal is 2 columns wider
            text = Text(GAP).join(self._fields)
            text.no_wrap, text.overflow = True, "ellipsis"
        else:
            lines: list[Text] = []
            line = Text()
            for field in self._fields:
                needed = field.cell_len + (len(GAP) if line.cell_len else 0)
                if line.cell_len and line.cell_len + needed > width:
                    lines.append(line)
                    line = Text()
                if line.cell_len:
                    line.append(GAP)
                line.append_text(field)
            lines.append(line)
            text = Text("\n").join(lines)
        self._shown = (width, text)
        return text

    def show(self, *, domain: str, scenario: str | None, agent: str, model: str, mode: str, seat: str,
             phase: str, steps: int, tokens: int, error: str | None = None, spinner: str = "",
             ready_hint: str = "", disabled: int = 0, rules: str = "", front: str = "",
             others: tuple[str, ...] = ()) -> None:
        """Most important first: phase, the pane in front (stacked layout), step, tokens and disabled rules
        come before the long names. `ready_hint`: what starts the session ("press space")."""
        colours = palette_of(self)
        role = PHASE_ROLE.get(str(phase))
        if str(phase) == "model error":
            phase_style = colours.badge("BLOCK")
        else:
            phase_style = colours.text(role, "bold") if role else "bold"
        fields = [Text(f"{phase}{' — ' + ready_hint if ready_hint else ''}", phase_style)]
        if front:
            field = Text(f"{front.title()} in front", colours.text(INFO, "bold"))
            if others:
                field.append(f" · l: {', '.join(o.title() for o in others)}")
            fields.append(field)
        if spinner:
            fields.append(Text(f"{spinner} waiting for the model", colours.text(INFO, "bold")))
        if error:
            fields.append(Text(inert(error), colours.text("error", "bold")))  # a model endpoint's words
        if disabled:
            fields.append(Text(f" {disabled} rule(s) DISABLED ", colours.badge("REVISE")))
        for label, value in (("step", str(steps)), ("tokens", f"{tokens:,}"), ("mode", mode), ("seat", seat),
                             ("domain", domain), ("scenario", scenario or "free chat"), ("agent", agent),
                             ("model", model)):
            fields.append(Text.assemble((f"{label} ", "dim"), inert(value)))
        if rules:
            fields.append(Text(f"rules {rules}", "dim"))
        if fields == self._fields:
            return
        width = self.content_region.width or self.size.width
        before = len(self._layout(width).split()) if self._fields else 0
        self._fields = fields
        self._shown = None
        self.refresh(layout=len(self._layout(width).split()) != before)
