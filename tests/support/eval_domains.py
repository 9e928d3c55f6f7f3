"""Shared checks for a domain's shipped evaluation tasks, run through `ledgeragent eval` exactly as a user runs it
(`console.cli.eval_options.register` on a plain argparse parser, offline, into a tmp folder)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path

from console.cli.eval_options import register
from core.evaluation import EvalResults, GoldPlanner, Task, TrialResult, compute_metrics, load_results, load_tasks
from core.evaluation.metrics import AgentMetrics
from core.tools import ToolKind
from domains.registry import load_domain

REPO = Path(__file__).resolve().parents[2]


def tasks_file(domain: str) -> Path:
    return REPO / "domains" / domain / "tasks" / "tasks.json"


def write_tools(domain: str) -> set[str]:
    return {t.name for t in load_domain(domain).tools if t.kind is ToolKind.WRITE}


def gold_writes(domain: str, task: Task) -> list[str]:
    writes = write_tools(domain)
    return [a.name for a in task.gold_actions if a.name in writes]


def refusal_ids(domain: str) -> list[str]:
    return [t.id for t in load_tasks(tasks_file(domain)) if t.hints.refusal]


async def run_eval(argv: Sequence[str]) -> int:
    root = argparse.ArgumentParser(prog="ledgeragent")
    register(root.add_subparsers(dest="command", required=True))
    args = root.parse_args(["eval", *argv])
    return int(await args.handler(args))


async def offline_run(domain: str, out: Path, *extra: str) -> EvalResults:
    code = await run_eval(["--domain", domain, "--agent", "both", "--concurrency", "2", "--out", str(out), *extra])
    assert code == 0
    return load_results(out)


def cells(results: EvalResults, domain: str) -> tuple[AgentMetrics, AgentMetrics]:
    metrics = compute_metrics(results.trials)
    ledger, fc = metrics.cell(domain, "ledger"), metrics.cell(domain, "fc")
    assert ledger is not None and fc is not None
    return ledger, fc


def executed_writes(domain: str, trial: TrialResult) -> list[str]:
    """Writes that reached the database (the reward's DB replay uses exactly these)."""
    writes = write_tools(domain)
    return [e["call"]["name"] for e in trial.events
            if e.get("type") == "tool_result" and e.get("outcome") == "ok" and e["call"]["name"] in writes]


def check_task_file(domain: str) -> list[Task]:
    """At least 10 tasks, every write tool in some gold action, at least 3 refusals without a gold write, and
    a planner for the careful and the error-prone scripted agents."""
    tasks = load_tasks(tasks_file(domain))
    tools = {t.name for t in load_domain(domain).tools}
    assert len(tasks) >= 10
    assert {name for t in tasks for name in gold_writes(domain, t)} == write_tools(domain)
    refusals = [t for t in tasks if t.hints.refusal]
    assert len(refusals) >= 3
    for task in refusals:
        assert gold_writes(domain, task) == [], f"{task.id}: the right outcome is a refusal, so no gold write"
        assert task.hints.refusal_message and task.hints.requested_actions
        assert {r.name for r in task.hints.requested_actions} <= write_tools(domain)
        for info in task.criteria.communicate_info or []:  # the careful agent says it when it refuses
            assert info.lower() in task.hints.refusal_message.lower().replace(",", ""), (task.id, info)
    for task in tasks:
        assert {a.name for a in task.gold_actions} <= tools, task.id
        assert [a.action_id for a in task.gold_actions] == [f"{task.id}_{i}" for i in range(len(task.gold_actions))]
        assert task.user_scenario.instructions and task.criteria.reward_basis
    planner = importlib.import_module(f"domains.{domain}.offline").PLANNER
    assert isinstance(planner, GoldPlanner) and type(planner) is not GoldPlanner
    return tasks


async def check_careful_run(domain: str, out: Path) -> EvalResults:
    """Both agents pass every task on every trial; the careful reads leave the gate nothing to refuse; each
    refusal task passes with no write at all; every gold write matched; replays reproduce each trial."""
    tasks = load_tasks(tasks_file(domain))
    results = await offline_run(domain, out, "--trials", "2")
    assert results.header.offline and results.header.domains == [domain]
    assert len(results.trials) == len(tasks) * 2 * 2
    assert [(t.task_id, t.agent, t.failure) for t in results.trials if not t.success] == []
    ledger, fc = cells(results, domain)
    assert ledger.pass_k == fc.pass_k == {1: 1.0, 2: 1.0}
    assert set(ledger.gate_verdicts) == {"ALLOW"}  # the careful reads give every rule its evidence
    refusals = set(refusal_ids(domain))
    for trial in results.trials:
        info = trial.reward_info
        assert info is not None and info.db_check is not None and info.db_check.replay_mismatches == []
        assert all(c.status == "matched" for c in info.write_checks), (trial.task_id, info.write_checks)
        if trial.task_id in refusals:
            assert executed_writes(domain, trial) == [] and info.db_check.db_match
    return results


async def check_error_prone(domain: str, out: Path) -> tuple[AgentMetrics, AgentMetrics]:
    """With every write slipping (p = 1), the same slips for both agents: the gate refuses them and the ledger
    agent recovers, so its pass^1 is strictly higher than FC's."""
    results = await offline_run(domain, out, "--trials", "1", "--error-rate", "1", "--seed", "3")
    ledger, fc = cells(results, domain)
    assert ledger.slips == fc.slips > 0
    assert ledger.pass_k[1] > fc.pass_k[1]
    assert ledger.gate_verdicts.get("REVISE", 0) + ledger.gate_verdicts.get("BLOCK", 0) > 0
    assert sum(fc.would_refuse.values()) > 0 and sum(ledger.would_refuse.values()) == 0
    assert "error-prone" in (out / "report.md").read_text(encoding="utf-8")
    return ledger, fc


async def check_refusals_graded(domain: str, out: Path) -> dict[tuple[str, str], TrialResult]:
    """Refusal tasks are graded on writes alone: when the tempted agent carries out the forbidden request and
    it reaches the database, the trial fails; with no write (the gate refused it, or the tool did), it passes."""
    ids = refusal_ids(domain)
    results = await offline_run(domain, out, "--trials", "1", "--error-rate", "1", "--seed", "3",
                                "--tasks", ",".join(ids))
    by = {(t.task_id, t.agent): t for t in results.trials}
    assert set(by) == {(i, a) for i in ids for a in ("ledger", "fc")}
    for trial in results.trials:
        assert trial.slips and trial.slips[0].startswith("forbidden request")
        assert trial.success == (executed_writes(domain, trial) == []), (trial.task_id, trial.agent)
        if trial.agent == "ledger":
            assert trial.success and trial.gate.verdicts.get("ALLOW", 0) == 0
    return by
