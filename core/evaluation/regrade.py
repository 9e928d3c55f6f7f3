"""Re-grading saved trajectories with fresh tasks: `ledgeragent eval regrade RESULTS`.

Same trajectories, today's tasks and evaluator: every trial that ran (not an infrastructure error) is graded
again from its recorded events (`facts.collect`), exactly as a live trial is (`rewards.evaluate`: the DB replay
of its executed writes on a fresh database, env assertions, communicate, actions, NL assertions with the
judge when one is given). Works on our runs and on imported tau2 results (their messages become events).
A trial whose task is no longer in the tasks file is kept as it was and reported, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from core.domain import Domain
from core.evaluation.analysis import classify, would_refuse
from core.evaluation.facts import collect
from core.evaluation.pricing import PriceTable
from core.evaluation.results import EvalResults, TrialResult
from core.evaluation.rewards import GoldState, JudgeError, NLJudge, TrialBackend, evaluate, gold_state
from core.evaluation.tasks import Task
from core.evaluation.trajectory import tau2_messages
from core.evaluation.usage import role_usage
from core.events import EVENT_ADAPTER
from core.private_files import make_dirs

OpenBackend = Callable[[Path], Awaitable[TrialBackend]]


@dataclass
class RegradeDomain:
    domain: Domain
    tasks: Sequence[Task]
    open_backend: OpenBackend


def grade_state(trial: TrialResult) -> str:
    """Where a trial stands in the metrics: passed, failed, or unscored (a component nobody graded, so it is
    in no denominator). Infrastructure errors are never re-graded."""
    if trial.unscored:
        return "unscored"
    return "passed" if trial.success else "failed"


@dataclass(frozen=True)
class GradeChange:
    """A trial whose grade the re-grading changed: its reward, or where it stands (passed / failed / unscored).
    A trial graded 1 that turns unscored keeps its reward number, so the reward alone would say nothing."""

    domain: str
    task_id: str
    agent: str
    trial: int
    old_reward: float
    new_reward: float
    old_state: str
    new_state: str
    unscored: tuple[str, ...] = ()  # reward components now left unscored

    def describe(self) -> str:
        def side(state: str, reward: float) -> str:
            return "unscored" if state == "unscored" else f"{state}, reward {reward:g}"

        why = f" ({', '.join(self.unscored)} not graded: no judge model)" if self.new_state == "unscored" else ""
        return f"{side(self.old_state, self.old_reward)} -> {side(self.new_state, self.new_reward)}{why}"


@dataclass
class RegradeOutcome:
    results: EvalResults
    changed: list[GradeChange] = field(default_factory=list)
    missing_tasks: list[str] = field(default_factory=list)  # "domain/task" no longer in the tasks file
    judge_failures: list[str] = field(default_factory=list)


async def regrade(results: EvalResults, domains: Sequence[RegradeDomain], workdir: Path, *,
                  judge: NLJudge | None = None, prices: PriceTable | None = None) -> RegradeOutcome:
    """Grade every trial of `results` again. Trials of domains not in `domains` are kept as they were."""
    by_name = {d.domain.name: d for d in domains}
    outcome = RegradeOutcome(results=results)
    regraded: list[TrialResult] = []
    make_dirs(workdir)
    backends: dict[str, tuple[TrialBackend, object]] = {}
    gold: dict[tuple[str, str], GoldState] = {}
    try:
        for trial in results.trials:
            source = by_name.get(trial.domain)
            task = next((t for t in source.tasks if t.id == trial.task_id), None) if source is not None else None
            if source is None or task is None or trial.infra:
                if source is not None and task is None:
                    outcome.missing_tasks.append(f"{trial.domain}/{trial.task_id}")
                regraded.append(trial)
                continue
            if trial.domain not in backends:
                backend = await source.open_backend(workdir / f"regrade-{trial.domain}.sqlite")
                backends[trial.domain] = (backend, await backend.snapshot())
            backend, base = backends[trial.domain]
            if (trial.domain, task.id) not in gold:
                gold[(trial.domain, task.id)] = await gold_state(backend, base, task, source.domain)
            events = [EVENT_ADAPTER.validate_python(e) for e in trial.events]
            facts = collect(events)
            live = facts.ended.db_hash if facts.ended is not None else None
            try:
                reward, verdict = await evaluate(task=task, domain=source.domain, facts=facts, backend=backend,
                                                 base=base, gold=gold[(trial.domain, task.id)], live_hash=live,
                                                 judge=judge, messages=tau2_messages(events))
            except JudgeError as exc:
                outcome.judge_failures.append(f"{trial.domain}/{trial.task_id} #{trial.trial}: {exc}")
                regraded.append(trial)
                continue
            refused = would_refuse(facts, source.domain)
            success = reward.success and trial.status == "ok"
            usage = dict(trial.usage)
            if verdict is not None:
                usage["judge"] = role_usage(verdict.model, verdict.usage, 1, prices)
            new = trial.model_copy(update={
                "reward": reward.reward, "success": success, "reward_info": reward, "unscored": reward.unscored,
                "would_refuse": refused, "usage": usage, "failure": None if success else classify(
                    status=trial.status, facts=facts, reward=reward, task=task, refused=refused)})
            before, after = grade_state(trial), grade_state(new)
            if abs(new.reward - trial.reward) > 1e-9 or before != after:
                outcome.changed.append(GradeChange(*trial.key, trial.reward, new.reward, before, after,
                                                   tuple(new.unscored)))
            regraded.append(new)
    finally:
        for backend, _base in backends.values():
            await backend.close()
    tasks = dict(results.tasks)
    for source in domains:
        tasks[source.domain.name] = list(source.tasks)
    outcome.results = results.model_copy(update={"trials": regraded, "tasks": tasks})
    return outcome
