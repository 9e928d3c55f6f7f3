"""A real agent framework behind the gate: an OpenAI Agents SDK agent using `ledgeragent mcp` as its MCP tools.

The agent's model is the OpenAI-compatible stub server on 127.0.0.1 (tests/support/openai_stub.py) answering
with scripted tool calls, through the framework's own chat-completions model and its own streamable-HTTP MCP
client. The server runs with a desk (`--listen`, approve writes): the session shows up there, each write waits
in the inbox, an operator decides it over the desk's socket, and the agent's next model request carries what
the MCP call returned: the gate's feedback for the REVISE the operator let stand, the refund for the ALLOW.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

from console.runtime.desk.remote import RemoteDesk
from tests.support.desk_remote import socket_folder, until
from tests.support.mcp_server import HttpServer, scenario_lines, session_folders, trace_events
from tests.support.openai_stub import OpenAIStub, StubToolCall

LINES = scenario_lines("retail", "refund-to-original-payment")
REFUSED, ALLOWED = LINES[4], LINES[5]  # refund to another card (REVISE), then to the original gift card


def tool_messages(request: dict[str, Any]) -> list[str]:
    """The text of each tool message the framework sent its model (a string, or a list of text parts)."""
    texts = []
    for message in request["messages"]:
        if message.get("role") == "tool":
            content = message.get("content")
            parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
            texts.append("".join(str(part.get("text", "")) for part in parts))
    return texts


async def decide_next(remote: RemoteDesk, tool: str, seen: set[str]) -> str:
    """Wait for the next inbox item, check it is `tool`'s, approve it (for a REVISE: let the refusal stand)."""
    await until(remote, lambda: any(i.id not in seen for i in remote.snapshot().items), f"{tool} in the inbox")
    item = next(i for i in remote.snapshot().items if i.id not in seen)
    seen.add(item.id)
    assert item.tool == tool
    await remote.claim(item.id, "dana")
    await remote.decide(item.id, "dana", "approve")
    return str(item.verdict)


async def test_an_agents_sdk_agent_is_supervised_on_the_desk(tmp_path: Path) -> None:
    set_tracing_disabled(True)  # the framework would otherwise export traces to the network
    with OpenAIStub() as stub, socket_folder() as sockets:
        for number, line in enumerate([*LINES[:3], REFUSED, ALLOWED], 1):
            stub.reply_tool_calls([StubToolCall(line["name"], json.dumps(line["arguments"]), id=f"call_{number}")])
        stub.reply_text("Your refund is on its way to your gift card.")
        path = sockets / "desk.sock"
        with HttpServer("retail", tmp_path, "--listen", str(path), "--mode", "approve writes") as server:
            remote = await RemoteDesk.connect(path, "dana")
            model = OpenAIChatCompletionsModel(model="stub-model",
                                               openai_client=AsyncOpenAI(base_url=stub.base_url, api_key="test"))
            try:
                async with MCPServerStreamableHttp(
                        name="retail", params={"url": server.url, "headers": server.headers, "timeout": 60,
                                               "sse_read_timeout": 120},
                        client_session_timeout_seconds=120) as tools:
                    agent = Agent(name="support", instructions="Help the customer.", model=model,
                                  mcp_servers=[tools])
                    run = asyncio.create_task(Runner.run(agent, "I want a refund for my order", max_turns=10))
                    seen: set[str] = set()
                    verdicts = [await decide_next(remote, REFUSED["name"], seen),
                                await decide_next(remote, ALLOWED["name"], seen)]
                    result = await asyncio.wait_for(run, 120)
                rows = remote.snapshot().rows
            finally:
                await remote.close()
    assert verdicts == ["REVISE", "ALLOW"]
    assert result.final_output == "Your refund is on its way to your gift card."
    [row] = rows
    assert row.label.startswith("mcp ") and (row.revise, row.allow) == (1, 1)
    after_refusal, after_refund = tool_messages(stub.requests[4]), tool_messages(stub.requests[5])
    assert after_refusal[-1].startswith("REVISE: ") and "NOT executed" in after_refusal[-1]
    [folder] = session_folders(tmp_path)
    events = trace_events(folder)
    assert [(e["who"], e["decision"]) for e in events if e["type"] == "supervisor_decision"] == [
        ("dana", "accept_verdict"), ("dana", "approve")]
    contents = [e["content"] for e in events if e["type"] == "tool_result"]
    assert contents[3:] == [after_refusal[-1], after_refund[-1]]  # what the agent got is what the trace says
    assert [e["outcome"] for e in events if e["type"] == "tool_result"][3:] == ["rejected", "ok"]
