"""Evaluation tasks as console live sessions (console/runtime/live.py + console/runtime/live_task.py), and the spec
lists a supervision desk starts from (console/runtime/task_sessions.py).

A task session must be the trial `ledgeragent eval` would run: so each session here is graded afterwards with
the harness's own functions (`gold_state`, `evaluate` over the session's trace), on a fresh database of the
same data, and its own database file must hold the gold end state."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from console.runtime.live import LiveSession, PendingReview, SessionSpec, SupervisionMode
from console.runtime.live_task import TaskSetupError, load_task, open_task_database
from console.runtime.task_sessions import scenario_specs, task_specs
from core.evaluation.facts import collect
from core.evaluation.loading import load_results
from core.evaluation.rewards import RewardInfo, evaluate, gold_state, prepare
from core.evaluation.tasks import Task
from core.evaluation.trajectory import tau2_messages
from core.supervisor import Decision, Resolution
from core.trace import load_trace
from domains.registry import load_domain
from mock_backends.registry import backend_class, open_backend
from tests.support.eval_domains import run_eval
from tests.support.openai_stub import OpenAIStub, StubToolCall

TASK = SessionSpec(scenario=None)  # the base every task spec here starts from
REPO = Path(__file__).resolve().parents[3]


async def graded(live: LiveSession, work: Path) -> tuple[RewardInfo, str]:
    """The eval harness's reward for the finished session (from its trace), and the gold end-state hash."""
    assert live.folder is not None and live.task is not None and live.result is not None
    domain = load_domain(live.spec.domain)
    events = load_trace(live.folder / "trace.jsonl")
    backend = await open_backend(live.spec.domain, work / "grading.sqlite")
    try:
        base = await backend.snapshot()
        gold = await gold_state(backend, base, live.task, domain)
        reward, _verdict = await evaluate(task=live.task, domain=domain, facts=collect(events), backend=backend,
                                          base=base, gold=gold, live_hash=live.result.db_hash,
                                          messages=tau2_messages(events))
    finally:
        await backend.close()
    return reward, gold.hash


async def file_hash(domain: str, path: Path) -> str:
    backend = await backend_class(domain).attach(path)
    try:
        return await backend.state_hash()
    finally:
        await backend.close()


def trace_events(live: LiveSession) -> list[dict[str, Any]]:
    assert live.folder is not None
    return [json.loads(line) for line in (live.folder / "trace.jsonl").read_text().splitlines()]


# -- one task per domain, offline -------------------------------------------------------------------


@pytest.mark.parametrize(("domain", "task_id"), [
    ("airline", "a04"),     # a flight change: search, then update_reservation_flights
    ("retail", "r01"),      # a cancellation the customer confirms
    ("retail", "r14"),      # an initialization action sets the scene; the right outcome is no write
    ("telecom", "t07"),     # dual control: initialization actions, and the customer pays on their phone
    ("telehealth", "t01"),  # scheduling an appointment
])
async def test_a_task_session_runs_offline_to_the_gold_outcome(domain: str, task_id: str, tmp_path: Path) -> None:
    (spec,) = task_specs(domain, [task_id], TASK)
    live = LiveSession(spec, root=tmp_path / "home")
    result = await live.run()
    assert (result.reason, result.detail) == ("user_stop", "")
    assert live.folder is not None and live.folder.parent == tmp_path / "home" / "sessions"
    assert live.folder.name.endswith(f"-{domain}-task-{task_id}")
    events = trace_events(live)
    started = events[0]
    assert (started["type"], started["domain"], started["scenario"], started["model"], started["user"]) == \
        ("session_started", domain, f"task {task_id}", "scripted-careful", "scripted-customer")
    assert events[-1]["type"] == "session_ended" and events[-1]["db_hash"] == result.db_hash
    reward, gold_hash = await graded(live, tmp_path)
    assert reward.reward == 1.0 and reward.success, reward
    assert reward.db_check is not None and reward.db_check.replay_mismatches == []
    # the session's own database file holds the end state the harness computes from the task's gold actions
    assert result.db_hash == gold_hash == await file_hash(domain, live.folder / "db.sqlite")
    if domain == "telecom":
        phone = [e for e in events if e["type"] == "tool_result" and e["call"]["requestor"] == "user"]
        gold_phone = [a.name for a in load_task(domain, task_id).gold_actions if a.side == "user"]
        assert [e["call"]["name"] for e in phone if e["kind"] == "write"] == gold_phone == ["make_payment"] * 2


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "telehealth"])
async def test_every_shipped_task_as_a_live_session_is_the_trial_eval_runs(domain: str, tmp_path: Path) -> None:
    """`ledgeragent eval` (offline, ledger agent, one trial) and a live session per task record the same events,
    one for one (the live session also names the rules version it ran; a trial does not). The console's default
    evidence mode is assist; eval runs it as its own configuration (`--evidence assist`)."""
    assert await run_eval(["--domain", domain, "--agent", "ledger", "--trials", "1", "--concurrency", "1",
                           "--evidence", "assist", "--out", str(tmp_path / "eval")]) == 0
    trials = {t.task_id: t for t in load_results(tmp_path / "eval").trials}
    specs = task_specs(domain, "all", TASK)
    assert [s.task for s in specs] == list(trials)
    for spec in specs:
        live = LiveSession(spec, root=tmp_path / "home")
        await live.run()
        session = trace_events(live)
        assert session[0].pop("rules_version") == live.rules_version
        trial = trials[spec.task or ""]
        assert trial.success, (spec.task, trial.failure)
        assert session == [{k: v for k, v in e.items() if k != "rules_version"} for e in trial.events], spec.task


async def test_two_task_sessions_have_their_own_folder_database_and_trace(tmp_path: Path) -> None:
    specs = task_specs("retail", ["r01", "r02"], TASK)
    first, second = (LiveSession(spec, root=tmp_path) for spec in specs)
    await first.run()
    await second.run()
    assert first.folder is not None and second.folder is not None and first.folder != second.folder
    for live in (first, second):
        assert live.folder is not None
        assert sorted(p.name for p in live.folder.iterdir()) == ["db.sqlite", "trace.jsonl"]
    assert trace_events(first)[0]["scenario"] == "task r01" and trace_events(second)[0]["scenario"] == "task r02"
    hashes = [await file_hash("retail", live.folder / "db.sqlite") for live in (first, second) if live.folder]
    assert len(set(hashes)) == 2


async def test_the_session_database_starts_from_the_task_scene(tmp_path: Path) -> None:
    task = load_task("telecom", "t07")
    assert task.initial_state is not None and task.initial_state.initialization_actions
    live = LiveSession(replace_task(TASK, "telecom", "t07"), root=tmp_path)
    await live.open()
    try:
        assert live.backend is not None
        started = await live.backend.state_hash()
    finally:
        await live.close()
    reference = await open_backend("telecom", tmp_path / "reference.sqlite")
    try:
        seed = await reference.state_hash()
        await prepare(reference, await reference.snapshot(), task)  # the runner's own preparation
        assert started == await reference.state_hash() != seed
    finally:
        await reference.close()


def replace_task(base: SessionSpec, domain: str, task_id: str) -> SessionSpec:
    (spec,) = task_specs(domain, [task_id], base)
    return spec


# -- determinism ------------------------------------------------------------------------------------


async def test_two_runs_of_a_task_give_byte_identical_traces(tmp_path: Path) -> None:
    spec = replace_task(TASK, "telecom", "t07")
    traces = []
    for name in ("a", "b"):
        live = LiveSession(spec, root=tmp_path / name)
        await live.run()
        assert live.folder is not None
        traces.append((live.folder / "trace.jsonl").read_bytes())
    assert traces[0] == traces[1]


async def test_supervised_task_runs_differ_only_in_the_decision_times(tmp_path: Path) -> None:
    """Approve-every-write: each decision records when it was made (wall clock); nothing else may differ."""
    spec = replace_task(TASK, "retail", "r01")
    spec = replace(spec, mode=SupervisionMode.APPROVE_WRITES)

    def approve(review: PendingReview) -> None:
        review.resolve(Resolution(Decision.APPROVE, who="op"))

    runs: list[list[dict[str, Any]]] = []
    for name in ("a", "b"):
        live = LiveSession(spec, root=tmp_path / name, on_review=approve)
        assert (await live.run()).reason == "user_stop"
        runs.append(trace_events(live))
    decisions = [e for e in runs[0] if e["type"] == "supervisor_decision"]
    assert [(e["decision"], e["call"]["name"]) for e in decisions] == [("approve", "cancel_pending_order")]
    assert all(e["when"] for e in decisions)
    for events in runs:
        for event in events:
            event.pop("when", None)
    assert runs[0] == runs[1]


# -- an LLM agent over an OpenAI-compatible endpoint (a stub server on 127.0.0.1) ------------------


def script_r01_agent(stub: OpenAIStub) -> None:
    """What a good model answers on task r01, one call per request."""
    stub.reply_tool_calls([StubToolCall("find_user_id_by_email", '{"email": "yuki.haddad48@example.com"}', "c1")])
    stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W3354738"}', "c2")])
    stub.reply_tool_calls([StubToolCall("get_user_details", '{"user_id": "yuki_haddad_4100"}', "c3")])
    stub.reply_text("I can cancel order #W3354738 (reason: no longer needed). Do you confirm?")


def script_r01_finish(stub: OpenAIStub) -> None:
    stub.reply_tool_calls([StubToolCall("cancel_pending_order",
                                        '{"order_id": "#W3354738", "reason": "no longer needed"}', "c4")])
    stub.reply_text("Done: order #W3354738 is cancelled and 90.41 goes back to your PayPal.")


async def test_a_task_session_with_an_llm_agent_and_the_scripted_customer(tmp_path: Path) -> None:
    with OpenAIStub(model="agent-m") as stub:
        script_r01_agent(stub)
        script_r01_finish(stub)
        spec = replace_task(SessionSpec(scenario=None, model="agent-m", base_url=stub.base_url), "retail", "r01")
        live = LiveSession(spec, root=tmp_path)
        result = await live.run()
        assert stub.pending == 0 and [r["model"] for r in stub.requests] == ["agent-m"] * 6
    assert result.reason == "user_stop", result.detail
    started = trace_events(live)[0]
    assert (started["model"], started["user"], started["scenario"]) == ("agent-m", "scripted-customer", "task r01")
    # the model's first request holds the task customer's opening line
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": (
        "You want to cancel your pending order #W3354738 (a Bluetooth speaker) because you no longer need it. "
        "You are Yuki Haddad, email yuki.haddad48@example.com.")}
    reward, gold_hash = await graded(live, tmp_path)
    assert reward.success and result.db_hash == gold_hash


async def test_a_task_session_with_an_llm_user_simulator_on_the_same_endpoint(tmp_path: Path) -> None:
    with OpenAIStub(model="m") as stub:
        stub.reply_text("Hi, I want to cancel order #W3354738. My email is yuki.haddad48@example.com.", model="user-m")
        script_r01_agent(stub)
        stub.reply_text("Yes, I confirm.", model="user-m")
        script_r01_finish(stub)
        stub.reply_text("Thanks! ###STOP###", model="user-m")
        spec = replace_task(SessionSpec(scenario=None, model="agent-m", base_url=stub.base_url,
                                        user_model="user-m"), "retail", "r01")
        live = LiveSession(spec, root=tmp_path)
        result = await live.run()
        assert stub.pending == 0
    assert result.reason == "user_stop", result.detail
    assert [r["model"] for r in stub.requests] == ["user-m", *["agent-m"] * 4, "user-m", *["agent-m"] * 2, "user-m"]
    user_prompt = stub.requests[0]["messages"][0]["content"]
    assert "You want to cancel your pending order #W3354738" in user_prompt  # the task's instructions
    assert trace_events(live)[0]["user"] == "llm"
    reward, gold_hash = await graded(live, tmp_path)
    assert reward.success and result.db_hash == gold_hash


async def test_an_llm_task_session_on_the_scripted_agent_with_a_user_model(tmp_path: Path) -> None:
    """The offline careful agent, and only the customer is a model."""
    with OpenAIStub(model="user-m") as stub:
        stub.reply_text("I want to cancel order #W3354738; I'm yuki.haddad48@example.com.")
        stub.reply_text("Yes, I confirm.")
        stub.reply_text("###STOP###")
        live = LiveSession(replace_task(SessionSpec(scenario=None, base_url=stub.base_url, user_model="user-m"),
                                        "retail", "r01"), root=tmp_path)
        result = await live.run()
        assert stub.pending == 0 and len(stub.requests) == 3
    assert result.reason == "user_stop", result.detail
    assert (trace_events(live)[0]["model"], trace_events(live)[0]["user"]) == ("scripted-careful", "llm")
    assert (await graded(live, tmp_path))[0].success


# -- bad combinations and bad ids -------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "expected"), [
    ({"task": "r99"}, "unknown task id(s) for retail: r99 (it has r01, "),
    ({"task": "r01", "scenario": "refund-to-original-payment"}, "a session runs a task or a scenario, not both"),
    ({"task": "r01", "seat": "customer"}, "task 'r01' plays its own customer"),
    ({"task": "r01", "model": "operator"}, "task 'r01' is played by the scripted agent or a model, not by you"),
    ({"task": "r01", "user_model": " "}, "user model name is empty"),
    ({"task": "r01", "user_model": "scripted"}, "user model 'scripted': give a model name"),
    ({"user_model": "m", "scenario": "refund-to-original-payment"}, "a user model plays an evaluation task's "
                                                                     "customer: it needs a task"),
    ({"task": "x1", "domain": "nowhere"}, "unknown domain 'nowhere'"),
])
def test_bad_task_combinations_are_explained_in_one_line(changes: dict[str, Any], expected: str) -> None:
    spec = replace(SessionSpec(scenario=None), **changes)
    problems = spec.problems()
    assert len(problems) == 1 and problems[0].startswith(expected), problems
    assert "\n" not in problems[0]
    with pytest.raises(ValueError, match="^" + expected[:20].replace("(", r"\(").replace(")", r"\)")):
        LiveSession(spec)


def test_a_task_spec_is_valid_without_a_scenario_and_in_the_watch_seat() -> None:
    assert SessionSpec(scenario=None, task="r01").problems() == []
    assert SessionSpec(scenario=None, task="t01", domain="telecom", model="m", user_model="u").problems() == []
    assert SessionSpec(scenario=None).problems() != []  # a scenario-less spec without a task is still free chat


# -- the starting data: tau2's initialization_data patch ---------------------------------------------


def patched(task: Task, patch: dict[str, Any]) -> Task:
    raw = task.model_dump(mode="json")
    raw["initial_state"] = {**(raw.get("initial_state") or {}), "initialization_data": patch}
    return Task.model_validate(raw)


async def test_a_data_patch_is_merged_into_the_session_database(tmp_path: Path) -> None:
    task = patched(load_task("retail", "r01"), {"agent_data": {"orders": {"#W3354738": {"status": "delivered"}}}})
    backend, data = await open_task_database("retail", tmp_path / "db.sqlite", None, task, want_data=True)
    try:
        order = await backend.call("get_order_details", {"order_id": "#W3354738"})
        assert isinstance(order, dict) and order["status"] == "delivered"
        assert data is not None and data["orders"]["#W3354738"]["status"] == "delivered"  # what the planner reads
        untouched = await backend.call("get_user_details", {"user_id": "yuki_haddad_4100"})
        assert isinstance(untouched, dict) and untouched["name"]["first_name"] == "Yuki"
    finally:
        await backend.close()


async def test_a_phone_patch_lands_in_the_customer_device(tmp_path: Path) -> None:
    task = patched(load_task("telecom", "t13"), {"user_data": {"device": {"airplane_mode": True}}})
    backend, _data = await open_task_database("telecom", tmp_path / "db.sqlite", None, task, want_data=False)
    try:
        status = await backend.call("check_network_status", {})
        assert "airplane mode: on" in str(status).lower(), status
    finally:
        await backend.close()


async def test_a_task_whose_scene_cannot_be_set_says_so_in_one_line(tmp_path: Path) -> None:
    task = patched(load_task("retail", "r01"), {"user_data": {"device": {"airplane_mode": True}}})
    with pytest.raises(TaskSetupError, match=r"^task r01: cannot set its starting state: .*has no user side$"):
        await open_task_database("retail", tmp_path / "db.sqlite", None, task, want_data=True)


async def test_a_patch_the_domain_refuses_is_a_setup_error_in_one_line(tmp_path: Path) -> None:
    task = patched(load_task("retail", "r01"), {"agent_data": {"orders": {"#W3354738": {"items": "not a list"}}}})
    with pytest.raises(TaskSetupError, match=r"^task r01: cannot set its starting state: 1 validation error") as info:
        await open_task_database("retail", tmp_path / "db.sqlite", None, task, want_data=True)
    assert "\n" not in str(info.value)


# -- the spec lists a desk starts from --------------------------------------------------------------


def test_task_specs_all_follows_the_tasks_file_and_keeps_the_base() -> None:
    base = SessionSpec(scenario=None, agent="fc", mode=SupervisionMode.APPROVE_NON_ALLOW, max_steps=40)
    specs = task_specs("retail", "all", base)
    in_file = [t["id"] for t in json.loads((REPO / "domains" / "retail" / "tasks" / "tasks.json").read_text())]
    assert [s.task for s in specs] == in_file and len(in_file) >= 16
    assert {(s.domain, s.scenario, s.agent, s.mode, s.max_steps) for s in specs} == \
        {("retail", None, "fc", SupervisionMode.APPROVE_NON_ALLOW, 40)}
    assert [s.task for s in task_specs("airline", ["a03", "a01", "a03"], base)] == ["a03", "a01"]
    # the default base carries the default scenario: a task spec drops it
    assert task_specs("retail", ["r01"], SessionSpec())[0].scenario is None


def test_task_specs_name_every_unknown_id_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^unknown task id\(s\) for retail: r99, a01 \(it has r01, r02,"):
        task_specs("retail", ["r01", "r99", "a01"], TASK)
    with pytest.raises(ValueError, match="^unknown domain 'nowhere'"):
        task_specs("nowhere", "all", TASK)
    with pytest.raises(ValueError, match="customer seat cannot be yours"):
        task_specs("retail", ["r01"], SessionSpec(scenario=None, seat="customer"))


def test_scenario_specs_cover_every_domain_in_a_fixed_order() -> None:
    specs = scenario_specs(None, "all", TASK)
    names = [(s.domain, s.scenario) for s in specs]
    on_disk = sorted((d.name, p.stem) for d in (REPO / "domains").iterdir() for p in d.glob("scenarios/*.json"))
    assert names == on_disk and len(names) >= 12
    assert {s.domain for s in specs} == {"airline", "retail", "telecom", "telehealth"}
    assert all(s.task is None and s.problems() == [] for s in specs)
    assert [s.scenario for s in scenario_specs("retail", "all", TASK)] == \
        ["exchange-unavailable-variant", "other-customers-order", "refund-to-original-payment"]
    picked = scenario_specs(None, ["retail/other-customers-order", "roaming-abroad"], TASK)
    assert [(s.domain, s.scenario) for s in picked] == [("retail", "other-customers-order"),
                                                        ("telecom", "roaming-abroad")]


def test_scenario_specs_name_unknown_scenarios_in_one_line() -> None:
    with pytest.raises(ValueError, match="^unknown scenario\\(s\\) for retail: nope, roaming-abroad$"):
        scenario_specs("retail", ["nope", "refund-to-original-payment", "roaming-abroad"], TASK)
    with pytest.raises(ValueError, match="^unknown scenario\\(s\\) for any domain: airline/roaming-abroad$"):
        scenario_specs(None, ["airline/roaming-abroad"], TASK)
