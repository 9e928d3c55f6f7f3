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
(domains/telecom/scenarios/roaming-abroad.json).

The lines are written for the expected path. After an operator override the agent truthfully says something
else ("Done: I went ahead to cancel order #W4821002"), and the line written for the refusal would make no
sense. So a line (or a phone action) may carry `variants`: `{"when_agent_says": phrase or [phrases], "text"}`,
read in order before the line itself; the first whose phrase the agent's last message contains (case ignored)
is said instead. The choice rests only on what the customer can see, the agent's message, so it is
deterministic and explained by the file itself. The agent's own words make good keys: "went ahead to" (a
write ran), "a supervisor stopped it" (a veto), "Nothing was changed" (any refusal). A variant of a line takes
that line's place and the script goes on; a variant of a phone action must end the conversation (the rest of
the script was written for the action's outcome). When no variant fits and the line's
`expect_agent_contains` does not hold, the customer the console and `ledgeragent run` play (`build_user()`)
ends the conversation politely with CUSTOMER_LEAVES, a stop: a clean end, never an error, and never a line
written for another outcome.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from core import strict_json
from core.llm.offline_agent import CustomerReader, OfflineAgent
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.users import (
    STOP,
    Phone,
    ScriptedAction,
    ScriptedTurn,
    ScriptedUser,
    UserScriptDiverged,
    Utterance,
    Variant,
    stop_reason,
)

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


class VariantSpec(_Strict):
    """Another way to say a customer line: `text`, said when the agent's last message contains one of
    `when_agent_says` (a phrase or a list of phrases, any of them, case ignored)."""

    when_agent_says: str | list[str]
    text: str
    note: str = ""  # for the author: why this variant, what happened before it

    @field_validator("when_agent_says")
    @classmethod
    def _phrases(cls, value: str | list[str]) -> str | list[str]:
        phrases = [value] if isinstance(value, str) else value
        if not phrases or not all(p.strip() for p in phrases):
            raise ValueError("needs a phrase the agent's message must contain (a non-empty string, or a list of them)")
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a variant needs something to say (empty text)")
        return value

    def build(self) -> Variant:
        phrases = [self.when_agent_says] if isinstance(self.when_agent_says, str) else self.when_agent_says
        return Variant(tuple(phrases), self.text)


class UserTurnSpec(_Strict):
    text: str
    expect_agent_contains: str | None = None
    variants: list[VariantSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _variants_differ(self) -> UserTurnSpec:
        for number, variant in enumerate(self.variants, start=1):
            if variant.text == self.text:
                raise ValueError(f"variant {number} says the line's own text; a variant must say something else")
        return self


class PhoneCallSpec(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class UserActionSpec(_Strict):
    """A phone action the customer takes (dual control), before saying their next line."""

    call: PhoneCallSpec
    expect_result_contains: list[str] = Field(default_factory=list)
    expect_agent_contains: str | None = None
    variants: list[VariantSpec] = Field(default_factory=list)  # said instead of the action: they must end it
    note: str = ""

    @model_validator(mode="after")
    def _variants_end(self) -> UserActionSpec:
        for number, variant in enumerate(self.variants, start=1):
            if stop_reason(variant.text) is None:
                raise ValueError(f"variant {number} of a phone action must end the conversation ({STOP}): the "
                                 "rest of the script was written for the action")
        return self


def _user_entry_kind(value: Any) -> str:
    """Which kind of customer turn a `user` entry is, so an error names that kind's fields only."""
    if isinstance(value, dict):
        return "action" if "call" in value else "line"
    return "text"


UserEntry = Annotated[Annotated[str, Tag("text")] | Annotated[UserTurnSpec, Tag("line")]
                      | Annotated[UserActionSpec, Tag("action")], Discriminator(_user_entry_kind)]


class Expectations(_Strict):
    verdicts: list[str] | None = None  # the gate verdicts, in order
    end_reason: str | None = None


class BaselineMistake(_Strict):
    """The mistake the function-calling baseline makes in this scenario, as a compare run names it: the kind
    (core.error_profile.FailureKind, or another short id), what it does in the customer's terms, and the write
    tool that carries it. The scripted agent proposes it on both sides (the same model); only the gate differs."""

    kind: str
    says: str
    tool: str


class Scenario(_Strict):
    name: str
    title: str
    domain: str
    description: str = ""
    user: list[UserEntry]
    agent: list[AgentStepSpec]
    expect: Expectations = Field(default_factory=Expectations)
    max_steps: int = 60
    baseline_mistake: BaselineMistake | None = None
    # The evidence mode the script was written for ("ask": its story is the gate asking for a read); None: the
    # caller's. An operator's explicit `--evidence` still wins; the expected verdicts then need not hold.
    evidence: Literal["ask", "assist"] | None = None

    def build_user(self) -> ScenarioCustomer:
        turns: list[ScriptedTurn | ScriptedAction] = []
        for t in self.user:
            if isinstance(t, str):
                turns.append(ScriptedTurn(t))
            elif isinstance(t, UserTurnSpec):
                turns.append(ScriptedTurn(t.text, t.expect_agent_contains, tuple(v.build() for v in t.variants)))
            else:
                turns.append(ScriptedAction(t.call.name, dict(t.call.arguments), tuple(t.expect_result_contains),
                                            t.expect_agent_contains, tuple(v.build() for v in t.variants)))
        return ScenarioCustomer(turns)

    def customer_lines(self) -> list[str]:
        """What the scripted customer says on the expected path, in order (phone actions and variants left out)."""
        return [t if isinstance(t, str) else t.text for t in self.user if not isinstance(t, UserActionSpec)]

    def customer_alternatives(self) -> list[tuple[str, ...]]:
        """Per customer line, every text it may be said with: the line as written, then its variants."""
        return [(t,) if isinstance(t, str) else (t.text, *(v.text for v in t.variants))
                for t in self.user if not isinstance(t, UserActionSpec)]

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
        return OfflineAgent(self.steps(), script=self.customer_alternatives(), reader=reader)

    def build_script(self) -> ScriptedChatModel:
        """The strict player of the agent steps: stops with "scenario diverged" when an expectation fails."""
        return ScriptedChatModel(self.steps())


class ScenarioError(ValueError):
    pass


def load_scenario(path: Path) -> Scenario:
    """The scenario in `path`, or a one-line ScenarioError naming the file, the line of the file and the place:
    `bad.json:14: user.2.variants.0.text (user line 3, variant 1): Field required`."""
    text = ""
    try:
        text = path.read_text(encoding="utf-8")
        return Scenario.model_validate(strict_json.check_value(json.loads(text)))
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    except strict_json.StrictJSONError as exc:  # NaN, Infinity, 1e999, a lone surrogate, too deep
        raise ScenarioError(f"{path}: not strict JSON ({exc.message})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        place = _file_path(first["loc"])
        line = _line_of(text, place)
        at = f":{line}" if line is not None else ""
        raise ScenarioError(f"{path}{at}: {_where(place)}: {_message(first['msg'])}") from exc


def _file_path(loc: Sequence[int | str]) -> list[int | str]:
    """An error's location as keys and indexes of the file: without the kind of a `user` entry (the tag
    `_user_entry_kind` gives, which the file does not spell)."""
    path = list(loc)
    if len(path) > 2 and path[0] == "user" and path[2] in ("text", "line", "action"):
        del path[2]
    return path


def _line_of(text: str, path: Sequence[int | str]) -> int | None:
    """The line of `text` (a JSON document) where the deepest existing part of `path` starts: the field itself,
    or, for a missing field, the object that lacks it. None when the text cannot be walked."""
    decoder = json.JSONDecoder()
    found = _skip_space(text, 0)
    try:
        for key in path:
            start = _child(text, found, key, decoder)
            if start is None:
                break
            found = start
    except (ValueError, IndexError):
        return None
    return text.count("\n", 0, found) + 1


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _child(text: str, at: int, key: int | str, decoder: json.JSONDecoder) -> int | None:
    """Where the member `key` of the object (or the element `key` of the array) starting at `at` starts."""
    opening = text[at]
    if (opening, isinstance(key, int)) not in (("{", False), ("[", True)):
        return None
    closing, index = ("}" if opening == "{" else "]"), 0
    at = _skip_space(text, at + 1)
    while text[at] != closing:
        if opening == "{":
            name, at = decoder.raw_decode(text, at)
            at = _skip_space(text, _skip_space(text, at) + 1)  # past the ':'
            if name == key:
                return at
        elif index == key:
            return at
        _, at = decoder.raw_decode(text, at)
        at = _skip_space(text, at)
        if text[at] == ",":
            at = _skip_space(text, at + 1)
        index += 1
    return None


def _where(path: Sequence[int | str]) -> str:
    """A place in the file as a dotted path, plus, inside `user`, the customer line (and variant) in words:
    `user.2.variants.0.text (user line 3, variant 1)`."""
    where = ".".join(str(p) for p in path)
    if len(path) >= 2 and path[0] == "user" and isinstance(path[1], int):
        words = f"user line {path[1] + 1}"
        if len(path) >= 4 and path[2] == "variants" and isinstance(path[3], int):
            words += f", variant {path[3] + 1}"
        where += f" ({words})"
    return where


def _message(msg: str) -> str:
    """Pydantic's message on one line, without its "Value error, " prefix."""
    return " ".join(msg.removeprefix("Value error, ").split())


def list_scenarios(directory: Path | None) -> dict[str, Path]:
    if directory is None or not directory.is_dir():
        return {}
    return {p.stem: p for p in sorted(directory.glob("*.json"))}
