"""The desk's status line counts each phase as itself: a session waiting for a slot is queued, not running; a
step-mode pause waits on the inbox (as the quit question counts it), not running."""

from __future__ import annotations

from console.runtime.desk.view import DeskSnapshot, DeskStats, RowPhase, RowView
from console.tui.widgets.desk_status import counts


def row(n: int, phase: RowPhase) -> RowView:
    return RowView(id=f"s{n:02d}", domain="retail", label="x", model="scripted", mode="step", phase=phase)


def test_queued_sessions_are_not_counted_as_running() -> None:
    phases = [RowPhase.QUEUED] * 3 + [RowPhase.RUNNING, RowPhase.PAUSED, RowPhase.WAITING, RowPhase.ENDED,
                                      RowPhase.FAILED]
    snapshot = DeskSnapshot(now=0, rows=tuple(row(n, p) for n, p in enumerate(phases)), items=(),
                            stats=DeskStats(), amber_s=1, red_s=2)
    assert dict(counts(snapshot)) == {"running": 1, "queued": 3, "waiting": 2, "ended": 1, "failed": 1}
