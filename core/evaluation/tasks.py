"""Evaluation tasks in tau2-bench's task format (API.md §5.1), so a tau2 `tasks.json` loads unchanged.

The models accept every field tau2 writes and keep unknown ones (`extra="allow"`): tau2 adds optional fields
between releases (issues, user_tools, annotations, ...) and a harness that refused them would break on the
next data drop. Our own task files add one optional, namespaced field, `ledgeragent` (`OfflineHints`), which
tau2 ignores: the requests a customer makes that policy forbids, so the offline error-prone agent can be
tempted by them (tau2's gold actions only say what should happen, not what the customer asked for).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class RewardType(StrEnum):
    DB = "DB"
    ENV_ASSERTION = "ENV_ASSERTION"
    NL_ASSERTION = "NL_ASSERTION"
    ACTION = "ACTION"
    COMMUNICATE = "COMMUNICATE"


class StructuredInstructions(_Open):
    domain: str | None = None
    reason_for_call: str = ""
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str | None = None


class UserScenario(_Open):
    persona: str | None = None
    instructions: StructuredInstructions | str


class Description(_Open):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


def side_of(who: str) -> str:
    """tau2's two sides: "user" (the customer's phone) or "assistant" (the carrier's systems; "agent" accepted)."""
    return "user" if who == "user" else "assistant"


class EnvFunctionCall(_Open):
    env_type: str = "assistant"
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @property
    def side(self) -> str:
        return side_of(self.env_type)


class InitializationData(_Open):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(_Open):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    message_history: list[dict[str, Any]] | None = None


class Action(_Open):
    action_id: str = ""
    requestor: str = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    info: str | None = None
    compare_args: list[str] | None = None

    @property
    def side(self) -> str:
        """Who performs it: "user" (a phone action the customer runs when asked) or "assistant"."""
        return side_of(self.requestor)


class EnvAssertion(_Open):
    env_type: str = "assistant"
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    assert_value: bool = True
    message: str | None = None

    @property
    def side(self) -> str:
        return side_of(self.env_type)


class EvaluationCriteria(_Open):
    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardType] = Field(default_factory=lambda: [RewardType.DB, RewardType.COMMUNICATE])


class RequestedAction(_Open):
    """A write the customer asks for that policy forbids (the right outcome is a refusal)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    why_forbidden: str = ""
    failure: str = ""  # the kind of mistake carrying it out would be (core.error_profile.FailureKind), if any


class OfflineHints(_Open):
    """Our extension (ignored by tau2): what the offline scripted agents need beyond the gold actions."""

    refusal: bool = False  # the right outcome is to decline what the customer asks
    requested_actions: list[RequestedAction] = Field(default_factory=list)
    refusal_message: str | None = None  # what the careful agent tells the customer instead
    first_message: str | None = None  # the scripted customer's opening line (default: built from instructions)


class Task(_Open):
    id: str
    description: Description | None = None
    user_scenario: UserScenario
    ticket: str | None = None
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None
    ledgeragent: OfflineHints | None = None

    @property
    def criteria(self) -> EvaluationCriteria:
        return self.evaluation_criteria or EvaluationCriteria()

    @property
    def gold_actions(self) -> list[Action]:
        return list(self.criteria.actions or [])

    @property
    def hints(self) -> OfflineHints:
        return self.ledgeragent or OfflineHints()

    @property
    def needs_initialization(self) -> bool:
        state = self.initial_state
        if state is None:
            return False
        data = state.initialization_data
        return bool(state.initialization_actions) or (data is not None and bool(data.agent_data or data.user_data))


class TaskFileError(ValueError):
    """A tasks file that cannot be read as tau2 tasks; the message names the file and the first problem."""


def _raw_items(path: Path) -> list[Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except FileNotFoundError as exc:
        raise TaskFileError(f"no such tasks file: {path}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
        raise TaskFileError(f"{path}: not valid JSON ({exc})") from exc
    items = raw.get("tasks") if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        raise TaskFileError(f"{path}: expected a JSON list of tasks")
    return items


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_tasks(path: Path) -> tuple[list[Task], list[str]]:
    """The valid tasks of a tau2 `tasks.json` and one message per broken task (naming the file, the task's
    position and id, and the first problem): a run goes on with the tasks that load. A repeated id keeps its
    first task. Raises TaskFileError only when the file itself cannot be read as a list."""
    tasks: list[Task] = []
    problems: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(_raw_items(path)):
        name = f"task #{index}" + (f" (id {item.get('id')!r})" if isinstance(item, dict) and "id" in item else "")
        try:
            task = Task.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            problems.append(f"{path}: {name}: {where + ': ' if where else ''}{first['msg']}")
            continue
        if task.id in seen:
            problems.append(f"{path}: {name}: duplicate task id {task.id!r} (the first one is kept)")
            continue
        seen.add(task.id)
        tasks.append(task)
    return tasks, problems


def load_tasks(path: Path) -> list[Task]:
    """Read a tau2 `tasks.json` (a JSON list of tasks, or `{"tasks": [...]}`); every task must be valid and ids
    unique (`read_tasks` is the lenient reader)."""
    tasks, problems = read_tasks(path)
    if problems:
        raise TaskFileError(problems[0])
    return tasks


def read_task_ids(path: Path) -> list[str] | None:
    """What `--tasks FILE` names: a JSON list of ids, plain text with one id per line (# comments), or a tasks
    file (a JSON list of task objects; None: the caller runs those tasks, read with `read_tasks`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot read task list {path}: {exc}") from exc
    try:
        raw: Any = json.loads(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError):
        raw = None
    if isinstance(raw, dict) and isinstance(raw.get("tasks"), list):
        raw = raw["tasks"]
    if isinstance(raw, list) and raw and any(isinstance(i, dict) for i in raw):
        return None
    if isinstance(raw, list):
        if not all(isinstance(i, str | int) and not isinstance(i, bool) for i in raw):
            raise TaskFileError(f"{path}: a JSON task list holds task ids (strings) or task objects")
        return [str(i) for i in raw]
    if raw is not None:
        raise TaskFileError(f"{path}: expected a JSON list of task ids or tasks, or one id per line")
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def select_tasks(tasks: Sequence[Task], ids: Iterable[str] | None) -> list[Task]:
    """The tasks named by `ids` (in file order), or all. Unknown ids are an error, never silently skipped."""
    if ids is None:
        return list(tasks)
    wanted = list(dict.fromkeys(ids))
    known = {t.id for t in tasks}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise TaskFileError(f"unknown task id(s): {', '.join(unknown)}")
    chosen = set(wanted)
    return [t for t in tasks if t.id in chosen]


def render_instructions(scenario: UserScenario) -> str:
    """The scenario text a user simulator gets, laid out as tau2 renders structured instructions."""
    instructions = scenario.instructions
    if isinstance(instructions, str):
        text = instructions
    else:
        parts = [("Domain", instructions.domain), ("Reason for call", instructions.reason_for_call),
                 ("Known info", instructions.known_info), ("Unknown info", instructions.unknown_info),
                 ("Task instructions", instructions.task_instructions)]
        text = "\n".join(f"{name}:\n{value}" for name, value in parts if value)
    if scenario.persona:
        text = f"Persona:\n{scenario.persona}\n\n{text}"
    return text


def opening_line(task: Task) -> str:
    """The scripted customer's first message: the task's own, else its reason for calling and what it knows."""
    if task.hints.first_message:
        return task.hints.first_message
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return instructions
    return " ".join(p for p in (instructions.reason_for_call, instructions.known_info) if p)
