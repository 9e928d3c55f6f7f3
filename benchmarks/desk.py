"""Supervision desk figures, each in a fresh interpreter (`benchmarks.desk_child`): resident memory
per live session with 50 offline sessions alive at once, and, with the desk App drawing 50 sessions on this
machine's cores, the time from a gate verdict to its inbox item on screen and the cost of one desk redraw."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Any

from benchmarks.console import ROOT, _env
from benchmarks.timing import MS, Result, summarise

SESSIONS = 50
MIB = 1024 * 1024


def _child(*argv: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([sys.executable, "-m", "benchmarks.desk_child", *argv], cwd=ROOT, capture_output=True,
                              text=True, env=_env(home), timeout=900, check=True)
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def bench_desk_memory(sessions: int = SESSIONS) -> Result:
    data = _child("memory", str(sessions))
    if data["waiting"] != sessions:
        raise RuntimeError(f"only {data['waiting']} of {sessions} sessions reached the inbox")
    per = (data["during"] - data["before"]) / sessions
    figure = (f"desk: resident memory per live session, {sessions} offline sessions waiting at once "
              f"({data['before'] / MIB:.0f} -> {data['during'] / MIB:.0f} MiB)")
    return Result(key="desk_memory_per_session", figure=figure, median_ns=per, p95_ns=per, n=1,
                  target_ns=15 * MIB, unit="B")


def bench_desk_screen(sessions: int = SESSIONS) -> list[Result]:
    data = _child("screen", str(sessions))
    return [
        summarise("desk_item_visible", f"desk: gate verdict -> its inbox item on screen, {sessions} sessions "
                  "running (approve writes, each item approved when shown)", data["latency_ns"],
                  target_ns=100 * MS),
        summarise("desk_redraw", f"desk: one redraw with {data['rows']} session rows (handler + its frame, "
                  "160x45, while the sessions run)", data["redraw_ns"], target_ns=16 * MS),
    ]


def bench_desk() -> list[Result]:
    return [*bench_desk_screen(), bench_desk_memory()]
