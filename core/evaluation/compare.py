"""`ledgeragent eval compare A B`: how run B differs from run A, per task and in pass^k, with uncertainty.

Which cells are set side by side: per domain both runs hold, the agents both ran (the same agent before and
after a change); on a domain where the runs share no agent (a tau2-bench run of someone's own baseline
beside LedgerAgent's run on the same tasks), every agent of A against every agent of B, each pair its own
comparison that names both agents. Over the tasks both ran (trials that count only: no infrastructure
errors, no unscored trials): each task's successes in A and in B, and pass^k for k up to the fewest trials
any of those tasks has in either run, with B - A and a 95 % bootstrap confidence interval.

The bootstrap resamples TASKS with replacement (tasks are the unit a benchmark samples; trials within a task
are not independent draws of the benchmark) and recomputes both runs' pass^k on each resample, so the
interval is for the paired difference. Seeded, so the same two runs give the same interval every time.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import mean

from core.evaluation.metrics import pass_hat_k
from core.evaluation.results import EvalResults, TrialSummary


@dataclass(frozen=True)
class TaskDiff:
    task_id: str
    a: tuple[int, int]  # successes, trials
    b: tuple[int, int]

    @property
    def delta(self) -> float:
        return self.b[0] / self.b[1] - self.a[0] / self.a[1]


@dataclass(frozen=True)
class KDelta:
    k: int
    a: float
    b: float
    low: float
    high: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass
class CellComparison:
    domain: str
    agent: str  # A's agent
    tasks: int
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    ks: list[KDelta] = field(default_factory=list)
    differences: list[TaskDiff] = field(default_factory=list)  # tasks whose success rate changed
    agent_b: str = ""  # B's agent; empty when it is A's

    @property
    def across_agents(self) -> bool:
        return bool(self.agent_b) and self.agent_b != self.agent

    @property
    def label(self) -> str:
        """How a table names the pair: `retail / fc`, or `retail: A llm_agent vs B ledger`."""
        if self.across_agents:
            return f"{self.domain}: A {self.agent} vs B {self.agent_b}"
        return f"{self.domain} / {self.agent}"


def _counts(trials: Sequence[TrialSummary]) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    per: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for t in trials:
        if t.scored:
            per[(t.domain, t.agent)][t.task_id].append(t.success)
    return {cell: {task: (sum(s), len(s)) for task, s in tasks.items()} for cell, tasks in per.items()}


def _pass_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    return mean(pass_hat_k(n, c, k) for c, n in counts)


def pairs(a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(domain, A's agent, B's agent) to compare: the agents a domain's cells share, else every pair across."""
    out: list[tuple[str, str, str]] = []
    for domain in sorted({d for d, _ in a} & {d for d, _ in b}):
        left = sorted(agent for d, agent in a if d == domain)
        right = sorted(agent for d, agent in b if d == domain)
        shared = sorted(set(left) & set(right))
        out += [(domain, x, x) for x in shared] if shared else [(domain, x, y) for x in left for y in right]
    return out


def compare(a: EvalResults, b: EvalResults, *, resamples: int = 2000, seed: int = 0,
            level: float = 0.95) -> list[CellComparison]:
    ca, cb = _counts(a.trials), _counts(b.trials)
    out: list[CellComparison] = []
    rng = random.Random(seed)
    for domain, left, right in pairs(list(ca), list(cb)):
        ta, tb = ca[(domain, left)], cb[(domain, right)]
        common = sorted(set(ta) & set(tb))
        comparison = CellComparison(domain, left, len(common), only_a=sorted(set(ta) - set(tb)),
                                    only_b=sorted(set(tb) - set(ta)), agent_b="" if left == right else right)
        out.append(comparison)
        if not common:
            continue
        top = min(min(ta[t][1] for t in common), min(tb[t][1] for t in common))
        draws = [[rng.randrange(len(common)) for _ in common] for _ in range(resamples)]
        for k in range(1, top + 1):
            pa, pb = _pass_k([ta[t] for t in common], k), _pass_k([tb[t] for t in common], k)
            deltas = sorted(_pass_k([tb[common[i]] for i in d], k) - _pass_k([ta[common[i]] for i in d], k)
                            for d in draws)
            tail = (1 - level) / 2
            low = deltas[int(tail * (len(deltas) - 1))]
            high = deltas[int((1 - tail) * (len(deltas) - 1))]
            comparison.ks.append(KDelta(k, pa, pb, low, high))
        comparison.differences = [TaskDiff(t, ta[t], tb[t]) for t in common
                                  if ta[t][0] * tb[t][1] != tb[t][0] * ta[t][1]]
    return out
