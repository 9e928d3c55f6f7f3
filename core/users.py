"""The customer side of a session: a human at the console, a script, or an LLM user simulator."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from core.llm.base import ChatModel, ModelError

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


def stop_reason(text: str) -> str | None:
    """The termination reason a user message asks for, tau2-style, or None."""
    if TRANSFER in text:
        return "transfer"
    if OUT_OF_SCOPE in text:
        return "out_of_scope"
    if STOP in text:
        return "user_stop"
    return None


@runtime_checkable
class UserProxy(Protocol):
    name: str

    async def respond(self, conversation: Sequence[Utterance]) -> str: ...


@dataclass(frozen=True)
class ScriptedTurn:
    text: str
    expect_agent_contains: str | None = None  # checked against the agent's last message before answering


class ScriptedUser:
    """Says its lines in order, then stops. Optionally checks the agent said what the script expects."""

    name = "scripted"

    def __init__(self, turns: Sequence[ScriptedTurn | str]) -> None:
        self.turns = [t if isinstance(t, ScriptedTurn) else ScriptedTurn(t) for t in turns]
        self.position = 0

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        if self.position >= len(self.turns):
            return STOP
        turn = self.turns[self.position]
        self.position += 1
        if turn.expect_agent_contains is not None:
            last = next((u.text for u in reversed(conversation) if u.role == "assistant"), "")
            if turn.expect_agent_contains.lower() not in last.lower():
                raise UserScriptDiverged(
                    f"user turn {self.position} expected the agent to mention "
                    f"{turn.expect_agent_contains!r}, but its last message was {last[:200]!r}")
        return turn.text


class HumanUser:
    """The console operator playing the customer: messages arrive through `say`."""

    name = "human"

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self.waiting = False

    def say(self, text: str) -> None:
        self._queue.put_nowait(text)

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        self.waiting = True
        try:
            return await self._queue.get()
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


class LLMUserSimulator:
    """An LLM plays the customer from task instructions, tau2-style (roles flipped, stop tokens)."""

    name = "llm"

    def __init__(self, model: ChatModel, instructions: str, guidelines: str = USER_GUIDELINES) -> None:
        self.model = model
        self.instructions = instructions
        self.guidelines = guidelines

    def system_prompt(self) -> str:
        return f"{self.guidelines}\n\n<scenario>\n{self.instructions}\n</scenario>"

    async def respond(self, conversation: Sequence[Utterance]) -> str:
        # The simulator sees the agent as "user" and itself as "assistant".
        messages = [{"role": "system", "content": self.system_prompt()}]
        messages += [{"role": "user" if u.role == "assistant" else "assistant", "content": u.text}
                     for u in conversation]
        turn = await self.model.complete(messages, [])
        text = (turn.text or "").strip()
        if not text:
            raise ModelError("the user simulator returned an empty message", kind="bad_response")
        return text
