"""Scenario files: a scripted customer and a scripted agent, as data a presenter can write.

A scenario is JSON (see domains/retail/scenarios/*.json). The agent script is a list of steps: `say`
(a message to the customer) or `calls` (tool calls), optionally with `expect_tool_results_contain` so
the run stops with a clear message if the world did not answer the way the author expected.

The user script is a list of lines (a string, or `{"text", "expect_agent_contains"?}`) and, in
dual-control domains (telecom), phone actions: `{"call": {"name", "arguments"}, "expect_result_contains"?,
"expect_agent_contains"?}`. Actions run on the customer's phone, in order, before the next line is said
(domains/telecom/scenarios/roaming-abroad.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.users import ScriptedAction, ScriptedTurn, ScriptedUser


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CallSpec(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None


class AgentStepSpec(_Strict):
    say: str | None = None
    calls: list[CallSpec] = Field(default_factory=list)
    expect_tool_results_contain: list[str] = Field(default_factory=list)
    note: str = ""


class UserTurnSpec(_Strict):
    text: str
    expect_agent_contains: str | None = None


class PhoneCallSpec(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class UserActionSpec(_Strict):
    """A phone action the customer takes (dual control), before saying their next line."""

    call: PhoneCallSpec
    expect_result_contains: list[str] = Field(default_factory=list)
    expect_agent_contains: str | None = None
    note: str = ""


class Expectations(_Strict):
    verdicts: list[str] | None = None  # the gate verdicts, in order
    end_reason: str | None = None


class Scenario(_Strict):
    name: str
    title: str
    domain: str
    description: str = ""
    user: list[UserTurnSpec | UserActionSpec | str]
    agent: list[AgentStepSpec]
    expect: Expectations = Field(default_factory=Expectations)
    max_steps: int = 60

    def build_user(self) -> ScriptedUser:
        turns: list[ScriptedTurn | ScriptedAction] = []
        for t in self.user:
            if isinstance(t, str):
                turns.append(ScriptedTurn(t))
            elif isinstance(t, UserTurnSpec):
                turns.append(ScriptedTurn(t.text, t.expect_agent_contains))
            else:
                turns.append(ScriptedAction(t.call.name, dict(t.call.arguments), tuple(t.expect_result_contains),
                                            t.expect_agent_contains))
        return ScriptedUser(turns)

    def build_model(self) -> ScriptedChatModel:
        return ScriptedChatModel([
            ScriptedStep(say=s.say,
                         calls=tuple(ScriptedCall(c.name, c.arguments, c.raw_arguments) for c in s.calls),
                         expect_tool_results_contain=tuple(s.expect_tool_results_contain), note=s.note)
            for s in self.agent
        ])


class ScenarioError(ValueError):
    pass


def load_scenario(path: Path) -> Scenario:
    try:
        return Scenario.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"{path}: {where}: {first['msg']}") from exc


def list_scenarios(directory: Path | None) -> dict[str, Path]:
    if directory is None or not directory.is_dir():
        return {}
    return {p.stem: p for p in sorted(directory.glob("*.json"))}
