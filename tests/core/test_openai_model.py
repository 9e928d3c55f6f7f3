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
            "base_url": stub.base_url, "api_key": "sk-test", "timeout": 5.0, "max_retries": 3,
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
    stub.reply_text("too late", delay=5.0)
    stub.reply_text("in time")

    turn = await make_model(timeout=1.0, max_retries=1).complete(USER, [])

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


# -- what real servers need ----------------------------------------------------------------------

# What llama-cpp-python's server answered for an assistant message with "content": null: its pydantic dump.
LLAMA_CPP_PYTHON_500 = """3 validation errors for CreateChatCompletionRequest
messages.2.typed-dict.content
  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]
    For further information visit https://errors.pydantic.dev/2.11/v/string_type
messages.2.typed-dict.role
  Input should be 'user' [type=literal_error, input_value='assistant', input_type=str]
    For further information visit https://errors.pydantic.dev/2.11/v/literal_error
messages.2.typed-dict.tool_call_id
  Field required [type=missing, input_value={'role': 'assistant'}, input_type=dict]
    For further information visit https://errors.pydantic.dev/2.11/v/missing"""


async def test_tool_choice_defaults_to_auto_and_is_sent_only_with_tools(stub: OpenAIStub,
                                                                         make_model: MakeModel) -> None:
    stub.reply_text("ok").reply_text("ok")
    model = make_model()
    await model.complete(USER, TOOLS)
    await model.complete(USER, [])
    with_tools, without_tools = stub.requests
    assert with_tools["tool_choice"] == "auto"  # llama-cpp-python takes a missing tool_choice as "none"
    assert "tool_choice" not in without_tools  # OpenAI and vLLM reject tool_choice without tools


@pytest.mark.parametrize("choice", ["required", "none"])
async def test_tool_choice_setting_is_sent(stub: OpenAIStub, make_model: MakeModel, choice: str) -> None:
    stub.reply_text("ok")
    await make_model(tool_choice=choice).complete(USER, TOOLS)
    assert stub.requests[0]["tool_choice"] == choice


async def test_tool_choice_omit_leaves_the_key_out(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("ok")
    await make_model(tool_choice="omit").complete(USER, TOOLS)
    assert "tool_choice" not in stub.requests[0] and stub.requests[0]["tools"] == TOOLS


async def test_a_named_tool_can_be_forced_for_one_call(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("ok").reply_text("ok")
    model = make_model()
    forced = {"type": "function", "function": {"name": "get_order_details"}}
    await model.complete(USER, TOOLS, tool_choice=forced)
    await model.complete(USER, TOOLS)
    assert stub.requests[0]["tool_choice"] == forced
    assert stub.requests[1]["tool_choice"] == "auto"  # the override was for that call only


def test_an_unknown_tool_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, required, none, omit"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", tool_choice="any")


async def test_max_tokens_is_bounded_by_default_and_configurable(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("ok").reply_text("ok").reply_text("ok")
    await make_model().complete(USER, TOOLS)
    await make_model(max_tokens=77).complete(USER, TOOLS)
    await make_model(max_tokens=None).complete(USER, TOOLS)
    assert stub.requests[0]["max_tokens"] == 1024
    assert stub.requests[1]["max_tokens"] == 77
    assert "max_tokens" not in stub.requests[2]


async def test_extra_body_wins_over_the_settings(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("ok")
    await make_model(max_tokens=77, extra_body={"max_tokens": 5, "top_p": 0.5, "tool_choice": "none"}).complete(
        USER, TOOLS)
    body = stub.requests[0]
    assert (body["max_tokens"], body["top_p"], body["tool_choice"]) == (5, 0.5, "none")


async def test_null_content_goes_on_the_wire_as_empty_string(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("ok")
    history = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_order_details", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: Order not found"}]
    await make_model().complete(history, TOOLS)
    sent = stub.requests[0]["messages"]
    assert sent[1]["content"] == ""  # llama-cpp-python: HTTP 500 "Input should be a valid string" for null
    assert history[1]["content"] is None  # the caller's history is not touched


async def test_malformed_arguments_are_echoed_as_an_empty_object(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("ok")
    history = [*USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_order_details",
                                                          "arguments": '{"order_id": "#W1"'}},
        {"id": "call_2", "type": "function", "function": {"name": "get_order_details", "arguments": "[1]"}},
        {"id": "call_3", "type": "function", "function": {"name": "get_order_details",
                                                          "arguments": '{"order_id": "#W2"}'}}]}]
    await make_model().complete(history, TOOLS)
    calls = stub.requests[0]["messages"][1]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ["{}", "{}", '{"order_id": "#W2"}']
    assert [c["id"] for c in calls] == ["call_1", "call_2", "call_3"]


async def test_whitespace_only_content_is_no_text(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text(" \n\t ")
    turn = await make_model().complete(USER, [])
    assert turn.text is None


async def test_a_500_that_says_the_request_is_invalid_is_not_retried(stub: OpenAIStub, make_model: MakeModel,
                                                                     recorder: Recorder) -> None:
    stub.reply_error(500, LLAMA_CPP_PYTHON_500, error_type="internal_server_error")
    stub.reply_text("never reached")

    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])

    assert caught.value.kind == "invalid_request"
    assert caught.value.status == 500 and caught.value.attempts == 1
    assert len(stub.requests) == 1 and recorder.retries == []


async def test_a_500_with_an_invalid_request_type_is_not_retried(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_error(500, "Failed to parse tool call arguments as JSON", error_type="server_error")
    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])
    assert caught.value.kind == "invalid_request" and len(stub.requests) == 1


async def test_server_error_message_is_one_line_with_the_detail_kept(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_error(500, LLAMA_CPP_PYTHON_500, error_type="internal_server_error")

    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])

    message = caught.value.message
    assert "\n" not in message and len(message) <= 320
    assert "HTTP 500" in message
    assert "messages.2.typed-dict.content: Input should be a valid string" in message
    assert "errors.pydantic.dev" not in message and "input_value" not in message
    assert "For further information visit https://errors.pydantic.dev/2.11/v/missing" in caught.value.detail


async def test_a_server_traceback_becomes_its_exception_line(stub: OpenAIStub, make_model: MakeModel) -> None:
    trace = ('Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/llama_cpp/server/app.py",'
             ' line 120, in create\n    raise ValueError(x)\nValueError: Tool with name \'x\' not found in tools')
    stub.reply_error(500, trace)
    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, [])
    assert caught.value.message.endswith("ValueError: Tool with name 'x' not found in tools")
    assert "site-packages" not in caught.value.message and "site-packages" in caught.value.detail


async def test_timed_out_attempts_are_counted_in_the_usage(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("too late", delay=5.0)
    stub.reply_text("in time", prompt_tokens=40, completion_tokens=3)

    turn = await make_model(timeout=1.0, max_retries=1).complete(USER, TOOLS)

    assert turn.text == "in time"
    assert turn.usage.prompt_tokens > 40  # the abandoned attempt's prompt, which the server still processed
    assert turn.usage.completion_tokens == 3
    assert turn.usage.estimated is True


async def test_a_failed_call_carries_the_cost_of_its_attempts(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_text("too late", delay=2.0).reply_text("too late", delay=2.0)
    with pytest.raises(ModelError) as caught:
        await make_model(timeout=0.2, max_retries=1).complete(USER, TOOLS)
    single = (await _prompt_estimate(USER, TOOLS))
    assert caught.value.usage.prompt_tokens == 2 * single


async def _prompt_estimate(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    with OpenAIStub() as other:
        other.reply_text("x", usage=False)
        model = OpenAIChatModel("m", base_url=other.base_url, api_key="k")
        try:
            turn = await model.complete(messages, tools)
        finally:
            await model.aclose()
    return turn.usage.prompt_tokens


# -- bad input from the server: one clear line, nothing executed ---------------------------------


@pytest.mark.parametrize(("body", "content_type", "expected"), [
    ("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>",
     "text/html", "HTML page: 502 Bad Gateway"),
    ("", "application/json", "the body is empty"),
    ("data: {\"choices\": []}\n\ndata: [DONE]\n\n", "text/event-stream", "stream"),
    ("{\"choices\": [{\"message\": {\"content\": NaN}}]}", "application/json", "not JSON"),
])
async def test_unusable_bodies_are_one_line_bad_responses(stub: OpenAIStub, make_model: MakeModel, body: str,
                                                          content_type: str, expected: str) -> None:
    stub.reply_raw(200, body, content_type=content_type)
    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, TOOLS)
    assert caught.value.kind == "bad_response" and caught.value.status == 200
    assert expected in caught.value.message and "\n" not in caught.value.message
    assert len(stub.requests) == 1  # not retried: the operator decides


async def test_an_unasked_stream_is_named(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_stream("hello")
    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, TOOLS)
    assert "stream (text/event-stream)" in caught.value.message


async def test_a_tool_call_id_repeated_in_one_turn_is_refused(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W1"}', id="call_x"),
                           StubToolCall("get_order_details", '{"order_id": "#W2"}', id="call_x")])
    with pytest.raises(ModelError) as caught:
        await make_model().complete(USER, TOOLS)
    assert caught.value.kind == "bad_response"
    assert "tool call id 'call_x' repeats" in caught.value.message and "nothing was executed" in caught.value.message


async def test_a_tool_call_id_repeating_an_earlier_one_is_refused(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_tool_calls([StubToolCall("get_order_details", '{"order_id": "#W1"}', id="call_1")])
    history = [*USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_order_details", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: Order not found"}]
    with pytest.raises(ModelError) as caught:
        await make_model().complete(history, TOOLS)
    assert "repeats an earlier call's id" in caught.value.message


async def test_generated_ids_never_collide_with_the_history(stub: OpenAIStub, make_model: MakeModel) -> None:
    stub.reply_tool_calls([("get_order_details", "{}")])
    history = [*USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_order_details", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"}]
    turn = await make_model().complete(history, TOOLS)
    assert [call.id for call in turn.tool_calls] == ["call_2"]
