"""Session transcripts as Markdown, for sharing a demo or attaching to a bug report."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def _call(call: Any) -> str:
    if call.parse_error:
        return f"{call.name}({call.raw_arguments})"
    return f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"


def transcript_markdown(events: Iterable[Any], title: str = "") -> str:
    lines = [f"# LedgerAgent session{': ' + title if title else ''}", ""]
    for e in events:
        if e.type == "session_started":
            lines += [f"- domain: **{e.domain}**, scenario: **{e.scenario or 'free chat'}**, agent: **{e.agent}**, "
                      f"model: **{e.model}**, user: **{e.user}**", ""]
        elif e.type == "message":
            lines += [f"**{'Customer' if e.role == 'user' else 'Agent'}:** {e.text}", ""]
        elif e.type == "assistant_turn":
            if e.text:
                lines += [f"**Agent:** {e.text}", ""]
            lines += [f"- → `{_call(c)}`" for c in e.tool_calls]
        elif e.type == "gate_decision":
            failed = [r for r in e.results if r.status not in ("pass", "disabled")]
            lines.append(f"  - gate **{e.verdict}**" + ("" if not failed else ": " + "; ".join(
                f"`{r.predicate_id}` {r.reason}" for r in failed)))
        elif e.type == "supervisor_decision":
            lines.append(f"  - operator **{e.who}** {e.decision} at {e.when}" + (f": {e.reason}" if e.reason else ""))
        elif e.type == "tool_result":
            if e.outcome == "ok":
                content = e.content if len(e.content) <= 200 else e.content[:199] + "…"
                lines.append(f"  - ← `{content}`")
            elif e.outcome != "rejected":
                lines.append(f"  - ✗ {e.content}")
        elif e.type == "model_error":
            lines.append(f"- model error ({e.kind}): {e.message}")
        elif e.type == "session_ended":
            lines += ["", f"*Session ended: {e.reason} after {e.steps} steps.*"]
    return "\n".join(lines).rstrip() + "\n"
