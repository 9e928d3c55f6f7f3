"""Recorded conversations for the as-recorded audit's tests, in each format the audit reads, made from real results.

A recording here is what an agent *without* our gate saw: each call is sent straight to a real backend over the
domain's seed data (no gate), and the result it returns is written down as the recording's result, exactly as
tau2-bench writes a tool's return (`format_tool_result`, "Error: <message>" for a failure). The writers then put
the same exchanges into each file format:

- `openai_messages`: OpenAI chat messages (`tool_calls` with `function.arguments` as JSON text; `tool` messages
  with `tool_call_id`), as published benchmark trajectories are;
- `tau_bench_list`: a tau-bench / tau-Trait results list, each conversation's OpenAI messages under `traj`;
- `tau2_results`: a tau2-bench results file, every field named as tau2's own pydantic models name it
  (`tau2.data_model.simulation.Results` / `SimulationRun`, `tau2.data_model.message.AssistantMessage` /
  `UserMessage` / `ToolMessage` / `ToolCall`), so the file loads in tau2 and in our results viewer alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.tools import ToolBackend, ToolError, format_tool_result
from mock_backends.registry import open_backend


@dataclass(frozen=True)
class Exchange:
    """One call and what the recording says it returned. `say`: a message the agent (or `role`) sends instead."""

    name: str = ""
    arguments: Mapping[str, Any] | None = None
    content: str = ""
    error: bool = False
    say: str | None = None
    role: str = "assistant"


def call(name: str, **arguments: Any) -> Exchange:
    return Exchange(name, arguments)


def say(text: str, role: str = "assistant") -> Exchange:
    return Exchange(say=text, role=role)


async def record(backend: ToolBackend, script: Sequence[Exchange]) -> list[Exchange]:
    """The script with every call's real result from `backend` (run without any gate)."""
    recorded: list[Exchange] = []
    for step in script:
        if step.say is not None:
            recorded.append(step)
            continue
        try:
            value = await backend.call(step.name, dict(step.arguments or {}))
        except ToolError as exc:
            recorded.append(Exchange(step.name, step.arguments, f"Error: {exc.message}", True))
        else:
            recorded.append(Exchange(step.name, step.arguments, format_tool_result(value)))
    return recorded


async def record_on_seed(domain: str, path: Path, script: Sequence[Exchange]) -> list[Exchange]:
    """`record` on a database of its own at `path`, over the domain's seed data: the recording's world, apart from
    whatever database a test then audits with."""
    backend = await open_backend(domain, path)
    try:
        return await record(backend, script)
    finally:
        await backend.close()


def check_lines(script: Sequence[Exchange]) -> str:
    """The script's calls as `ledgeragent check` lines."""
    return "\n".join(json.dumps({"name": s.name, "arguments": dict(s.arguments or {})}) for s in script
                     if s.say is None) + "\n"


def openai_messages(exchanges: Sequence[Exchange], *, ids: Sequence[str] | None = None,
                    system: str = "You are a customer service agent.") -> list[dict[str, Any]]:
    """One assistant message per call (ids `call_<n>`, or `ids` in call order), each followed by its tool message."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    n = 0
    for step in exchanges:
        if step.say is not None:
            messages.append({"role": step.role, "content": step.say})
            continue
        call_id = ids[n] if ids is not None else f"call_{n}"
        n += 1
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": step.name, "arguments": json.dumps(dict(step.arguments or {}))}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": step.content})
    return messages


def tau_bench_list(conversations: Sequence[Sequence[Exchange]], *, reward: float = 1.0) -> list[dict[str, Any]]:
    """A tau-bench results list, as tau-bench and tau-Trait publish their runs (`run.py`'s results file): one item
    per conversation, `{task_id, reward, info, traj, trial}`, the conversation's OpenAI messages under `traj`."""
    return [{"task_id": n, "reward": reward, "info": {"source": "user"}, "traj": openai_messages(c), "trial": 0}
            for n, c in enumerate(conversations)]


def _tau2_message(role: str, turn: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"role": role, "content": None, "turn_idx": turn, "timestamp": "2025-06-10T12:00:00"}
    if role in ("assistant", "user"):
        base.update({"tool_calls": None, "is_audio": False, "cost": 0.0, "usage": None, "raw_data": None})
    base.update(fields)
    return base


def tau2_messages(exchanges: Sequence[Exchange]) -> list[dict[str, Any]]:
    """tau2 half-duplex messages: text or tool calls, each call's ToolMessage right after it."""
    messages: list[dict[str, Any]] = []
    for n, step in enumerate(exchanges):
        if step.say is not None:
            messages.append(_tau2_message(step.role, len(messages), content=step.say))
            continue
        call_id = f"tool_{n}"
        requestor = step.role
        messages.append(_tau2_message(step.role, len(messages), tool_calls=[
            {"id": call_id, "name": step.name, "arguments": dict(step.arguments or {}), "requestor": requestor}]))
        messages.append(_tau2_message("tool", len(messages), id=call_id, content=step.content, requestor=requestor,
                                      error=step.error))
    return messages


def tau2_results(domain: str, conversations: Sequence[Sequence[Exchange]], *, model: str = "gpt-4.1") -> dict[str, Any]:
    """A tau2 `Results` document, one `SimulationRun` per conversation (task ids "0", "1", ...)."""
    agent = {"implementation": "llm_agent", "llm": model, "llm_args": {"temperature": 0.0}}
    user = {"implementation": "user_simulator", "llm": "gpt-4.1", "llm_args": {"temperature": 0.0},
            "global_simulation_guidelines": None}
    return {
        "timestamp": "2025-06-10T12:00:00",
        "info": {"git_commit": "37199f3", "num_trials": 1, "max_steps": 200, "max_errors": 10, "user_info": user,
                 "agent_info": agent, "environment_info": {"domain_name": domain, "policy": "...", "tool_defs": None},
                 "seed": 300},
        "tasks": [],
        "simulations": [{
            "id": f"sim-{n}", "task_id": str(n), "timestamp": "2025-06-10T12:00:00",
            "start_time": "2025-06-10T12:00:00", "end_time": "2025-06-10T12:01:00", "duration": 60.0,
            "termination_reason": "user_stop", "agent_cost": 0.01, "user_cost": 0.01, "reward_info": None,
            "messages": tau2_messages(exchanges), "trial": 0, "seed": 300, "mode": "half_duplex"}
            for n, exchanges in enumerate(conversations)],
    }


# -- the retail story of the seed data: Mia Garcia swaps the T-shirt of her pending order #W4821002 -------------

MIA = [say("I'm Mia Garcia, zip 46281. Swap my blue T-shirt for the red one.", "user"),
       call("find_user_id_by_name_zip", first_name="Mia", last_name="Garcia", zip="46281"),
       call("get_user_details", user_id="mia_garcia_4821"),
       call("get_order_details", order_id="#W4821002")]
# Legal, but sent without reading the product: the gate asks for that read (needs a read); tau2's tool runs it.
SWAP = call("modify_pending_order_items", order_id="#W4821002", item_ids=["2000000021"], new_item_ids=["2000000022"],
            payment_method_id="credit_card_4821002")
ADDRESS = call("modify_pending_order_address", order_id="#W4821002", address1="1 Main St", address2="",
               city="Springfield", state="IN", country="USA", zip="46281")
# The customer confirms the address change the agent described (the upstream policy asks for an explicit yes).
ANOTHER_ADDRESS = [say("Done. Anything else?"), say("Ship it to 1 Main St instead.", "user"),
                   say("I'll change the address of order #W4821002 to 1 Main St, Springfield, IN 46281. Shall I?"),
                   say("Yes, please.", "user"), ADDRESS]
SWAP_THEN_ADDRESS = [*MIA, SWAP, *ANOTHER_ADDRESS]
