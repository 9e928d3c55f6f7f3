"""A deterministic model that plays a scenario's agent steps, and says so when reality diverges."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.llm.base import AssistantTurn, Message, ModelError, Usage, estimate_tokens
from core.tools import ToolCall


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None  # sent verbatim when set (to script malformed JSON)


@dataclass(frozen=True)
class ScriptedStep:
    say: str | None = None
    calls: tuple[ScriptedCall, ...] = ()
    # Substrings that must appear in the tool results the model has just been given, e.g. "REVISE".
    expect_tool_results_contain: tuple[str, ...] = ()
    note: str = ""


def _last_tool_results(messages: Sequence[Message]) -> str:
    results: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(str(message.get("content", "")))
    return "\n".join(reversed(results))


class ScriptedChatModel:
    def __init__(self, steps: Sequence[ScriptedStep], name: str = "scripted-demo") -> None:
        self.steps = list(steps)
        self.name = name
        self.position = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        index = self.position
        if index >= len(self.steps):
            raise ModelError(f"the scripted model has no step {index + 1}: the script ended but the session "
                             "asked for another agent turn", kind="script")
        step = self.steps[index]
        self.position += 1
        observed = _last_tool_results(messages)
        for needle in step.expect_tool_results_contain:
            if needle not in observed:
                raise ModelError(
                    f"scenario diverged before agent step {index + 1}: expected the tool results to contain "
                    f"{needle!r}, but they were: {observed[:300]!r}", kind="script")
        calls = tuple(
            ToolCall.from_json_text(f"call_{index + 1}_{n + 1}", c.name,
                                    c.raw_arguments if c.raw_arguments is not None
                                    else json.dumps(dict(c.arguments), sort_keys=True))
            for n, c in enumerate(step.calls)
        )
        prompt_text = json.dumps(list(messages), sort_keys=True, default=str) + json.dumps(list(tools))
        completion_text = (step.say or "") + "".join(c.arguments_json() + c.name for c in calls)
        usage = Usage(estimate_tokens(prompt_text), estimate_tokens(completion_text), estimated=True)
        return AssistantTurn(text=step.say, tool_calls=calls, usage=usage, model=self.name,
                             finish_reason="tool_calls" if calls else "stop")
