"""The ledger's prompt-token cost against the function-calling baseline, one row per domain.

Same scripted sessions for every agent condition (the offline careful agent of each domain's shipped tasks,
one trial per task; the scripted agent's prompts are counted with the same local tokenizer for every
condition): the row's figure is the ledger agent's prompt tokens with `--compact-history` divided by FC's,
summed over the tasks both ran (paired), in percent. Target: at most 100 %, i.e. the ledger costs no extra
prompt tokens. The note gives the ratio without compaction and each condition's pass^1, which must not move.
"""

from __future__ import annotations

import asyncio
import importlib
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.timing import Result
from core.agent import AgentConfig
from core.evaluation import AgentVariant, DomainRun, EvalRunner, GoldPlanner, OfflineParticipants, RunSettings
from core.evaluation.metrics import compute_metrics
from core.evaluation.results import TrialSummary
from core.evaluation.rewards import TrialBackend
from core.evaluation.tasks import read_tasks
from domains.registry import DOMAINS, load_domain
from mock_backends.registry import backend_class, open_backend

COMPACT = AgentVariant("ledger-compact", AgentConfig(compact_history=True))
LEDGER = AgentVariant("ledger", AgentConfig())
FC = AgentVariant("fc", AgentConfig(ledger=False, gate=False))
TARGET_PERCENT = 100


def _run(name: str, limit: int | None = None) -> DomainRun | None:
    domain = load_domain(name)
    tasks_file = Path(str(importlib.import_module(f"domains.{name}").__file__)).parent / "tasks" / "tasks.json"
    if not tasks_file.is_file():
        return None
    try:
        planner = importlib.import_module(f"domains.{name}.offline").PLANNER
    except ModuleNotFoundError:
        planner = GoldPlanner()

    async def open_(path: Path) -> TrialBackend:
        return await open_backend(name, path)

    async def create(path: Path, data: Mapping[str, Any]) -> TrialBackend:
        return await backend_class(name).create(path, data)

    tasks, _problems = read_tasks(tasks_file)
    return DomainRun(domain, tasks[:limit], open_, OfflineParticipants(domain, planner), create_backend=create)


async def _trials(run: DomainRun, folder: Path) -> list[TrialSummary]:
    runner = EvalRunner([run], [COMPACT, LEDGER, FC], RunSettings(trials=1, concurrency=2, trial_timeout=120),
                        workdir=folder)
    return await runner.run()


def _ratio(trials: list[TrialSummary], agent: str) -> float:
    per: dict[str, dict[str, int]] = {}
    for t in trials:
        per.setdefault(t.agent, {})[t.task_id] = t.tokens.prompt
    common = set(per.get(agent, {})) & set(per.get("fc", {}))
    base = sum(per["fc"][k] for k in common)
    return sum(per[agent][k] for k in common) / base if base else float("nan")


def bench_token_ratio(domains: list[str] | None = None, *, limit: int | None = None) -> list[Result]:
    rows: list[Result] = []
    for name in domains or list(DOMAINS):
        run = _run(name, limit)
        if run is None:
            continue
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-tokens-") as tmp:
            trials = asyncio.run(_trials(run, Path(tmp)))
        metrics = compute_metrics(trials)
        passed = {c.agent: c.pass_k.get(1, 0.0) for c in metrics.cells}
        compact, plain = _ratio(trials, COMPACT.label), _ratio(trials, LEDGER.label)
        note = (f"without compaction {plain * 100:.1f} %; pass^1 compact {passed.get(COMPACT.label, 0):.0%}, "
                f"ledger {passed.get(LEDGER.label, 0):.0%}, fc {passed.get(FC.label, 0):.0%}")
        rows.append(Result(f"token_ratio_{name}", f"{name}: ledger (compact history) / fc prompt tokens, "
                           f"{len(run.tasks)} scripted tasks", compact * 100, plain * 100, len(run.tasks),
                           TARGET_PERCENT, note=note, unit="%"))
    return rows


if __name__ == "__main__":  # pragma: no cover - `python -m benchmarks.token_ratio` for this row alone
    for row in bench_token_ratio():
        print(f"{row.key}: {row.median_ns:.1f} % (target <= {row.target_ns} %); {row.note}")
