"""The harness end to end with scripted agents and customers: deterministic, isolated, never dropping a trial,
resumable, and showing what the gate changes when the scripted agent makes mistakes."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from core.evaluation import EvalRunner, OfflineParticipants, ResultsError, RunSettings, load_results
from core.evaluation.offline import OfflineCustomer
from core.evaluation.results import ResultStore
from core.evaluation.runner import AgentVariant
from core.evaluation.tasks import Task
from core.llm.base import AssistantTurn, ChatModel, Message
from core.tools import ToolCall
from domains.retail import DOMAIN
from domains.retail.offline import PLANNER
from tests.support.eval_helpers import COMPACT, FC, LEDGER, TAU2_RETAIL, evaluate, retail_run


def stable(folder: Path) -> list[dict[str, Any]]:
    """trials.jsonl without its wall clock (duration, start, per-event times), in key order."""
    lines = [json.loads(line) for line in (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()]
    for line in lines:
        for clock in ("duration_s", "started_at", "clock"):
            line.pop(clock)
    return sorted(lines, key=lambda t: (t["task_id"], t["agent"], t["trial"]))


async def test_offline_run_passes_every_task_and_is_deterministic(tmp_path: Path) -> None:
    first = await evaluate(tmp_path / "a", retail_run(), trials=2, concurrency=3)
    second = await evaluate(tmp_path / "b", retail_run(), trials=2, concurrency=1)
    assert stable(tmp_path / "a") == stable(tmp_path / "b")
    assert len(first.trials) == 16 * 2 * 2
    failed = [(t.task_id, t.agent, t.failure) for t in first.trials if not t.success]
    assert failed == []
    for cell in first.metrics.cells:
        assert cell.pass_k == {1: 1.0, 2: 1.0}
    ledger = first.metrics.cell("retail", "ledger")
    assert ledger is not None and ledger.tokens.ledger_share > 0 and ledger.tokens.estimated
    assert second.metrics == first.metrics
    # the results file is loadable by the public loader, with every trial's full trace
    loaded = load_results(tmp_path / "a")
    assert len(loaded.trials) == 64 and loaded.header.offline
    assert [t.task_id for t in loaded.trials[:4]] == ["r01", "r01", "r01", "r01"]
    events = loaded.trials[0].events
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "session_ended"
    for trial in loaded.trials:  # replaying the trace reproduces every write and the trial's own end state
        assert trial.reward_info is not None and trial.reward_info.db_check is not None
        assert trial.reward_info.db_check.replay_mismatches == []
        assert trial.reward_info.db_check.live_hash == trial.reward_info.db_check.predicted_hash
    report = (tmp_path / "a" / "report.md").read_text(encoding="utf-8")
    assert "SIMULATION" in report and "pass_k_retail.svg" in report
    svg = (tmp_path / "a" / "pass_k_retail.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "polyline" in svg and "ledger" in svg
    root = ElementTree.fromstring(svg)  # well-formed XML
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 2  # one line per agent


async def test_error_prone_agent_shows_what_the_gate_changes(tmp_path: Path) -> None:
    run = retail_run(participants=OfflineParticipants(DOMAIN, PLANNER, error_rate=0.5, seed=3))
    outcome = await evaluate(tmp_path, run, trials=4, concurrency=4, error_rate=0.5, seed=3)
    ledger, fc = outcome.metrics.cell("retail", "ledger"), outcome.metrics.cell("retail", "fc")
    assert ledger is not None and fc is not None
    assert ledger.slips == fc.slips > 0  # the same mistakes were proposed to both
    for k in range(1, 5):
        assert ledger.pass_k[k] > fc.pass_k[k]
    assert ledger.gate_verdicts.get("BLOCK", 0) + ledger.gate_verdicts.get("REVISE", 0) > 0
    assert sum(fc.would_refuse.values()) > 0 and sum(ledger.would_refuse.values()) == 0
    assert fc.failures.get("policy violation", 0) > 0
    assert "error-prone" in (tmp_path / "report.md").read_text(encoding="utf-8")


async def test_ablations_no_gate_and_disabled_predicate(tmp_path: Path) -> None:
    run = retail_run(["r12", "r13"], participants=OfflineParticipants(DOMAIN, PLANNER, error_rate=1.0, seed=0))
    from core.agent import AgentConfig

    no_gate = AgentVariant("ledger-no-gate", AgentConfig(gate=False))
    minus = AgentVariant("ledger", AgentConfig(disabled_predicates=frozenset({"retail.order_owned_by_customer"})))
    outcome = await evaluate(tmp_path, run, (no_gate, minus), trials=1, error_rate=1.0)
    by = {(t.task_id, t.agent): t for t in outcome.trials}
    # r12 (another customer's order) executes without the gate, and without the ownership rule
    assert not by[("r12", "ledger-no-gate")].success and not by[("r12", "ledger")].success
    # r13 (a processed order) is still refused: by the tool without the gate, by its own rule with it
    assert by[("r13", "ledger-no-gate")].success and by[("r13", "ledger")].success
    assert by[("r13", "ledger")].gate.predicates["retail.cancel_requires_pending"] == {"violation": 1}


class Crashing:
    name = "crashing"

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        raise RuntimeError("the model adapter blew up")


class Hanging:
    name = "hanging"

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")


class Flailing:
    """Calls a tool that does not exist, forever."""

    name = "flailing"

    def __init__(self) -> None:
        self.n = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        self.n += 1
        return AssistantTurn(None, (ToolCall(f"c{self.n}", "drop_database", {}),))


class Mixed(OfflineParticipants):
    """Scripted agents, except for three tasks whose agent crashes, hangs or loops."""

    def agent(self, task: Task, variant: AgentVariant, trial: int, data: Mapping[str, Any] | None) -> ChatModel:
        special: dict[str, ChatModel] = {"r01": Crashing(), "r02": Hanging(), "r03": Flailing()}
        return special.get(task.id) or super().agent(task, variant, trial, data)


async def test_crashed_timed_out_and_looping_trials_are_recorded(tmp_path: Path) -> None:
    run = retail_run(["r01", "r02", "r03", "r04"], participants=Mixed(DOMAIN, PLANNER))
    outcome = await evaluate(tmp_path, run, (LEDGER,), trials=1, timeout=3.0, max_errors=3)  # the hang sleeps 30 s
    by = {t.task_id: t for t in outcome.trials}
    assert len(by) == 4
    # a crash is retried whole (max_retries 3), then recorded as an infrastructure error: no task failure
    assert by["r01"].status == "infra_error" and "the model adapter blew up" in by["r01"].detail
    assert by["r01"].attempts == 4 and by["r01"].termination == "infrastructure_error" and by["r01"].failure is None
    assert by["r02"].status == "timeout" and by["r02"].termination == "timeout"  # a timeout is a failure (tau2)
    assert by["r03"].termination == "too_many_errors" and by["r03"].status == "ok"
    assert by["r04"].success  # the next trial on the same worker is unaffected
    assert by["r03"].failure is not None and by["r03"].failure.category == "reasoning loop / max steps"
    cell = outcome.metrics.cell("retail", "ledger")
    assert cell is not None and cell.infra_errors == 1 and cell.timeouts == 1 and cell.tasks == 3
    assert cell.pass_k[1] == pytest.approx(1 / 3)  # r01 is left out, not counted as failed
    assert load_results(tmp_path).trials[1].events[-1]["reason"] == "timeout"


async def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    run = retail_run(["r01", "r05"])
    await evaluate(tmp_path, run, trials=1)
    with pytest.raises(ResultsError, match="--resume"):
        await evaluate(tmp_path, run, trials=2)
    # simulate an interruption: the last line was half written
    log = tmp_path / "trials.jsonl"
    log.write_text(log.read_text(encoding="utf-8") + '{"domain": "retail", "task_', encoding="utf-8")
    settings = RunSettings(trials=2, concurrency=2)
    runner = EvalRunner([run], [LEDGER, FC], settings, workdir=tmp_path / "w",
                        skip=frozenset(t.key for t in ResultStore(tmp_path).done()))
    assert runner.total() == 4  # 2 tasks x 2 agents, only trial #1 is missing
    outcome = await evaluate(tmp_path, run, trials=2, resume=True)
    seen = sorted((t.task_id, t.agent, t.trial) for t in outcome.trials)
    assert outcome.resumed == 4 and len(seen) == 8 and len(set(seen)) == 8
    assert len(load_results(tmp_path / "results.json").trials) == 8
    with pytest.raises(ResultsError, match="other settings"):
        await evaluate(tmp_path, run, trials=2, resume=True, error_rate=0.3)


async def test_compact_history_prompts_against_fc(tmp_path: Path) -> None:
    outcome = await evaluate(tmp_path, retail_run(["r08"]), (COMPACT, FC, LEDGER), trials=1)
    assert all(t.success for t in outcome.trials)
    prompt = {t.agent: t.tokens.prompt for t in outcome.trials}
    assert prompt["ledger-compact"] < prompt["ledger"]
    assert outcome.metrics.prompt_overhead["ledger-compact"] < outcome.metrics.prompt_overhead["ledger"]


@pytest.mark.shared
@pytest.mark.skipif(not (TAU2_RETAIL / "db.json").is_file(), reason="tau2 retail data not present")
async def test_tau2_tasks_and_database(tmp_path: Path) -> None:
    run = retail_run(["0", "10", "64"], source=TAU2_RETAIL / "db.json", tasks_file=TAU2_RETAIL / "tasks.json")
    outcome = await evaluate(tmp_path, run, trials=1, concurrency=2)
    assert all(t.success for t in outcome.trials), [(t.task_id, t.agent, t.failure) for t in outcome.trials]
    # task 64's first gold write fails in tau2 too (exchange on a pending order): not required
    info = next(t for t in load_results(tmp_path).trials if t.task_id == "64" and t.agent == "ledger").reward_info
    assert info is not None and [c.status for c in info.write_checks] == ["matched"]
    assert OfflineCustomer.for_task(run.tasks[0]).first_message.startswith("You received your order")


async def test_an_evaluation_folder_is_private_to_its_user_whatever_the_umask(tmp_path: Path) -> None:
    """Its trials hold whole conversations (customers' names, emails, orders) and each trial's database: the run
    folder, its work folders and every file in them, the tau2 export included, are 0700 / 0600 under umask 000."""
    from core.evaluation.tau2_format import write_tau2

    before = os.umask(0)
    try:
        out = tmp_path / "runs" / "retail"
        await evaluate(out, retail_run(["r01"]), trials=1, concurrency=1)
        write_tau2(load_results(out), out / "tau2")
    finally:
        os.umask(before)
    made = [out.parent, *out.parent.rglob("*")]
    assert {p.name for p in made} >= {"run.json", "trials.jsonl", "results.json", "report.md", "tau2"}
    opened = {p.relative_to(tmp_path): oct(stat.S_IMODE(p.lstat().st_mode)) for p in made
              if stat.S_IMODE(p.lstat().st_mode) != (0o700 if p.is_dir() else 0o600)}
    assert opened == {}
