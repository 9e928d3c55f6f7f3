"""A task's starting data: tau2's `initialization_data` patch, deep-merged into a database's own data.

Shared by the trial runner (`EvalRunner`, which builds a dedicated database for such a task) and anything
else that runs a task as a session (the console's live sessions), so a task starts from the same state
wherever it runs. The initialization *actions* are the other half of the starting state; they run on the
database itself (`rewards.set_scene`).

Merge rule, as tau2's `update_db`: objects are merged key by key, anything else (a list, a number) is
replaced. A dual-control backend (one with `export_tau2`, e.g. telecom) is patched in tau2's own layout:
`agent_data` into its agent DB, `user_data` into the phone's user DB. Any other backend has no user side, so a
`user_data` patch is an error there rather than silently dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from core.evaluation.tasks import InitializationData, Task


class Exportable(Protocol):
    """What a patch needs from a backend: its data (every `SQLiteToolBackend` has `export`)."""

    async def export(self) -> dict[str, dict[str, Any]]: ...


def task_patch(task: Task) -> InitializationData | None:
    """The task's data patch, or None when it patches nothing (every task shipped today; tau2 airline and
    retail have none either): such a task runs on the database as it is opened."""
    state = task.initial_state
    patch = state.initialization_data if state is not None else None
    if patch is None or not (patch.agent_data or patch.user_data):
        return None
    return patch


def deep_merge(base: Any, patch: Any) -> Any:
    """`patch` over `base`: mappings key by key (recursively), anything else replaced; inputs are not changed."""
    if isinstance(base, dict) and isinstance(patch, Mapping):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = deep_merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(patch)


async def patched_source(backend: Exportable, patch: InitializationData, domain: str,
                         baseline: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """The data of `backend` (at its baseline) with `patch` merged in: a source for the domain backend's
    `create`. `baseline` is the backend's `export()` when the caller already has it (the runner caches it).
    Raises RuntimeError for a `user_data` patch on a backend without a user side."""
    export_tau2: Callable[[], Awaitable[Mapping[str, Any]]] | None = getattr(backend, "export_tau2", None)
    if export_tau2 is not None:
        layout = await export_tau2()
        return {"db": deep_merge(layout["db"], patch.agent_data or {}),
                "user_db": deep_merge(layout["user_db"], patch.user_data or {})}
    if patch.user_data:
        raise RuntimeError("this task patches the user's data (initialization_data.user_data), and the "
                           f"{domain} backend has no user side")
    data = baseline if baseline is not None else await backend.export()
    return dict(deep_merge(data, patch.agent_data or {}))
