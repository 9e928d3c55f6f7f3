"""Task files: our retail tasks cover every write tool and several refusals; tau2's tasks.json loads as-is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.evaluation.tasks import Task, TaskFileError, load_tasks, opening_line, render_instructions, select_tasks
from core.tools import ToolKind
from domains.retail import DOMAIN
from tests.support.eval_helpers import RETAIL_TASKS, TAU2_RETAIL

WRITES = {t.name for t in DOMAIN.tools if t.kind is ToolKind.WRITE}


def gold_writes(task: Task) -> list[str]:
    return [a.name for a in task.gold_actions if a.name in WRITES]


def test_retail_tasks_cover_every_write_tool_and_refusals() -> None:
    tasks = load_tasks(RETAIL_TASKS)
    assert len(tasks) >= 10
    assert {name for t in tasks for name in gold_writes(t)} == WRITES
    refusals = [t for t in tasks if t.hints.refusal]
    assert len(refusals) >= 3
    for task in refusals:
        assert gold_writes(task) == [], f"{task.id}: the right outcome is a refusal, so no gold write"
        assert task.hints.requested_actions and task.hints.refusal_message
    assert any(t.needs_initialization for t in tasks)  # initialization_actions are exercised
    for task in tasks:
        assert {a.name for a in task.gold_actions} <= {t.name for t in DOMAIN.tools}
        assert opening_line(task)


def test_tau2_format_round_trip_keeps_unknown_fields(tmp_path: Path) -> None:
    raw = json.loads(RETAIL_TASKS.read_text(encoding="utf-8"))
    raw[0]["issues"] = [{"title": "a future tau2 field"}]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"tasks": raw}), encoding="utf-8")
    tasks = load_tasks(path)
    assert tasks[0].model_dump()["issues"] == [{"title": "a future tau2 field"}]
    assert "Reason for call:" in render_instructions(tasks[0].user_scenario)
    assert [t.id for t in select_tasks(tasks, ["r02", "r01"])] == ["r01", "r02"]
    with pytest.raises(TaskFileError, match="unknown task id"):
        select_tasks(tasks, ["nope"])
    path.write_text(json.dumps([raw[0], raw[0]]), encoding="utf-8")
    with pytest.raises(TaskFileError, match="duplicate"):
        load_tasks(path)
    path.write_text('[{"id": "x"}]', encoding="utf-8")
    with pytest.raises(TaskFileError, match="user_scenario"):
        load_tasks(path)


@pytest.mark.shared
@pytest.mark.skipif(not (TAU2_RETAIL / "tasks.json").is_file(), reason="tau2 retail data not present")
def test_tau2_retail_tasks_load() -> None:
    tasks = load_tasks(TAU2_RETAIL / "tasks.json")
    assert len(tasks) > 50
    assert all(t.criteria.reward_basis for t in tasks)
    assert any(a.compare_args == [] for t in tasks for a in t.gold_actions)
