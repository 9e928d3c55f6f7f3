"""Console figures: cold start to first frame, appending an event to the panes with a long session,
and the memory that session takes. Each runs in a fresh interpreter so imports and memory are honest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import MS, Result, S, summarise

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return env | {"LEDGERAGENT_HOME": home}


def bench_cold_start(repeat: int = 5) -> Result:
    """Process start → the console composed and drawn once (headless driver), interpreter start-up included."""
    samples: list[int] = []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(repeat):
            start = time.perf_counter_ns()
            child = subprocess.Popen([sys.executable, "-m", "benchmarks.console_child", "first-frame"], cwd=ROOT,
                                     stdout=subprocess.PIPE, text=True, env=_env(home))
            assert child.stdout is not None
            line = child.stdout.readline()
            elapsed = time.perf_counter_ns() - start
            child.wait(timeout=30)
            if line.strip() != "ready":
                raise RuntimeError(f"console did not start: {line!r}")
            samples.append(elapsed)
    return summarise("console_cold_start", "console: cold start to first frame (fresh interpreter)", samples,
                     target_ns=int(1.5 * S))


APPEND_SIZES = ((160, 45), (120, 35), (80, 24))


def _child(*argv: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([sys.executable, "-m", "benchmarks.console_child", *argv], cwd=ROOT,
                              capture_output=True, text=True, env=_env(home), timeout=900, check=True)
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def bench_append(samples: int = 200) -> list[Result]:
    """One event appended to the panes with 2,000 events already in the transcript and a 5,000-entry ledger in
    the tree, at each terminal size (the stacked layout below 110 columns included): the work (handler + the
    layout and drawing it causes); at 160x45 also the latency until that frame is on screen (adds the wait
    for Textual's 60 fps update timer) and the peak memory of that process."""
    results: list[Result] = []
    for width, height in APPEND_SIZES:
        data = _child("append", str(samples), f"{width}x{height}")
        suffix = "" if (width, height) == APPEND_SIZES[0] else f"_{width}x{height}"
        results.append(summarise(f"console_append_event{suffix}",
                                 f"console: append one event at {width}x{height}, {data['transcript_events']:,}-event "
                                 f"transcript, {data['ledger_entries']:,}-entry ledger", data["samples_ns"],
                                 target_ns=16 * MS))
        if not suffix:
            results.append(summarise("console_append_latency",
                                     "console: …same event until its frame is drawn (60 fps timer)",
                                     data["latency_ns"]))
            peak = float(data["peak_rss_bytes"])
            results.append(Result(key="console_memory", figure="console: peak memory (RSS) of that session",
                                  median_ns=peak, p95_ns=peak, n=1, target_ns=300 * MIB, unit="B"))
    return results


def bench_layout_switch(samples: int = 40) -> list[Result]:
    """Resizing across the stacked-layout breakpoint (120 <-> 100 columns): from the terminal's Resize event to
    the first frame that shows the new layout completely (see `console_child.layout_shown`), wall and CPU.
    The note says how many frames were drawn up to that one (one means no frame in the old layout first)."""
    data = _child("layout", str(samples))
    frames = sorted(data["frames"])
    note = f"frames drawn per switch: median {frames[len(frames) // 2]}, max {frames[-1]}"
    return [summarise("console_layout_switch", "console: layout switch across the 110-column breakpoint, until "
                      "the new layout is drawn complete", data["samples_ns"], target_ns=50 * MS, note=note),
            summarise("console_layout_switch_cpu", "console: …same switch, CPU time of the process",
                      data["cpu_ns"], target_ns=50 * MS)]


def bench_compare_append(samples: int = 100) -> list[Result]:
    """`console --compare` at 160x45, both sides stepped together: one event appended to each side in turn, with
    2,000 events already on each side and a 5,000-entry ledger on the LedgerAgent side; per side, the handler
    (panes and the difference strip) plus the frame it causes."""
    data = _child("compare-append", str(samples), "160x45")
    names = {"fc": "baseline", "ledger": "LedgerAgent"}
    return [summarise(f"console_compare_append_{side}",
                      f"console --compare: append one event on the {names[side]} side while both step together, "
                      f"160x45, {data['transcript_events']:,} events per side", data["samples_ns"][side],
                      target_ns=16 * MS) for side in ("fc", "ledger")]


def bench_console() -> list[Result]:
    return [bench_cold_start(), *bench_append(), *bench_compare_append(), *bench_layout_switch()]
