"""Shared set-up for evaluation tests: retail runs over the shipped seed data (or tau2's db.json)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.agent import AgentConfig
from core.evaluation import (
    AgentVariant,
    DomainRun,
    EvalOutcome,
    OfflineParticipants,
    RunHeader,
    RunSettings,
    load_tasks,
    run_evaluation,
    select_tasks,
)
from core.evaluation.rewards import TrialBackend
from core.evaluation.runner import Participants
from domains.retail import DOMAIN
from domains.retail.offline import PLANNER
from mock_backends.registry import backend_class, open_backend
from tests.support.upstream import TAU2_RETAIL as TAU2_RETAIL  # re-exported: the evaluation tests import it here

REPO = Path(__file__).resolve().parents[2]
RETAIL_TASKS = REPO / "domains" / "retail" / "tasks" / "tasks.json"

LEDGER = AgentVariant("ledger", AgentConfig())
FC = AgentVariant("fc", AgentConfig(ledger=False, gate=False))
COMPACT = AgentVariant("ledger-compact", AgentConfig(compact_history=True))


def retail_run(task_ids: Sequence[str] | None = None, participants: Participants | None = None,
               source: Path | None = None, tasks_file: Path = RETAIL_TASKS) -> DomainRun:
    async def open_(path: Path) -> TrialBackend:
        return await open_backend("retail", path, source)

    async def create(path: Path, data: Mapping[str, Any]) -> TrialBackend:
        return await backend_class("retail").create(path, data)

    tasks = select_tasks(load_tasks(tasks_file), task_ids)
    return DomainRun(DOMAIN, tasks, open_, participants or OfflineParticipants(DOMAIN, PLANNER), create_backend=create)


def header(run: DomainRun, variants: Sequence[AgentVariant], trials: int, **extra: Any) -> RunHeader:
    return RunHeader(domains=["retail"], agents=[v.label for v in variants], trials=trials,
                     offline=extra.pop("offline", True), task_ids={"retail": [t.id for t in run.tasks]}, **extra)


async def evaluate(folder: Path, run: DomainRun, variants: Sequence[AgentVariant] = (LEDGER, FC), *, trials: int = 2,
                   concurrency: int = 2, resume: bool = False, timeout: float | None = 30.0, max_errors: int = 10,
                   **extra: Any) -> EvalOutcome:
    settings = RunSettings(trials=trials, concurrency=concurrency, trial_timeout=timeout, max_errors=max_errors)
    return await run_evaluation([run], list(variants), settings, header(run, variants, trials, **extra), folder,
                                resume=resume)
