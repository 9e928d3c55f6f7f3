"""End to end through `ledgeragent eval` against a local OpenAI-compatible stub (127.0.0.1) playing
the agent, the customer simulator and the judge: scores a tau2-bench user can trust."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import console.cli.eval as eval_cli
from core.evaluation import load_results, load_tasks
from core.evaluation.judge import JUDGE_PROMPT, LLMJudge, llm_judge
from core.evaluation.tau2_format import Tau2Results
from core.llm.base import ChatModel
from core.llm.openai_model import OpenAIChatModel
from tests.support.eval_domains import run_eval
from tests.support.eval_helpers import RETAIL_TASKS
from tests.support.eval_stub import AGENT_TOKENS, JUDGE_TOKENS, USER_TOKENS, RoleStub, completion
from tests.support.openai_stub import ScriptedResponse

ASSERTION = "The agent cancels order #W3354738 only after the customer confirms."


def model_argv(stub: RoleStub, out: Path, *extra: str) -> list[str]:
    return ["--domain", "retail", "--agent", "ledger", "--trials", "1", "--concurrency", "1", "--out", str(out),
            "--model", "stub-agent", "--user-model", "stub-user", "--base-url", stub.base_url, "--retries", "0",
            "--request-timeout", "5", "--retry-delay", "0", *extra]


def nl_tasks(tmp_path: Path) -> Path:
    """r01 with an NL assertion in its reward basis (as 20 of tau2's retail tasks have)."""
    raw = next(t for t in load_tasks(RETAIL_TASKS) if t.id == "r01").model_dump(mode="json", exclude_none=True)
    raw["evaluation_criteria"]["nl_assertions"] = [ASSERTION]
    raw["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([raw]), encoding="utf-8")
    return path


async def test_an_always_500_trial_is_excluded_and_rerun_on_resume(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with RoleStub() as stub:
        stub.down = {"agent"}
        assert await run_eval(model_argv(stub, out, "--tasks", "r01", "--max-retries", "2")) == 0
        assert stub.roles.count("agent") == 3  # the whole trial was tried 1 + 2 times
        printed = capsys.readouterr().out
        (trial,) = load_results(out).trials
        assert trial.status == "infra_error" and trial.termination == "infrastructure_error"
        assert trial.attempts == 3 and "agent endpoint down" in trial.detail and trial.failure is None
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        cell = results["metrics"]["cells"][0]
        assert cell["infra_errors"] == 1 and cell["pass_k"] == {} and cell["tasks"] == 0  # not a 0% task
        assert "1 trial(s) could not be run" in printed
        report = (out / "report.md").read_text(encoding="utf-8")
        assert "| retail | ledger | 0 | 0 |" in report  # no task, no trial counted; the infra column says 1
        # the endpoint is back: --resume runs the trial again, and only it
        stub.down = set()
        assert await run_eval(model_argv(stub, out, "--tasks", "r01", "--max-retries", "2", "--resume")) == 0
    (trial,) = load_results(out).trials
    assert trial.status == "ok" and trial.success and trial.attempts == 1
    cell = json.loads((out / "results.json").read_text(encoding="utf-8"))["metrics"]["cells"][0]
    assert cell["infra_errors"] == 0 and cell["pass_k"] == {"1": 1.0}
    assert "taken from the earlier run" not in capsys.readouterr().out  # an infra trial is never "done"
    (out / "results.json").unlink()  # an unfinished-looking folder: the re-run's line wins over the infra one
    assert [t.status for t in load_results(out).trials] == ["ok"]


async def test_nl_assertion_tasks_without_a_judge_are_not_passed(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with RoleStub() as stub:
        assert await run_eval(model_argv(stub, out, "--tasks", str(nl_tasks(tmp_path)))) == 0
    printed = capsys.readouterr().out
    (trial,) = load_results(out).trials
    assert trial.reward_info is not None and trial.reward_info.db_check is not None
    assert trial.reward_info.db_check.db_match  # the agent did everything right...
    assert trial.unscored == ["NL_ASSERTION"] and not trial.success  # ...but nobody graded the assertion
    cell = json.loads((out / "results.json").read_text(encoding="utf-8"))["metrics"]["cells"][0]
    assert cell["unscored"] == 1 and cell["unscored_tasks"] == 1 and cell["pass_k"] == {}
    assert "UNSCORED" in printed and "--judge-model" in printed
    assert "WARNING: 1 trial(s) of 1 task(s) are UNSCORED" in (out / "report.md").read_text(encoding="utf-8")


async def test_the_judge_sees_customer_and_tool_messages_on_its_own_endpoint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"stub-agent": {"input": 2, "output": 8}, "stub-user": {"input": 1, "output": 4},
                                  "stub-judge": {"input": 10, "output": 30}}), encoding="utf-8")
    with RoleStub() as stub, RoleStub() as judge:
        argv = model_argv(stub, out, "--tasks", str(nl_tasks(tmp_path)), "--judge-model", "stub-judge",
                          "--judge-base-url", judge.base_url, "--price-table", str(prices), "--seed", "7",
                          "--temperature", "0.5", "--agent-model-args", '{"top_p": 0.9}',
                          "--judge-model-args", '{"temperature": 0}')
        assert await run_eval(argv) == 0
        printed = capsys.readouterr().out
        assert stub.roles.count("judge") == 0 and judge.roles == ["judge"]  # its own endpoint
        (request,) = judge.requests_of("judge")
        agent_requests = stub.requests_of("agent")
        judge_url = judge.base_url
    system, prompt = request["messages"][0]["content"], request["messages"][1]["content"]
    assert system == JUDGE_PROMPT and request["temperature"] == 0 and request["seed"] == 7
    assert "user: Hi, I'm Yuki Haddad" in prompt  # the customer's side
    assert "assistant: None" in prompt  # a tool-call turn, as tau2 renders it
    assert 'tool: {"order_id": "#W3354738"' in prompt or "tool: {" in prompt  # tool results
    assert "#W3354738" in prompt.split("tool: ", 1)[1]
    assert f"expectedOutcomes:\n        {[ASSERTION]!r}" in prompt
    assert all(r["temperature"] == 0.5 and r["top_p"] == 0.9 and r["seed"] == 7 for r in agent_requests)
    results = load_results(out)
    (trial,) = results.trials
    assert trial.success and trial.unscored == [] and trial.reward_info is not None
    assert trial.reward_info.nl_assertions is not None and trial.reward_info.nl_assertions[0].met
    # three roles' tokens and costs add up
    agent, user, judged = trial.usage["agent"], trial.usage["user"], trial.usage["judge"]
    assert (agent.prompt, agent.completion) == (AGENT_TOKENS[0] * agent.calls, AGENT_TOKENS[1] * agent.calls)
    assert (user.prompt, user.completion) == (USER_TOKENS[0] * user.calls, USER_TOKENS[1] * user.calls)
    assert (judged.prompt, judged.completion, judged.calls) == (*JUDGE_TOKENS, 1)
    assert agent.calls == 6 and user.calls == 3
    assert agent.cost == pytest.approx((agent.prompt * 2 + agent.completion * 8) / 1e6)
    assert user.cost == pytest.approx((user.prompt * 1 + user.completion * 4) / 1e6)
    assert judged.cost == pytest.approx((100 * 10 + 20 * 30) / 1e6)
    assert trial.cost == pytest.approx(agent.cost + user.cost + judged.cost)
    cell = results.metrics["cells"][0]
    assert cell["cost"] == pytest.approx(trial.cost)
    assert {role: cell["roles"][role]["prompt"] for role in ("agent", "user", "judge")} == {
        "agent": agent.prompt, "user": user.prompt, "judge": 100}
    assert f"{agent.total}/{user.total}/120" in printed  # the table: tokens of agent / user / judge
    header = results.header
    assert header.judge_base_url == judge_url and header.model_seed == 7 and header.temperature == 0.5
    assert header.agent_model_args == {"top_p": 0.9} and header.judge_model_args == {"temperature": 0}
    assert header.prices["stub-judge"] == {"input": 10.0, "output": 30.0}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Tokens and cost per role" in report and "stub-judge" in report


async def test_an_unknown_price_is_shown_as_unknown_never_zero(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with RoleStub() as stub:
        assert await run_eval(model_argv(stub, out, "--tasks", "r01")) == 0
    printed = capsys.readouterr().out
    (trial,) = load_results(out).trials
    assert trial.success and trial.usage["agent"].cost is None and trial.cost is None
    assert "unknown price" in printed and "unknown price" in (out / "report.md").read_text(encoding="utf-8")


async def test_a_failing_or_garbling_judge_is_an_infrastructure_error_not_a_zero(tmp_path: Path) -> None:
    with RoleStub(judge=lambda _body: completion("Looks fine to me!", tokens=JUDGE_TOKENS)) as stub:
        argv = model_argv(stub, tmp_path / "garbled", "--tasks", str(nl_tasks(tmp_path)), "--judge-model", "j",
                          "--max-retries", "1")
        assert await run_eval(argv) == 0
        assert stub.roles.count("judge") == 2
    (trial,) = load_results(tmp_path / "garbled").trials
    assert trial.status == "infra_error" and "judge answer is not JSON" in trial.detail and trial.reward == 0.0
    with RoleStub(judge=lambda _body: "<html>502 Bad Gateway</html>") as stub:
        argv = model_argv(stub, tmp_path / "down", "--tasks", str(nl_tasks(tmp_path)), "--judge-model", "j",
                          "--max-retries", "0")
        assert await run_eval(argv) == 0
    (trial,) = load_results(tmp_path / "down").trials
    assert trial.status == "infra_error" and "judge model failed: bad response" in trial.detail


async def test_an_endpoint_answering_garbage_is_named_and_the_run_goes_on(tmp_path: Path) -> None:
    with RoleStub() as stub:
        stub.down = {"user"}
        assert await run_eval(model_argv(stub, tmp_path / "run", "--tasks", "r01,r05", "--max-retries", "0")) == 0
    trials = load_results(tmp_path / "run").trials
    assert [t.task_id for t in trials] == ["r01", "r05"]
    assert all(t.status == "infra_error" and "user simulator" in t.detail for t in trials)



async def test_a_model_run_exports_to_tau2_and_imports_back_unchanged(tmp_path: Path) -> None:
    """A run whose three roles are models (the stub): what comes back from tau2's format is the run itself."""
    out = tmp_path / "run"
    with RoleStub() as stub:
        argv = model_argv(stub, out, "--tasks", str(nl_tasks(tmp_path)), "--judge-model", "stub-judge",
                          "--trials", "2", "--seed", "7")
        assert await run_eval(argv) == 0
    assert await run_eval(["export", str(out), "--out", str(tmp_path / "tau2")]) == 0
    exported = tmp_path / "tau2" / "retail-ledger.json"
    document = Tau2Results.model_validate_json(exported.read_text(encoding="utf-8"))  # tau2's field names and types
    roles = {m.get("role") for sim in document.simulations for m in sim.messages}
    assert roles == {"assistant", "user", "tool"} and len(document.simulations) == 2
    original, back = load_results(out), load_results(exported)
    assert [t.model_dump() for t in back.trials] == [t.model_dump() for t in original.trials]
    assert back.header.model_dump() == original.header.model_dump()
    (trial, _second) = back.trials
    assert trial.success and set(trial.usage) == {"agent", "user", "judge"}  # the judge's grade and every role's usage

class GarbageOnce(RoleStub):
    """Answers the run's first agent request with `garbage` (HTTP 200), then plays its roles as usual."""

    def __init__(self, garbage: ScriptedResponse) -> None:
        super().__init__()
        self.garbage: ScriptedResponse | None = garbage

    def _record_and_pop(self, path: str, headers: dict[str, str], body: Any) -> ScriptedResponse:
        answer = super()._record_and_pop(path, headers, body)
        if self.roles[-1] == "agent" and self.garbage is not None:
            answer, self.garbage = self.garbage, None
        return answer


@pytest.mark.parametrize(("garbage", "said"), [
    (ScriptedResponse(200, "<html><body>502 upstream</body></html>", content_type="text/html"), "HTML page"),
    (ScriptedResponse(200, {"object": "list", "data": []}), "bad response"),
])
async def test_an_endpoint_answering_garbage_names_the_task_and_the_run_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], garbage: ScriptedResponse, said: str) -> None:
    with GarbageOnce(garbage) as stub:
        argv = model_argv(stub, tmp_path / "run", "--tasks", "r01,r05", "--max-retries", "0")
        assert await run_eval(argv) == 0
    first, second = load_results(tmp_path / "run").trials
    assert (first.task_id, first.status) == ("r01", "infra_error") and said in first.detail
    assert (second.task_id, second.status) == ("r05", "ok")  # the run went on with the other task
    err = capsys.readouterr().err
    assert f"not run (infra_error): retail r01 ledger #0: {first.detail[:60]}" in err
    assert "r05" not in err

async def test_the_judge_client_is_closed_when_the_run_or_the_regrade_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[LLMJudge] = []

    def recorded(model: ChatModel) -> LLMJudge:  # the real judge, kept in sight to look at its client afterwards
        made.append(llm_judge(model))
        return made[-1]

    monkeypatch.setattr(eval_cli, "llm_judge", recorded)
    fixture = Path(__file__).parent / "data" / "tau2_results_retail.json"
    with RoleStub() as stub:
        argv = model_argv(stub, tmp_path / "run", "--tasks", str(nl_tasks(tmp_path)), "--judge-model", "stub-judge")
        assert await run_eval(argv) == 0
        assert stub.roles.count("judge") == 1  # the judge graded over HTTP...
        assert await run_eval(["regrade", str(fixture), "--out", str(tmp_path / "regraded"), "--judge-model", "j",
                               "--base-url", stub.base_url]) == 0
    assert len(made) == 2
    for judge in made:  # ...and its connection pool did not outlive the command
        assert isinstance(judge.model, OpenAIChatModel) and judge.model._client.is_closed()
