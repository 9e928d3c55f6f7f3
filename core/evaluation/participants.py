"""Who plays the agent and the customer in a trial: scripted stand-ins (offline) or models over HTTP.

Each trial gets its own model objects: an `OpenAIChatModel` reports retries to the agent that owns it, so a
shared client would send every trial's retry events to the first trial's trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.domain import Domain
from core.error_profile import ErrorProfile
from core.evaluation.offline import AdaptiveScriptedAgent, GoldPlanner, OfflineCustomer, OfflinePlan, OfflinePlanner
from core.evaluation.runner import AgentVariant
from core.evaluation.tasks import Task, render_instructions
from core.evaluation.usage import MeteredModel
from core.llm.base import ChatModel
from core.users import LLMUserSimulator, UserProxy


class OfflineParticipants:
    """Adaptive scripted agents built from each task's gold actions, and scripted customers.

    The plan depends only on the task and its starting data, so it is built once per task; the agent's
    deliberate slips (error-prone mode) are seeded per (seed, domain, task, trial), identical for every agent
    condition, so ledger and FC face the same mistakes and differ only by what the gate does with them.
    """

    scripted = True
    needs_data = True

    def __init__(self, domain: Domain, planner: OfflinePlanner | None = None, *, error_rate: float = 0.0,
                 seed: int = 0, profile: ErrorProfile | None = None) -> None:
        self.domain = domain
        self.planner: OfflinePlanner = planner or GoldPlanner()
        self.error_rate = error_rate
        self.profile = profile
        self.seed = seed
        self._plans: dict[str, OfflinePlan] = {}

    def plan(self, task: Task, data: Mapping[str, Any] | None) -> OfflinePlan:
        if task.id not in self._plans:
            self._plans[task.id] = self.planner.plan(task, data or {}, self.domain)
        return self._plans[task.id]

    def agent(self, task: Task, variant: AgentVariant, trial: int, data: Mapping[str, Any] | None) -> ChatModel:
        return AdaptiveScriptedAgent(self.plan(task, data), error_rate=self.error_rate, profile=self.profile,
                                     seed=f"{self.seed}:{self.domain.name}:{task.id}:{trial}")

    def user(self, task: Task, trial: int) -> UserProxy:
        return OfflineCustomer.for_task(task)

    async def release(self, model: ChatModel, user: UserProxy) -> None:
        return None


class ModelParticipants:
    """A real agent model per trial; the customer is an LLM user simulator, or the scripted customer when
    no user model is given."""

    scripted = False
    needs_data = False

    def __init__(self, agent_model: Callable[[], ChatModel], user_model: Callable[[], ChatModel] | None) -> None:
        self.agent_model = agent_model
        self.user_model = user_model

    def agent(self, task: Task, variant: AgentVariant, trial: int, data: Mapping[str, Any] | None) -> ChatModel:
        return self.agent_model()

    def user(self, task: Task, trial: int) -> UserProxy:
        if self.user_model is None:
            return OfflineCustomer.for_task(task)
        return LLMUserSimulator(MeteredModel(self.user_model()), render_instructions(task.user_scenario))

    async def release(self, model: ChatModel, user: UserProxy) -> None:
        for client in (model, getattr(user, "model", None)):
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()
