"""Scenario files: a scripted customer and a scripted agent, as data a presenter can write.

A scenario is JSON (see domains/retail/scenarios/*.json). The agent script is a list of steps: `say`
(a message to the customer) or `calls` (tool calls), optionally with `expect_tool_results_contain` so
the run stops with a clear message if the world did not answer the way the author expected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.users import ScriptedTurn, ScriptedUser


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


class Expectations(_Strict):
    verdicts: list[str] | None = None  # the gate verdicts, in order
    end_reason: str | None = None


class Scenario(_Strict):
    name: str
    title: str
    domain: str
    description: str = ""
    user: list[UserTurnSpec | str]
    agent: list[AgentStepSpec]
    expect: Expectations = Field(default_factory=Expectations)
    max_steps: int = 60

    def build_user(self) -> ScriptedUser:
        return ScriptedUser([
            ScriptedTurn(t) if isinstance(t, str) else ScriptedTurn(t.text, t.expect_agent_contains)
            for t in self.user
        ])

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
