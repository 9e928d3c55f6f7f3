"""Transcript pane: the conversation, tool calls with their arguments, gate verdicts inline, results folded.

One small widget per entry inside an anchored VerticalScroll: it follows the tail until the operator
scrolls up, and older entries are dropped past `MAX_ENTRIES` so long sessions stay fast (the trace on disk
keeps everything).
"""

from __future__ import annotations

import json
from typing import Any

from rich.markdown import Markdown
from rich.text import Text
from textual.await_remove import AwaitRemove
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from console.textview import format_call, shorten

MAX_ENTRIES = 600
BADGE = {"ALLOW": "bold black on green", "REVISE": "bold black on yellow", "BLOCK": "bold white on red"}


class Entry(Static):
    """One line or block of the transcript; `kind` is also its CSS class."""

    def __init__(self, renderable: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(renderable, classes=f"entry {kind}", **kwargs)
        self.kind = kind


class ToolResultEntry(Collapsible):
    def __init__(self, title: str, content: str, kind: str) -> None:
        super().__init__(Static(Text(content), classes="result-body"), title=title, collapsed=True,
                         classes=f"entry {kind}")


class TranscriptPane(VerticalScroll):
    BORDER_TITLE = "Transcript"
    can_focus = True

    def on_mount(self) -> None:
        self.anchor()

    def clear(self) -> AwaitRemove:
        return self.remove_children()

    def _add(self, widget: Widget) -> None:
        self.mount(widget)
        extra = len(self.children) - MAX_ENTRIES
        if extra > 0:
            for old in list(self.children)[:extra]:
                old.remove()

    def show_intro(self, title: str, description: str, hints: str) -> None:
        """What the presenter sees before pressing a key: the scenario and what to press."""
        text = Text(title, "bold")
        if description:
            text.append("\n\n" + description)
        text.append("\n\n" + hints, "italic")
        self._add(Entry(text, "intro"))

    def add_event(self, event: Any) -> None:
        handler = getattr(self, f"_show_{event.type}", None)
        if handler is not None:
            handler(event)

    def _show_message(self, e: Any) -> None:
        who = "Customer" if e.role == "user" else "Agent"
        body = Markdown(f"**{who}:** {e.text}") if e.role == "assistant" else Text.assemble((f"{who}: ", "bold"),
                                                                                          e.text)
        self._add(Entry(body, "user" if e.role == "user" else "agent"))

    def _show_assistant_turn(self, e: Any) -> None:
        if e.text:
            prefix = "**Agent:** " if not e.tool_calls else "**Agent** *(with tool calls)*: "
            self._add(Entry(Markdown(prefix + e.text), "agent"))
        for call in e.tool_calls:
            shown = format_call(call.name, call.arguments) if call.parse_error is None else (
                f"{call.name}({call.raw_arguments})")
            self._add(Entry(Text.assemble(("→ ", "bold"), (shown, "bold")), "call"))

    def _show_gate_decision(self, e: Any) -> None:
        failed = [r for r in e.results if r.status not in ("pass", "disabled")]
        text = Text.assemble(("  gate ", "dim"), (f" {e.verdict} ", BADGE[e.verdict]), " ",
                             (e.call.name, "bold"))
        if e.repeated:
            text.append("  (repeated call)", "dim")
        if e.escalated:
            text.append("  (escalated after repeated REVISE)")
        for r in failed:
            text.append(f"\n    {r.predicate_id}: ", "bold")
            text.append(r.reason)
        self._add(Entry(text, f"gate gate-{e.verdict}"))

    def _show_supervisor_decision(self, e: Any) -> None:
        text = Text.assemble(("  operator ", "bold"), (e.who, "bold"), f": {e.decision}")
        if e.edited_arguments is not None:
            text.append(f" → {json.dumps(e.edited_arguments, sort_keys=True)}")
        if e.reason:
            text.append(f" — {e.reason}")
        self._add(Entry(text, "override"))

    def _show_tool_result(self, e: Any) -> None:
        if e.outcome == "ok":
            title = f"← {e.call.name}: {shorten(e.content, 70)}"
            self._add(ToolResultEntry(title, _pretty(e.content), "result"))
        elif e.outcome == "rejected":
            self._add(Entry(Text(f"  ✗ {e.call.name} not executed", "italic"), "rejected"))
        else:
            self._add(Entry(Text(f"  ✗ {shorten(e.content, 300)}"), "error"))

    def _show_ledger_updated(self, e: Any) -> None:
        parts = [f"+{p}" for p in e.added] + [f"~{p}" for p in e.changed] + [f"={p}" for p in e.refreshed]
        self._add(Entry(Text("  ledger " + " ".join(parts), "dim"), "ledger-note"))

    def _show_ledger_staled(self, e: Any) -> None:
        self._add(Entry(Text("  ledger stale: " + ", ".join(e.paths), "dim"), "ledger-note"))

    def _show_model_retry(self, e: Any) -> None:
        self._add(Entry(Text(f"  model {e.kind}: retry {e.attempt} in {e.delay:.1f}s — {e.message}"), "warning"))

    def _show_model_error(self, e: Any) -> None:
        self._add(Entry(Text(f"  model error ({e.kind}, {e.attempts} attempt(s)): {e.message}"), "error"))

    def _show_session_ended(self, e: Any) -> None:
        text = f"— session ended: {e.reason} after {e.steps} steps"
        if e.detail:
            text += f" ({e.detail})"
        self._add(Entry(Text(text, "bold"), "ended"))


def _pretty(content: str) -> str:
    try:
        return json.dumps(json.loads(content), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return content
