"""A results file written by tau2-bench's own data models (`data/tau2_native_retail.json`, made by
`data/make_tau2_native.py` through tau2's `Results`, `SimulationRun`, `AssistantMessage`, ...): imported, compared
with our run across agents, re-graded and exported, the figures agreeing with what tau2 recorded.

The fields we rely on are pinned first (`test_the_fixture_has_the_fields_tau2_writes`): if tau2 renames one, the
fixture made again fails there, not somewhere downstream."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from core.evaluation import load_results
from core.evaluation.compare import compare
from core.evaluation.metrics import compute_metrics
from tests.support.eval_domains import run_eval

NATIVE = Path(__file__).parent / "data" / "tau2_native_retail.json"
REPO = Path(__file__).resolve().parents[2]


def native() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(NATIVE.read_text(encoding="utf-8"))
    return raw


def test_the_fixture_has_the_fields_tau2_writes() -> None:
    raw = native()
    # tau2 src/tau2/data_model/simulation.py: Info, AgentInfo, UserInfo, EnvironmentInfo
    assert {"git_commit", "num_trials", "max_steps", "max_errors", "user_info", "agent_info", "environment_info",
            "seed"} <= set(raw["info"])
    assert raw["info"]["agent_info"]["implementation"] == "llm_agent"
    assert {"domain_name", "policy", "tool_defs"} <= set(raw["info"]["environment_info"])
    sims = raw["simulations"]
    assert len(sims) == 10
    # SimulationRun: timing, costs, the termination reason, messages, trial
    for sim in sims:
        assert {"id", "task_id", "timestamp", "start_time", "end_time", "duration", "termination_reason",
                "agent_cost", "user_cost", "reward_info", "messages", "trial", "seed", "mode", "info"} <= set(sim)
    infra = [s for s in sims if s["termination_reason"] == "infrastructure_error"]
    # run_with_retry's placeholder (src/tau2/runner/progress.py): no messages, how many attempts were made
    assert len(infra) == 2 and all(s["info"]["failed_after_attempts"] == 2 and s["messages"] == [] for s in infra)
    ran = [s for s in sims if s not in infra]
    assert sum(s["reward_info"]["reward"] == 1.0 for s in ran) == 6 and len(ran) == 8
    for sim in ran:
        assert isinstance(sim["agent_cost"], float) and isinstance(sim["user_cost"], float)
        for message in sim["messages"]:
            # ParticipantMessageBase: timestamp from get_now, usage from get_response_usage, cost
            assert {"role", "content", "turn_idx", "timestamp"} <= set(message)
            assert message["timestamp"] is not None
            if message["role"] in ("assistant", "user") and message["usage"] is not None:
                assert set(message["usage"]) == {"prompt_tokens", "completion_tokens"}
                assert isinstance(message["cost"], float)
    assert all("ledgeragent" not in (s["info"] or {}) for s in sims)  # a foreign file, not our round trip


def test_the_results_viewer_counts_what_tau2_counts() -> None:
    results = load_results(NATIVE)
    assert [t.attempts for t in results.trials if t.infra] == [2, 2]
    assert results.header.max_retries == 1  # tau2 made 2 attempts: one retry
    cell = compute_metrics(results.trials).cell("retail", "llm_agent")
    # tau2's avg_reward: 6 of the 8 simulations that ran; the 2 that never ran are in no denominator
    assert cell is not None and cell.mean_reward == pytest.approx(0.75) and cell.trials == 8
    assert cell.infra_errors == 2


def test_an_imported_tau2_file_keeps_its_tokens_and_costs() -> None:
    raw = native()
    results = load_results(NATIVE)
    by_key = {(s["task_id"], s["trial"]): s for s in raw["simulations"]}
    for trial in results.trials:
        sim = by_key[(trial.task_id, trial.trial)]
        if trial.infra:
            assert trial.usage == {} and trial.tokens.total == 0
            assert trial.detail.startswith("litellm.APIConnectionError")
            continue
        agent = [m for m in sim["messages"] if m["role"] == "assistant" and m["usage"]]
        assert trial.tokens.prompt == sum(m["usage"]["prompt_tokens"] for m in agent) > 0
        assert trial.tokens.completion == sum(m["usage"]["completion_tokens"] for m in agent)
        assert trial.usage["agent"].cost == pytest.approx(sim["agent_cost"])
        assert trial.usage["user"].cost == pytest.approx(sim["user_cost"])
        assert trial.usage["user"].model == "gpt-4.1-mini" and trial.usage["user"].prompt > 0
        assert trial.cost == pytest.approx(sim["agent_cost"] + sim["user_cost"])
    cell = compute_metrics(results.trials).cell("retail", "llm_agent")
    assert cell is not None and cell.cost is not None and cell.cost > 0 and cell.tokens.total_per_trial > 0


async def test_regrade_agrees_and_names_attempts_as_tau2_made_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run_eval(["regrade", str(NATIVE), "--out", str(tmp_path / "regraded")]) == 0
    printed = capsys.readouterr().out
    assert "re-graded 10 trial(s)" in printed and ": 0 changed" in printed
    assert "after 2 attempts" in printed and "retries" not in printed
    cell = compute_metrics(load_results(tmp_path / "regraded").trials).cell("retail", "llm_agent")
    assert cell is not None and cell.mean_reward == pytest.approx(0.75) and cell.trials == 8  # as tau2 said
    report = (tmp_path / "regraded" / "report.md").read_text(encoding="utf-8")
    roles = {line.split(" | ")[2]: line for line in report.splitlines()
             if line.startswith("| retail | llm_agent | ") and line.count("|") == 9}
    assert "$0.5305" in roles["agent"] and "260,614" in roles["agent"]  # sum of tau2's agent_cost, message usage
    assert "$0.0087" in roles["user"] and "$0.5392" in roles["all roles"]


async def test_regrade_without_a_judge_says_a_trial_turned_unscored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """r06's task grades an NL assertion: tau2's judge said met (reward 1). Re-graded with the same task and no
    judge, the trial is unscored; its reward number stays 1, so "reward 1 -> 1" would have said nothing."""
    folder = tmp_path / "tau2" / "retail"
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text(json.dumps(native()["tasks"]), encoding="utf-8")
    (folder / "db.json").write_text((REPO / "mock_backends" / "retail" / "seed.json").read_text(encoding="utf-8"),
                                    encoding="utf-8")
    assert await run_eval(["regrade", str(NATIVE), "--tau2-dir", str(folder.parent), "--out",
                           str(tmp_path / "regraded")]) == 0
    printed = capsys.readouterr().out
    assert "2 changed" in printed  # both r06 trials: the passed one and the failed one
    line = next(x for x in printed.splitlines() if "retail r06 llm_agent #1" in x)
    assert "passed, reward 1 -> unscored (NL_ASSERTION not graded: no judge model)" in line
    line = next(x for x in printed.splitlines() if "retail r06 llm_agent #0" in x)
    assert "failed, reward 0 -> unscored" in line
    assert "reward 1 -> 1" not in printed


async def test_compare_a_tau2_run_with_ours_across_agents(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    ours = tmp_path / "ours"
    assert await run_eval(["--domain", "retail", "--agent", "both", "--trials", "2", "--tasks",
                           "r01,r02,r04,r05,r06", "--out", str(ours)]) == 0
    capsys.readouterr()
    assert await run_eval(["compare", str(NATIVE), str(ours)]) == 0
    printed = capsys.readouterr().out
    assert "share no" not in printed
    assert "retail: A ran llm_agent (gpt-4.1-2025-04-14), B ran fc (scripted, simulation)" in printed
    assert "retail: A llm_agent vs B ledger: B - A over 5 common task(s)" in printed
    cells = compare(load_results(NATIVE), load_results(ours))
    assert [(c.agent, c.agent_b) for c in cells] == [("llm_agent", "fc"), ("llm_agent", "ledger")]
    for cell in cells:
        (k1,) = cell.ks  # r02 and r05 ran once in A (the other attempt never ran): k up to 1
        assert k1.a == pytest.approx(0.8) and k1.b == 1.0  # pass^1: the mean over tasks of each task's rate
        assert k1.low <= k1.delta <= k1.high
        assert {d.task_id for d in cell.differences} == {"r04", "r06"}
    # the same agent on both sides keeps the plain comparison
    assert [(c.agent, c.agent_b) for c in compare(load_results(ours), load_results(ours))] == [("fc", ""),
                                                                                             ("ledger", "")]


async def test_compare_refuses_runs_without_a_common_domain(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "airline"
    assert await run_eval(["--domain", "airline", "--agent", "fc", "--trials", "1", "--tasks", "a01",
                           "--out", str(other)]) == 0
    capsys.readouterr()
    assert await run_eval(["compare", str(NATIVE), str(other)]) == 2
    err = capsys.readouterr().err
    assert "share no domain (A: retail; B: airline)" in err and "\n" not in err.strip()


async def test_export_writes_the_policy_the_agent_got_and_real_times(tmp_path: Path) -> None:
    tau2_dir = tmp_path / "tau2data" / "retail"
    tau2_dir.mkdir(parents=True)
    (tau2_dir / "tasks.json").write_text((REPO / "domains" / "retail" / "tasks" / "tasks.json")
                                         .read_text(encoding="utf-8"), encoding="utf-8")
    (tau2_dir / "db.json").write_text((REPO / "mock_backends" / "retail" / "seed.json").read_text(encoding="utf-8"),
                                      encoding="utf-8")
    policy = "# tau2's own retail policy\n\nThe words the agent was given.\n"
    (tau2_dir / "policy.md").write_text(policy, encoding="utf-8")
    run = tmp_path / "run"
    assert await run_eval(["--tau2-dir", str(tau2_dir), "--agent", "fc", "--trials", "1", "--tasks", "r01",
                           "--out", str(run)]) == 0
    # exported without --tau2-dir: the run itself says which policy its agent had
    assert await run_eval(["export", str(run), "--out", str(tmp_path / "out")]) == 0
    raw = json.loads((tmp_path / "out" / "retail-fc.json").read_text(encoding="utf-8"))
    assert raw["info"]["environment_info"]["policy"] == policy
    (sim,) = raw["simulations"]
    start, end = datetime.fromisoformat(sim["start_time"]), datetime.fromisoformat(sim["end_time"])
    assert end > start
    stamps = [datetime.fromisoformat(m["timestamp"]) for m in sim["messages"]]
    assert stamps == sorted(stamps) and start <= stamps[0] and stamps[-1] <= end
    # a run from before the text was recorded: the tau2 file it names is read again, never our paraphrase
    header = json.loads((run / "results.json").read_text(encoding="utf-8"))
    header["header"]["policy_texts"] = {}
    (run / "results.json").write_text(json.dumps(header), encoding="utf-8")
    assert await run_eval(["export", str(run), "--out", str(tmp_path / "again")]) == 0
    again = json.loads((tmp_path / "again" / "retail-fc.json").read_text(encoding="utf-8"))
    assert again["info"]["environment_info"]["policy"] == policy
    (tau2_dir / "policy.md").unlink()
    assert await run_eval(["export", str(run), "--out", str(tmp_path / "gone")]) == 2
