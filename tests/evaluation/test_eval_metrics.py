"""pass^k and the aggregates: the harness's numbers equal the definitions, on random data with fixed seeds."""

from __future__ import annotations

import itertools
import random
from statistics import mean

import pytest

from core.evaluation.metrics import compute_metrics, pass_hat_k, pass_k
from core.evaluation.results import TokenStats, TrialSummary


def brute_force(successes: list[bool], k: int) -> float:
    """The definition: the share of k-subsets of the trials in which every trial succeeded."""
    subsets = list(itertools.combinations(successes, k))
    return sum(all(s) for s in subsets) / len(subsets)


def test_estimator_equals_the_definition_on_random_success_matrices() -> None:
    rng = random.Random(20240515)
    for _ in range(200):
        n = rng.randint(1, 8)
        matrix = {f"t{i}": [rng.random() < rng.random() for _ in range(n)] for i in range(rng.randint(1, 12))}
        got = pass_k(matrix)
        assert sorted(got) == list(range(1, n + 1))
        for k in range(1, n + 1):
            expected = mean(brute_force(row, k) for row in matrix.values())
            assert got[k] == pytest.approx(expected, abs=1e-12)
            assert got[k] == pytest.approx(mean(pass_hat_k(n, sum(row), k) for row in matrix.values()))


def test_pass_k_is_non_increasing_and_bounded_by_the_fewest_trials() -> None:
    rng = random.Random(7)
    matrix = {f"t{i}": [rng.random() < 0.7 for _ in range(rng.randint(3, 6))] for i in range(20)}
    got = pass_k(matrix)
    assert max(got) == min(len(v) for v in matrix.values())
    values = [got[k] for k in sorted(got)]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)


def trial(task: str, agent: str, index: int, success: bool, *, has_write: bool = True, prompt: int = 100,
          ledger: int = 0) -> TrialSummary:
    return TrialSummary(domain="retail", task_id=task, agent=agent, trial=index, termination="user_stop",
                        reward=float(success), success=success, has_write=has_write,
                        tokens=TokenStats(prompt=prompt, completion=10, ledger=ledger, model_calls=2))


def test_metrics_on_random_runs_match_the_estimator_per_agent_and_subset() -> None:
    rng = random.Random(99)
    trials: list[TrialSummary] = []
    truth: dict[str, dict[str, list[bool]]] = {"ledger": {}, "fc": {}}
    writes = {f"t{i}": rng.random() < 0.6 for i in range(15)}
    for agent in truth:
        for task in writes:
            row = [rng.random() < 0.6 for _ in range(4)]
            truth[agent][task] = row
            trials += [trial(task, agent, i, ok, has_write=writes[task], prompt=120 if agent == "ledger" else 100,
                             ledger=30 if agent == "ledger" else 0) for i, ok in enumerate(row)]
    metrics = compute_metrics(trials)
    for agent, matrix in truth.items():
        cell = metrics.cell("retail", agent)
        assert cell is not None
        assert cell.pass_k == pytest.approx(pass_k(matrix))
        assert cell.write_pass_k == pytest.approx(pass_k({t: r for t, r in matrix.items() if writes[t]}))
        assert cell.table2["avg"] == pytest.approx((cell.pass_k[1] + cell.pass_k[4]) / 2)
    ledger = metrics.cell("retail", "ledger")
    assert ledger is not None and ledger.tokens.ledger_share == pytest.approx(30 / 120)
    assert metrics.token_overhead["ledger"] == pytest.approx((130 - 110) / 110)
    assert metrics.prompt_overhead["ledger"] == pytest.approx(0.2)
    assert "fc" not in metrics.token_overhead
