"""Telecom (dual control) through offline `ledgeragent eval`: our tasks on our seed data and tau2's tasks_small.

What dual control adds to the harness, and what these tests pin down:
- initialization actions run on their side: "user" ones on the phone (tau2's hidden `set_user_info`,
  `turn_data_saver_mode_on`, ...), "assistant" ones on the carrier's side, each followed by the sync;
- the scripted customer performs the phone actions the agent asks for (gold actions of requestor "user");
- the DB reward compares the whole state, the agent DB AND the phone's user DB, after replaying the executed
  writes of both requestors with the sync, against the gold actions of both requestors replayed the same way:
  a task whose gold includes a phone toggle fails when the customer never toggles;
- ENV_ASSERTION runs tau2's telecom assertion functions (mobile data works, speed, MMS, service, line status,
  overdue bill paid) on the replayed state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from core.evaluation import (
    DomainRun,
    OfflineParticipants,
    RunHeader,
    RunSettings,
    Task,
    TrialResult,
    load_results,
    load_tasks,
    run_evaluation,
    select_tasks,
)
from core.evaluation.offline import OfflineCustomer
from core.evaluation.rewards import TrialBackend, gold_state, prepare
from core.tools import ToolError, ToolKind
from core.users import UserProxy
from domains.telecom import DOMAIN
from domains.telecom.offline import PLANNER, TelecomPlanner
from mock_backends.registry import backend_class, open_backend
from mock_backends.telecom import TelecomBackend, load_seed
from tests.support.eval_domains import REPO, cells, offline_run, tasks_file
from tests.support.eval_helpers import FC, LEDGER, RETAIL_TASKS, evaluate, retail_run

TASKS = tasks_file("telecom")
TAU2_TELECOM = REPO.parent / "shared" / "tau2" / "telecom"
HAVE_TAU2 = all((TAU2_TELECOM / name).is_file() for name in ("db.toml", "user_db.toml", "tasks_small.json"))
AGENT_WRITES = {t.name for t in DOMAIN.agent_tools() if t.kind is ToolKind.WRITE}
PHONE_WRITES = {t.name for t in DOMAIN.user_tools() if t.kind is ToolKind.WRITE}


def writes(trial: TrialResult, requestor: str) -> list[str]:
    """The writes of one side that reached the state (what the DB replay runs), in order."""
    return [e["call"]["name"] for e in trial.events
            if e.get("type") == "tool_result" and e.get("outcome") == "ok" and e.get("kind") == "write"
            and e["call"]["requestor"] == requestor]


def init_sides(task: Task) -> set[str]:
    state = task.initial_state
    return {a.side for a in (state.initialization_actions or [])} if state is not None else set()


def test_telecom_tasks_cover_every_agent_write_and_refusals() -> None:
    tasks = load_tasks(TASKS)
    assert len(tasks) >= 10
    agent_gold = {a.name for t in tasks for a in t.gold_actions if a.side == "assistant"}
    assert agent_gold & AGENT_WRITES == AGENT_WRITES  # every agent write tool
    for task in tasks:
        assert [a.action_id for a in task.gold_actions] == [f"{task.id}_{i}" for i in range(len(task.gold_actions))]
        for action in task.gold_actions:  # each side's gold uses that side's tools
            assert (action.name in PHONE_WRITES) == (action.side == "user"), (task.id, action.name)
    refusals = [t for t in tasks if t.hints.refusal]
    assert len(refusals) >= 3
    asked = {r.name for t in refusals for r in t.hints.requested_actions}
    assert {"refuel_data", "resume_line", "send_payment_request"} <= asked
    for task in refusals:
        assert task.gold_actions == [] and task.hints.refusal_message
        for info in task.criteria.communicate_info or []:
            assert info.lower() in task.hints.refusal_message.lower().replace(",", ""), (task.id, info)
    # dual control is exercised: user-side setup, phone actions in the gold, both sides in one task
    assert any("user" in init_sides(t) for t in tasks)
    assert any({a.side for a in t.gold_actions} == {"user", "assistant"} for t in tasks)
    assert any(a.func_name.startswith("assert_") and a.side == "user" for t in tasks
               for a in t.criteria.env_assertions or [])
    assert isinstance(PLANNER, TelecomPlanner)


async def test_careful_agents_pass_every_telecom_task(tmp_path: Path) -> None:
    tasks = load_tasks(TASKS)
    results = await offline_run("telecom", tmp_path / "run", "--trials", "2")
    assert len(results.trials) == len(tasks) * 2 * 2
    assert [(t.task_id, t.agent, t.failure) for t in results.trials if not t.success] == []
    ledger, fc = cells(results, "telecom")
    assert ledger.pass_k == fc.pass_k == {1: 1.0, 2: 1.0}
    assert set(ledger.gate_verdicts) == {"ALLOW"}  # the careful reads give every rule its evidence
    refusals = {t.id for t in tasks if t.hints.refusal}
    by = {(t.task_id, t.agent, t.trial): t for t in results.trials}
    for trial in results.trials:
        info = trial.reward_info
        assert info is not None and info.db_check is not None
        # the replay of both sides' writes, with the sync, reproduces the trial's own state (agent DB + phone)
        assert info.db_check.replay_mismatches == []
        assert info.db_check.live_hash == info.db_check.predicted_hash == info.db_check.gold_hash
        assert all(c.status == "matched" for c in info.write_checks), (trial.task_id, info.write_checks)
        assert all(c.met for c in info.env_assertions)
        if trial.task_id in refusals:
            assert writes(trial, "assistant") == writes(trial, "user") == []
    roaming = by[("t01", "fc", 0)]  # the agent enables roaming on the line, the customer toggles the phone
    assert writes(roaming, "assistant") == ["enable_roaming"] and writes(roaming, "user") == ["toggle_roaming"]
    assert {(c.name, c.requestor) for c in roaming.reward_info.write_checks} == {  # type: ignore[union-attr]
        ("enable_roaming", "assistant"), ("toggle_roaming", "user")}
    paid = by[("t02", "ledger", 1)]  # the sync carried the phone payment to the bill
    assert writes(paid, "user") == ["make_payment"]
    assert any(e["type"] == "environment_synced" and any("B2003" in c and "Paid" in c for c in e["changes"])
               for e in paid.events)


async def test_error_prone_agent_shows_what_the_gate_changes(tmp_path: Path) -> None:
    results = await offline_run("telecom", tmp_path / "run", "--trials", "1", "--error-rate", "1", "--seed", "3")
    ledger, fc = cells(results, "telecom")
    assert ledger.slips == fc.slips > 0
    assert ledger.pass_k[1] == 1.0 > fc.pass_k[1]
    assert ledger.gate_verdicts.get("BLOCK", 0) > 0 and ledger.gate_verdicts.get("REVISE", 0) > 0
    assert sum(fc.would_refuse.values()) > 0 and sum(ledger.would_refuse.values()) == 0
    assert fc.failures.get("policy violation", 0) > 0
    for predicate in ("telecom.line_belongs_to_customer", "telecom.refuel_within_cap",
                      "telecom.payment_request_for_overdue_bill", "telecom.resume_after_overdue_paid"):
        assert predicate in ledger.gate_predicates, predicate
    by = {t.task_id: t for t in results.trials if t.agent == "fc"}
    assert not by["t11"].success and writes(by["t11"], "assistant") == ["refuel_data"]  # 5 GB reached the DB


# -- the phone in the reward ---------------------------------------------------------------------------


class NoPhoneParticipants(OfflineParticipants):
    """Careful scripted agents, and a customer who never touches the phone (they say so)."""

    def user(self, task: Task, trial: int) -> UserProxy:
        return OfflineCustomer.for_task(task, uses_phone=False)


def telecom_run(ids: list[str], participants: OfflineParticipants, source: Path | None = None,
                tasks: Path = TASKS) -> DomainRun:
    async def open_(path: Path) -> TrialBackend:
        return await open_backend("telecom", path, source)

    async def create(path: Path, data: Mapping[str, Any]) -> TrialBackend:
        return await backend_class("telecom").create(path, data)

    return DomainRun(DOMAIN, select_tasks(load_tasks(tasks), ids), open_, participants, create_backend=create)


async def test_a_phone_action_the_customer_never_does_fails_the_task(tmp_path: Path) -> None:
    run = telecom_run(["t01", "t13", "t03"], NoPhoneParticipants(DOMAIN, PLANNER))
    header = RunHeader(domains=["telecom"], agents=["ledger", "fc"], trials=1, offline=True,
                       task_ids={"telecom": [t.id for t in run.tasks]})
    await run_evaluation([run], [LEDGER, FC], RunSettings(trials=1, concurrency=2, trial_timeout=30.0), header,
                         tmp_path)
    by = {(t.task_id, t.agent): t for t in load_results(tmp_path).trials}
    for agent in ("ledger", "fc"):
        roaming = by[("t01", agent)]
        assert not roaming.success and roaming.termination == "user_stop"
        info = roaming.reward_info
        assert info is not None and info.db_check is not None
        # the agent's own write is right and executed; only the phone (user DB) differs from the gold state
        assert writes(roaming, "assistant") == ["enable_roaming"] and writes(roaming, "user") == []
        assert not info.db_check.db_match and info.breakdown["DB"] == 0.0
        assert [(c.status, c.name, c.requestor) for c in info.write_checks] == [
            ("matched", "enable_roaming", "assistant"), ("missing", "toggle_roaming", "user")]
        assert not any(c.met for c in info.env_assertions)  # no mobile data abroad without Data Roaming
        assert roaming.failure is not None and roaming.failure.category == "missed required action"
        assert not by[("t13", agent)].success  # Data Saver (set by a user-side init action) stays on
        assert by[("t03", agent)].success  # no phone action needed: unaffected


async def test_user_side_initialization_and_the_phone_db_in_the_hash(tmp_path: Path) -> None:
    backend = await TelecomBackend.open(tmp_path / "db.sqlite")
    try:
        base = await backend.snapshot()
        tasks = {t.id: t for t in load_tasks(TASKS)}
        task = tasks["t13"]  # set_user_info, set_user_location, turn_data_saver_mode_on: all on the phone
        assert init_sides(task) == {"user"}
        await prepare(backend, base, task)
        phone = (await backend.export_tau2())["user_db"]
        assert phone["surroundings"]["name"] == "Silas Brandt" and phone["surroundings"]["is_abroad"] is False
        assert phone["device"]["data_saver_mode"] is True
        prepared = await backend.state_hash()
        gold = await gold_state(backend, base, task, DOMAIN)
        assert gold.hash != prepared and gold.failed == []  # the gold is one phone toggle: the hash sees it
        await prepare(backend, base, task)
        await backend.call("toggle_data_saver_mode", {})
        assert await backend.state_hash() == gold.hash
        await backend.call("toggle_wifi", {})  # any phone change moves the hash: the user DB is in it
        assert await backend.state_hash() != gold.hash
        raw = task.model_dump(mode="json")
        raw["initial_state"]["initialization_actions"] = [{"env_type": "user", "func_name": "drop_phone"}]
        broken = Task.model_validate(raw)
        with pytest.raises(ToolError, match="drop_phone"):
            await prepare(backend, base, broken)  # a scene that cannot be set is an error, never skipped
    finally:
        await backend.close()


async def test_initialization_data_patches_both_sides(tmp_path: Path) -> None:
    """tau2's `initialization_data`: `user_data` patches the phone's user DB, `agent_data` the agent DB."""
    raw = load_tasks(TASKS)[12].model_dump(mode="json")  # t13: Data Saver on, turned off by the customer
    assert raw["id"] == "t13"
    raw["initial_state"] = {
        "initialization_actions": [{"env_type": "user", "func_name": "set_user_info",
                                    "arguments": {"name": "Silas Brandt", "phone_number": "555-704-3243"}}],
        "initialization_data": {"user_data": {"device": {"data_saver_mode": True},
                                              "surroundings": {"is_abroad": False}},
                                # the agent DB's collections are lists: a patch replaces the whole list
                                "agent_data": {"plans": [{**plan, "data_refueling_price_per_gb": 3.0}
                                                         for plan in load_seed()["db"]["plans"]]}}}
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([raw]), encoding="utf-8")
    run = telecom_run(["t13"], OfflineParticipants(DOMAIN, PLANNER), tasks=path)
    header = RunHeader(domains=["telecom"], agents=["ledger"], trials=1, offline=True, task_ids={"telecom": ["t13"]})
    await run_evaluation([run], [LEDGER], RunSettings(trials=1, concurrency=1, trial_timeout=30.0), header,
                         tmp_path / "run")
    (trial,) = load_results(tmp_path / "run").trials
    assert trial.success, trial.failure
    looks = [e["content"] for e in trial.events if e.get("type") == "tool_result"
             and e["call"]["name"] == "check_data_restriction_status"]
    assert looks == ["Data Saver mode is ON (limits data usage)."]  # the patched phone, not the seed's
    assert {p["data_refueling_price_per_gb"] for p in run._data["patched:t13"]["plans"].values()} == {3.0}


async def test_a_user_data_patch_without_a_user_side_is_recorded_not_dropped(tmp_path: Path) -> None:
    raw = load_tasks(RETAIL_TASKS)[0].model_dump(mode="json")
    raw["initial_state"] = {"initialization_data": {"user_data": {"device": {"airplane_mode": True}}}}
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([raw]), encoding="utf-8")
    outcome = await evaluate(tmp_path / "run", retail_run(tasks_file=path), (LEDGER,), trials=1)
    (trial,) = outcome.trials
    # a task whose scene cannot be set tells nothing about the agent: retried, then an infrastructure error
    assert trial.status == "infra_error" and "has no user side" in trial.detail and trial.attempts == 4
    assert outcome.metrics.cells[0].infra_errors == 1 and outcome.metrics.cells[0].pass_k == {}


# -- tau2's tasks_small ------------------------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.skipif(not HAVE_TAU2, reason=f"tau2 telecom data not found at {TAU2_TELECOM}")
async def test_tau2_small_tasks_load_and_careful_agents_pass(tmp_path: Path) -> None:
    results = await offline_run("telecom", tmp_path / "run", "--tau2-dir", str(TAU2_TELECOM), "--trials", "1")
    tasks = load_tasks(TAU2_TELECOM / "tasks_small.json")
    assert len(tasks) == 10 and "tasks_small.json" in results.header.sources["telecom"]
    assert "db.toml" in results.header.sources["telecom"]
    assert len(results.trials) == 10 * 2
    assert [(t.task_id, t.agent, t.failure) for t in results.trials if not t.success] == []
    ledger, fc = cells(results, "telecom")
    assert ledger.pass_k == fc.pass_k == {1: 1.0} and set(ledger.gate_verdicts) == {"ALLOW"}
    for trial in results.trials:
        info = trial.reward_info
        assert info is not None and info.reward_basis[0] == "ENV_ASSERTION" and info.env_assertions
        assert all(c.met for c in info.env_assertions)
        assert info.db_check is not None and info.db_check.db_match and info.db_check.replay_mismatches == []
    user_gold = sum(a.side == "user" for t in tasks for a in t.gold_actions)
    done = sum(len(writes(t, "user")) for t in results.trials if t.agent == "ledger")
    assert user_gold == 11 and done == user_gold  # every gold phone action was asked for and performed
