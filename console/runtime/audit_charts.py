"""The report's charts as inline SVG: horizontal bars, stacked by category, every number written beside its bar.

No script, no external file: the SVG is part of the page (`index.html`), sized by its own viewBox, so it prints
and reads offline. Labels are recorded text (rule ids, model names): they are escaped (`html_text`). Colours
are one map, `CATEGORY_COLOURS`, shared with the page's legend and tables, and every bar carries a `<title>`
(its label, category and count), so a reader who cannot tell the colours apart hovers for the words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from console.runtime.audit_escape import html_text

CATEGORY_COLOURS: dict[str, str] = {
    "ALLOW": "#2e7d32", "needs a read": "#0277bd", "breaks a rule": "#ef8f00", "BLOCK": "#c62828",
    "not judged": "#8d8d8d",
}
OTHER_COLOUR = "#6a1b9a"
ROW_HEIGHT = 22
BAR_HEIGHT = 15
LABEL_WIDTH = 300
BAR_WIDTH = 420
NUMBER_WIDTH = 70
FONT = "font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:12px"


def colour(category: str) -> str:
    return CATEGORY_COLOURS.get(category, OTHER_COLOUR)


@dataclass(frozen=True)
class Bar:
    label: str
    parts: Mapping[str, int]  # category -> count, drawn in the order given
    note: str = ""  # shown after the total (e.g. "house rule")


def _cut(label: str, limit: int = 44) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def bar_chart(bars: Sequence[Bar], *, title: str, categories: Sequence[str]) -> str:
    """One horizontal bar per `Bar`, its parts stacked in `categories` order, scaled to the largest total; a
    legend of the categories that occur under the bars. "" when there is nothing to draw."""
    bars = [b for b in bars if sum(b.parts.values())]
    if not bars:
        return ""
    largest = max(sum(b.parts.values()) for b in bars)
    used = [c for c in categories if any(b.parts.get(c) for b in bars)]
    legend_y = len(bars) * ROW_HEIGHT + 12
    height = legend_y + 20
    width = LABEL_WIDTH + BAR_WIDTH + NUMBER_WIDTH + 120
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" style="{FONT};max-width:100%;height:auto">',
           f"<title>{html_text(title)}</title>"]
    for row, bar in enumerate(bars):
        y = row * ROW_HEIGHT
        total = sum(bar.parts.values())
        out.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + BAR_HEIGHT - 3}" text-anchor="end" fill="currentColor">'
                   f"<title>{html_text(bar.label)}</title>{html_text(_cut(bar.label))}</text>")
        x = float(LABEL_WIDTH)
        for category in used:
            count = bar.parts.get(category, 0)
            if not count:
                continue
            w = BAR_WIDTH * count / largest
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1.5):.1f}" height="{BAR_HEIGHT}" '
                       f'fill="{colour(category)}"><title>{html_text(bar.label)}: {count} '
                       f"{html_text(category)}</title></rect>")
            x += w
        note = f" · {bar.note}" if bar.note else ""
        out.append(f'<text x="{x + 6:.1f}" y="{y + BAR_HEIGHT - 3}" fill="currentColor">{total}'
                   f"{html_text(note)}</text>")
    x = float(LABEL_WIDTH)
    for category in used:
        out.append(f'<rect x="{x:.0f}" y="{legend_y}" width="11" height="11" fill="{colour(category)}"/>'
                   f'<text x="{x + 15:.0f}" y="{legend_y + 10}" fill="currentColor">{html_text(category)}</text>')
        x += 22 + 7.2 * len(category)
    out.append("</svg>")
    return "".join(out)
