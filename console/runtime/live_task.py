"""The parts of a live session that runs an evaluation task, put together as `ledgeragent eval` puts a trial.

A task (domains/<d>/tasks/tasks.json, tau2 format) names who the customer is, what the database holds when
the conversation starts, and what a careful agent would do. A console session on it uses the evaluation
harness's own pieces, so a task played under supervision is the trial `eval` would run:

- the database: the domain's data with the task's `initialization_data` patch merged in
  (`core.evaluation.starting`), then its initialization actions of both sides (`rewards.set_scene`);
- the agent, for model "scripted": the domain's careful-agent planner's plan over that starting data, played by
  `AdaptiveScriptedAgent` (`OfflineParticipants.agent`, trial 0, no slips); any other model is the session's own;
- the customer: the task's scripted customer (`OfflineParticipants.user`), or an LLM user simulator on the
  task's instructions when a user model is given (as `ModelParticipants.user`).

Imported only when a session has a task: it pulls in the evaluation harness, which the console's cold start
never pays for (tests/test_startup_imports.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.agent import AgentConfig
from core.domain import Domain
from core.error_profile import load_profile
from core.evaluation.offline import OfflineCustomer, scripted_agent_name
from core.evaluation.participants import OfflineParticipants
from core.evaluation.rewards import set_scene
from core.evaluation.runner import AgentVariant
from core.evaluation.starting import patched_source, task_patch
from core.evaluation.tasks import Task, TaskFileError, load_tasks, render_instructions
from core.evaluation.usage import MeteredModel
from core.llm.base import AssistantTurn, ChatModel, Message
from core.tools import ToolError
from core.users import LLMUserSimulator, UserProxy
from domains.registry import DOMAINS, load_offline_planner, tasks_file
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import backend_class, open_backend


class TaskSetupError(Exception):
    """The task's starting state could not be set (a broken initialization action or patch): one line."""


@functools.cache
def shipped_tasks(domain: str) -> Mapping[str, Task]:
    """The domain's shipped tasks by id, in file order (read once per process; the files are package data).
    Raises ValueError (one line) for an unknown domain, a domain without tasks or a broken tasks file."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; available: {', '.join(DOMAINS)}")
    path = tasks_file(domain)
    if path is None:
        raise ValueError(f"domain {domain!r} ships no evaluation tasks")
    try:
        return {task.id: task for task in load_tasks(path)}
    except TaskFileError as exc:
        raise ValueError(str(exc).splitlines()[0]) from exc


def unknown_tasks(domain: str, ids: Sequence[str]) -> str | None:
    """One line naming the ids `domain` does not ship (or why it has none), or None when all are known."""
    try:
        known = shipped_tasks(domain)
    except ValueError as exc:
        return str(exc)
    missing = [i for i in dict.fromkeys(ids) if i not in known]
    if not missing:
        return None
    return f"unknown task id(s) for {domain}: {', '.join(missing)} (it has {', '.join(known)})"


def load_task(domain: str, task_id: str) -> Task:
    problem = unknown_tasks(domain, [task_id])
    if problem is not None:
        raise ValueError(problem)
    return shipped_tasks(domain)[task_id]


class TaskAgent:
    """The offline careful agent of one task, planned once the session's database holds the task's start.

    A live session names its model when it is built, before its database is open; the domain's planner needs
    the task's starting data (the records the careful reads are about), so the plan is made in `plan(data)`
    (by `LiveSession.open`). Until then `complete` refuses: an unplanned agent would play an empty script.
    """

    def __init__(self, domain: Domain, task: Task, variant: AgentVariant, profile: str | None = None) -> None:
        chosen = load_profile(profile) if profile is not None else None
        self.name = scripted_agent_name(0.0, chosen)
        self.task = task
        self.variant = variant
        self._participants = OfflineParticipants(domain, load_offline_planner(domain.name), profile=chosen)
        self._inner: ChatModel | None = None

    def plan(self, data: Mapping[str, Any]) -> None:
        self._inner = self._participants.agent(self.task, self.variant, 0, data)
        self.name = self._inner.name

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        if self._inner is None:
            raise RuntimeError(f"the agent for task {self.task.id} has no plan yet: open the session first")
        return await self._inner.complete(messages, tools)


def task_agent(domain: Domain, task: Task, label: str, config: AgentConfig, *,
               profile: str | None = None) -> TaskAgent:
    return TaskAgent(domain, task, AgentVariant(label, config), profile)


def task_customer(task: Task, user_model: ChatModel | None) -> UserProxy:
    """The task's scripted customer, or an LLM user simulator on the task's instructions (`user_model`,
    metered): `OfflineParticipants.user` and `ModelParticipants.user` for trial 0."""
    if user_model is None:
        return OfflineCustomer.for_task(task)
    return LLMUserSimulator(MeteredModel(user_model), render_instructions(task.user_scenario))


async def open_task_database(domain: str, path: Path, source: Path | None, task: Task, *,
                             want_data: bool) -> tuple[SQLiteToolBackend, Mapping[str, Any] | None]:
    """The session's database at `path`, in the task's starting state, and (with `want_data`) the starting
    data the offline planner reads, taken where the runner takes it: the export after the initialization
    actions for a task that has any (or a patch), else the database as opened (`EvalRunner._task_data`).

    Raises TaskSetupError (nothing left open) when the task's scene cannot be set."""
    backend = await open_backend(domain, path, source)
    try:
        patch = task_patch(task)
        if patch is not None:
            data = await patched_source(backend, patch, domain)
            await backend.close()
            backend = await backend_class(domain).create(path, data)
        start = await backend.export() if want_data and not task.needs_initialization else None
        await set_scene(backend, task)
        if want_data and start is None:
            start = await backend.export()
    except (ToolError, RuntimeError, ValueError) as exc:  # ValueError: patched data the domain's models refuse
        with contextlib.suppress(Exception):
            await backend.close()
        message = exc.message if isinstance(exc, ToolError) else str(exc)
        lines = message.splitlines() or [type(exc).__name__]
        raise TaskSetupError(f"task {task.id}: cannot set its starting state: {lines[0]}") from exc
    except BaseException:
        with contextlib.suppress(Exception):
            await backend.close()
        raise
    return backend, start
