"""Domains by name: every subpackage of `domains` that defines a `DOMAIN`. Discovered, so adding a domain
never means editing a shared list; imported lazily so listing names loads no predicate module."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (named for the types only: listing the names imports nothing, see `ledgeragent mcp`'s start)
    from core.domain import Domain
    from core.evaluation.offline import OfflinePlanner  # imported only when a planner is asked for
    from core.llm.offline_agent import CustomerReader

DOMAINS: tuple[str, ...] = tuple(sorted(  # the packages here (os.scandir, not pkgutil: nothing more to import)
    entry.name for entry in os.scandir(Path(__file__).parent)
    if entry.is_dir() and entry.name.isidentifier() and os.path.isfile(os.path.join(entry.path, "__init__.py"))
))


class UnknownDomain(KeyError):
    pass


def load_domain(name: str) -> Domain:
    if name not in DOMAINS:
        raise UnknownDomain(f"unknown domain {name!r}; available: {', '.join(DOMAINS)}")
    module = importlib.import_module(f"domains.{name}")
    domain: Domain = module.DOMAIN
    return domain


def load_offline_reader(name: str) -> CustomerReader | None:
    """The domain's `CustomerReader` for the offline agent (`domains.<d>.offline.READER`), or None when the
    domain has none (the offline agent then follows its plan and reacts generically, but cannot read typed text)."""
    reader: CustomerReader | None = getattr(_offline_module(name), "READER", None)
    return reader


def _offline_module(name: str) -> ModuleType | None:
    """`domains.<name>.offline` (the domain checked first), or None when the domain has none; an import error
    inside that module is not taken for its absence."""
    load_domain(name)
    try:
        return importlib.import_module(f"domains.{name}.offline")
    except ModuleNotFoundError as exc:
        if exc.name != f"domains.{name}.offline":
            raise
        return None


def tasks_file(name: str) -> Path | None:
    """The domain's shipped evaluation tasks (`domains/<d>/tasks/tasks.json`), or None when it ships none."""
    load_domain(name)
    path = Path(__file__).parent / name / "tasks" / "tasks.json"
    return path if path.is_file() else None


def load_offline_planner(name: str) -> OfflinePlanner:
    """The domain's careful-agent planner for offline task runs (`domains.<d>.offline.PLANNER`), else the
    generic gold planner: what `ledgeragent eval` plays without --model, and a console task session too."""
    planner: OfflinePlanner | None = getattr(_offline_module(name), "PLANNER", None)
    if planner is None:
        from core.evaluation.offline import GoldPlanner

        return GoldPlanner()
    return planner
