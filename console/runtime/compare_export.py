"""A compare run as Markdown and HTML, for someone who was not in the room: both transcripts aligned by turn (a
turn starts with a customer message), the difference strip, and each database against the starting one.

Rendered from the two sessions' events, and "What differs" from `ComparePair.difference_lines()`, the lines the
screen's strip shows (console/runtime/compare_run.py), never from the screen itself. Written into the LedgerAgent
session's folder (`compare.md`, `compare.html`), naming both folders.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from console.runtime.compare_run import SIDE_NAMES, SIDES, SIMULATED, ComparePair, side_label
from console.runtime.export import event_lines
from core.db_diff import DbDiff
from core.events import MessageSent
from core.private_files import write_text


def turns(events: Sequence[Any]) -> list[list[Any]]:
    """The events split where each customer message starts a turn (turn 0: what came before the first one)."""
    out: list[list[Any]] = [[]]
    for event in events:
        if isinstance(event, MessageSent) and event.role == "user":
            out.append([])
        out[-1].append(event)
    return out


def _heading(pair: ComparePair) -> tuple[str, str]:
    scenario = pair.scenario
    title = scenario.title if scenario is not None else pair.spec.scenario or "free chat"
    mistake = scenario.baseline_mistake if scenario is not None else None
    said = f"The baseline's mistake here: it {mistake.says} ({mistake.kind})." if mistake else \
        "This scenario declares no baseline mistake."
    return f"{pair.spec.domain} · {title}", said


def _db_lines(diff: DbDiff | None) -> list[str]:
    if diff is None:
        return ["(the run has not ended: no end state yet)"]
    return [diff.summary(), *(change.describe() for change in diff.changes)]


def compare_markdown(pair: ComparePair) -> str:
    heading, said = _heading(pair)
    lines = [f"# Compare run: {heading}", "", f"> {SIMULATED}", "", said, ""]
    for side in SIDES:
        folder = pair[side].folder
        lines.append(f"- {SIDE_NAMES[side]}: session folder `{folder}`")
    lines += ["", "## What differs", ""]
    lines += [f"- **{role}**: {text}" for role, text in pair.difference_lines()]
    histories = {side: turns(pair[side].bus.history) for side in SIDES}
    lines += ["", "## Turn by turn", ""]
    for number in range(max(len(h) for h in histories.values())):
        lines += [f"### Turn {number}" if number else "### Before the first customer message", ""]
        for side in SIDES:
            chunk = histories[side][number] if number < len(histories[side]) else []
            lines += [f"#### {SIDE_NAMES[side]}", "", *(event_lines(chunk) or ["(nothing)"]), ""]
    lines += ["## Database against the starting one", ""]
    for side in SIDES:
        found = pair.end_diffs.get(side)
        lines += [f"### {side_label(side)}", "", *(f"- {line}" for line in _db_lines(found)), ""]
    return "\n".join(lines).rstrip() + "\n"


STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #bbb;vertical-align:top;padding:.4em;width:50%}
pre{white-space:pre-wrap;margin:0;font-size:.85em}.simulation{background:#fff3cd;padding:.5em;font-weight:bold}
.baseline{color:#a4161a}.ledger{color:#1b7f3b}.end{color:#8a5a00}"""


def compare_html(pair: ComparePair) -> str:
    heading, said = _heading(pair)
    esc = html.escape
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Compare run: {esc(heading)}</title><style>{STYLE}</style></head><body>",
             f"<h1>Compare run: {esc(heading)}</h1>", f'<p class="simulation">{esc(SIMULATED)}</p>',
             f"<p>{esc(said)}</p><ul>"]
    parts += [f"<li>{esc(SIDE_NAMES[side])}: <code>{esc(str(pair[side].folder))}</code></li>" for side in SIDES]
    parts += ["</ul><h2>What differs</h2><ul>"]
    parts += [f'<li class="{esc(role)}">{esc(text)}</li>' for role, text in pair.difference_lines()]
    parts += ["</ul><h2>Turn by turn</h2><table><tr>",
              *(f"<th>{esc(SIDE_NAMES[side])}</th>" for side in SIDES), "</tr>"]
    histories = {side: turns(pair[side].bus.history) for side in SIDES}
    for number in range(max(len(h) for h in histories.values())):
        parts.append(f'<tr><th colspan="2">{"Turn " + str(number) if number else "Before the first customer message"}'
                     "</th></tr><tr>")
        for side in SIDES:
            chunk = histories[side][number] if number < len(histories[side]) else []
            parts.append(f"<td><pre>{esc(chr(10).join(event_lines(chunk)) or '(nothing)')}</pre></td>")
        parts.append("</tr>")
    parts.append("</table><h2>Database against the starting one</h2>")
    for side in SIDES:
        parts.append(f"<h3>{esc(side_label(side))}</h3><ul>")
        parts += [f"<li>{esc(line)}</li>" for line in _db_lines(pair.end_diffs.get(side))]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_exports(pair: ComparePair) -> list[Path]:
    folder = pair["ledger"].folder
    if folder is None:
        return []
    written = [folder / "compare.md", folder / "compare.html"]
    write_text(written[0], compare_markdown(pair))  # 0600, as the traces they are made of
    write_text(written[1], compare_html(pair))
    return written
