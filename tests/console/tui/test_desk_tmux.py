"""`ledgeragent supervise` in a real terminal (tmux): the retail scenarios in 'approve non-ALLOW', every inbox
item decided with the `a` key until the status line says every session has ended; then the traces and the
desk's audit log on disk."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.support.tmux import Tmux, binary

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")

DECISIONS = re.compile(r"decisions (\d+)")


def decisions(screen: str) -> int:
    found = DECISIONS.search(screen)
    return int(found.group(1)) if found else -1


def test_supervise_retail_to_the_end_with_keys(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = (f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} supervise --domain retail "
               f"--mode 'approve non-ALLOW' --operator tester; sleep 60")
    term = Tmux(command)
    try:
        screen = term.wait(lambda s: "Sessions" in s and "Inbox" in s, timeout=60)
        while "every session has ended" not in screen:
            screen = term.wait(lambda s: "every session has ended" in s or "inbox 0" not in s, timeout=60)
            if "every session has ended" in screen:
                break
            before = decisions(screen)
            term.keys("a")
            screen = term.wait(lambda s, n=before: decisions(s) > n or "every session has ended" in s, timeout=60)
        assert "3 ended" in screen and "0 failed" in screen and "inbox 0" in screen
        shown = decisions(screen)
        term.keys("q")  # nothing runs any more: quits without asking
        term.wait(lambda s: "LedgerAgent Desk" not in s, timeout=30)
    finally:
        term.kill()
    traces = sorted((home / "sessions").glob("*/trace.jsonl"))
    assert len(traces) == 3
    decided = []
    for trace in traces:
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "user_stop"
        decided += [e for e in events if e["type"] == "supervisor_decision"]
    assert decided and {(d["decision"], d["who"]) for d in decided} == {("accept_verdict", "tester")}
    assert shown == len(decided)  # the status line counted every decision the traces hold
    (audit,) = (home / "desks").glob("*/audit.jsonl")
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert len([r for r in records if r["type"] == "decision"]) == len(decided)
    assert all(r["executed"] is False for r in records if r["type"] == "outcome")
