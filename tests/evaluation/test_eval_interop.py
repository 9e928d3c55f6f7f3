"""tau2-bench interop: export in tau2's results format, import tau2 results (viewer + re-grading), compare runs.

The schema checks run against a small hand-written tau2 results file (`data/tau2_results_retail.json`, shaped
as tau2's `Results` / `SimulationRun` / message models write it) and against the rules tau2's own code applies
to a trajectory (tool calls answered in order by tool messages of the same id)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.evaluation import load_results
from core.evaluation.compare import compare
from core.evaluation.metrics import compute_metrics, pass_k
from core.evaluation.results import ResultsError, ResultStore
from core.evaluation.tau2_format import TAU2_TERMINATIONS, Tau2Results
from core.events import EVENT_ADAPTER
from tests.support.eval_domains import run_eval
from tests.support.eval_stub import Call, RoleStub
from tests.support.tau2_messages import check_trajectory, validate_messages

FIXTURE = Path(__file__).parent / "data" / "tau2_results_retail.json"


async def offline(out: Path, *extra: str) -> None:
    assert await run_eval(["--domain", "retail", "--agent", "both", "--trials", "2", "--concurrency", "2",
                           "--out", str(out), *extra]) == 0


def check_tau2_trajectory(messages: list[dict[str, Any]]) -> None:
    """What tau2's `Environment.set_state` demands before it replays a trajectory."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        assert message["role"] != "tool", f"tool message without a call at {index - 1}"
        for call in message.get("tool_calls") or []:
            reply = messages[index]
            index += 1
            assert reply["role"] == "tool" and reply["id"] == call["id"]
            assert set(call) == {"id", "name", "arguments", "requestor"}


async def test_export_is_tau2_results_and_round_trips(tmp_path: Path) -> None:
    await offline(tmp_path / "run", "--tasks", "r01,r12", "--error-rate", "1", "--seed", "3")
    assert await run_eval(["export", str(tmp_path / "run"), "--out", str(tmp_path / "tau2")]) == 0
    written = sorted(p.name for p in (tmp_path / "tau2").iterdir())
    assert written == ["retail-fc.json", "retail-ledger.json"]
    original = load_results(tmp_path / "run")
    for agent in ("ledger", "fc"):
        raw = json.loads((tmp_path / "tau2" / f"retail-{agent}.json").read_text(encoding="utf-8"))
        document = Tau2Results.model_validate(raw)  # tau2's field names and types
        assert document.info.environment_info.domain_name == "retail" and document.info.num_trials == 2
        assert "policy" in raw["info"]["environment_info"] and raw["info"]["environment_info"]["policy"]
        assert {t["id"] for t in raw["tasks"]} == {"r01", "r12"} and all("ledgeragent" not in t for t in raw["tasks"])
        trials = {(t.task_id, t.trial): t for t in original.trials if t.agent == agent}
        for sim in raw["simulations"]:
            ran = [e for e in trials[(sim["task_id"], sim["trial"])].events
                   if e["type"] == "tool_result" and e["executed"]]
            assert [m["id"] for m in sim["messages"] if m["role"] == "tool"] == [e["call"]["id"] for e in ran]
            assert sim["termination_reason"] in TAU2_TERMINATIONS
            assert set(sim["reward_info"]) >= {"reward", "db_check", "action_checks", "communicate_checks",
                                                "reward_basis", "reward_breakdown"}
            check_tau2_trajectory(sim["messages"])
            validate_messages(sim["messages"])  # every field one of tau2's message models has
            first = dict(sim["messages"][0])
            assert first.pop("timestamp") is not None  # the run's wall clock, kept beside the trace
            assert first == {"role": "assistant", "content": "Hi! How can I help you today?", "turn_idx": 0}
        # tau2's metrics over the exported file agree with ours
        mine = compute_metrics(original.trials).cell("retail", agent)
        assert mine is not None
        rewards = [s["reward_info"]["reward"] for s in raw["simulations"]
                   if s["termination_reason"] != "infrastructure_error"]
        assert sum(rewards) / len(rewards) == pytest.approx(mine.mean_reward)
        by_task: dict[str, list[bool]] = {}
        for s in raw["simulations"]:
            by_task.setdefault(s["task_id"], []).append(abs(s["reward_info"]["reward"] - 1) < 1e-6)
        assert pass_k(by_task) == pytest.approx(mine.pass_k)
        # import gives back exactly what was exported
        back = load_results(tmp_path / "tau2" / f"retail-{agent}.json")
        assert [t.model_dump() for t in back.trials] == [t.model_dump() for t in original.trials if t.agent == agent]
        assert back.header.agents == [agent] and back.header.seed == original.header.seed


async def test_a_gate_refused_write_is_not_exported_as_a_tool_call(tmp_path: Path) -> None:
    await offline(tmp_path / "run", "--tasks", "r12", "--error-rate", "1", "--seed", "0", "--agent", "ledger")
    assert await run_eval(["export", str(tmp_path / "run"), "--out", str(tmp_path / "tau2")]) == 0
    raw = json.loads((tmp_path / "tau2" / "retail-ledger.json").read_text(encoding="utf-8"))
    sim = raw["simulations"][0]
    refused = [m for m in sim["messages"] if (m.get("raw_data") or {}).get("ledgeragent_not_executed")]
    assert refused, "the gate refused the error-prone agent's write"
    stopped = refused[0]["raw_data"]["ledgeragent_not_executed"][0]
    assert stopped["outcome"] == "rejected" and stopped["content"].startswith(("REVISE", "BLOCK"))
    ran = {c["id"] for m in sim["messages"] for c in m.get("tool_calls") or []}
    assert stopped["id"] not in ran  # tau2's DB replay will not execute what never ran
    # a file that lost our trial records (rebuilt through tau2's own models) still says the write was proposed
    # and refused, from the raw data
    del sim["info"]["ledgeragent"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(raw), encoding="utf-8")
    trial = load_results(bare).trials[0]  # (the others still carry theirs)
    events = [EVENT_ADAPTER.validate_python(e) for e in trial.events]
    (refused,) = [e for e in events if e.type == "tool_result" and e.call.id == stopped["id"]]
    assert (refused.executed, refused.outcome, refused.content) == (False, "rejected", stopped["content"])
    assert any(c.id == stopped["id"] for e in events if e.type == "assistant_turn" for c in e.tool_calls)


def test_a_tau2_results_file_opens_as_our_results(tmp_path: Path) -> None:
    results = load_results(FIXTURE)
    assert results.header.domains == ["retail"] and results.header.agents == ["llm_agent"]
    assert results.header.model == "gpt-4.1-2025-04-14" and results.header.trials == 2
    ok, infra = results.trials
    assert ok.success and ok.reward == 1.0 and ok.termination == "user_stop"
    assert infra.status == "infra_error" and not infra.success
    events = [EVENT_ADAPTER.validate_python(e) for e in ok.events]  # what the results viewer replays
    assert events[0].type == "session_started" and events[-1].type == "session_ended"
    calls = [e for e in events if e.type == "tool_result"]
    assert [c.call.name for c in calls] == ["find_user_id_by_email", "get_order_details", "cancel_pending_order"]
    metrics = compute_metrics(results.trials)
    cell = metrics.cells[0]
    assert cell.pass_k == {1: 1.0} and cell.infra_errors == 1  # tau2's own exclusion, kept


async def test_regrade_a_tau2_file_with_our_evaluator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await run_eval(["regrade", str(FIXTURE), "--out", str(tmp_path / "regraded")]) == 0
    printed = capsys.readouterr().out
    assert "re-graded 2 trial(s)" in printed
    regraded = load_results(tmp_path / "regraded")
    ok, infra = regraded.trials
    assert ok.success and ok.reward_info is not None and ok.reward_info.db_check is not None
    assert ok.reward_info.db_check.db_match  # our DB replay of its cancel reaches the gold state
    assert [c.status for c in ok.reward_info.write_checks] == ["matched"]
    assert infra.status == "infra_error"  # nothing to grade: kept as an excluded trial
    # a fresh task that asks for more changes the grade of the same trajectory
    task = json.loads(FIXTURE.read_text(encoding="utf-8"))["tasks"][0]
    task["evaluation_criteria"]["communicate_info"] = ["a promise never made"]
    tau2_dir = tmp_path / "tau2" / "retail"
    tau2_dir.mkdir(parents=True)
    (tau2_dir / "tasks.json").write_text(json.dumps([task]), encoding="utf-8")
    seed = Path(__file__).resolve().parents[2] / "mock_backends" / "retail" / "seed.json"
    (tau2_dir / "db.json").write_text(seed.read_text(encoding="utf-8"), encoding="utf-8")
    assert await run_eval(["regrade", str(FIXTURE), "--tau2-dir", str(tau2_dir.parent), "--out",
                           str(tmp_path / "stricter")]) == 0
    assert "1 changed" in capsys.readouterr().out
    assert not load_results(tmp_path / "stricter").trials[0].success


@pytest.mark.parametrize("content", ['{"foo": 1}', "[1, 2]", '{"info": {}, "tasks": [], "simulations": [{}]}'])
async def test_a_results_file_of_another_format_is_named(tmp_path: Path, content: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "other.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ResultsError, match="other.json"):
        load_results(path)
    assert await run_eval(["regrade", str(path), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "other.json" in err and "Traceback" not in err


async def test_compare_two_runs_per_task_and_pass_k_with_a_confidence_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await offline(tmp_path / "a", "--tasks", "r01,r05,r12,r13", "--agent", "fc")
    await offline(tmp_path / "b", "--tasks", "r01,r05,r12,r13", "--agent", "fc", "--error-rate", "1", "--seed", "2")
    capsys.readouterr()
    assert await run_eval(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    printed = capsys.readouterr().out
    assert "retail / fc: B - A over 4 common task(s)" in printed and "95% CI" in printed
    cells = compare(load_results(tmp_path / "a"), load_results(tmp_path / "b"))
    (cell,) = cells
    assert [k.k for k in cell.ks] == [1, 2]
    for k in cell.ks:
        assert k.low <= k.delta <= k.high and k.delta < 0  # the error-prone agent fails some tasks
    assert cell.differences and all(d.b[0] < d.a[0] for d in cell.differences)
    assert f"task {cell.differences[0].task_id}: 2/2 -> " in printed
    assert compare(load_results(tmp_path / "a"), load_results(tmp_path / "b")) == cells  # seeded: stable


async def test_a_results_file_with_a_number_that_is_not_finite_is_refused(tmp_path: Path) -> None:
    """pydantic's own JSON parser reads `NaN` and `1e999` as floats: a reward of NaN would have been a trial that
    neither passed nor failed. A whole file holding one is refused, in one line; a trial line of a run folder
    holding one is skipped, as a torn line is."""
    await offline(tmp_path / "run", "--tasks", "r01")
    whole = tmp_path / "run" / "results.json"
    text = whole.read_text(encoding="utf-8")
    assert '"reward":1.0' in text
    for bad in ("NaN", "1e999", "-Infinity"):
        path = tmp_path / "bad.json"
        path.write_text(text.replace('"reward":1.0', f'"reward":{bad}', 1), encoding="utf-8")
        with pytest.raises(ResultsError, match=r"bad\.json: not a results file \(.*finite") as caught:
            load_results(path)
        assert "\n" not in str(caught.value)
    tau2 = FIXTURE.read_text(encoding="utf-8")
    assert '"reward": 1.0' in tau2
    path = tmp_path / "tau2.json"
    path.write_text(tau2.replace('"reward": 1.0', '"reward": NaN', 1), encoding="utf-8")
    with pytest.raises(ResultsError, match=r"tau2\.json: .*NaN is not a JSON number"):
        load_results(path)
    whole.unlink()  # the run folder's trial lines are read instead
    lines = sorted((tmp_path / "run").glob("*.jsonl"))
    trials = len(load_results(tmp_path / "run").trials)
    log = next(p for p in lines if '"reward":1.0' in p.read_text(encoding="utf-8"))
    log.write_text(log.read_text(encoding="utf-8").replace('"reward":1.0', '"reward":NaN', 1), encoding="utf-8")
    assert len(load_results(tmp_path / "run").trials) == trials - 1
    # the store's own readers skip it alike: --resume runs that trial again, results.json leaves it out
    store = ResultStore(tmp_path / "run")
    assert len(store.done()) == trials - 1


# r01 by an agent that never reads the order before cancelling it: with evidence assist the gate reads it itself
SKIPS_THE_ORDER = [Call("find_user_id_by_email", {"email": "yuki.haddad48@example.com"}),
                   Call("get_user_details", {"user_id": "yuki_haddad_4100"}),
                   "I'll cancel order #W3354738 (no longer needed). Do you confirm?",
                   Call("cancel_pending_order", {"order_id": "#W3354738", "reason": "no longer needed"}),
                   "Done: order #W3354738 is cancelled and 90.41 will be refunded to your PayPal."]


async def test_the_gates_own_reads_are_not_exported_as_the_agents_calls(tmp_path: Path) -> None:
    """tau2's messages are what the agent did: a read the gate made itself (evidence assist) is no tool call of the
    assistant (tau2 has no requestor for it, and its action checks would credit the agent with it). It is kept in
    the raw data of the assistant message whose write it was made for, and read back from there."""
    out = tmp_path / "run"
    with RoleStub(agent_script=SKIPS_THE_ORDER) as stub:
        assert await run_eval(["--domain", "retail", "--agent", "ledger", "--evidence", "assist", "--tasks", "r01",
                               "--trials", "1", "--out", str(out), "--model", "stub-agent", "--user-model",
                               "stub-user", "--base-url", stub.base_url, "--retries", "0"]) == 0
    (trial,) = load_results(out).trials
    gate_reads = [e for e in trial.events if e["type"] == "tool_result" and e["by"] == "gate"]
    assert [(e["call"]["name"], e["for_call"]) for e in gate_reads] == [("get_order_details", "call_3_0")]
    assert trial.success and trial.reward_info is not None
    # graded as tau2 grades the exported messages: the agent never read the order itself
    assert [(c.name, c.matched) for c in trial.reward_info.action_checks] == [
        ("find_user_id_by_email", True), ("get_order_details", False), ("cancel_pending_order", True)]
    assert await run_eval(["export", str(out), "--out", str(tmp_path / "tau2")]) == 0
    path = tmp_path / "tau2" / "retail-ledger-assist.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    (sim,) = raw["simulations"]
    messages = validate_messages(sim["messages"])  # tau2's own message models, every field pinned
    check_trajectory(messages)  # and what tau2's set_state demands before it replays the trajectory
    calls = [c["name"] for m in sim["messages"] for c in m.get("tool_calls") or []]
    assert calls == ["find_user_id_by_email", "get_user_details", "cancel_pending_order"]  # the agent's, only
    (proposed,) = [m for m in sim["messages"] if any(c["id"] == "call_3_0" for c in m.get("tool_calls") or [])]
    (kept,) = proposed["raw_data"]["ledgeragent_gate_reads"]
    assert kept["id"] == gate_reads[0]["call"]["id"] and kept["for_call"] == "call_3_0"
    assert (kept["name"], kept["arguments"], kept["outcome"]) == ("get_order_details", {"order_id": "#W3354738"}, "ok")
    assert kept["result"] == gate_reads[0]["result"] and kept["content"] == gate_reads[0]["content"]
    # our importer reads them back: from the trial record the export carries, and from the messages alone
    (back,) = load_results(path).trials
    assert back.events == trial.events
    for simulation in raw["simulations"]:
        del simulation["info"]["ledgeragent"]  # as a file rebuilt through tau2's own models keeps it
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(raw), encoding="utf-8")
    (foreign,) = load_results(bare).trials
    events = [EVENT_ADAPTER.validate_python(e) for e in foreign.events]
    read_back = [e for e in events if e.type == "tool_result" and e.by == "gate"]
    assert [(e.call.id, e.call.name, dict(e.call.arguments), e.for_call, e.result, e.content, e.kind)
            for e in read_back] == [(g["call"]["id"], g["call"]["name"], g["call"]["arguments"], g["for_call"],
                                     g["result"], g["content"], "read") for g in gate_reads]
    turns = [e for e in events if e.type == "assistant_turn"]
    assert all(not c.id.endswith("~gate1") for t in turns for c in t.tool_calls)
    order = [(e.type, getattr(e, "by", "")) for e in events if e.type == "tool_result"]
    assert order.index(("tool_result", "gate")) == 2  # before the result of the write it was made for


async def test_a_failed_read_of_the_gate_is_no_tool_error_of_the_agent(tmp_path: Path) -> None:
    """tau2's `max_errors` counts the agent's failed tool calls; a read the gate made itself and that failed (the
    order does not exist) is the gate's, and the export leaves it out of the messages tau2 counts. With a limit of
    one error, the agent that made no failing call of its own is not stopped for it."""
    script = [Call("find_user_id_by_email", {"email": "yuki.haddad48@example.com"}),
              Call("get_user_details", {"user_id": "yuki_haddad_4100"}),
              "I'll cancel order #W9999999 (no longer needed). Do you confirm?",  # she says yes (R01_USER)
              Call("cancel_pending_order", {"order_id": "#W9999999", "reason": "no longer needed"}),
              "Sorry, I could not find that order."]
    out = tmp_path / "run"
    with RoleStub(agent_script=script) as stub:
        assert await run_eval(["--domain", "retail", "--agent", "ledger", "--evidence", "assist", "--tasks", "r01",
                               "--trials", "1", "--out", str(out), "--model", "stub-agent", "--user-model",
                               "stub-user", "--base-url", stub.base_url, "--retries", "0", "--max-errors", "1"]) == 0
    (trial,) = load_results(out).trials
    failed = [(e["call"]["name"], e["by"]) for e in trial.events
              if e["type"] == "tool_result" and e["outcome"] == "error"]
    assert failed == [("get_order_details", "gate")]
    assert trial.termination == "user_stop"
