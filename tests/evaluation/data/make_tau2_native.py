"""Writes `tau2_native_retail.json`: a results file made by tau2-bench's own data models, for the interop tests.

Not run by the suite (it needs tau2-bench importable, which the project never depends on). Run it by hand, with
an interpreter that has tau2-bench's `src/` on its path and our `ledgeragent` command on PATH:

    PYTHONPATH=TAU2/src python tests/evaluation/data/make_tau2_native.py

What it does: plays five of our retail tasks twice with our offline FC agent (`ledgeragent eval`), exports them
(`ledgeragent eval export`), and rebuilds every simulation through tau2's classes — `Results`, `Info`, `UserInfo`,
`AgentInfo`, `EnvironmentInfo`, `Task`, `SimulationRun`, `RewardInfo`, `AssistantMessage`, `UserMessage`,
`ToolMessage`, `ToolCall` — so every field is what tau2's code writes: message timestamps from tau2's
`get_now`, per-message `usage` ({prompt_tokens, completion_tokens}, tau2's `get_response_usage`) and `cost`, the
simulation's `agent_cost` / `user_cost`, and for two simulations the placeholder tau2's `run_with_retry` writes
when every attempt failed (`info.failed_after_attempts`, here 2: tau2's `--max-retries 1`). The trial record our
export carries under `info.ledgeragent` is dropped: the file is read as a foreign tau2 run.

The layout the tests rely on (pinned there): 10 simulations, 2 infrastructure errors, 8 that ran, 6 passed; r06's
task grades an NL assertion (tau2's judge said met), so a re-grade without a judge leaves that trial unscored.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
from tau2.data_model.simulation import AgentInfo, Info, Results, RewardInfo, SimulationRun, UserInfo
from tau2.data_model.tasks import Task
from tau2.environment.environment import EnvironmentInfo

HERE = Path(__file__).parent
TASKS = ["r01", "r02", "r04", "r05", "r06"]
INFRA = {("r02", 1), ("r05", 1)}  # never ran: tau2's run_with_retry placeholder
TRUNCATED = {("r04", 1), ("r06", 0)}  # the agent stopped before its write: DB mismatch, reward 0
NL_TASK = "r06"
AGENT_LLM = "gpt-4.1-2025-04-14"
USER_LLM = "gpt-4.1-mini"
# USD per token, as litellm prices these models (gpt-4.1: 2 / 8 per million; gpt-4.1-mini: 0.4 / 1.6)
PRICE = {AGENT_LLM: (2e-6, 8e-6), USER_LLM: (0.4e-6, 1.6e-6)}


def ledgeragent(*args: str) -> None:
    subprocess.run(["ledgeragent", *args], check=True, stdout=subprocess.DEVNULL)


def cost(model: str, prompt: int, completion: int) -> float:
    per_in, per_out = PRICE[model]
    return round(prompt * per_in + completion * per_out, 8)


def messages(raw: list[dict], truncate: bool) -> list:
    out: list = []
    for message in raw:
        role = message["role"]
        if truncate and role == "assistant" and any(c["name"] not in ("find_user_id_by_email",
                                                                     "find_user_id_by_name_zip")
                                                    and not c["name"].startswith("get_")
                                                    for c in message.get("tool_calls") or []):
            break  # the write and everything after it never happened
        if role == "assistant":
            calls = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], requestor="assistant")
                     for c in message.get("tool_calls") or []] or None
            greeting = len(out) == 0
            usage = None if greeting else dict(message["usage"])
            out.append(AssistantMessage(role="assistant", content=message["content"], tool_calls=calls,
                                        usage=usage, cost=None if greeting else cost(
                                            AGENT_LLM, usage["prompt_tokens"], usage["completion_tokens"])))
        elif role == "user":
            text = message["content"] or ""
            usage = {"prompt_tokens": 600 + 40 * len(out), "completion_tokens": max(1, len(text) // 4)}
            out.append(UserMessage(role="user", content=text, usage=usage,
                                   cost=cost(USER_LLM, usage["prompt_tokens"], usage["completion_tokens"])))
        elif role == "tool":
            out.append(ToolMessage(id=message["id"], role="tool", content=message["content"],
                                   requestor="assistant", error=message["error"]))
    if truncate:
        out.append(UserMessage(role="user", content="###STOP###"))
    for index, message in enumerate(out):
        message.turn_idx = index
    return out


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        run, exported = Path(scratch) / "run", Path(scratch) / "tau2"
        ledgeragent("eval", "--domain", "retail", "--agent", "fc", "--trials", "2", "--tasks", ",".join(TASKS),
                    "--out", str(run))
        ledgeragent("eval", "export", str(run), "--out", str(exported))
        ours = json.loads((exported / "retail-fc.json").read_text(encoding="utf-8"))
    tasks = []
    for raw in ours["tasks"]:
        if raw["id"] == NL_TASK:
            raw["evaluation_criteria"]["nl_assertions"] = [
                "The agent tells the customer that the refund goes to the order's original payment method."]
            raw["evaluation_criteria"]["reward_basis"] = ["DB", "COMMUNICATE", "NL_ASSERTION"]
        tasks.append(Task.model_validate(raw))
    simulations = []
    for sim in ours["simulations"]:
        key = (sim["task_id"], sim["trial"])
        sim_id = f"{sim['task_id']}-trial-{sim['trial']}"
        if key in INFRA:
            simulations.append(SimulationRun(
                id=sim_id, task_id=sim["task_id"], start_time="2025-06-01T10:00:00.000000",
                end_time="2025-06-01T10:00:00.000000", duration=0.0, termination_reason="infrastructure_error",
                messages=[], trial=sim["trial"], seed=300,
                info={"error": "litellm.APIConnectionError: Connection error.", "error_type": "APIConnectionError",
                      "error_traceback": "", "failed_after_attempts": 2}))
            continue
        truncate = key in TRUNCATED
        built = messages(sim["messages"], truncate)
        reward = sim["reward_info"]
        if truncate:
            reward = {**reward, "reward": 0.0, "db_check": {"db_match": False, "db_reward": 0.0},
                      "reward_breakdown": {**reward["reward_breakdown"], "DB": 0.0}}
        if sim["task_id"] == NL_TASK:
            reward = {**reward, "reward_basis": ["DB", "COMMUNICATE", "NL_ASSERTION"],
                      "nl_assertions": [{"nl_assertion": tasks[-1].evaluation_criteria.nl_assertions[0],
                                         "met": not truncate, "justification": "judge"}],
                      "reward_breakdown": {**reward["reward_breakdown"], "NL_ASSERTION": float(not truncate)}}
        agent_cost = sum(m.cost or 0.0 for m in built if m.role == "assistant")
        user_cost = sum(m.cost or 0.0 for m in built if m.role == "user")
        simulations.append(SimulationRun(
            id=sim_id, task_id=sim["task_id"], start_time=built[0].timestamp, end_time=built[-1].timestamp,
            duration=12.5, termination_reason="user_stop", agent_cost=round(agent_cost, 8),
            user_cost=round(user_cost, 8), reward_info=RewardInfo.model_validate(reward), messages=built,
            trial=sim["trial"], seed=300))
    policy = (Path(__file__).resolve().parents[3] / "domains" / "retail" / "policy.md").read_text(encoding="utf-8")
    results = Results(
        info=Info(git_commit="a2c0247", num_trials=2, max_steps=200, max_errors=10,
                  user_info=UserInfo(implementation="user_simulator", llm=USER_LLM, llm_args={"temperature": 0.0}),
                  agent_info=AgentInfo(implementation="llm_agent", llm=AGENT_LLM, llm_args={"temperature": 0.0}),
                  environment_info=EnvironmentInfo(domain_name="retail", policy=policy), seed=300),
        tasks=tasks, simulations=simulations)
    results.save(HERE / "tau2_native_retail.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
