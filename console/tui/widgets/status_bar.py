"""The lines that answer "what is going on": phase, step, tokens, mode, seat, domain, scenario, model, rules.

A plain Widget that renders stored fields and refreshes without a layout pass unless its number of lines
changes: it changes on almost every event, and a Static.update would re-lay out the whole screen each time.
Fields are never cut, at any width: they wrap onto further lines at a field's boundary, so a label always
keeps its value beside it (an 80-column terminal gets three lines where a wide one gets one or two). The facts
come first (phase, the pane in front in the stacked layout, step, tokens), the long names after them. A field
wider than the bar itself (a long error) folds onto lines of its own, at its words.
"""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from console.tui.theme import INFO, OPERATOR, palette_of
from core.strict_json import inert

PHASE_ROLE = {"running": "success", "paused": "warning", "waiting for operator": OPERATOR, "ready": INFO,
              "your turn": OPERATOR, "replay": INFO}  # a phase's colour role; "ended" and others stay plain
GAP = "  "
SPINNER_ROOM = "⠿"  # a spinner frame's width: the room the bar keeps for it while the session runs


class StatusBar(Widget):
    DEFAULT_CSS = "StatusBar { height: auto; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._fields: list[Text] = []
        self._shown: tuple[int, Text] | None = None  # (width, text) last laid out
        self._reserve: list[Text] = []  # while running: the fields as they are with the spinner shown

    def render(self) -> Text:
        return self._layout(self.content_region.width or self.size.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._height(width)

    def _height(self, width: int) -> int:
        """The lines the fields take, and while the session runs at least those it takes with the model's
        spinner shown: the spinner comes and goes with every model call, and the panes below must not jump."""
        lines = len(self._layout(width).split())
        if self._reserve:
            lines = max(lines, len(self._wrap(self._reserve, width).split()))
        return lines

    def _layout(self, width: int) -> Text:
        if self._shown is not None and self._shown[0] == width:
            return self._shown[1]
        text = self._wrap(self._fields, width)
        self._shown = (width, text)
        return text

    def _wrap(self, fields: list[Text], width: int) -> Text:
        """`fields` in lines of at most `width` cells, each field whole: a field that does not fit on the line
        begins the next one, and one wider than `width` folds at its words onto lines of its own."""
        lines: list[Text] = []
        line = Text()
        for field in fields:
            if width > 0 and field.cell_len > width:
                if line.cell_len:
                    lines.append(line)
                *whole, line = field.wrap(self.app.console, width, overflow="fold")
                lines.extend(whole)
                continue
            needed = field.cell_len + (len(GAP) if line.cell_len else 0)
            if width > 0 and line.cell_len and line.cell_len + needed > width:
                lines.append(line)
                line = Text()
            if line.cell_len:
                line.append(GAP)
            line.append_text(field)
        lines.append(line)
        text = Text("\n").join(lines)
        text.no_wrap = True  # laid out here: every line already fits
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

        def fields_with(spinning: str) -> list[Text]:
            fields = [Text(f"{phase}{' — ' + ready_hint if ready_hint else ''}", phase_style)]
            if front:
                field = Text(f"{front.title()} in front", colours.text(INFO, "bold"))
                if others:
                    field.append(f" · l: {', '.join(o.title() for o in others)}")
                fields.append(field)
            if spinning:
                fields.append(Text(f"{spinning} waiting for the model", colours.text(INFO, "bold")))
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
            return fields

        fields = fields_with(spinner)
        reserve = fields_with(SPINNER_ROOM) if str(phase) == "running" and not spinner else []
        if fields == self._fields and reserve == self._reserve:
            return
        width = self.content_region.width or self.size.width
        before = self._height(width) if self._fields else 0
        self._fields, self._reserve = fields, reserve
        self._shown = None
        self.refresh(layout=self._height(width) != before)
