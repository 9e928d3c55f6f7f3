"""The harness with a real `OpenAIChatModel` agent talking HTTP to the local stub (127.0.0.1 only): recorded
completions with tool calls, plus 429 with retry-after, a timeout, a 500 and malformed tool JSON on the way."""

from __future__ import annotations

import json
from pathlib import Path

from core.evaluation import ModelParticipants, load_results
from core.llm.base import ChatModel
from core.llm.openai_model import OpenAIChatModel
from tests.support.eval_helpers import LEDGER, evaluate, retail_run
from tests.support.openai_stub import OpenAIStub, StubToolCall


async def no_sleep(_delay: float) -> None:
    return None


def agent_model(stub: OpenAIStub) -> ChatModel:
    return OpenAIChatModel("stub-model", base_url=stub.base_url, api_key="test", timeout=0.3, max_retries=3,
                           backoff=0.01, sleep=no_sleep)


def call(name: str, **arguments: str) -> StubToolCall:
    return StubToolCall(name, json.dumps(arguments), id=f"call_{name}")


async def test_recorded_completions_with_errors_on_the_way(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        stub.reply_error(429, "slow down", retry_after=0)
        stub.reply_text("too late", delay=1.0)  # the client gives up after 0.3 s and retries
        stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W3354738"', id="bad")])
        stub.reply_error(500, "upstream hiccup")
        stub.reply_tool_calls([call("find_user_id_by_email", email="yuki.haddad48@example.com")])
        stub.reply_tool_calls([call("get_user_details", user_id="yuki_haddad_4100")])
        stub.reply_tool_calls([call("get_order_details", order_id="#W3354738")])
        stub.reply_text("I'll cancel order #W3354738 (no longer needed); 90.41 goes back to your PayPal. "
                        "Do you confirm?")
        stub.reply_tool_calls([call("cancel_pending_order", order_id="#W3354738", reason="no longer needed")])
        stub.reply_text("Done: order #W3354738 is cancelled and 90.41 will be refunded to your PayPal.")
        run = retail_run(["r01"], participants=ModelParticipants(lambda: agent_model(stub), None))
        outcome = await evaluate(tmp_path, run, (LEDGER,), trials=1, offline=False, model="stub-model")
        assert stub.pending == 0
    trial = load_results(tmp_path).trials[0]
    assert trial.success, trial.failure
    assert trial.model == "stub-model" and not trial.scripted
    retries = [e["kind"] for e in trial.events if e["type"] == "model_retry"]
    assert retries == ["rate_limited", "timeout", "server_error"]
    invalid = [e for e in trial.events if e["type"] == "tool_result" and e["outcome"] == "invalid"]
    assert len(invalid) == 1 and "not valid JSON" in invalid[0]["content"]
    # the stub reports 11 prompt tokens per answered call; the timed-out attempt's prompt, which a real server
    # still processes, is counted on top as a local estimate (so the total is marked estimated)
    assert trial.tokens.estimated is True and trial.tokens.prompt > 11 * trial.tokens.model_calls
    assert trial.gate.verdicts == {"ALLOW": 1}
    assert outcome.metrics.cells[0].pass_k == {1: 1.0}
    # the last request carried the ledger, the tools, and a history in which every call id was answered
    sent = stub.requests[-1]
    assert "orders.#W3354738" in sent["messages"][0]["content"] and len(sent["tools"]) == 16
    ids = [c["id"] for m in sent["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert ids == [m["tool_call_id"] for m in sent["messages"] if m["role"] == "tool"]


async def test_a_model_that_keeps_failing_is_an_infrastructure_error_not_a_failure(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        for _ in range(16):  # 4 requests per attempt (3 client retries), 4 whole-trial attempts
            stub.reply_error(500, "down for maintenance")
        run = retail_run(["r01"], participants=ModelParticipants(lambda: agent_model(stub), None))
        outcome = await evaluate(tmp_path, run, (LEDGER,), trials=1, offline=False, model="stub-model")
        assert stub.pending == 0
    trial = outcome.trials[0]
    assert trial.status == "infra_error" and trial.termination == "infrastructure_error"
    assert "down for maintenance" in trial.detail and trial.attempts == 4 and trial.failure is None
    assert outcome.metrics.cells[0].pass_k == {} and outcome.metrics.cells[0].infra_errors == 1
