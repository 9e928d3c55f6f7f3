"""Offline agents and customers: deterministic stand-ins for LLMs, so `eval` runs without a model.

`AdaptiveScriptedAgent` is a `ChatModel` that plays a plan built from a task's gold actions (plus the reads a
careful agent makes, supplied by the domain's planner) and *reacts* to what it is told, one tool call per
turn: a REVISE that asks for a read gets the read and a retry; a refused or failed call it made by mistake
is followed by the right call; a refused right call is explained to the customer. With `error_rate > 0` it
is "error-prone": before each write, with that probability (seeded, so ledger and FC runs of the same trial
make the same slips), it first proposes a policy-violating variant the domain planner offers (another
customer's record, a wrong refund method, ...). Without a gate such a call may simply execute; with the gate
it is rejected and the agent recovers. That is a simulation of what the gate changes, and reports say so.

`OfflineCustomer` opens with the task's request, says yes when asked to confirm, and otherwise ends the
conversation with ###STOP###.

Dual control (telecom). A gold action of requestor "user" is the customer's to perform on their own phone
(in tau2 the user simulator holds the phone tools; the agent can only ask). The plan turns it into an `ask`
step: the agent asks for exactly that action, written as a call (`toggle_roaming()`,
`grant_app_permission(app_name="messaging", permission="storage")`), and the scripted customer, handed the
session's phone, runs the phone actions the agent's last message names and reports what the phone showed.
The customer does what it is asked, not what the gold says: an agent that never asks gets no phone action,
and an agent that asks for the wrong one gets that one, as with a cooperative tau2 user. A domain planner adds
the looks a careful agent asks for before a phone action (`before_ask`) and the reads it makes after one
(`after_ask`: a payment made on the phone changes the bills).

Token usage is counted locally (`core.llm.tokenizer.count_tokens`: the cl100k_base tokenizer, offline, or
about 4 characters per token without it) over the text a real endpoint would tokenise: message contents,
tool calls and tool schemas (not their JSON escaping).
"""

from __future__ import annotations

import json
import random
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from core.domain import Domain
from core.error_profile import ErrorProfile, FailureKind
from core.evaluation.tasks import Action, Task, opening_line
from core.llm.base import AssistantTurn, Message, Usage
from core.llm.tokenizer import count_tokens
from core.tools import ToolCall, ToolKind
from core.users import STOP, Phone, PhoneResult, Utterance

# -- plans -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCall:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, action: Action) -> PlannedCall:
        return cls(action.name, dict(action.arguments))

    def describe(self) -> str:
        return f"{self.name}({json.dumps(dict(self.arguments), sort_keys=True, ensure_ascii=False)})"

    def suggestion(self) -> str:
        """The call as `name(key=value, ...)`, values as JSON: the form `suggested_calls` reads back (the form a
        gate REVISE uses to name a read, and the agent uses to ask the customer for a phone action)."""
        arguments = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in self.arguments.items())
        return f"{self.name}({arguments})"


@dataclass(frozen=True)
class Violation:
    """A policy-violating variant of a write: the slip an error-prone agent makes, and what it read first."""

    kind: str
    call: PlannedCall
    reads: tuple[PlannedCall, ...] = ()
    failure: str = ""  # the kind of mistake it is (core.error_profile.FailureKind), for an error profile
    profile_only: bool = False  # offered to an error profile only: `error_rate` slips stay what they were


@dataclass(frozen=True)
class Step:
    kind: Literal["call", "write", "say", "requested", "ask"]  # ask: the customer's phone action (dual control)
    call: PlannedCall | None = None
    text: str = ""
    confirm: bool = False  # a `say` that asks the customer to confirm (the agent waits for the answer)
    violations: tuple[Violation, ...] = ()
    failure: str = ""  # a `requested` step: the kind of mistake carrying it out would be
    verify: bool = False  # a read that checks a write took effect (observe, don't assume)


@dataclass(frozen=True)
class OfflinePlan:
    steps: tuple[Step, ...]
    final_message: str
    refusal_message: str = "I'm sorry, but I can't do that under our policy."


class OfflinePlanner(Protocol):
    """Per domain: turns a task (and the task's starting data) into what a careful agent would do."""

    def plan(self, task: Task, data: Mapping[str, Any], domain: Domain) -> OfflinePlan: ...


def confirmation(call: PlannedCall) -> str:
    return f"To confirm, I'm about to run {call.describe()}. Do you confirm?"


def phone_request(call: PlannedCall) -> str:
    """How the scripted agent asks the customer for one phone action (never a confirmation question)."""
    return f"Could you please do this on your phone: {call.suggestion()}. Then tell me what it shows."


class GoldPlanner:
    """Domain-agnostic planner: the gold actions in order, each write preceded by a confirmation.

    Domains subclass it to add the reads a careful agent makes (`opening`, `before_write`) and the slips an
    error-prone agent makes (`violations`; `failures` maps a slip's kind to the kind of mistake an error
    profile weighs it as). `memo` is per-plan scratch space for that bookkeeping.

    A gold action of requestor "user" (dual control) becomes an `ask` step, with the phone looks of
    `before_ask` asked for first and the agent's reads of `after_ask` made once the customer has acted;
    `after_call` sees every planned call of both sides, in order.
    """

    failures: Mapping[str, str] = {}

    def opening(self, task: Task, data: Mapping[str, Any], memo: dict[str, Any]) -> list[PlannedCall]:
        return []

    def after_call(self, call: PlannedCall, memo: dict[str, Any]) -> None:
        return None

    def before_write(self, action: Action, data: Mapping[str, Any], memo: dict[str, Any]) -> list[PlannedCall]:
        return []

    def after_write(self, action: Action, data: Mapping[str, Any], memo: dict[str, Any]) -> list[PlannedCall]:
        """Reads that verify a write took effect (observe, don't assume)."""
        return []

    def violations(self, action: Action, data: Mapping[str, Any], memo: dict[str, Any]) -> list[Violation]:
        return []

    def before_ask(self, action: Action, data: Mapping[str, Any], memo: dict[str, Any]) -> list[PlannedCall]:
        """Phone reads the agent asks the customer for before the phone action `action` (look, then change)."""
        return []

    def after_ask(self, action: Action, data: Mapping[str, Any], memo: dict[str, Any]) -> list[PlannedCall]:
        """The agent's own reads once the customer has done `action` on the phone (what it changed)."""
        return []

    def plan(self, task: Task, data: Mapping[str, Any], domain: Domain) -> OfflinePlan:
        memo: dict[str, Any] = {}
        steps: list[Step] = []

        def call(planned: PlannedCall) -> None:
            steps.append(Step("call", planned))
            self.after_call(planned, memo)

        def ask(planned: PlannedCall) -> None:
            steps.append(Step("ask", planned))
            self.after_call(planned, memo)

        for planned in self.opening(task, data, memo):
            call(planned)
        for action in task.gold_actions:
            if action.side == "user":
                for look in self.before_ask(action, data, memo):
                    ask(look)
                ask(PlannedCall.of(action))
                for planned in self.after_ask(action, data, memo):
                    call(planned)
                continue
            if domain.kind_of(action.name) is not ToolKind.WRITE:
                call(PlannedCall.of(action))
                continue
            for planned in self.before_write(action, data, memo):
                call(planned)
            write = PlannedCall.of(action)
            steps.append(Step("say", text=confirmation(write), confirm=True))
            slips = tuple(v if v.failure else replace(v, failure=self.failures.get(v.kind, ""))
                          for v in self.violations(action, data, memo))
            steps.append(Step("write", write, violations=slips))
            self.after_call(write, memo)
            for planned in self.after_write(action, data, memo):
                steps.append(Step("call", planned, verify=True))
                self.after_call(planned, memo)
        hints = task.hints
        refusal = hints.refusal_message or "I'm sorry, but our policy does not allow what you asked for."
        for requested in hints.requested_actions:
            steps.append(Step("requested", PlannedCall(requested.name, dict(requested.arguments)),
                              text=requested.why_forbidden, failure=requested.failure))
        info = " ".join(task.criteria.communicate_info or [])
        final = f"All done. {info}".strip() if not hints.refusal else refusal
        return OfflinePlan(tuple(steps), final, refusal)


# -- the agent -------------------------------------------------------------------------------------

Role = Literal["read", "write", "slip", "tempted"]

_SUGGESTION = re.compile(r"\b([a-z_][a-z0-9_]*)\(((?:[a-z_][a-z0-9_]*=(?:\"(?:[^\"\\]|\\.)*\"|[-\w.]+)(?:, )?)*)\)")
_ARGUMENT = re.compile(r"([a-z_][a-z0-9_]*)=(\"(?:[^\"\\]|\\.)*\"|[-\w.]+)")


def suggested_calls(feedback: str, tools: set[str]) -> list[PlannedCall]:
    """The calls of `tools` a text names in the `name(key=value)` form, in order, each once: the reads a gate
    REVISE names ("Read it with get_order_details(order_id=\"#W1\")"), the phone actions an agent asks for."""
    found: dict[str, PlannedCall] = {}
    for match in _SUGGESTION.finditer(feedback):
        name = match.group(1)
        if name not in tools or "..." in match.group(0):
            continue
        try:
            arguments = {k: json.loads(v) for k, v in _ARGUMENT.findall(match.group(2))}
        except json.JSONDecodeError:
            continue
        planned = PlannedCall(name, arguments)
        found.setdefault(planned.describe(), planned)
    return list(found.values())


@dataclass
class _Item:
    kind: Literal["call", "say"]
    call: PlannedCall | None = None
    role: Role = "read"
    text: str = ""
    fix: PlannedCall | None = None  # for a slip: the right call to propose once the slip is refused
    retries: int = 0
    mistake: str = ""  # the failure kind an error profile made this call (core.error_profile.FailureKind)


def _prompt_pieces(messages: Sequence[Message]) -> list[str]:
    """The prompt's text in pieces that repeat verbatim from call to call (each message; the system prompt's
    blocks: instructions, policy, ledger), so each piece is tokenised once per trial, not once per call."""
    pieces: list[str] = []
    for message in messages:
        content = str(message.get("content") or "")
        role = str(message.get("role", ""))
        pieces.extend(content.split("\n\n") if role == "system" else [f"{role}: {content}"])
        for call in message.get("tool_calls") or ():
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            pieces.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return pieces


def _last_tool_results(messages: Sequence[Message]) -> str:
    results: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(str(message.get("content", "")))
    return "\n".join(reversed(results))


def _refused(content: str) -> bool:
    return content.startswith(("REVISE", "BLOCK", "Error", "NOT EXECUTED"))


def scripted_agent_name(error_rate: float, profile: ErrorProfile | None = None) -> str:
    """The model name an `AdaptiveScriptedAgent` records (known before its plan is: a console session names its
    agent before the task's database is open)."""
    if profile is not None:
        return f"scripted-simulated-errors({profile.name})"
    return "scripted-careful" if error_rate == 0 else f"scripted-error-prone(p={error_rate:g})"


class AdaptiveScriptedAgent:
    """A deterministic `ChatModel` that plays an `OfflinePlan` and reacts to tool results (see module doc)."""

    MAX_RETRIES = 2

    def __init__(self, plan: OfflinePlan, *, error_rate: float = 0.0, seed: str = "0",
                 profile: ErrorProfile | None = None) -> None:
        if not 0.0 <= error_rate <= 1.0:
            raise ValueError("error_rate must be between 0 and 1")
        if profile is not None and error_rate:
            raise ValueError("an error profile replaces error_rate: give one or the other")
        self.name = scripted_agent_name(error_rate, profile)
        self.plan = plan
        self.error_rate = error_rate
        self.profile = profile
        self.slips: list[str] = []  # what the error-prone agent got wrong on purpose, for the report
        self.mistakes: list[str] = []  # the failure kind of each mistake an error profile made it commit
        self.mistake_calls: list[tuple[str, str]] = []  # (failure kind, call id) of each mistake it proposed
        if profile is None:
            items = self._expand(plan, random.Random(f"slip:{seed}"))
        else:
            items = self._expand_profile(plan, profile, random.Random(f"profile:{profile.name}:{seed}"))
        self._agenda: deque[_Item] = deque(items)
        self._awaiting: _Item | None = None
        self._notes: list[str] = []  # refusals to mention in the next message to the customer
        self._finished = False
        self._calls = 0
        self._tools_text: tuple[int, str] = (0, "")

    def _expand(self, plan: OfflinePlan, rng: random.Random) -> list[_Item]:
        items: list[_Item] = []
        for step in plan.steps:
            if step.kind == "say":
                items.append(_Item("say", text=step.text, role="read"))
            elif step.kind == "call" and step.call is not None:
                items.append(_Item("call", step.call, "read"))
            elif step.kind == "ask" and step.call is not None:
                items.append(_Item("say", text=phone_request(step.call)))
            elif step.kind == "write" and step.call is not None:
                draw = rng.random()
                offered = [v for v in step.violations if not v.profile_only]
                slip = rng.choice(offered) if offered and draw < self.error_rate else None
                if slip is None:
                    items.append(_Item("call", step.call, "write"))
                    continue
                self.slips.append(f"{slip.kind}: {slip.call.describe()}")
                items += [_Item("call", read, "read") for read in slip.reads]
                items.append(_Item("call", slip.call, "slip", fix=step.call))
            elif step.kind == "requested" and step.call is not None:
                if rng.random() < self.error_rate:
                    self.slips.append(f"forbidden request: {step.call.describe()}")
                    items.append(_Item("say", text=confirmation(step.call)))
                    items.append(_Item("call", step.call, "tempted"))
                else:
                    items.append(_Item("say", text=plan.refusal_message))
        return items

    def _expand_profile(self, plan: OfflinePlan, profile: ErrorProfile, rng: random.Random) -> list[_Item]:
        """The plan with the profile's mistakes in it: before a write, each slip the domain offers whose kind
        the profile weighs is made with that weight (the first that fires); a forbidden request is carried out
        with its kind's weight; a read that checks a write is skipped (a stale record relied on) when another
        write follows. Every draw is made whatever came before, so the same seed gives the same mistakes."""
        items: list[_Item] = []
        writes_left = sum(step.kind == "write" for step in plan.steps)
        stale = profile.weight(FailureKind.STALE_RECORD)
        relying = False  # a re-read was skipped: the next write relies on the stale record
        for step in plan.steps:
            if step.kind == "write":
                writes_left -= 1
            if step.kind == "write" and step.call is not None:
                draws = [(rng.random(), v) for v in step.violations if profile.weight(v.failure) > 0]
                slip = next((v for draw, v in draws if draw < profile.weight(v.failure)), None)
                if slip is None:
                    stale_kind = FailureKind.STALE_RECORD.value if relying else ""
                    items.append(_Item("call", step.call, "write", mistake=stale_kind))
                    relying = False
                    continue
                relying = False
                self.slips.append(f"{slip.kind}: {slip.call.describe()}")
                self.mistakes.append(slip.failure)
                items += [_Item("call", read, "read") for read in slip.reads]
                items.append(_Item("call", slip.call, "slip", fix=step.call, mistake=slip.failure))
            elif step.kind == "requested" and step.call is not None:
                weight = profile.weight(step.failure)
                if weight and rng.random() < weight:
                    self.slips.append(f"forbidden request: {step.call.describe()}")
                    self.mistakes.append(step.failure)
                    items.append(_Item("say", text=confirmation(step.call)))
                    items.append(_Item("call", step.call, "tempted", mistake=step.failure))
                else:
                    items.append(_Item("say", text=plan.refusal_message))
            elif step.kind == "call" and step.call is not None and step.verify and writes_left and stale \
                    and rng.random() < stale:
                self.slips.append(f"no re-read after its write: {step.call.describe()}")
                self.mistakes.append(FailureKind.STALE_RECORD.value)
                relying = True
            else:
                items += self._expand(OfflinePlan((step,), plan.final_message, plan.refusal_message),
                                      random.Random(0))
        return items

    def _react(self, item: _Item, content: str, tools: set[str]) -> None:
        """Decide what follows the call `item` now that its result `content` is known."""
        if item.role == "read" or not _refused(content):
            return
        reason = content.splitlines()[0] if content else "it was refused"
        if item.role == "slip" and item.fix is not None:
            self._agenda.appendleft(_Item("call", item.fix, "write"))
        elif item.role == "tempted":
            self._agenda.appendleft(_Item("say", text=self.plan.refusal_message))
        elif (content.startswith("REVISE") and item.retries < self.MAX_RETRIES and item.call is not None
              and (reads := suggested_calls(content, tools))):
            retry = _Item("call", item.call, "write", retries=item.retries + 1)
            self._agenda.extendleft(reversed([*(_Item("call", r, "read") for r in reads), retry]))
        else:
            # Carry on with the plan (a later write may be the right way to do it, as in tau2 retail task 64);
            # the customer hears about the refusal in the agent's next message.
            self._notes.append(f"I'm sorry, I couldn't do that: {reason}")

    def _tool_names(self, tools: Sequence[Mapping[str, Any]]) -> tuple[set[str], str]:
        if self._tools_text[0] != id(tools):
            self._tools_text = (id(tools), json.dumps(list(tools), sort_keys=True, ensure_ascii=False))
        names = {str(t.get("function", {}).get("name", "")) for t in tools}
        return names, self._tools_text[1]

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        names, tools_text = self._tool_names(tools)
        if self._awaiting is not None:
            awaiting, self._awaiting = self._awaiting, None
            self._react(awaiting, _last_tool_results(messages), names)
        item = self._agenda.popleft() if self._agenda else None
        if item is None:
            text = "Is there anything else I can help you with?" if self._finished else self.plan.final_message
            self._finished = True
            item = _Item("say", text=text)
        prompt = sum(count_tokens(piece, cache=True) for piece in _prompt_pieces(messages)) \
            + count_tokens(tools_text, cache=True)
        if item.kind == "say" or item.call is None:
            text = " ".join([*self._notes, item.text])
            self._notes.clear()
            usage = Usage(prompt, count_tokens(text), estimated=True)
            return AssistantTurn(text=text, usage=usage, model=self.name, finish_reason="stop")
        self._calls += 1
        call = ToolCall(f"call_{self._calls}", item.call.name, dict(item.call.arguments))
        if item.mistake:
            self.mistake_calls.append((item.mistake, call.id))
            item.mistake = ""  # a retry of the same item after a read is the same mistake, counted once
        self._awaiting = item
        usage = Usage(prompt, count_tokens(call.name + call.arguments_json()), estimated=True)
        return AssistantTurn(text=None, tool_calls=(call,), usage=usage, model=self.name, finish_reason="tool_calls")


# -- the customer ----------------------------------------------------------------------------------


def asks_to_confirm(text: str) -> bool:
    lowered = text.lower()
    return "confirm" in lowered and "?" in lowered


class OfflineCustomer:
    """Opens with the task's request, says yes to each confirmation question, then ends with ###STOP###.

    With a phone (dual control) it also runs the phone actions the agent's last message asks for, in the order
    named, and reports what the phone showed (see the module docstring). `uses_phone=False` plays a customer
    who never touches the phone (they say so): the control that shows a phone action the task needs counts.
    """

    name = "scripted-customer"
    MAX_CONFIRMATIONS = 10
    MAX_PHONE_ACTIONS = 30  # per conversation: a loop of requests ends rather than runs forever

    def __init__(self, first_message: str, *, uses_phone: bool = True) -> None:
        self.first_message = first_message
        self.uses_phone = uses_phone
        self.position = 0
        self.phone_results: list[PhoneResult] = []

    @classmethod
    def for_task(cls, task: Task, *, uses_phone: bool = True) -> OfflineCustomer:
        return cls(opening_line(task), uses_phone=uses_phone)

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        return await self._respond(conversation, None)

    async def respond_with_phone(self, conversation: Sequence[Utterance], phone: Phone) -> str:
        return await self._respond(conversation, phone)

    async def _respond(self, conversation: Sequence[Utterance], phone: Phone | None) -> str:
        self.position += 1
        if self.position == 1:
            return self.first_message
        last = next((u.text for u in reversed(conversation) if u.role == "assistant"), "")
        asked = suggested_calls(last, {spec.name for spec in phone.tools}) if phone is not None else []
        if asked and phone is not None:
            if not self.uses_phone:
                return "Sorry, I can't do anything on my phone right now."
            room = self.MAX_PHONE_ACTIONS - len(self.phone_results)
            if room > 0:
                reports: list[str] = []
                for planned in asked[:room]:
                    result = await phone.run(ToolCall("", planned.name, dict(planned.arguments)))
                    self.phone_results.append(result)
                    reports.append(f"I did {planned.name} on my phone. It shows: {result.content}")
                return "\n".join(reports)
        if asks_to_confirm(last) and self.position <= self.MAX_CONFIRMATIONS + 1:
            return "Yes, please go ahead."
        return STOP
