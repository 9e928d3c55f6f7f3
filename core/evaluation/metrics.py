"""Aggregates over trials: pass^k, the paper's Table 2 averages, the write-task subset (Fig. 3), token use and
the ledger's overhead against FC (Table 3), gate statistics and the failure taxonomy.

pass^k is tau-bench's unbiased estimator: for a task with n trials of which c succeeded, the probability
that k trials drawn without replacement all succeed is C(c, k) / C(n, k); pass^k is its mean over tasks.
k runs from 1 to the smallest number of trials any task has.

What counts, as in tau2-bench's `compute_metrics`: a trial that ended as an infrastructure error (it could not
be run) is left out of pass^k and the mean reward, and counted (`infra_errors`). A timed-out trial is a
failure. Beyond tau2: a trial with an unscored reward component (NL assertions and no judge) is left out
too, and counted (`unscored`, `unscored_tasks`); it is never a success. `mean_reward` is tau2's avg_reward:
the mean reward of the trials that count.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from math import comb
from statistics import mean
from typing import Any

from pydantic import BaseModel, Field

from core.evaluation.results import ROLES, TrialSummary

BASELINE = "fc"


def pass_hat_k(n: int, c: int, k: int) -> float:
    """C(c, k) / C(n, k): the chance that k of n trials (c successful) drawn without replacement all pass."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    return comb(c, k) / comb(n, k)


def pass_k(successes: Mapping[str, Sequence[bool]], max_k: int | None = None) -> dict[int, float]:
    """pass^k for k = 1..K (K = the fewest trials of any task, capped by max_k), averaged over tasks."""
    if not successes:
        return {}
    fewest = min(len(s) for s in successes.values())
    top = fewest if max_k is None else min(fewest, max_k)
    return {k: mean(pass_hat_k(len(s), sum(s), k) for s in successes.values()) for k in range(1, top + 1)}


class TokenSummary(BaseModel):
    trials: int = 0
    prompt_per_trial: float = 0.0
    completion_per_trial: float = 0.0
    total_per_trial: float = 0.0
    model_calls_per_trial: float = 0.0
    prompt_per_call: float = 0.0
    ledger_share: float = 0.0  # ledger block tokens / prompt tokens
    estimated: bool = False


class RoleTotals(BaseModel):
    """One role's tokens and cost summed over a cell's trials. `cost` None: some price is unknown."""

    models: list[str] = Field(default_factory=list)
    prompt: int = 0
    completion: int = 0
    calls: int = 0
    cost: float | None = None
    estimated: bool = False


class AgentMetrics(BaseModel):
    domain: str
    agent: str
    tasks: int
    trials: int
    pass_k: dict[int, float]
    table2: dict[str, float]  # pass^1, pass^K and their average, as the paper's Table 2
    write_tasks: int
    write_pass_k: dict[int, float]
    mean_reward: float  # tau2's avg_reward over the trials that count
    infra_errors: int  # trials that could not be run (left out of the metrics)
    timeouts: int
    unscored: int  # trials whose NL assertions were left unscored (no judge model): left out of the metrics
    unscored_tasks: int
    roles: dict[str, RoleTotals] = Field(default_factory=dict)  # agent / user / judge
    cost: float | None = None  # every role, every trial; None when some price is unknown
    cost_per_trial: float | None = None
    terminations: dict[str, int]
    failures: dict[str, int]
    tokens: TokenSummary
    gate_verdicts: dict[str, int]
    gate_refusals: dict[str, int] = Field(default_factory=dict)  # the REVISEs by kind: needs_read / breaks_rule
    gate_reads: int = 0  # reads the gate made itself (evidence assist)
    gate_predicates: dict[str, dict[str, int]]
    gate_escalated: int
    overrides: dict[str, int]
    would_refuse: dict[str, int]  # predicate -> executed writes the gate would have refused
    slips: int  # deliberate mistakes (error-prone scripted agent)
    # an error profile's mistakes per failure kind: committed, and what became of them (`KindTally`)
    mistakes: dict[str, KindTally] = Field(default_factory=dict)


class KindTally(BaseModel):
    """One failure kind in one cell: how often the agent made the mistake, where it ended, what stops cost."""

    committed: int = 0
    reached_db: int = 0
    tool_refused: int = 0
    gate_refused: int = 0
    blocked: int = 0  # of gate_refused: BLOCK
    needs_read: int = 0  # of gate_refused: REVISE, needs a read
    breaks_rule: int = 0  # of gate_refused: REVISE, breaks a rule
    recovery_calls: int = 0  # model calls after the gate's stops, up to the next write that ran (or the end)
    recovery_tokens: int = 0


class Metrics(BaseModel):
    cells: list[AgentMetrics] = Field(default_factory=list)
    overall: list[AgentMetrics] = Field(default_factory=list)  # every domain pooled, per agent
    token_overhead: dict[str, float] = Field(default_factory=dict)  # agent -> total tokens vs FC (-0.1 = 10% fewer)
    prompt_overhead: dict[str, float] = Field(default_factory=dict)  # agent -> prompt tokens vs FC

    def cell(self, domain: str, agent: str) -> AgentMetrics | None:
        pool = self.overall if domain == "overall" else self.cells
        return next((c for c in pool if c.domain == domain and c.agent == agent), None)


def _tokens(trials: Sequence[TrialSummary]) -> TokenSummary:
    if not trials:
        return TokenSummary()
    prompt = sum(t.tokens.prompt for t in trials)
    calls = sum(t.tokens.model_calls for t in trials)
    return TokenSummary(
        trials=len(trials),
        prompt_per_trial=prompt / len(trials),
        completion_per_trial=mean(t.tokens.completion for t in trials),
        total_per_trial=mean(t.tokens.total for t in trials),
        model_calls_per_trial=calls / len(trials),
        prompt_per_call=prompt / calls if calls else 0.0,
        ledger_share=sum(t.tokens.ledger for t in trials) / prompt if prompt else 0.0,
        estimated=any(t.tokens.estimated for t in trials),
    )


def _merge(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for item in counts:
        total.update(item)
    return dict(sorted(total.items()))


def _roles(trials: Sequence[TrialSummary]) -> dict[str, RoleTotals]:
    totals: dict[str, RoleTotals] = {}
    for role in ROLES:
        used = [t.usage[role] for t in trials if role in t.usage and t.usage[role].calls]
        if not used:
            continue
        costs = [u.cost for u in used]
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        totals[role] = RoleTotals(models=sorted({u.model for u in used}), prompt=sum(u.prompt for u in used),
                                  completion=sum(u.completion for u in used), calls=sum(u.calls for u in used),
                                  cost=cost, estimated=any(u.estimated for u in used))
    return totals


def agent_metrics(domain: str, agent: str, all_trials: Sequence[TrialSummary]) -> AgentMetrics:
    by_task: dict[tuple[str, str], list[bool]] = defaultdict(list)
    writes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    ran = [t for t in all_trials if not t.infra]
    trials = [t for t in ran if t.scored]
    roles = _roles(all_trials)
    priced = [r.cost for r in roles.values()]
    cost = None if not priced or any(c is None for c in priced) else sum(c for c in priced if c is not None)
    for trial in sorted(trials, key=lambda t: t.trial):
        by_task[(trial.domain, trial.task_id)].append(trial.success)
        if trial.has_write:
            writes[(trial.domain, trial.task_id)].append(trial.success)
    ks = pass_k({f"{d}/{t}": s for (d, t), s in by_task.items()})
    top = max(ks) if ks else 0
    table2 = {}
    if ks:
        table2 = {"pass^1": ks[1], f"pass^{top}": ks[top], "avg": (ks[1] + ks[top]) / 2}
    predicates: dict[str, Counter[str]] = defaultdict(Counter)
    for trial in ran:
        for pid, counts in trial.gate.predicates.items():
            predicates[pid].update(counts)
    return AgentMetrics(
        domain=domain, agent=agent, tasks=len(by_task), trials=len(trials), pass_k=ks, table2=table2,
        write_tasks=len(writes), write_pass_k=pass_k({f"{d}/{t}": s for (d, t), s in writes.items()}),
        mean_reward=mean(t.reward for t in trials) if trials else 0.0,
        infra_errors=sum(t.infra for t in all_trials), timeouts=sum(t.status == "timeout" for t in ran),
        unscored=sum(bool(t.unscored) for t in ran),
        unscored_tasks=len({(t.domain, t.task_id) for t in ran if t.unscored}),
        roles=roles, cost=cost, cost_per_trial=cost / len(all_trials) if cost is not None and all_trials else None,
        terminations=dict(sorted(Counter(t.termination for t in all_trials).items())),
        failures=dict(sorted(Counter(t.failure.category for t in trials if t.failure).items())),
        tokens=_tokens(ran),
        gate_verdicts=_merge(t.gate.verdicts for t in ran),
        gate_refusals=_merge(t.gate.refusals for t in ran),
        gate_reads=sum(t.gate.gate_reads for t in ran),
        gate_predicates={pid: dict(sorted(c.items())) for pid, c in sorted(predicates.items())},
        gate_escalated=sum(t.gate.escalated for t in ran),
        overrides=_merge(t.gate.overrides for t in ran),
        would_refuse=dict(sorted(Counter(p for t in ran for p in t.would_refuse).items())),
        slips=sum(len(t.slips) for t in ran),
        mistakes=_tally(ran),
    )


def _tally(trials: Sequence[TrialSummary]) -> dict[str, KindTally]:
    tallies: dict[str, KindTally] = {}
    for trial in trials:
        for mistake in trial.mistakes:
            tally = tallies.setdefault(mistake.kind, KindTally())
            tally.committed += 1
            tally.reached_db += mistake.outcome == "reached the database"
            tally.tool_refused += mistake.outcome == "tool refused"
            if mistake.outcome == "gate refused":
                tally.gate_refused += 1
                tally.blocked += mistake.verdict == "BLOCK"
                tally.needs_read += mistake.refusal == "needs a read"
                tally.breaks_rule += mistake.refusal == "breaks a rule"
                tally.recovery_calls += mistake.recovery_calls
                tally.recovery_tokens += mistake.recovery_tokens
    return dict(sorted(tallies.items()))


def _overhead(trials: Sequence[TrialSummary], agent: str, field: str) -> float | None:
    """Mean per-trial tokens of `agent` vs FC over the tasks both ran (paired, so task mix cancels out)."""
    per: dict[str, dict[tuple[str, str], list[int]]] = defaultdict(lambda: defaultdict(list))
    for t in (t for t in trials if not t.infra):
        per[t.agent][(t.domain, t.task_id)].append(t.tokens.total if field == "total" else t.tokens.prompt)
    common = set(per[agent]) & set(per[BASELINE])
    if not common:
        return None
    mine = sum(mean(per[agent][k]) for k in common)
    base = sum(mean(per[BASELINE][k]) for k in common)
    return (mine - base) / base if base else None


def compute_metrics(trials: Sequence[TrialSummary]) -> Metrics:
    groups: dict[tuple[str, str], list[TrialSummary]] = defaultdict(list)
    pooled: dict[str, list[TrialSummary]] = defaultdict(list)
    for trial in trials:
        groups[(trial.domain, trial.agent)].append(trial)
        pooled[trial.agent].append(trial)
    metrics = Metrics(
        cells=[agent_metrics(d, a, ts) for (d, a), ts in sorted(groups.items())],
        overall=[agent_metrics("overall", a, ts) for a, ts in sorted(pooled.items())],
    )
    for agent in sorted(pooled):
        if agent == BASELINE:
            continue
        total = _overhead(trials, agent, "total")
        prompt = _overhead(trials, agent, "prompt")
        if total is not None and prompt is not None:
            metrics.token_overhead[agent] = total
            metrics.prompt_overhead[agent] = prompt
    return metrics


def metrics_json(metrics: Metrics) -> dict[str, Any]:
    return metrics.model_dump(mode="json")
