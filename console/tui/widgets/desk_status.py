"""The desk's one status line: sessions running / waiting / ended / failed, inbox size, time-to-decision,
the audit log; once every session has ended, that it has; and first of all, when a remote desk's host is
gone or not answering, that (`DeskSnapshot.lost`).

A plain Widget that renders stored text (as console/tui/widgets/status_bar.py): it changes on every tick, and a
Static.update would re-lay out the whole screen each time.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.widget import Widget

from console.runtime.desk.view import DeskSnapshot, RowPhase, Service
from console.runtime.facts import returned_for_read
from console.tui.theme import OPERATOR, palette_of
from console.tui.widgets.desk_format import duration
from core.strict_json import inert


def counts(snapshot: DeskSnapshot) -> Counter[str]:
    by_phase = Counter(r.phase for r in snapshot.rows)
    return Counter({
        # a step-mode pause waits on the inbox (its step item) as much as a call does: counted where the quit
        # question counts it, never as running
        "running": by_phase[RowPhase.RUNNING], "queued": by_phase[RowPhase.QUEUED],
        "waiting": by_phase[RowPhase.WAITING] + by_phase[RowPhase.PAUSED], "ended": by_phase[RowPhase.ENDED],
        "failed": by_phase[RowPhase.FAILED]})


class DeskStatus(Widget):
    DEFAULT_CSS = "DeskStatus { height: 1; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._text = Text()

    def render(self) -> Text:
        return self._text

    @property
    def plain(self) -> str:
        return self._text.plain

    def show(self, snapshot: DeskSnapshot) -> None:
        colours = palette_of(self)
        n = counts(snapshot)
        text = Text(no_wrap=True, overflow="ellipsis")
        if snapshot.lost:  # first, so that it shows at any width: nothing on this screen moves any more
            text.append(f" {snapshot.lost[:1].upper()}{snapshot.lost[1:]}. ", colours.text("error", "bold reverse"))
        if snapshot.done:
            text.append(f" every session has ended ({n['ended']} ended, {n['failed']} failed) ",
                        colours.text("success", "bold"))
        else:
            text.append(f" {n['running']} running ", colours.text("success", "bold"))
            if n["queued"]:  # waiting for a slot (--concurrency), not started yet
                text.append(f" {n['queued']} queued ")
            text.append(f" {n['waiting']} waiting ", colours.text(OPERATOR, "bold") if n["waiting"] else "")
            text.append(f" {n['ended']} ended ")
            text.append(f" {n['failed']} failed ", colours.text("error", "bold") if n["failed"] else "")
        worst = max((snapshot.service(i) for i in snapshot.items), default=Service.OK,
                    key=lambda s: (Service.OK, Service.AMBER, Service.RED).index(s))
        role = {Service.AMBER: "warning", Service.RED: "error"}.get(worst)
        text.append(f"  inbox {len(snapshot.items)}", colours.text(role, "bold") if role else "bold")
        stats = snapshot.stats
        text.append("  decisions ", "dim")
        text.append(str(stats.decisions))
        text.append("  median ", "dim")
        text.append(duration(stats.median_s) if stats.median_s is None or stats.median_s >= 1
                    else f"{stats.median_s:.1f}s")
        text.append("  worst ", "dim")
        text.append(duration(stats.worst_s) if stats.worst_s is None or stats.worst_s >= 1
                    else f"{stats.worst_s:.1f}s")
        text.append(returned_for_read(snapshot.rows))
        text.append(f"  amber {duration(snapshot.amber_s)} red {duration(snapshot.red_s)}", "dim")
        if snapshot.audit_path:
            text.append("  audit ", "dim")
            text.append(inert(snapshot.audit_path))
        if text != self._text:
            self._text = text
            self.refresh()
