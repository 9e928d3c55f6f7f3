"""A LedgerAgent session whose agent (and user) are real OpenAI-compatible clients talking HTTP to a local stub.

Bad input from the model side — malformed tool JSON, unknown tools, wrong types, 500/429, timeouts — gives a
clear message, keeps the session going where it can, leaves the database unchanged and is on disk in the trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.events import ModelRetry, ToolResultEvent
from core.llm.openai_model import OpenAIChatModel
from core.session import Session
from core.trace import load_trace
from core.users import LLMUserSimulator, ScriptedUser
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend
from tests.support.openai_stub import OpenAIStub, StubToolCall


async def no_sleep(_delay: float) -> None:
    return None


def model(stub: OpenAIStub, **kwargs: Any) -> OpenAIChatModel:
    options: dict[str, Any] = {"timeout": 2.0, "max_retries": 2, "backoff": 0.01, "sleep": no_sleep}
    options.update(kwargs)
    return OpenAIChatModel("stub-model", base_url=stub.base_url, api_key="test", **options)


async def fresh_hash(tmp_path: Path) -> str:
    backend = await RetailBackend.open(tmp_path / "fresh.sqlite")
    try:
        return await backend.state_hash()
    finally:
        await backend.close()


async def test_model_bad_input_then_server_errors_then_recovery(tmp_path: Path) -> None:
    expected = await fresh_hash(tmp_path)
    with OpenAIStub() as stub:
        stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W4821001"'),  # broken JSON
                               StubToolCall("drop_database", "{}"),
                               StubToolCall("get_order_details", '{"order_id": 4821001}'),
                               StubToolCall("cancel_pending_order", '{"order_id": "#W4821002"}'),
                               StubToolCall("get_order_details", '{"order_id": "#W0000000"}')])
        stub.reply_error(500, "upstream exploded")
        stub.reply_error(429, "slow down", retry_after=0)
        stub.reply_text("Sorry about that. Could you tell me your email?")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub), user=ScriptedUser(["cancel #W4821002"]),
                          trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        await backend.close()
    assert result.reason == "user_stop"
    contents = [e.content for e in session.bus.history if isinstance(e, ToolResultEvent)]
    assert "not valid JSON" in contents[0]
    assert contents[1] == "Error: Tool 'drop_database' not found."
    assert "argument 'order_id' must be string, got integer" in contents[2]
    assert "missing required argument 'reason'" in contents[3]
    assert contents[4] == "Error: Order not found"
    retries = [e for e in session.bus.history if isinstance(e, ModelRetry)]
    assert [r.kind for r in retries] == ["server_error", "rate_limited"]
    assert result.db_hash == expected
    on_disk = [e.type for e in load_trace(tmp_path / "trace.jsonl")]
    assert on_disk.count("model_retry") == 2 and on_disk[-1] == "session_ended"
    # the history sent back to the server stayed valid: every tool call id answered
    second_request = stub.requests[1]["messages"]
    call_ids = [tc["id"] for m in second_request if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in second_request if m["role"] == "tool"]
    assert call_ids == answered and len(call_ids) == 5


async def test_persistent_timeout_ends_cleanly_with_everything_on_disk(tmp_path: Path) -> None:
    expected = await fresh_hash(tmp_path)
    with OpenAIStub() as stub:
        for _ in range(3):
            stub.reply_text("too late", delay=1.0)
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub, timeout=0.2),
                          user=ScriptedUser(["hello"]), trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        assert await backend.state_hash() == expected
        await backend.close()
    assert result.reason == "agent_error"
    assert "timed out" in result.detail.lower() or "timeout" in result.detail.lower()
    events = load_trace(tmp_path / "trace.jsonl")
    assert [e.type for e in events][-2:] == ["model_error", "session_ended"]
    assert events[-2].kind == "timeout" and events[-2].attempts == 3  # type: ignore[union-attr]


async def test_ledger_block_and_tools_reach_the_real_endpoint(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        stub.reply_tool_calls([StubToolCall("find_user_id_by_email", '{"email": "mia.garcia@example.com"}')])
        stub.reply_text("Found you, Mia.")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub), user=ScriptedUser(["I'm Mia"]))
        await session.run()
        await backend.close()
    first, second = stub.requests
    assert {t["function"]["name"] for t in first["tools"]} == {t.name for t in DOMAIN.tools}
    # before any read the prompt's ledger is empty: what the customer said is in the conversation itself
    assert "<ledger>\n(empty: nothing has been observed through read tools yet)\n</ledger>" in \
        first["messages"][0]["content"]
    assert "auth.user_id" not in first["messages"][0]["content"]
    assert 'auth.user_id = "mia_garcia_4821"' in second["messages"][0]["content"]


async def test_llm_user_simulator_over_http(tmp_path: Path) -> None:
    with OpenAIStub() as agent_stub, OpenAIStub() as user_stub:
        user_stub.reply_text("I want to cancel my order #W4821002.")
        user_stub.reply_text("###STOP###")
        agent_stub.reply_text("Sure, first I need your email.")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        user = LLMUserSimulator(model(user_stub), "You are Mia Garcia. Cancel order #W4821002.")
        session = Session(domain=DOMAIN, backend=backend, model=model(agent_stub), user=user)
        result = await session.run()
        await backend.close()
    assert result.reason == "user_stop"
    sent = user_stub.requests[1]["messages"]
    assert "<scenario>" in sent[0]["content"] and "Cancel order #W4821002" in sent[0]["content"]
    # roles are flipped for the simulator: the agent speaks as "user"
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]
    assert json.dumps(sent).count("Sure, first I need your email.") == 1


async def test_user_simulator_failure_is_a_user_error(tmp_path: Path) -> None:
    with OpenAIStub() as agent_stub, OpenAIStub() as user_stub:
        user_stub.reply_error(400, "bad request from the simulator's point of view")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(agent_stub),
                          user=LLMUserSimulator(model(user_stub), "x"), trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        await backend.close()
    assert result.reason == "user_error" and "user simulator" in result.detail
    assert agent_stub.requests == []


async def test_model_error_handler_can_retry_the_same_step(tmp_path: Path) -> None:
    asked: list[str] = []

    async def retry_once(error: Any) -> bool:
        asked.append(error.kind)
        return len(asked) == 1

    with OpenAIStub() as stub:
        stub.reply_error(503, "down")
        stub.reply_text("Back now. How can I help?")
        stub.reply_error(503, "down again")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub, max_retries=0),
                          user=ScriptedUser(["hello", "still there?"]), on_model_error=retry_once,
                          trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        await backend.close()
    assert asked == ["server_error", "server_error"]
    assert result.reason == "agent_error" and "down again" in result.detail
    types = [e.type for e in load_trace(tmp_path / "trace.jsonl")]
    assert types.count("model_error") == 2 and types.count("assistant_turn") == 1


# -- the protocol details real servers need, end to end through a session ---------------------------------


async def test_history_sent_back_is_valid_for_strict_servers(tmp_path: Path) -> None:
    """A tool-call turn with null content and malformed arguments: the next request carries "" and {}."""
    with OpenAIStub() as stub:
        stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W4821001"', id="call_a")])
        stub.reply_text("Could you give me the order id again?")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub), user=ScriptedUser(["status of #W4821001"]),
                          trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        await backend.close()
    assert result.reason == "user_stop"
    second = stub.requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant" and m.get("tool_calls"))
    assert assistant["content"] == ""  # not null: llama-cpp-python answers null with HTTP 500
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"  # llama-server fails on unparseable text
    tool = next(m for m in second if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_a" and "not valid JSON" in tool["content"]
    assert "at at" not in tool["content"]
    assert all(m["content"] is not None for m in second)
    # the trace still shows what the model really sent
    calls = [e for e in load_trace(tmp_path / "trace.jsonl") if e.type == "assistant_turn"]
    assert calls[0].tool_calls[0].raw_arguments == '{"order_id": "#W4821001"'  # type: ignore[union-attr]


async def test_whitespace_only_agent_turn_is_not_shown_to_the_customer(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        stub.reply_text("  \n ")
        stub.reply_text("Hello! How can I help?")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub), user=ScriptedUser(["hi"]))
        await session.run()
        await backend.close()
    agent_lines = [u.text for u in session.conversation if u.role == "assistant"]
    assert agent_lines[1:] == ["Hello! How can I help?"]  # after the greeting: no blank message
    assert len(stub.requests) == 2  # the empty turn was asked again


async def test_sloppy_stop_token_from_the_user_simulator_ends_the_session(tmp_path: Path) -> None:
    with OpenAIStub() as agent_stub, OpenAIStub() as user_stub:
        user_stub.reply_text("Cancel order #W4821002 please.")
        user_stub.reply_text("Thanks, that's all. ### STOP###")
        agent_stub.reply_text("Done.")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(agent_stub),
                          user=LLMUserSimulator(model(user_stub), "x"), max_steps=20)
        result = await session.run()
        await backend.close()
    assert result.reason == "user_stop" and result.steps == 3


async def test_invalid_request_500_fails_once_with_one_line_and_the_detail_on_disk(tmp_path: Path) -> None:
    dump = ("1 validation error for CreateChatCompletionRequest\nmessages.1.content\n  Input should be a valid "
            "string [type=string_type, input_value=None, input_type=NoneType]\n    For further information visit "
            "https://errors.pydantic.dev/2.11/v/string_type")
    with OpenAIStub() as stub:
        stub.reply_error(500, dump, error_type="internal_server_error")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub), user=ScriptedUser(["hi"]),
                          trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        await backend.close()
    assert len(stub.requests) == 1  # not retried: the same request would fail the same way
    assert result.reason == "agent_error" and "\n" not in result.detail
    failed = [e for e in load_trace(tmp_path / "trace.jsonl") if e.type == "model_error"]
    assert len(failed) == 1
    assert "Input should be a valid string" in failed[0].message  # type: ignore[union-attr]
    assert "\n" not in failed[0].message  # type: ignore[union-attr]
    assert failed[0].detail.count("\n") >= 3 and "errors.pydantic.dev" in failed[0].detail  # type: ignore[union-attr]


async def test_tokens_of_timed_out_attempts_reach_the_session_totals(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        for _ in range(2):
            stub.reply_text("too late", delay=1.0)
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub, timeout=0.2, max_retries=1),
                          user=ScriptedUser(["hello"]), trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        await backend.close()
    assert result.reason == "agent_error"
    ended = load_trace(tmp_path / "trace.jsonl")[-1]
    assert ended.prompt_tokens > 1000  # type: ignore[union-attr]  # two abandoned prompts (system + policy + tools)
    assert result.usage.prompt_tokens == ended.prompt_tokens  # type: ignore[union-attr]


async def test_bad_server_answers_execute_nothing_and_the_operator_can_retry(tmp_path: Path) -> None:
    expected = await fresh_hash(tmp_path)
    asked: list[str] = []

    async def retry(error: Any) -> bool:
        asked.append(error.message)
        return True

    with OpenAIStub() as stub:
        stub.reply_raw(200, "<html><head><title>502 Bad Gateway</title></head></html>", content_type="text/html")
        stub.reply_raw(200, "")
        stub.reply_raw(200, {"id": "x", "object": "chat.completion", "choices": []})
        stub.reply_stream("hello")
        stub.reply_tool_calls([StubToolCall("cancel_pending_order", '{"order_id": "#W4821002", "reason": "no longer '
                                                                    'needed"}', id="dup"),
                               StubToolCall("cancel_pending_order", '{"order_id": "#W4821002", "reason": "no longer '
                                                                    'needed"}', id="dup")])
        stub.reply_text("Sorry, how can I help?")
        backend = await RetailBackend.open(tmp_path / "db.sqlite")
        session = Session(domain=DOMAIN, backend=backend, model=model(stub, max_retries=0),
                          user=ScriptedUser(["cancel #W4821002"]), on_model_error=retry,
                          trace_path=tmp_path / "trace.jsonl")
        result = await session.run()
        assert await backend.state_hash() == expected
        await backend.close()
    assert result.reason == "user_stop"
    assert len(asked) == 5 and all("\n" not in line for line in asked)
    assert "HTML page: 502 Bad Gateway" in asked[0] and "empty" in asked[1] and "no choices" in asked[2]
    assert "stream" in asked[3] and "repeats" in asked[4]
    types = [e.type for e in load_trace(tmp_path / "trace.jsonl")]
    assert "tool_call" not in types and "gate_decided" not in types and types.count("model_error") == 5
