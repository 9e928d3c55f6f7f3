"""The customer side of a session: a human at the console, a script, or an LLM user simulator.

Dual control (telecom). In some domains the customer has tools of their own: the phone they are calling
about. The session hands such a user proxy a `Phone` and asks it `respond_with_phone(conversation, phone)`
instead of `respond(conversation)`; the proxy may run any number of phone actions (requestor "user") before
it says its next line, as a tau2-bench user simulator routes its tool calls to the environment and gets
the results back before it speaks. All three proxies can do this: `ScriptedUser` plays phone actions
written in its script, `LLMUserSimulator` gets the phone's tools in its tool list, and `HumanUser` runs
the actions the console operator queues with `act`. A proxy without `respond_with_phone`, or a session
whose domain has no user tools, works exactly as before.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from core.llm.base import ChatModel, Message, ModelError
from core.tools import ToolCall, ToolSpec

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)


@dataclass(frozen=True)
class Utterance:
    role: Literal["user", "assistant"]
    text: str


class UserScriptDiverged(Exception):
    """A scripted user expected the agent to say something it did not say."""


# A stop token as LLM user simulators actually write it: small models put stray spaces inside (`### STOP###`,
# `###STOP ###`), change the case or use `_` for `-`. Three or more `#` on each side keep it from matching
# ordinary prose ("stop", "transfer me").
_SLOPPY_TOKEN = re.compile(r"#{3,}\s*(STOP|TRANSFER|OUT\s*[-_ ]?\s*OF\s*[-_ ]?\s*SCOPE)\s*#{3,}", re.IGNORECASE)
_TOKEN_REASON = {"STOP": "user_stop", "TRANSFER": "transfer", "OUTOFSCOPE": "out_of_scope"}


def stop_reason(text: str) -> str | None:
    """The termination reason a user message asks for, tau2-style, or None.

    Tolerant of how a model spells the token (see `_SLOPPY_TOKEN`): a missed `### STOP###` used to run an
    evaluation to its step limit, and the analysis then called it a reasoning loop. When a message holds
    several tokens, transfer wins over out-of-scope over stop, as before.
    """
    found = {_TOKEN_REASON[re.sub(r"[\s_-]", "", match.group(1)).upper()] for match in _SLOPPY_TOKEN.finditer(text)}
    for reason in ("transfer", "out_of_scope", "user_stop"):
        if reason in found:
            return reason
    return None


@runtime_checkable
class UserProxy(Protocol):
    name: str

    async def respond(self, conversation: Sequence[Utterance]) -> str: ...


@dataclass(frozen=True)
class PhoneResult:
    """One user-side tool call as it ran: the call (with the id and requestor the session gave it), whether the
    tool succeeded, and exactly what the user sees (a tool's text, or "Error: ..." when it was refused)."""

    call: ToolCall
    ok: bool
    content: str


@runtime_checkable
class Phone(Protocol):
    """The customer's own device in a dual-control session: its tools, and a way to run one.

    `run` executes the call for the user (requestor "user", a session-unique id), records it in the trace
    and lets the agent's ledger absorb what a read returned (under `device.*`). It never raises for a bad
    call: an unknown tool or bad arguments come back as a failed `PhoneResult`, as tau2 returns errors.
    """

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    async def run(self, call: ToolCall) -> PhoneResult: ...


@runtime_checkable
class PhoneUser(Protocol):
    """A user proxy that can act on its phone before answering (see the module docstring)."""

    name: str

    async def respond_with_phone(self, conversation: Sequence[Utterance], phone: Phone) -> str: ...


def _last_agent_message(conversation: Sequence[Utterance]) -> str:
    return next((u.text for u in reversed(conversation) if u.role == "assistant"), "")


@dataclass(frozen=True)
class Variant:
    """Another way to say a scripted line, for when the conversation went elsewhere (an operator vetoed, edited
    or force-allowed a call, and the agent said so).

    Chosen from what the customer can see, nothing else: the agent's last message contains one of `when` (case
    does not matter). A script is written for the expected path; its variants let the same customer answer what
    the agent really said instead of the line written for another outcome.
    """

    when: tuple[str, ...]
    text: str

    def fits(self, agent_message: str) -> bool:
        said = agent_message.lower()
        return any(needle.lower() in said for needle in self.when)


def chosen_variant(variants: Sequence[Variant], conversation: Sequence[Utterance]) -> Variant | None:
    """The first variant whose condition the agent's last message meets, or None (say the line as written)."""
    last = _last_agent_message(conversation)
    return next((v for v in variants if v.fits(last)), None)


@dataclass(frozen=True)
class ScriptedTurn:
    text: str
    expect_agent_contains: str | None = None  # checked against the agent's last message before answering
    variants: tuple[Variant, ...] = ()  # checked first, in order: the first that fits is said instead


@dataclass(frozen=True)
class ScriptedAction:
    """A phone action in a script: the user runs one of their own tools before saying their next line.

    `expect_result_contains` stops the run with a clear message when the phone did not answer as the
    author expected (the scripted agent's `expect_tool_results_contain`, for the user's side).
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    expect_result_contains: tuple[str, ...] = ()
    expect_agent_contains: str | None = None
    variants: tuple[Variant, ...] = ()  # a line said instead of the action (and of the rest of the script)


class ScriptedUser:
    """Says its lines in order, then stops. Optionally checks the agent said what the script expects.

    Phone actions in the script run, in order, before the next line is said; a script that ends with
    actions runs them and then stops.

    A turn's `variants` are read first: when the agent's last message fits one, its text is said instead of the
    turn (a line's variant takes that line's place and the script goes on; an action's variant is the last
    thing the customer says, so the rest of the script, written for the action's outcome, is never played).
    """

    name = "scripted"

    def __init__(self, turns: Sequence[ScriptedTurn | ScriptedAction | str]) -> None:
        self.turns: list[ScriptedTurn | ScriptedAction] = [
            ScriptedTurn(t) if isinstance(t, str) else t for t in turns]
        self.position = 0

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        return await self._next(conversation, None)

    async def respond_with_phone(self, conversation: Sequence[Utterance], phone: Phone) -> str:
        return await self._next(conversation, phone)

    async def _next(self, conversation: Sequence[Utterance], phone: Phone | None) -> str:
        while self.position < len(self.turns):
            turn = self.turns[self.position]
            self.position += 1
            variant = chosen_variant(turn.variants, conversation)
            if variant is not None:
                if isinstance(turn, ScriptedAction):
                    self.position = len(self.turns)
                return variant.text
            if turn.expect_agent_contains is not None:
                last = _last_agent_message(conversation)
                if turn.expect_agent_contains.lower() not in last.lower():
                    raise UserScriptDiverged(
                        f"user turn {self.position} expected the agent to mention "
                        f"{turn.expect_agent_contains!r}, but its last message was {last[:200]!r}")
            if isinstance(turn, ScriptedTurn):
                return turn.text
            if phone is None:
                raise UserScriptDiverged(f"user turn {self.position} is a phone action ({turn.name}), but this "
                                         "session gives the user no phone tools")
            result = await phone.run(ToolCall(id="", name=turn.name, arguments=dict(turn.arguments)))
            for needle in turn.expect_result_contains:
                if needle not in result.content:
                    raise UserScriptDiverged(
                        f"user turn {self.position} ({turn.name}) expected the phone to show {needle!r}, but it "
                        f"showed {result.content[:300]!r}")
        return STOP


class HumanUser:
    """The console operator playing the customer: messages arrive through `say`, phone actions through `act`.

    Half duplex, as in tau2: actions queued while the agent is working run at the start of the customer's
    next turn, in the order given, before the next message is sent. Each result is appended to
    `phone_results` (and, through the session, is in the trace like every call).
    """

    name = "human"

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | ToolCall] = asyncio.Queue()
        self.waiting = False
        self.phone_results: list[PhoneResult] = []

    def say(self, text: str) -> None:
        self._queue.put_nowait(text)

    def act(self, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        """Queue one action on the customer's phone, e.g. `act("toggle_roaming")`."""
        self._queue.put_nowait(ToolCall(id="", name=name, arguments=dict(arguments or {})))

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        return await self._next(None)

    async def respond_with_phone(self, conversation: Sequence[Utterance], phone: Phone) -> str:
        return await self._next(phone)

    async def _next(self, phone: Phone | None) -> str:
        self.waiting = True
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, str):
                    return item
                if phone is None:
                    self.phone_results.append(PhoneResult(item, False, "Error: this session gives the customer "
                                                                        "no phone tools; the action was not run."))
                    continue
                self.phone_results.append(await phone.run(item))
        finally:
            self.waiting = False


USER_GUIDELINES = """You are playing a customer who contacts customer service. Follow these rules:
- Send one short message at a time, in your own words, as the customer described in <scenario>.
- Follow the scenario exactly. Never invent facts it does not give; if you are asked for something the
  scenario does not contain, say you don't know or don't have it.
- Reveal information only when it is needed or asked for.
- When your goal is fully met, reply with exactly ###STOP### on its own.
- If you are transferred to a human agent, reply with exactly ###TRANSFER###.
- If the scenario lacks what you need to continue, reply with exactly ###OUT-OF-SCOPE###.
- Do not end the conversation before the agent has actually carried out what you asked for."""


USER_TOOL_GUIDELINES = """You also have tools that act on your own phone (the device you are calling about):
- Use a phone tool only when the agent asks you to check or change something on your phone.
- Do one action at a time. If the agent asks for several, do the first one, tell the agent what happened,
  and wait to be asked again.
- In each turn either use a tool or send a message, not both.
- Say only what the tools actually showed you; never guess what your phone would show.
- If a tool fails, tell the agent what it said."""

MAX_PHONE_ROUNDS = 8


class LLMUserSimulator:
    """An LLM plays the customer from task instructions, tau2-style (roles flipped, stop tokens).

    With a phone (dual control) the simulator is offered the phone's tools. Its tool calls are run for the
    user and the results fed back to it before it speaks, for at most MAX_PHONE_ROUNDS rounds per turn.
    It keeps those exchanges in its own history, in place, so on later turns it still sees what its
    phone showed; the agent never sees them (only what the simulator then says, and, with the ledger
    on, the readings absorbed under `device.*`). Text sent together with tool calls is dropped: the
    protocol is half duplex, a turn is a message or tool calls.
    """

    name = "llm"

    def __init__(self, model: ChatModel, instructions: str, guidelines: str = USER_GUIDELINES,
                 tool_guidelines: str = USER_TOOL_GUIDELINES) -> None:
        self.model = model
        self.instructions = instructions
        self.guidelines = guidelines
        self.tool_guidelines = tool_guidelines
        # conversation length when they happened -> the simulator's tool-call messages and their results
        self._exchanges: dict[int, list[Message]] = {}

    def system_prompt(self, with_phone: bool = False) -> str:
        guidelines = f"{self.guidelines}\n{self.tool_guidelines}" if with_phone else self.guidelines
        return f"{guidelines}\n\n<scenario>\n{self.instructions}\n</scenario>"

    def messages(self, conversation: Sequence[Utterance], with_phone: bool = False) -> list[Message]:
        """The simulator's view: the agent speaks as "user", the simulator as "assistant", and its own phone
        exchanges sit where they happened (just before the message they preceded)."""
        messages: list[Message] = [{"role": "system", "content": self.system_prompt(with_phone)}]
        for index, utterance in enumerate(conversation):
            messages += self._exchanges.get(index, [])
            messages.append({"role": "user" if utterance.role == "assistant" else "assistant",
                             "content": utterance.text})
        messages += self._exchanges.get(len(conversation), [])
        return messages

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        return await self._respond(conversation, None)

    async def respond_with_phone(self, conversation: Sequence[Utterance], phone: Phone) -> str:
        return await self._respond(conversation, phone)

    async def _respond(self, conversation: Sequence[Utterance], phone: Phone | None) -> str:
        tools = [spec.openai_schema() for spec in phone.tools] if phone is not None else []
        for _ in range(MAX_PHONE_ROUNDS + 1):
            turn = await self.model.complete(self.messages(conversation, phone is not None), tools)
            if phone is not None and turn.tool_calls:
                exchange = self._exchanges.setdefault(len(conversation), [])
                exchange.append({"role": "assistant", "content": "",
                                 "tool_calls": [call.to_openai() for call in turn.tool_calls]})
                for call in turn.tool_calls:
                    result = await phone.run(call)
                    exchange.append({"role": "tool", "tool_call_id": call.id, "content": result.content})
                continue
            text = (turn.text or "").strip()
            if not text:
                raise ModelError("the user simulator returned an empty message", kind="bad_response")
            return text
        raise ModelError(f"the user simulator made {MAX_PHONE_ROUNDS} rounds of phone actions without saying "
                         "anything to the agent", kind="bad_response")
