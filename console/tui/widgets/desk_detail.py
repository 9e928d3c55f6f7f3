"""The highlighted inbox item in full: verdict, each failing rule (status, reason, policy sentence or house
rule, evidence), the call's arguments, what the keys will do, and the desk's last refusal of it.

Everything shown comes from the `ItemView` (the gate's recorded results), never from a live session, so a
remote desk shows the same detail. The text is rebuilt only when the item or what is shown of it changes.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.widget import Widget

from console.runtime.desk.view import DeskSnapshot, ItemKind, ItemView
from console.runtime.facts import refusal_words
from console.tui.theme import Palette, palette_of
from console.tui.widgets.desk_format import duration, verdict_text
from core.gate import HOUSE_RULE_PREFIX

FAILED_MARK = {"violation": "✗", "missing": "?", "error": "!", "disabled": "-"}


def policy_line(policy: str) -> tuple[str, str]:
    """(label, text): a house rule says so, a policy rule quotes its sentence."""
    if policy.startswith(HOUSE_RULE_PREFIX):
        return "house rule", policy[len(HOUSE_RULE_PREFIX):]
    return "policy", policy


def keys_line(item: ItemView) -> str:
    if item.kind is ItemKind.STEP:
        return f"n (or a): let this session take its next step ({item.tool}) · r resume: leave step mode"
    if item.verdict in (None, "ALLOW"):
        bulk = " · A approve every rule-free ALLOW of this tool" if item.rule_free else ""
        return f"a approve: it runs · v veto · e edit & re-gate{bulk}"
    return f"a accept the {item.verdict}: not run · v veto · e edit & re-gate · f force-allow (reason)"


def detail_text(item: ItemView, snapshot: DeskSnapshot, operator: str, colours: Palette) -> Text:
    text = Text()
    text.append(f"{item.id}  ", "bold")
    text.append(f"session {item.session_id}  ")
    if item.kind is ItemKind.STEP:
        text.append(f"step: waits to make its next {item.tool}", "bold")
    else:
        text.append(item.tool, "bold")
        text.append("  gate: ")
        text.append_text(verdict_text(item.verdict, colours)).append(f" {refusal_words(item.refusal)}".rstrip())
    text.append(f"  waited {duration(item.waited(snapshot.now))} (asked {item.asked_when})", "dim")
    if item.claimed_by is not None:
        who = "you" if item.claimed_by == operator else item.claimed_by
        text.append(f"\nclaimed by {who}", colours.text("warning" if who != "you" else "foreground", "bold"))
    if item.error:
        text.append("\nrefused: ", colours.text("error", "bold"))
        text.append(item.error, colours.text("error"))
    if item.kind is ItemKind.WRITE:
        failing = item.failing
        if item.verdict is None:
            text.append("\nno gate in this agent configuration", "dim")
        elif not failing:
            passed = ", ".join(r.id for r in item.rules) or "no rule guards this tool"
            text.append(f"\nall rules passed ({passed})", colours.text("success"))
        for rule in failing:
            text.append(f"\n{FAILED_MARK.get(rule.status, '✗')} {rule.id}", colours.verdict_text(rule.verdict))
            text.append(f"  {rule.status} → {rule.verdict}", "dim")
            if rule.reason:
                text.append(f"\n    {rule.reason}")
            label, sentence = policy_line(rule.policy)
            text.append(f"\n    {label}: ", "dim italic")
            text.append(sentence or "—", "italic")
            if rule.evidence:
                text.append("\n    evidence: ", "dim")
                text.append(", ".join(rule.evidence))
        passed_ids = [r.id for r in item.rules if r.status == "pass"]
        if failing and passed_ids:
            text.append(f"\npassed: {', '.join(passed_ids)}", "dim")
        if item.evidence:
            text.append("\nevidence paths: ", "dim")
            text.append(", ".join(item.evidence))
        text.append("\narguments: ", "dim")
        text.append(json.dumps(dict(item.arguments), ensure_ascii=False, sort_keys=True))
    text.append(f"\nkeys: {keys_line(item)}", "dim")
    return text


class ItemDetail(Widget):
    """Renders stored text. A new text repaints this widget only; the screen is laid out again only when the
    text's line count changes (a Static.update re-lays out, and so repaints, the whole screen: with fifty
    sessions moving that was every frame)."""

    DEFAULT_CSS = "ItemDetail { height: auto; min-height: 100%; }"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: Text | None = None
        self._lines = 0
        self.item_id: str | None = None

    def render(self) -> Text:
        return self._shown or Text()

    def show(self, item: ItemView | None, snapshot: DeskSnapshot, operator: str) -> None:
        self.item_id = item.id if item is not None else None
        if item is None:
            text = Text("Nothing waits for a human." if not snapshot.items else "Highlight an inbox item.", "dim")
        else:
            text = detail_text(item, snapshot, operator, palette_of(self))
        if text != self._shown:
            self._shown = text
            width = max(1, self.content_region.width or self.size.width)
            viewport = self.parent.content_region.height if isinstance(self.parent, Widget) else 0
            lines = max(len(text.wrap(self.app.console, width)), viewport)  # at least the pane: min-height
            self.refresh(layout=lines != self._lines)
            self._lines = lines

    @property
    def plain(self) -> str:
        return self._shown.plain if self._shown is not None else ""
