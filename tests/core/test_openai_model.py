"""OpenAIChatModel against a real local HTTP server speaking the OpenAI protocol.

Nothing of ours or of `openai` is mocked: requests go through the real SDK and a real socket, so the
status-code, header and timeout handling tested here is the one that runs against vLLM / Ollama.
Only `sleep` is injected, so backoff delays are recorded instead of waited for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from core.llm.base import ChatModel, ModelError
from core.llm.openai_model import OpenAIChatModel
from tests.support.openai_stub import NO_SCRIPT_MESSAGE, OpenAIStub, StubToolCall, closed_port

USER = [{"role": "user", "content": "What is the status of order #W1?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order_details",
            "description": "Look up an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]},
        },
    }
]


class Recorder:
    """Stands in for asyncio.sleep and for the on_retry listener, remembering every call."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.retries: list[tuple[int, ModelError, float]] = []

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)

    def on_retry(self, attempt: int, error: ModelError, delay: float) -> None:
        self.retries.append((attempt, error, delay))


MakeModel = Callable[..., OpenAIChatModel]


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def make_model(stub: OpenAIStub, recorder: Recorder) -> AsyncIterator[MakeModel]:
    """Build models pointed at the stub with fast settings; close their HTTP pools afterwards."""
    created: list[OpenAIChatModel] = []

    def factory(**overrides: Any) -> OpenAIChatModel:
        options: dict[str, Any] = {
            "base_url": stub.base_url, "api_key": "sk-test", "timeout": 0.2, "max_retries": 3,
            "backoff": 0.01, "max_backoff": 8.0, "on_retry": recorder.on_retry, "sleep": recorder.sleep,
        }
        options.update(overrides)
        model = OpenAIChatModel(options.pop("model", "test-model"), **options)
        created.append(model)
        return model

    yield factory
    for model in created:
        await model.aclose()


# -- successful turns --------------------------------------------------------------------------


async def test_text_reply_with_reported_usage(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("Your order has shipped.", prompt_tokens=42, completion_tokens=5)
    model = make_model()

    turn = await model.complete(USER, [])

    assert isinstance(model, ChatModel)
    assert model.name == "test-model"
    assert turn.text == "Your order has shipped."
    assert turn.tool_calls == ()
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens, turn.usage.estimated) == (42, 5, False)
    assert turn.model == "stub-model"
    assert turn.finish_reason == "stop"


async def test_empty_content_becomes_none(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("")
    turn = await make_model().complete(USER, [])
    assert turn.text is None


async def test_tool_call_reply(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_tool_calls([
        StubToolCall("get_order_details", '{"order_id": "#W1"}', id="call_abc"),
        StubToolCall("get_user", '{"user_id": "u1", "verbose": true}', id="call_def"),
    ], text="Let me check.")

    turn = await make_model().complete(USER, TOOLS)

    assert turn.text == "Let me check."
    assert turn.finish_reason == "tool_calls"
    assert [call.id for call in turn.tool_calls] == ["call_abc", "call_def"]
    assert [call.name for call in turn.tool_calls] == ["get_order_details", "get_user"]
    assert turn.tool_calls[0].arguments == {"order_id": "#W1"}
    assert turn.tool_calls[1].arguments == {"user_id": "u1", "verbose": True}
    assert all(call.parse_error is None for call in turn.tool_calls)


async def test_missing_tool_call_ids_get_deterministic_unique_ids(stub: OpenAIStub,
                                                                  make_model: MakeModel) -> None:
    stub.reply_tool_calls([("a", "{}"), ("b", "{}")])
    stub.reply_tool_calls([("c", "{}")])
    model = make_model()

    first = await model.complete(USER, TOOLS)
    second = await model.complete(USER, TOOLS)

    assert [call.id for call in first.tool_calls] == ["call_1", "call_2"]
    assert [call.id for call in second.tool_calls] == ["call_3"]


async def test_malformed_tool_arguments_are_kept_not_raised(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W1"', id="call_1")])

    turn = await make_model().complete(USER, TOOLS)

    (call,) = turn.tool_calls
    assert call.name == "get_order_details"
    assert call.arguments == {}
    assert call.raw_arguments == '{"order_id": "#W1"'
    assert call.parse_error is not None and "not valid JSON" in call.parse_error


async def test_arguments_sent_as_object_are_accepted(stub: OpenAIStub, make_model: MakeModel) -> None:
    # Ollama-style: "arguments" is a JSON object, and the call has neither id nor type.
    stub.reply_message({"role": "assistant", "content": None,
                        "tool_calls": [{"function": {"name": "get_order_details",
                                                     "arguments": {"order_id": "#W1"}}}]})
    turn = await make_model().complete(USER, TOOLS)
    (call,) = turn.tool_calls
    assert (call.id, call.arguments, call.parse_error) == ("call_1", {"order_id": "#W1"}, None)


async def test_missing_usage_is_estimated(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("Shipped yesterday.", usage=False)
    stub.reply_text("Shipped yesterday.", usage=False)
    model = make_model()

    first = await model.complete(USER, TOOLS)
    second = await model.complete(USER, TOOLS)

    assert first.usage.estimated is True
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
    assert first.usage == second.usage  # deterministic


async def test_request_body_carries_tools_temperature_and_messages(stub: OpenAIStub,
                                                                   make_model: MakeModel) -> None:
    stub.reply_text("ok")
    stub.reply_text("ok")
    model = make_model(model="qwen2.5", temperature=0.3, extra_body={"top_k": 20})

    await model.complete(USER, TOOLS)
    await model.complete(USER, [])

    with_tools, without_tools = stub.requests
    assert with_tools["model"] == "qwen2.5"
    assert with_tools["messages"] == USER
    assert with_tools["tools"] == TOOLS
    assert with_tools["temperature"] == 0.3
    assert with_tools["top_k"] == 20
    assert "tools" not in without_tools  # an empty list is omitted: some servers reject it
    assert stub.request_paths == ["/v1/chat/completions", "/v1/chat/completions"]


async def test_api_key_falls_back_to_placeholder(stub: OpenAIStub, make_model: MakeModel,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub.reply_text("ok")
    await make_model(api_key=None).complete(USER, [])
    headers = {name.lower(): value for name, value in stub.request_headers[0].items()}
    assert headers["authorization"] == "Bearer not-needed"


# -- retries -----------------------------------------------------------------------------------


async def test_server_error_then_success_retries_once(stub: OpenAIStub, make_model: MakeModel,
                                                      recorder: Recorder) -> None:
    stub.reply_error(500, "overloaded")
    stub.reply_text("recovered")

    turn = await make_model().complete(USER, [])

    assert turn.text == "recovered"
    assert len(stub.requests) == 2
    assert recorder.sleeps == [0.01]
    ((attempt, error, delay),) = recorder.retries
    assert (attempt, error.kind, error.status, delay) == (1, "server_error", 500, 0.01)
    assert "overloaded" in error.message


async def test_rate_limit_honours_retry_after(stub: OpenAIStub, make_model: MakeModel,
                                              recorder: Recorder) -> None:
    stub.reply_error(429, "slow down", retry_after=3)
    stub.reply_text("ok")

    turn = await make_model().complete(USER, [])

    assert turn.text == "ok"
    assert recorder.sleeps == [3.0]
    assert recorder.retries[0][1].kind == "rate_limited"
    assert recorder.retries[0][1].status == 429


async def test_retry_after_is_capped_at_max_backoff(stub: OpenAIStub, make_model: MakeModel,
                                                    recorder: Recorder) -> None:
    stub.reply_error(429, "slow down", retry_after=120)
    stub.reply_text("ok")
    await make_model(max_backoff=2.0).complete(USER, [])
    assert recorder.sleeps == [2.0]


async def test_persistent_server_error_gives_up_after_all_attempts(stub: OpenAIStub, make_model: MakeModel,
                                                                   recorder: Recorder) -> None:
    for _ in range(4):
        stub.reply_error(503, "down for maintenance")

    with pytest.raises(ModelError) as caught:
        await make_model(max_retries=3, backoff=0.5, max_backoff=1.5).complete(USER, [])

    assert caught.value.kind == "server_error"
    assert caught.value.attempts == 4
    assert caught.value.status == 503
    assert "down for maintenance" in caught.value.message
    assert len(stub.requests) == 4
    assert recorder.sleeps == [0.5, 1.0, 1.5]  # exponential, capped
    assert [attempt for attempt, _, _ in recorder.retries] == [1, 2, 3]


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_errors_are_not_retried(stub: OpenAIStub, make_model: MakeModel, recorder: Recorder,
                                             status: int) -> None:
    stub.reply_error(status, "'messages' must not be empty")
    stub.reply_text("never reached")

    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])

    assert caught.value.kind == "http_error"
    assert caught.value.status == status
    assert caught.value.attempts == 1
    assert "'messages' must not be empty" in caught.value.message
    assert len(stub.requests) == 1
    assert recorder.sleeps == [] and recorder.retries == []


async def test_slow_server_times_out(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("too late", delay=2.0)

    with pytest.raises(ModelError) as caught:
        await make_model(timeout=0.2, max_retries=0).complete(USER, [])

    assert caught.value.kind == "timeout"
    assert caught.value.attempts == 1
    assert caught.value.status is None


async def test_timeout_is_retried(stub: OpenAIStub, make_model: MakeModel, recorder: Recorder) -> None:
    stub.reply_text("too late", delay=2.0)
    stub.reply_text("in time")

    turn = await make_model(timeout=0.2, max_retries=1).complete(USER, [])

    assert turn.text == "in time"
    assert [error.kind for _, error, _ in recorder.retries] == ["timeout"]


async def test_connection_refused(make_model: MakeModel, recorder: Recorder) -> None:
    model = make_model(base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=1)

    with pytest.raises(ModelError) as caught:
        await model.complete(USER, [])

    assert caught.value.kind == "connection"
    assert caught.value.attempts == 2
    assert len(recorder.retries) == 1


# -- unusable responses ------------------------------------------------------------------------


async def test_no_choices_is_a_bad_response_and_not_retried(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_raw(200, {"id": "x", "object": "chat.completion", "choices": []})

    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])

    assert caught.value.kind == "bad_response"
    assert len(stub.requests) == 1


async def test_non_json_body_is_a_bad_response(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_raw(200, "<html>gateway</html>")
    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])
    assert caught.value.kind == "bad_response"


async def test_unscripted_request_fails_loudly(stub: OpenAIStub, make_model: MakeModel) -> None:
    with pytest.raises(ModelError) as caught:
        await make_model(max_retries=0).complete(USER, [])
    assert caught.value.kind == "server_error"
    assert NO_SCRIPT_MESSAGE in caught.value.message
