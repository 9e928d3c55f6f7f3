"""`ledgeragent audit` of 100 and 1,000 real model conversations: wall time and peak RSS, one child process each.

The conversations are the development set's (tau2-bench results and tau-Trait lists of gpt-4.1, a fine-tuned
gpt-4.1, qwen2.5-7b and GPT-5, in the shared folder beside the repository), repeated in file order until the
count is reached: written at bench time as files of at most `PER_FILE` conversations each (a tau2 file's
`simulations` sliced, a list's items), the way a run of many trials is published. Files whose domain no
domain of ours has (tau-Trait's telecom) are left out, so every conversation counted is audited. The child is
a real `ledgeragent audit ... --out` with every domain's database (the gate re-executing each call and reading
what a write lacks), stdout to /dev/null; its resident set size is sampled from /proc every 20 ms.

Targets: 1,000 conversations in under 60 s on this 2-core machine, and memory flat: the peak at 1,000 about the
peak at 100 (one file's conversations are held at a time, never every conversation's events). When the shared
folder is absent the rows are skipped, saying why.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.timing import MS, Result

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
RECORDINGS = SHARED / "recordings"
DATABASES = (SHARED / "tau2" / "airline" / "db.json", SHARED / "tau2" / "retail" / "db.json",
             SHARED / "tau2" / "telecom" / "db.toml", SHARED / "tau-trait" / "telehealth")
PER_FILE = 50
COUNTS = (100, 1_000)
MIB = 1 << 20
S = 1_000 * MS
OUR_DOMAINS = ("airline", "retail", "telecom", "telehealth")


def _missing() -> str | None:
    if not RECORDINGS.is_dir() or not any(RECORDINGS.glob("*.json.gz")):
        return f"no development recordings at {RECORDINGS}"
    absent = [str(p) for p in DATABASES if not p.exists()]
    return f"missing {', '.join(absent)}" if absent else None


def _conversations(document: Any) -> tuple[list[Any], Any]:
    """(the conversations, a function making a document of some of them) of a tau2 file or a list."""
    if isinstance(document, dict) and isinstance(document.get("simulations"), list):
        return document["simulations"], lambda part: {**document, "simulations": part}
    if isinstance(document, list):
        return document, lambda part: part
    raise ValueError("neither a tau2 results file nor a list of conversations")


def _auditable(document: Any) -> bool:
    """Whether the file's conversations are of one of our domains: a tau2 file names its domain; a list is told
    by its tools (tau-Trait's telecom has tools of another telecom domain, none of ours)."""
    if isinstance(document, dict):
        info = document.get("info") or {}
        return (info.get("environment_info") or {}).get("domain_name") in OUR_DOMAINS
    from console.runtime.errors import CliError
    from console.runtime.lookup import infer_domain

    names = {call["function"]["name"] for item in document for message in item.get("traj", [])
             for call in message.get("tool_calls") or [] if isinstance(call, dict) and "function" in call}
    try:
        infer_domain(names - {"think", "calculate"})
    except CliError:
        return False
    return True


def _sources() -> Iterator[tuple[str, Any]]:
    for path in sorted(RECORDINGS.glob("*.json.gz")):
        document = json.loads(gzip.decompress(path.read_bytes()))
        if _auditable(document):
            yield path.name.removesuffix(".json.gz"), document


def write_set(folder: Path, count: int) -> list[Path]:
    """`count` conversations of the development set, repeated in file order, as files of at most PER_FILE."""
    sources = list(_sources())
    written: list[Path] = []
    left = count
    while left:
        for name, document in sources:
            items, remake = _conversations(document)
            for start in range(0, len(items), PER_FILE):
                part = items[start:start + min(PER_FILE, left)]
                path = folder / f"{len(written):04d}-{name}.json"
                path.write_text(json.dumps(remake(part)), encoding="utf-8")
                written.append(path)
                left -= len(part)
                if not left:
                    return written
    return written


def _rss(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def measure_audit(count: int) -> tuple[float, int, int, int]:
    """(seconds, peak RSS, conversations the report counts, exit status) of one `ledgeragent audit` child."""
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-audit-") as tmp:
        folder = Path(tmp)
        files = write_set(folder, count)
        env = {**os.environ, "LEDGERAGENT_HOME": str(folder / "home")}
        argv = [sys.executable, "-m", "console", "audit", *map(str, files), *(f"--db={p}" for p in DATABASES),
                "--out", str(folder / "report")]
        started = time.perf_counter()
        child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        peak = 0
        while child.poll() is None:
            peak = max(peak, _rss(child.pid) or 0)
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
        audited = json.loads((folder / "report" / "audit.json").read_text(encoding="utf-8"))["conversations"] \
            if (folder / "report" / "audit.json").exists() else 0
    return elapsed, peak, audited, int(child.returncode)


def _load() -> str:
    try:
        return f"load average {os.getloadavg()[0]:.1f} at the start"
    except OSError:
        return "load average unknown"


def bench_audit(counts: tuple[int, ...] = COUNTS) -> list[Result]:
    missing = _missing()
    if missing is not None or not Path("/proc/self/status").exists():
        why = missing or "needs /proc"
        return [Result("audit_1000_wall", f"audit of 1,000 recorded conversations (skipped: {why})", 0, 0, 0, None,
                       "skipped", "ns")]
    rows: list[Result] = []
    peaks: dict[int, int] = {}
    for count in counts:
        load = _load()
        elapsed, peak, audited, status = measure_audit(count)
        peaks[count] = peak
        note = f"{audited:,} conversations audited, exit {status} (1: input problems reported), {load}"
        rows.append(Result(f"audit_{count}_wall", f"ledgeragent audit of {count:,} recorded conversations, 4 "
                           "domains' databases (wall time, a fresh process)", elapsed * S, elapsed * S, 1,
                           60 * S if count == 1_000 else None, note))
        rows.append(Result(f"audit_{count}_rss", f"ledgeragent audit of {count:,} conversations: peak RSS", peak,
                           peak, 1, 300 * MIB, "", "B"))
    if len(peaks) == 2:
        small, big = (peaks[c] for c in counts)
        growth = float(big - small)
        rows.append(Result("audit_rss_growth", f"audit: peak RSS at {counts[1]:,} minus at {counts[0]:,} "
                           "conversations", growth, growth, 1, 32 * MIB, "flat: one file held at a time", "B"))
    return rows


if __name__ == "__main__":
    for row in bench_audit():
        value = row.median_ns / (MIB if row.unit == "B" else S)
        print(row.key, f"{value:.2f} {'MiB' if row.unit == 'B' else 's'}", row.note)
