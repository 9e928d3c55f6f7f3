"""Counting what each role's model used in a trial: the agent (from its recorded turns), the customer
simulator and the judge (through `MeteredModel`), priced by the run's `PriceTable`.

Why a wrapper for the customer: the user simulator's calls are not agent steps and leave no event of their
own, so the only faithful count is at the model boundary, per trial (each trial builds its own models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.evaluation.facts import TrialFacts
from core.evaluation.pricing import PriceTable
from core.evaluation.results import RoleUsage
from core.llm.base import AssistantTurn, ChatModel, Message, Usage


class MeteredModel:
    """A `ChatModel` that adds up the usage of every completed call of the model it wraps."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.usage = Usage()
        self.calls = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        turn = await self.inner.complete(messages, tools)
        self.usage = self.usage + turn.usage
        self.calls += 1
        return turn

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def role_usage(model: str, usage: Usage, calls: int, prices: PriceTable | None, *, priced: bool = True) -> RoleUsage:
    """One role's figures. `priced=False` (scripted stand-ins, no model): no cost at all, not an unknown one."""
    cost = prices.cost(model, usage.prompt_tokens, usage.completion_tokens) if prices is not None and priced \
        and calls else None
    return RoleUsage(model=model, prompt=usage.prompt_tokens, completion=usage.completion_tokens, calls=calls,
                     cost=cost, estimated=usage.estimated)


def agent_usage(facts: TrialFacts, model: str, prices: PriceTable | None, *, priced: bool) -> RoleUsage:
    usage = Usage()
    for turn in facts.turns:
        usage = usage + Usage(turn.prompt_tokens, turn.completion_tokens, turn.tokens_estimated)
    return role_usage(model, usage, len(facts.turns), prices, priced=priced)
