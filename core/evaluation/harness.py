"""One evaluation run end to end: header, resume check, trials, metrics, results.json and report.md.

The CLI, the benchmarks and the tests all go through `run_evaluation`, so what a test proves about a run is
what `ledgeragent eval` does.

The run folder has one writer: it is locked (`core.folder_lock`) before anything in it is read or written.
Two runs on one folder would append to one trials.jsonl, overwrite each other's run.json and results.json, and
open (and delete) the same per-worker databases, whose names (`work/<domain>-slot-1.sqlite`) every process
counts from 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.evaluation.metrics import Metrics, compute_metrics, metrics_json
from core.evaluation.pricing import PriceTable
from core.evaluation.report import write_report
from core.evaluation.results import ResultsError, ResultStore, RunHeader, TrialSummary
from core.evaluation.rewards import NLJudge
from core.evaluation.runner import AgentVariant, DomainRun, EvalRunner, RunSettings
from core.folder_lock import FolderLock
from core.llm.tokenizer import tokenizer_name
from core.private_files import make_dirs


@dataclass(frozen=True)
class EvalOutcome:
    folder: Path
    header: RunHeader
    metrics: Metrics
    trials: list[TrialSummary]
    resumed: int  # trials taken from disk rather than run now


def _check_resume(store: ResultStore, header: RunHeader, resume: bool) -> list[TrialSummary]:
    existing = store.read_header()
    done = store.done()
    if not resume:
        if done:
            raise ResultsError(f"{store.folder} already holds {len(done)} trial(s); pass --resume to continue "
                               "that run, or choose another --out folder")
        return []
    if existing is None:
        return done
    if existing.fingerprint() != header.fingerprint():
        mine, theirs = header.fingerprint(), existing.fingerprint()
        differ = sorted(k for k in mine if mine[k] != theirs.get(k))
        raise ResultsError(f"cannot resume {store.folder}: the run on disk used other settings ({', '.join(differ)})")
    return done


async def run_evaluation(runs: Sequence[DomainRun], variants: Sequence[AgentVariant], settings: RunSettings,
                         header: RunHeader, folder: Path, *, resume: bool = False, judge: NLJudge | None = None,
                         prices: PriceTable | None = None,
                         on_start: Callable[[int, int], None] | None = None,
                         on_trial: Callable[[TrialSummary], None] | None = None) -> EvalOutcome:
    """Run (or finish) an evaluation into `folder`. `on_start(total, already_done)` is called once before the
    first trial, `on_trial` after each one (progress display)."""
    make_dirs(folder)
    with FolderLock.acquire(folder):  # FolderBusy (naming the holder's pid) when another run writes there
        return await _run_locked(runs, variants, settings, header, folder, resume=resume, judge=judge,
                                 prices=prices, on_start=on_start, on_trial=on_trial)


async def _run_locked(runs: Sequence[DomainRun], variants: Sequence[AgentVariant], settings: RunSettings,
                      header: RunHeader, folder: Path, *, resume: bool, judge: NLJudge | None,
                      prices: PriceTable | None, on_start: Callable[[int, int], None] | None,
                      on_trial: Callable[[TrialSummary], None] | None) -> EvalOutcome:
    tokenizer_name()  # load the tokenizer now, not inside the first trial's timeout
    store = ResultStore(folder)
    header = header.model_copy(update={"created": header.created or datetime.now(UTC).isoformat(timespec="seconds")})
    done = _check_resume(store, header, resume)
    store.write_header(header)
    skip = frozenset(t.key for t in done)
    runner = EvalRunner(runs, variants, settings, workdir=folder / "work", store=store, judge=judge,
                        on_trial=on_trial, skip=skip, prices=prices)
    if on_start is not None:
        on_start(runner.total(), len(done))
    try:
        fresh = await runner.run()
    finally:
        store.close()
    wanted = {(r.domain.name, t.id) for r in runs for t in r.tasks}
    labels = {v.label for v in variants}
    trials = [t for t in [*done, *fresh]
              if (t.domain, t.task_id) in wanted and t.agent in labels and t.trial < settings.trials]
    metrics = compute_metrics(trials)
    store.write_results(header, {r.domain.name: r.tasks for r in runs}, metrics_json(metrics))
    write_report(folder, header, metrics, trials)
    work = folder / "work"
    if work.is_dir() and not any(work.iterdir()):
        work.rmdir()
    return EvalOutcome(folder, header, metrics, trials, len(done))
