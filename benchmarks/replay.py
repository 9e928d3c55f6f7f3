"""Storage figures: replay of a 50k-event trace (first step on screen, peak memory), and how fast a second
writer of a session folder is refused.

Replay: a trace of `events` events (about 50 MB at 50,000, see `benchmarks.big_trace`) is opened in a fresh
console process (`benchmarks.replay_child`): from asking for it (the opener's Enter) to its first step drawn;
then End (the last step, every gate decision counted) and Home, with the process's peak RSS over the whole
visit. Targets: first step < 3 s, peak RSS < 300 MiB. Before the trace was indexed, the same file stayed
"opening …" for minutes while the process grew past 586 MB.

Second writer: a real second process holds a session folder the way `ledgeragent run --out` does
(`console.runtime.storage.claim_out_dir`); the figure is one more claim of that folder, from the call to the one-line
refusal that names the holder's pid (target < 100 ms), and beside it, informative, a whole `ledgeragent run
--out` refused (interpreter start-up included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.big_trace import write_big_trace
from benchmarks.timing import MS, Result, S, summarise

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
EVENTS = 50_000


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return env | {"LEDGERAGENT_HOME": home}


def bench_replay_open(events: int = EVENTS, repeat: int = 3) -> list[Result]:
    firsts: list[int] = []
    lasts: list[int] = []
    peaks: list[int] = []
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-replay-") as tmp:
        trace = Path(tmp) / "trace.jsonl"
        written = write_big_trace(trace, events)
        size = trace.stat().st_size
        for _ in range(repeat):
            done = subprocess.run([sys.executable, "-m", "benchmarks.replay_child", str(trace)], cwd=ROOT,
                                  capture_output=True, text=True, env=_env(str(Path(tmp) / "home")), timeout=1800,
                                  check=True)
            data = json.loads(done.stdout.strip().splitlines()[-1])
            firsts.append(int(data["first_step_ns"]))
            lasts.append(int(data["last_step_ns"]))
            peaks.append(int(data["peak_rss_bytes"]))
    what = f"{written:,}-event trace ({size / MIB:.0f} MiB)"
    peak = float(max(peaks))
    return [summarise("replay_open_first_step", f"replay open of a {what}: first step on screen", firsts,
                      target_ns=3 * S),
            Result(key="replay_open_rss", figure=f"replay of a {what}: peak RSS (open, End, Home)", median_ns=peak,
                   p95_ns=peak, n=len(peaks), target_ns=300 * MIB, unit="B", note="highest of the runs"),
            summarise("replay_end", "replay: …End, until the last step is on screen (worker reads the walk)", lasts)]


_HOLDER = """
import sys
from pathlib import Path
from console.runtime.storage import claim_out_dir
claim = claim_out_dir(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
claim.release()
"""


def bench_second_writer(repeat: int = 200, cli_repeat: int = 3) -> list[Result]:
    from console.runtime.storage import FolderInUse, claim_out_dir

    samples: list[int] = []
    cli: list[int] = []
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-lock-") as tmp:
        out = Path(tmp) / "s1"
        holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out)], cwd=ROOT, env=_env(tmp), text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            for _ in range(repeat):
                started = time.perf_counter_ns()
                try:
                    claim_out_dir(out).release()
                except FolderInUse as refused:
                    samples.append(time.perf_counter_ns() - started)
                    if refused.pid != holder.pid:
                        raise RuntimeError(f"the refusal named pid {refused.pid}, not {holder.pid}") from None
                else:
                    raise RuntimeError("a second writer was let in")
            for _ in range(cli_repeat):
                started = time.perf_counter_ns()
                done = subprocess.run([sys.executable, "-m", "console", "run", "--scenario",
                                       "refund-to-original-payment", "--out", str(out)], cwd=ROOT, env=_env(tmp),
                                      capture_output=True, text=True, timeout=120)
                cli.append(time.perf_counter_ns() - started)
                if done.returncode != 2 or f"process {holder.pid}" not in done.stderr:
                    raise RuntimeError(f"run --out was not refused: {done.returncode} {done.stderr!r}")
        finally:
            if holder.stdin is not None:
                holder.stdin.close()
            holder.wait(timeout=30)
    return [summarise("second_writer_refused", "a second writer of a session folder refused (claim -> the "
                      "one-line refusal naming the holder's pid)", samples, target_ns=100 * MS),
            summarise("second_writer_cli", "…same, a whole `ledgeragent run --out` refused (exit 2, interpreter "
                      "start-up included)", cli)]
