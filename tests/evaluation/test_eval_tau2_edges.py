"""tau2-bench's edge cases, checked against what its code does (src/tau2/evaluator/*.py,
src/tau2/data_model/tasks.py `Action.compare_with_tool_call`), plus the inputs around a run: --tasks files,
--tau2-dir domain inference and policy, price tables, the judge's answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.evaluation import load_results, load_tasks
from core.evaluation.facts import arguments_equal
from core.evaluation.judge import parse_judgement
from core.evaluation.pricing import PriceTable, PriceTableError
from core.evaluation.rewards import JudgeError
from tests.support.eval_domains import run_eval
from tests.support.eval_helpers import RETAIL_TASKS

SEED = Path(__file__).resolve().parents[2] / "mock_backends" / "retail" / "seed.json"


@pytest.mark.parametrize(("gold", "call", "compare", "expected"), [
    ({"a": 1, "b": 2}, {"a": 1, "b": 2}, None, True),
    ({"a": 1, "b": 2}, {"a": 1}, None, True),  # an argument the call leaves out is not compared (tau2)
    ({"a": 1}, {"a": 1, "b": 2}, None, False),  # an argument the gold lacks is a mismatch
    ({"a": 1, "b": 2}, {"a": 1, "b": 3}, None, False),
    ({"a": 1, "b": 2}, {"a": 1, "b": 3}, ["a"], True),
    ({"a": 1, "b": 2}, {"b": 2}, ["a", "b"], False),  # compare_args named but missing from the call
    ({"a": 1}, {}, None, True),  # no keys to compare
    ({"a": 1}, {"a": 2}, [], True),
])
def test_action_matching_is_tau2s_compare_with_tool_call(gold: dict[str, int], call: dict[str, int],
                                                         compare: list[str] | None, expected: bool) -> None:
    assert arguments_equal(gold, call, compare) is expected


def write_tasks(path: Path, edit: dict[str, object], task_id: str = "r01") -> Path:
    raw = next(t for t in load_tasks(RETAIL_TASKS) if t.id == task_id).model_dump(mode="json", exclude_none=True)
    raw.update(edit)
    path.write_text(json.dumps([raw]), encoding="utf-8")
    return path


async def offline(out: Path, *argv: str) -> None:
    assert await run_eval(["--domain", "retail", "--agent", "fc", "--trials", "1", "--out", str(out), *argv]) == 0


async def test_a_task_without_evaluation_criteria_scores_1(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.json", {"evaluation_criteria": None, "id": "free"})
    # with no gold actions the scripted agent just chats, and tau2 scores such a task 1 whatever happened
    await offline(tmp_path / "run", "--tasks", str(tasks))
    (trial,) = load_results(tmp_path / "run").trials
    assert trial.success and trial.reward == 1.0


async def test_no_actions_and_no_env_assertions_pass_the_db_check(tmp_path: Path) -> None:
    # the customer gets a cancellation the criteria never asked for; tau2 skips the DB comparison
    base = next(t for t in load_tasks(RETAIL_TASKS) if t.id == "r01").model_dump(mode="json", exclude_none=True)
    criteria = dict(base["evaluation_criteria"])
    no_state = {**criteria, "reward_basis": ["DB"]}
    no_state.pop("actions")
    empty = {**criteria, "actions": [], "reward_basis": ["DB"]}
    for name, crit in (("none", no_state), ("empty", empty)):
        path = tmp_path / f"{name}.json"
        gold_run = {**base, "id": name, "evaluation_criteria": crit}
        path.write_text(json.dumps([gold_run]), encoding="utf-8")
    # run r01's real plan (it cancels), then re-grade its trajectory against the two variants
    await offline(tmp_path / "run", "--tasks", "r01")
    for name, expected in (("none", True), ("empty", False)):  # [] actions: the DB must stay as it was
        folder = tmp_path / "tau2" / name / "retail"
        folder.mkdir(parents=True)
        task = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))[0]
        task["id"] = "r01"
        (folder / "tasks.json").write_text(json.dumps([task]), encoding="utf-8")
        shutil.copy(SEED, folder / "db.json")
        assert await run_eval(["regrade", str(tmp_path / "run"), "--tau2-dir", str(folder.parent), "--out",
                               str(tmp_path / f"regraded-{name}")]) == 0
        (trial,) = load_results(tmp_path / f"regraded-{name}").trials
        assert trial.success is expected, name


async def test_a_tasks_file_with_broken_tasks_runs_the_others(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    good = next(t for t in load_tasks(RETAIL_TASKS) if t.id == "r05").model_dump(mode="json", exclude_none=True)
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([{"id": "broken", "user_scenario": 7}, good, {"no": "id"}]), encoding="utf-8")
    await offline(tmp_path / "run", "--tasks", str(path))
    err = capsys.readouterr().err
    assert "mixed.json: task #0 (id 'broken'): user_scenario" in err and "mixed.json: task #2" in err
    assert [t.task_id for t in load_results(tmp_path / "run").trials] == ["r05"]


async def test_tasks_accepts_a_file_of_ids(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("# the two cancellations\nr01\nr05\n", encoding="utf-8")
    await offline(tmp_path / "a", "--tasks", str(tmp_path / "ids.txt"))
    (tmp_path / "ids.json").write_text('["r12"]', encoding="utf-8")
    await offline(tmp_path / "b", "--tasks", str(tmp_path / "ids.json"), "--tasks", "r13")
    assert sorted(t.task_id for t in load_results(tmp_path / "a").trials) == ["r01", "r05"]
    assert sorted(t.task_id for t in load_results(tmp_path / "b").trials) == ["r12", "r13"]


def fake_tau2(root: Path, policy: str | None = "# tau2 retail policy\nThe agent must ...") -> Path:
    folder = root / "data" / "retail"
    folder.mkdir(parents=True)
    shutil.copy(RETAIL_TASKS, folder / "tasks.json")
    shutil.copy(SEED, folder / "db.json")
    if policy is not None:
        (folder / "policy.md").write_text(policy, encoding="utf-8")
    return folder


async def test_tau2_dir_infers_the_domain_and_uses_tau2s_policy(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = fake_tau2(tmp_path)
    for where in (folder, folder.parent):  # PATH/retail or PATH with a retail/ folder
        out = tmp_path / f"run-{where.name}"
        assert await run_eval(["--tau2-dir", str(where), "--tasks", "r01", "--trials", "1", "--out", str(out)]) == 0
        header = load_results(out).header
        assert header.domains == ["retail"]
        assert header.policy_sources == {"retail": f"tau2 {folder / 'policy.md'}"}
    assert await run_eval(["--tau2-dir", str(folder), "--tasks", "r01", "--trials", "1", "--policy", "ours",
                           "--out", str(tmp_path / "ours")]) == 0
    assert load_results(tmp_path / "ours").header.policy_sources["retail"].startswith("ours")
    # the wrong --domain for the data: one clear line naming the file, not a validation dump
    assert await run_eval(["--domain", "airline", "--tau2-dir", str(folder), "--out", str(tmp_path / "x")]) == 2
    assert "holds retail tasks, not airline" in capsys.readouterr().err


def test_price_table_lookup_and_bad_files(tmp_path: Path) -> None:
    table = PriceTable.load(None)
    assert table.cost("gpt-4.1", 1_000_000, 1_000_000) == pytest.approx(10.0)
    assert table.price("gpt-4.1-2025-04-14") == table.price("openai/gpt-4.1")
    assert table.price("gpt-4o-mini-2024-07-18") == table.price("gpt-4o-mini") != table.price("gpt-4o")
    assert table.cost("my-local-llama", 10, 10) is None  # unknown, not free
    path = tmp_path / "p.json"
    path.write_text('{"my-local-llama": {"input": 0, "output": 0}}', encoding="utf-8")
    assert PriceTable.load(path).cost("my-local-llama", 10, 10) == 0.0
    for bad, message in (('{"m": {"input": -1, "output": 0}}', "m: input"), ('{"m": {"input": NaN, "output": 0}}',
                                                                             "not valid JSON"),
                         ('["m"]', "expected a JSON object"), ('{"m": {"input": 1}}', "m: output")):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(PriceTableError, match=message):
            PriceTable.load(path)


def test_judge_answers_as_tau2_reads_them() -> None:
    answer = {"results": [{"expectedOutcome": "B", "reasoning": "no", "metExpectation": False},
                          {"expectedOutcome": "A", "reasoning": "yes", "metExpectation": True}]}
    checks = parse_judgement("```json\n" + json.dumps(answer) + "\n```", ["A", "B"])
    assert [(c.item, c.met) for c in checks] == [("A", True), ("B", False)]  # matched by text, not position
    for garbage in ("", "yes", '{"results": []}', '{"results": [{"metExpectation": "yes"}]}'):
        with pytest.raises(JudgeError):
            parse_judgement(garbage, ["A"])


def test_tau2_telecom_policy_is_its_two_files_wrapped_as_tau2_does(tmp_path: Path) -> None:
    from console.cli.eval import with_policy
    from domains.registry import load_domain

    (tmp_path / "main_policy.md").write_text("MAIN", encoding="utf-8")
    (tmp_path / "tech_support_manual.md").write_text("MANUAL", encoding="utf-8")
    domain, source = with_policy(load_domain("telecom"), tmp_path / "tasks_small.json", str(tmp_path), None)
    assert domain.policy == ("<main_policy>\nMAIN\n</main_policy>\n<tech_support_policy>\nMANUAL\n"
                             "</tech_support_policy>")
    assert source.startswith("tau2 ") and "tech_support_manual.md" in source
    ours, label = with_policy(load_domain("telecom"), tmp_path / "tasks_small.json", str(tmp_path), "ours")
    assert ours.policy == load_domain("telecom").policy and label.startswith("ours")


def test_a_tau2_file_with_odd_calls_and_results_imports_as_the_recorded_audit_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Arguments written as JSON text (OpenAI's way), a count that is no number, a result that is not strict JSON
    and a failure marked only by its "Error:" text: the import reads them as `check --as-recorded` does, and the
    CLI opens the file instead of reporting a crash."""
    from console.cli.main import main
    from core.events import EVENT_ADAPTER, AssistantTurnEvent, ToolResultEvent
    from tests.support.cli import cli_home

    cli_home(tmp_path, monkeypatch)

    document = {
        "info": {"git_commit": "", "num_trials": 1, "max_steps": 10, "max_errors": 10,
                 "user_info": {"implementation": "user_simulator"}, "agent_info": {"implementation": "llm_agent"},
                 "environment_info": {"domain_name": "retail", "policy": ""}},
        "tasks": [],
        "simulations": [{"id": "s", "task_id": "1", "start_time": "", "end_time": "", "duration": 1.0,
                         "termination_reason": "user_stop", "messages": [
            {"role": "assistant", "content": None, "usage": {"prompt_tokens": "many"}, "tool_calls": [
                {"id": "c1", "name": "get_order_details", "arguments": '{"order_id": "#W1"}'},
                {"id": "c2", "name": "cancel_pending_order", "arguments": '{"order_id": '}]},
            {"role": "tool", "id": "c1", "content": '{"order_id": "#W1", "total": NaN}'},
            {"role": "tool", "id": "c2", "content": "Error: order not found"}]}]}
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps(document))
    (trial,) = load_results(path).trials
    events = [EVENT_ADAPTER.validate_python(e) for e in trial.events]
    turn = next(e for e in events if isinstance(e, AssistantTurnEvent))
    assert turn.prompt_tokens == 0
    read, cancel = turn.tool_calls
    assert read.arguments == {"order_id": "#W1"} and cancel.parse_error and not cancel.arguments
    first, second = (e for e in events if isinstance(e, ToolResultEvent))
    assert first.ok and first.result == '{"order_id": "#W1", "total": NaN}'  # kept as text, never a NaN number
    assert not second.ok and second.outcome == "error" and second.result is None
    assert main(["eval", "compare", str(path), str(path)]) == 0
    assert "unexpected" not in capsys.readouterr().err
