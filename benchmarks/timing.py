"""Timing primitives and the result row every figure produces.

Every sample is one `time.perf_counter_ns()` pair around exactly the operation named by the figure; setup
that must happen between samples (a fresh gate, writes before a restore) runs outside the timed region.
The garbage collector stays enabled, as it is in a session: a collection that lands inside a sample is
part of what a session pays, and it shows in the p95 rather than the median.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

US = 1_000
MS = 1_000_000
S = 1_000_000_000


@dataclass(frozen=True)
class Result:
    """One row of the report. `target_ns` None means informative (no pass/fail)."""

    key: str  # stable identifier, used in the JSON output
    figure: str  # what was measured, as shown in the table
    median_ns: float
    p95_ns: float
    n: int
    target_ns: int | None = None
    note: str = ""
    unit: str = "ns"  # "ns" for times; "B" for a memory figure (median_ns/p95_ns/target_ns then hold bytes);
    # "count" for a number of things (e.g. orphan processes); "%" for a ratio (token_ratio: median_ns holds the
    # figure, p95_ns a companion figure named in the note)

    @property
    def status(self) -> str:
        if self.target_ns is None:
            return "INFO"
        return "PASS" if self.median_ns < self.target_ns else "FAIL"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "figure": self.figure,
            "target_ns": self.target_ns,
            "median_ns": self.median_ns,
            "p95_ns": self.p95_ns,
            "n": self.n,
            "status": self.status,
            "note": self.note,
            "unit": self.unit,
        }


def percentile(samples: Sequence[int], fraction: float) -> float:
    """Nearest-rank percentile (no interpolation: every reported p95 is a time that really happened)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return float(ordered[rank - 1])


def summarise(key: str, figure: str, samples: Sequence[int], target_ns: int | None = None,
              note: str = "") -> Result:
    if not samples:
        raise ValueError(f"{key}: no samples")
    return Result(key=key, figure=figure, median_ns=float(statistics.median(samples)),
                  p95_ns=percentile(samples, 0.95), n=len(samples), target_ns=target_ns, note=note)


def time_sync(operation: Callable[[], object], *, repeat: int, warmup: int,
              setup: Callable[[], object] | None = None) -> list[int]:
    """`repeat` timed runs of `operation` after `warmup` untimed ones; `setup` runs untimed before each."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    gc.collect()
    clock = time.perf_counter_ns
    samples: list[int] = []
    for index in range(warmup + repeat):
        if setup is not None:
            setup()
        start = clock()
        operation()
        elapsed = clock() - start
        if index >= warmup:
            samples.append(elapsed)
    return samples


async def time_async(operation: Callable[[], Awaitable[object]], *, repeat: int, warmup: int,
                     setup: Callable[[], Awaitable[object]] | None = None) -> list[int]:
    """The async twin of `time_sync`: the timed region is one `await operation()`."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    gc.collect()
    clock = time.perf_counter_ns
    samples: list[int] = []
    for index in range(warmup + repeat):
        if setup is not None:
            await setup()
        start = clock()
        await operation()
        elapsed = clock() - start
        if index >= warmup:
            samples.append(elapsed)
    return samples


def format_value(value: float | None, unit: str = "ns") -> str:
    """A time (ns), a size in bytes ("B"), a "count" or a percentage ("%"), in the unit that reads best."""
    if unit == "count" and value is not None:
        return f"{value:.0f}"
    if unit == "%" and value is not None:
        return f"{value:.1f} %"
    if unit != "B" or value is None:
        return format_ns(value)
    if abs(value) < 1024:
        return f"{value:.0f} B"
    if abs(value) < 1024 * 1024:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 1024 / 1024:.1f} MiB"


def format_ns(value: float | None) -> str:
    if value is None:
        return "-"
    if value < US:
        return f"{value:.0f} ns"
    if value < MS:
        return f"{value / US:.1f} µs"
    if value < S:
        return f"{value / MS:.2f} ms"
    return f"{value / S:.2f} s"
