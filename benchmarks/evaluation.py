"""Figures 5-7: the evaluation harness (`core.evaluation`) with zero-latency scripted models.

5. harness overhead per agent step: one offline trial of each shipped retail task (ledger agent, one trial at a
   time), its wall time divided by its agent steps (model calls). Everything but a model's latency is in it:
   session loop, ledger, gate, events, the SQLite backend, the customer, grading (replay + hashes) and the
   trial log written to disk. Target ≤ 5 ms.
6. throughput: the retail tasks × {ledger, fc} at concurrency 2 (the machine has 2 cores), reported as wall
   time per task-trial; target < 50 ms, i.e. ≥ 20 task-trials per second.
7. memory across 1,000 trials: Python heap (tracemalloc) retained per trial between trial 200 and trial 1,000.
   Traces go to disk as trials end; what stays is one small summary per trial for the metrics, so the figure is
   the summary's size. Target < 8 KiB per trial (a trial's trace is ~40 KiB: a leak of traces, ledgers or
   databases would show as that much or more).
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.timing import MS, Result, summarise
from core.agent import AgentConfig
from core.evaluation import AgentVariant, DomainRun, EvalRunner, OfflineParticipants, RunSettings, load_tasks
from core.evaluation.results import ResultStore, TrialSummary
from core.evaluation.rewards import TrialBackend
from domains.retail import DOMAIN
from domains.retail.offline import PLANNER
from mock_backends.registry import backend_class, open_backend

TASKS = Path(__file__).resolve().parents[1] / "domains" / "retail" / "tasks" / "tasks.json"
STEP_TARGET_NS = 5 * MS
TRIAL_TARGET_NS = 50 * MS  # = 20 task-trials per second
MEMORY_TARGET_BYTES = 8 * 1024
LEDGER = AgentVariant("ledger", AgentConfig())
FC = AgentVariant("fc", AgentConfig(ledger=False, gate=False))


def retail_run(limit: int | None = None) -> DomainRun:
    async def open_(path: Path) -> TrialBackend:
        return await open_backend("retail", path)

    async def create(path: Path, data: Mapping[str, Any]) -> TrialBackend:
        return await backend_class("retail").create(path, data)

    tasks = load_tasks(TASKS)[:limit]
    return DomainRun(DOMAIN, tasks, open_, OfflineParticipants(DOMAIN, PLANNER), create_backend=create)


async def _run(folder: Path, variants: list[AgentVariant], trials: int, concurrency: int,
               on_trial: Any = None, limit: int | None = None) -> list[TrialSummary]:
    store = ResultStore(folder)
    runner = EvalRunner([retail_run(limit)], variants, RunSettings(trials=trials, concurrency=concurrency),
                        workdir=folder / "work", store=store, on_trial=on_trial)
    try:
        return await runner.run()
    finally:
        store.close()


def bench_eval_step(*, trials: int = 3, limit: int | None = None) -> Result:
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-eval-") as tmp:
        done = asyncio.run(_run(Path(tmp), [LEDGER], trials, 1, limit=limit))
    samples = [int(t.duration_s * 1e9 / t.tokens.model_calls) for t in done if t.tokens.model_calls]
    calls = sum(t.tokens.model_calls for t in done)
    return summarise("eval_step", f"eval harness overhead per agent step (zero-latency scripted model; "
                     f"{len(done)} retail trials, {calls} steps, grading included)", samples, STEP_TARGET_NS,
                     note="per trial: wall time / model calls; concurrency 1")


def bench_eval_throughput(*, trials: int = 2, repeat: int = 3, limit: int | None = None) -> Result:
    samples: list[int] = []
    count = 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-eval-") as tmp:
            started = time.perf_counter_ns()
            done = asyncio.run(_run(Path(tmp), [LEDGER, FC], trials, 2, limit=limit))
            elapsed = time.perf_counter_ns() - started
        count = len(done)
        samples.append(elapsed // count)
    rate = 1e9 / sorted(samples)[len(samples) // 2]
    return summarise("eval_throughput", f"eval wall time per task-trial, concurrency 2, ledger+fc ({count} "
                     f"trials per run; = {rate:.0f} task-trials/s)", samples, TRIAL_TARGET_NS,
                     note="whole runs including opening the worker databases")


def bench_eval_memory(*, trials: int = 1000, warm: int = 200, limit: int | None = None) -> Result:
    """Retained heap per trial between trial `warm` and the last (tracemalloc; gc.collect before each sample)."""
    per_round = len(load_tasks(TASKS)[:limit]) * 2
    rounds = -(-trials // per_round)
    marks: dict[str, int] = {}
    seen = 0

    def on_trial(_summary: TrialSummary) -> None:
        nonlocal seen
        seen += 1
        if seen in (warm, rounds * per_round):
            gc.collect()
            marks["warm" if seen == warm else "end"] = tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-eval-") as tmp:
            asyncio.run(_run(Path(tmp), [LEDGER, FC], rounds, 2, on_trial, limit))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    total = rounds * per_round
    per_trial = (marks["end"] - marks["warm"]) / (total - warm)
    figure = (f"eval memory retained per trial over {total:,} trials (trial {warm}→{total}: "
              f"{(marks['end'] - marks['warm']) / 1024:,.0f} KiB; peak {peak / 1024 / 1024:.1f} MiB)")
    return Result("eval_memory", figure, per_trial, per_trial, 1, MEMORY_TARGET_BYTES, note="tracemalloc", unit="B")


def bench_evaluation() -> list[Result]:
    return [bench_eval_step(), bench_eval_throughput(), bench_eval_memory()]
