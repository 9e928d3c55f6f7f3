"""`ledgeragent check` over a big trajectory: peak RSS and whether it stays flat.

What is measured: a real `ledgeragent check FILE --domain retail` child process (table mode, stdout to
/dev/null) over a generated trajectory of `calls` lines on the shipped retail seed data: reads, gated writes
that run (an address change, so the database and its undo log change) and writes the gate blocks, plus
expectations. Its resident set size is sampled from /proc every 20 ms. Target: peak < 200 MiB; and flat:
the growth from the sample at 10k calls (estimated from the elapsed fraction, calls being uniform) to the
end, reported beside it. Before streaming, a 624k-call file grew past 1.17 GB and was still growing.

Linux only (reads /proc); elsewhere the rows say so and are skipped.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.timing import Result

MIB = 1 << 20
CALLS = 600_000
SEED_USER, SEED_EMAIL = "mia_garcia_4821", "mia.garcia@example.com"
PENDING, OTHERS_PENDING = "#W4821002", "#W3107002"


def _lines() -> itertools.cycle[str]:
    rows = [
        {"name": "find_user_id_by_email", "arguments": {"email": SEED_EMAIL}},
        {"name": "get_user_details", "arguments": {"user_id": SEED_USER}},
        {"name": "get_order_details", "arguments": {"order_id": PENDING}},
        {"name": "get_order_details", "arguments": {"order_id": OTHERS_PENDING}},
        {"name": "cancel_pending_order", "arguments": {"order_id": OTHERS_PENDING, "reason": "no longer needed"},
         "expect": "BLOCK"},
        {"name": "modify_user_address", "arguments": {"user_id": SEED_USER, "address1": "1 Main St", "address2": "",
                                                      "city": "Austin", "state": "TX", "country": "USA",
                                                      "zip": "78701"}},
        {"name": "get_user_details", "arguments": {"user_id": SEED_USER}},
        {"name": "calculate", "arguments": {"expression": "2 * (174 + 30)"}},
    ]
    return itertools.cycle([json.dumps(row) for row in rows])


def write_trajectory(path: Path, calls: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for line in itertools.islice(_lines(), calls):
            handle.write(line + "\n")


def _rss(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def measure_check(calls: int = CALLS) -> tuple[int, int, float, int]:
    """(peak RSS, RSS growth after the first 10k calls, seconds, exit status) of one check run."""
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-check-") as tmp:
        folder = Path(tmp)
        trajectory = folder / "big.jsonl"
        write_trajectory(trajectory, calls)
        env = {**os.environ, "LEDGERAGENT_HOME": str(folder / "home")}
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "console", "check", str(trajectory), "--domain", "retail",
                                  "--out", str(folder / "out")], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=env)
        samples: list[tuple[float, int]] = []
        while child.poll() is None:
            rss = _rss(child.pid)
            if rss is not None:
                samples.append((time.perf_counter() - started, rss))
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
    peak = max(rss for _, rss in samples)
    at_10k = elapsed * min(1.0, 10_000 / calls)
    early = max((rss for t, rss in samples if t <= at_10k), default=samples[0][1])
    late = max(rss for t, rss in samples if t >= elapsed * 0.9)
    return peak, late - early, elapsed, int(child.returncode)


def bench_check_memory(calls: int = CALLS) -> list[Result]:
    if not Path("/proc/self/status").exists():
        return [Result("check_peak_rss", "check peak RSS (needs /proc)", 0, 0, 0, None, "skipped", "B")]
    peak, growth, elapsed, status = measure_check(calls)
    note = f"{calls:,} calls in {elapsed:.0f} s (exit {status})"
    return [Result("check_peak_rss", f"check: peak RSS over {calls:,} calls", peak, peak, 1, 200 * MIB, note, "B"),
            Result("check_rss_growth", "check: RSS growth after the first 10k calls", growth, growth, 1, None,
                   "flat: a few MiB at most", "B")]


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    for row in bench_check_memory(count):
        print(row.key, f"{row.median_ns / MIB:.1f} MiB", row.note)
