"""The agent against real llama.cpp servers: protocol and structure, never the model's quality.

The model is SmolLM2-135M-Instruct: it cannot be relied on to choose a sensible tool, so the retail session
forces each tool call it needs (a named `tool_choice`, as a caller may for any OpenAI-compatible server) and
checks what the protocol must guarantee: every request accepted, tool calls parsed, their results accepted
on the next turn, read results absorbed into the ledger, a gate verdict on the write, and token counts equal
to the server's own `usage`.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.events import AssistantTurnEvent, GateDecided, LedgerUpdated, ModelFailed, ModelRetry, ToolResultEvent
from core.llm.base import AssistantTurn, Message, ModelError, RetryListener
from core.llm.errors import request_is_invalid
from core.llm.openai_model import OpenAIChatModel, ToolChoice
from core.session import Session
from core.trace import load_trace
from core.users import ScriptedUser
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend
from tests.support.live_servers import LiveServer

# The retail domain with its policy shortened and four of its tools offered, so the prompt fits a 135M model's
# context and a CPU's patience. The gate, the path map and the backend are retail's own.
SHORT_POLICY = ("You are a retail agent. Authenticate the customer by name and zip code first. Only a pending "
                "order can be cancelled, only by its owner, and only after the customer confirms; the reason must be "
                "'no longer needed' or 'ordered by mistake'.")
TOOLS = ("list_all_product_types", "find_user_id_by_name_zip", "get_order_details", "cancel_pending_order")
RETAIL = replace(DOMAIN, policy=SHORT_POLICY, tools=tuple(t for t in DOMAIN.tools if t.name in TOOLS))
MAX_TOKENS = 64
CALL_TIMEOUT = 300.0  # seconds per request: generous, a loaded CPU is slow
SESSION_BUDGET = 1500.0  # seconds for the whole retail session; a machine slower than that skips, with the reason


def named(tool: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool}}


class ForcedPlan:
    """A `ChatModel` sending its n-th call with the n-th `tool_choice` of a plan (the last one repeats).

    The requests and the answers are the real server's; only the choice of which tool to call is taken from
    the small model, which would otherwise rarely call one.
    """

    def __init__(self, model: OpenAIChatModel, plan: Sequence[ToolChoice]) -> None:
        self.model = model
        self.name = model.name
        self.plan = list(plan)
        self.calls = 0

    @property
    def on_retry(self) -> RetryListener | None:
        return self.model.on_retry

    @on_retry.setter
    def on_retry(self, listener: RetryListener | None) -> None:
        self.model.on_retry = listener

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        choice = self.plan[min(self.calls, len(self.plan) - 1)]
        self.calls += 1
        return await self.model.complete(messages, tools, tool_choice=choice)


def live_model(server: LiveServer, **options: Any) -> OpenAIChatModel:
    settings: dict[str, Any] = {"timeout": CALL_TIMEOUT, "max_retries": 0, "max_tokens": MAX_TOKENS}
    settings.update(options)
    return OpenAIChatModel("smollm2-135m", base_url=server.base_url, api_key="not-needed", **settings)


async def complete(model: OpenAIChatModel, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]],
                   **options: Any) -> AssistantTurn:
    """One call; a timeout means this machine is too slow for the server right now: skip, with the reason."""
    try:
        return await model.complete(messages, tools, **options)
    except ModelError as error:
        if error.kind == "timeout":
            pytest.skip(f"the server did not answer within {model.timeout:g} s here: too slow, not a protocol "
                        "failure")
        raise


def chat_requests(server: LiveServer) -> list[Any]:
    assert server.proxy is not None
    return [x for x in server.proxy.exchanges if x.path.endswith("/chat/completions")]


# -- the done-when: a retail session against llama-cpp-python --------------------------------------------------------


async def test_retail_session_against_llama_cpp_python(llama_cpp_python: LiveServer, tmp_path: Path) -> None:
    server = llama_cpp_python
    assert server.proxy is not None
    server.proxy.exchanges.clear()
    plan: list[ToolChoice] = [named("list_all_product_types"), named("find_user_id_by_name_zip"),
                              named("get_order_details"), named("cancel_pending_order"), "none",
                              named("get_order_details"), "none"]
    model = ForcedPlan(live_model(server), plan)
    user = ScriptedUser(["Hi, I am Mia Garcia, zip code 46281. Please cancel my pending order #W4821002, I no longer "
                         "need it.", "Is order #W4821002 cancelled now?", "Thanks, bye. ###STOP###"])
    backend = await RetailBackend.open(tmp_path / "db.sqlite")
    try:
        session = Session(domain=RETAIL, backend=backend, model=model, user=user, max_steps=30,
                          trace_path=tmp_path / "trace.jsonl")
        try:
            async with asyncio.timeout(SESSION_BUDGET):
                result = await session.run()
        except TimeoutError:
            pytest.skip(f"the retail session did not finish within {SESSION_BUDGET:g} s on this machine "
                        f"({model.calls} model calls made): too slow here, not a protocol failure")
    finally:
        await backend.close()
        await model.model.aclose()
    events = load_trace(tmp_path / "trace.jsonl")
    turns = [e for e in events if isinstance(e, AssistantTurnEvent)]
    failures = [e for e in events if isinstance(e, ModelFailed | ModelRetry)]
    exchanges = chat_requests(server)

    if failures and all(f.kind == "timeout" for f in failures):
        pytest.skip(f"a request timed out after {CALL_TIMEOUT:g} s: this machine is too slow for the session now")
    assert failures == [], [f.message for f in failures]
    assert result.reason == "user_stop", result.detail
    assert len(turns) >= 6 and len(exchanges) == len(turns)
    assert [x.status for x in exchanges] == [200] * len(exchanges)  # every request accepted
    # tool calls parsed from the server's answers, in the forced order, and answered on the next request
    called = [call.name for turn in turns for call in turn.tool_calls]
    assert called[:4] == list(TOOLS[:4])
    for earlier, later in zip(exchanges, exchanges[1:], strict=False):
        ids = [c["id"] for c in earlier.response["choices"][0]["message"].get("tool_calls") or []]
        answered = [m["tool_call_id"] for m in later.request["messages"] if m["role"] == "tool"]
        assert set(ids) <= set(answered)
    assert all(m["content"] is not None for x in exchanges for m in x.request["messages"])
    # reads absorbed, and the write went through the gate
    absorbed = [e for e in events if isinstance(e, LedgerUpdated)]
    assert any("catalog.product_types" in e.added for e in absorbed)
    # The write reached the gate, or (a 135M model's arguments can fail the tool's schema) was answered as
    # invalid before it, executing nothing: either way it never ran unjudged.
    verdicts = [e for e in events if isinstance(e, GateDecided)]
    writes = [e for e in events if isinstance(e, ToolResultEvent) and e.call.name == "cancel_pending_order"]
    assert writes, "the forced cancel_pending_order call got no answer"
    if verdicts:
        assert [e.call.name for e in verdicts][:1] == ["cancel_pending_order"]
        assert verdicts[0].verdict in ("ALLOW", "REVISE", "BLOCK")
    else:
        assert all(e.outcome == "invalid" and not e.executed for e in writes), [(e.outcome, e.content) for e in writes]
    # tokens: what the trace says is what the server said
    served = [x.response["usage"] for x in exchanges]
    assert [(t.prompt_tokens, t.completion_tokens) for t in turns] == \
        [(u["prompt_tokens"], u["completion_tokens"]) for u in served]
    assert not any(t.tokens_estimated for t in turns)
    assert result.usage.prompt_tokens == sum(u["prompt_tokens"] for u in served)


# -- protocol checks on both servers ----------------------------------------------------------------------------------

SERVERS = ["llama_cpp_python", "native_server"]
QUESTION = [{"role": "user", "content": "What is the status of my order #W4821002?"}]
ORDER_TOOL = [t.openai_schema() for t in RETAIL.tools if t.name == "get_order_details"]


@pytest.mark.parametrize("which", SERVERS)
async def test_tools_with_the_default_tool_choice_are_accepted_and_usage_matches(
        which: str, request: pytest.FixtureRequest) -> None:
    server: LiveServer = request.getfixturevalue(which)
    model = live_model(server)
    try:
        turn = await complete(model, QUESTION, ORDER_TOOL)
    finally:
        await model.aclose()
    (exchange,) = chat_requests(server)[-1:]
    assert exchange.status == 200
    assert exchange.request["tool_choice"] == "auto" and exchange.request["max_tokens"] == MAX_TOKENS
    usage = exchange.response["usage"]
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens) == (usage["prompt_tokens"],
                                                                        usage["completion_tokens"])
    assert turn.usage.estimated is False
    assert turn.text is not None or turn.tool_calls  # a message or a call, parsed either way


@pytest.mark.parametrize("which", SERVERS)
async def test_malformed_arguments_do_not_poison_the_history(which: str, request: pytest.FixtureRequest) -> None:
    """The history after a turn whose arguments did not parse, as the agent keeps it (null content, the raw
    text): sent through the adapter it is accepted, and the conversation goes on."""
    server: LiveServer = request.getfixturevalue(which)
    history: list[dict[str, Any]] = [*QUESTION, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_order_details", "arguments": '{"order_id": "#W4821002"'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: arguments are not valid JSON (Expecting ',' "
                                                              "delimiter at position 25). The call was not executed."}]
    model = live_model(server)
    try:
        turn = await complete(model, history, ORDER_TOOL)
        again = await complete(model, [*history, {"role": "assistant", "content": turn.text or ""},
                                       {"role": "user", "content": "Thanks."}], ORDER_TOOL, tool_choice="none")
    finally:
        await model.aclose()
    first, second = chat_requests(server)[-2:]
    assert (first.status, second.status) == (200, 200)
    sent = first.request["messages"][1]
    assert sent["content"] == "" and sent["tool_calls"][0]["function"]["arguments"] == "{}"
    assert again.usage.prompt_tokens > 0


def raw_status(server: LiveServer, body: dict[str, Any]) -> int:
    """POST a body exactly as given (no adapter in between) and return the HTTP status."""
    data = json.dumps(body).encode()
    req = urllib.request.Request(server.direct_url + "/chat/completions", data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=CALL_TIMEOUT) as response:  # noqa: S310 (127.0.0.1 only)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_llama_cpp_python_rejects_null_content_the_adapter_never_sends(llama_cpp_python: LiveServer) -> None:
    """Why the adapter sends `"content": ""`, seen on the real server: the same history with `"content": null` is
    refused."""
    history = [*QUESTION, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_order_details",
                                                          "arguments": '{"order_id": "#W4821002"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: Order not found"}]
    status = raw_status(llama_cpp_python, {"model": "m", "messages": history, "tools": ORDER_TOOL,
                                           "tool_choice": "auto", "max_tokens": 8})
    assert status >= 400


@pytest.mark.parametrize("which", SERVERS)
async def test_a_timeout_is_handled_and_counted(which: str, request: pytest.FixtureRequest) -> None:
    server: LiveServer = request.getfixturevalue(which)
    long_question = [{"role": "user", "content": "Describe every product type in detail. " * 40}]
    impatient = live_model(server, timeout=0.05, max_tokens=256)
    try:
        with pytest.raises(ModelError) as caught:
            await impatient.complete(long_question, ORDER_TOOL, tool_choice="none")
    finally:
        await impatient.aclose()
    assert caught.value.kind == "timeout" and "\n" not in caught.value.message
    assert caught.value.usage.prompt_tokens > 0 and caught.value.usage.estimated  # the server still ran it
    patient = live_model(server)
    try:  # the server is still usable afterwards (llama-cpp-python finishes the abandoned request first)
        turn = await complete(patient, QUESTION, ORDER_TOOL, tool_choice="none")
    finally:
        await patient.aclose()
    assert turn.usage.prompt_tokens > 0 and not turn.usage.estimated


def test_native_server_rejects_the_verbatim_malformed_history(native_server: LiveServer) -> None:
    """Why the adapter echoes unparseable arguments as `{}`, seen on the real server: echoing them verbatim makes
    llama-server refuse the whole conversation (HTTP 500, "Failed to parse tool call arguments as JSON"), and the
    adapter reads that answer as an invalid request, not as something to retry."""
    history = [*QUESTION, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_order_details",
                                                          "arguments": '{"order_id": "#W4821002"'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: arguments are not valid JSON"}]
    data = json.dumps({"model": "m", "messages": history, "tools": ORDER_TOOL, "tool_choice": "auto",
                       "max_tokens": 8}).encode()
    req = urllib.request.Request(native_server.direct_url + "/chat/completions", data,
                                 {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(req, timeout=CALL_TIMEOUT)  # noqa: S310 (127.0.0.1 only)
    body = json.loads(caught.value.read())
    assert caught.value.code >= 400
    assert request_is_invalid(body["error"]["message"], body["error"].get("type"))
