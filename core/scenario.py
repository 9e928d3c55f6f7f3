"""Scenario files: a scripted customer, the agent's plan and the expected verdicts, as data a presenter can write.

A scenario is JSON (see domains/retail/scenarios/*.json). The agent part is the plan of the offline agent
(`core.llm.offline_agent.OfflineAgent`): a list of steps, `say` (a message to the customer) or `calls` (tool
calls), optionally with `expect_tool_results_contain`: the condition under which the plan goes on. When it does
not hold (an operator vetoed, edited or force-allowed a call, or the world answered otherwise) the agent reacts
to what really came back instead of following the plan. `build_script()` gives the strict player of the same
steps (`ScriptedChatModel`), which stops with "scenario diverged" instead: for tests of the script itself.

The user script is a list of lines (a string, or `{"text", "expect_agent_contains"?}`) and, in
dual-control domains (telecom), phone actions: `{"call": {"name", "arguments"}, "expect_result_contains"?,
"expect_agent_contains"?}`. Actions run on the customer's phone, in order, before the next line is said
(domains/telecom/scenarios/roaming-abroad.json). The customer the console and `ledgeragent run` play
(`build_user()`) ends the conversation politely, with a stop, when the agent did not say what the next line
expects (after an operator override the conversation goes elsewhere): a clean end, never an error. Its last
words say so, so the transcript shows why the customer stopped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.llm.offline_agent import CustomerReader, OfflineAgent
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.users import STOP, Phone, ScriptedAction, ScriptedTurn, ScriptedUser, UserScriptDiverged, Utterance

CUSTOMER_LEAVES = f"That's not what I was expecting, so I'll leave it there for now. {STOP}"


class ScenarioCustomer(ScriptedUser):
    """A scenario's customer: says its lines in order; when the agent did not say what the next line expects
    (or the phone did not show it), it ends the conversation with CUSTOMER_LEAVES instead of failing the run."""

    name = "scripted"

    async def _next(self, conversation: Sequence[Utterance], phone: Phone | None) -> str:
        try:
            return await super()._next(conversation, phone)
        except UserScriptDiverged:
            self.position = len(self.turns)
            return CUSTOMER_LEAVES


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

    def build_user(self) -> ScenarioCustomer:
        turns: list[ScriptedTurn | ScriptedAction] = []
        for t in self.user:
            if isinstance(t, str):
                turns.append(ScriptedTurn(t))
            elif isinstance(t, UserTurnSpec):
                turns.append(ScriptedTurn(t.text, t.expect_agent_contains))
            else:
                turns.append(ScriptedAction(t.call.name, dict(t.call.arguments), tuple(t.expect_result_contains),
                                            t.expect_agent_contains))
        return ScenarioCustomer(turns)

    def customer_lines(self) -> list[str]:
        """What the scripted customer says, in order (phone actions left out)."""
        return [t if isinstance(t, str) else t.text for t in self.user if not isinstance(t, UserActionSpec)]

    def steps(self) -> list[ScriptedStep]:
        return [
            ScriptedStep(say=s.say,
                         calls=tuple(ScriptedCall(c.name, c.arguments, c.raw_arguments) for c in s.calls),
                         expect_tool_results_contain=tuple(s.expect_tool_results_contain), note=s.note)
            for s in self.agent
        ]

    def build_model(self, reader: CustomerReader | None = None) -> OfflineAgent:
        """The offline agent with this scenario's plan; `reader` (the domain's, see
        `domains.registry.load_offline_reader`) lets it understand typed customer text and name actions."""
        return OfflineAgent(self.steps(), script=self.customer_lines(), reader=reader)

    def build_script(self) -> ScriptedChatModel:
        """The strict player of the agent steps: stops with "scenario diverged" when an expectation fails."""
        return ScriptedChatModel(self.steps())


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
