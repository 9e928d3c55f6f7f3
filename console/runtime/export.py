"""Session transcripts as Markdown, for sharing a demo or attaching to a bug report."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from console.runtime.facts import decision_summary, outcome_summary, verdict_summary, words


def _call(call: Any) -> str:
    if call.parse_error:
        return f"{call.name}({call.raw_arguments})"
    return f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"


def transcript_markdown(events: Iterable[Any], title: str = "") -> str:
    lines = [f"# LedgerAgent session{': ' + title if title else ''}", "", *event_lines(events)]
    return "\n".join(lines).rstrip() + "\n"


def event_lines(events: Iterable[Any]) -> list[str]:
    """The Markdown lines of a run of events, as the transcript export writes them (also a compare export's
    turn-by-turn columns)."""
    lines: list[str] = []
    for e in events:
        if e.type == "session_started":
            lines += [f"- domain: **{e.domain}**, scenario: **{e.scenario or 'free chat'}**, agent: **{e.agent}**, "
                      f"model: **{e.model}**, user: **{e.user}**"]
            if e.disabled_predicates:
                lines.append(f"- rules NOT CHECKED (disabled): {', '.join(e.disabled_predicates)}")
            if e.rules_version:
                lines.append(f"- rules version: {e.rules_version}")
            lines.append("")
        elif e.type == "message":
            text = e.text.replace("###STOP###", words("###STOP###"))
            lines += [f"**{'Customer' if e.role == 'user' else 'Agent'}:** {text}", ""]
        elif e.type == "assistant_turn":
            if e.text:
                lines += [f"**Agent:** {e.text}", ""]
            lines += [f"- → `{_call(c)}`" for c in e.tool_calls]
        elif e.type == "gate_decision":
            lines.append(f"  - gate **{e.verdict}** ({verdict_summary(e)})")
            lines += [f"    - `{r.predicate_id}` {r.reason}" for r in e.results if r.status not in ("pass", "disabled")]
        elif e.type == "supervisor_decision":
            lines.append(f"  - operator: {decision_summary(e)}")
        elif e.type == "tool_result":
            if e.kind == "write":
                lines.append(f"  - outcome: {outcome_summary(e, 200)}")
            elif e.outcome == "ok":
                content = e.content if len(e.content) <= 200 else e.content[:199] + "…"
                lines.append(f"  - ← `{content}`")
            else:
                lines.append(f"  - ✗ {e.content}")
        elif e.type == "model_error":
            lines.append(f"- model error ({e.kind}): {e.message}")
        elif e.type == "session_ended":
            lines += ["", f"*Session ended: {words(e.reason)} after {e.steps} steps.*"]
    return lines
