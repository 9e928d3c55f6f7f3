"""Many session specs at once: every task (or scenario) a supervision desk should run, from one base spec.

`ledgeragent supervise --domain retail --tasks all` and `--scenarios all` turn into these lists. The base spec
carries what the sessions share (agent, model and endpoint, user model, supervision mode, limits); each
returned spec differs from it only in what it runs. Every returned spec is valid (`SessionSpec.problems()` is
empty), and a bad request is one ValueError with one line, so a command can print it and exit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from console.runtime.live import SessionSpec
from console.runtime.live_task import shipped_tasks, unknown_tasks
from core.scenario import list_scenarios
from domains.registry import DOMAINS, UnknownDomain, load_domain


def _checked(specs: list[SessionSpec]) -> list[SessionSpec]:
    for spec in specs:
        problems = spec.problems()
        if problems:
            raise ValueError(f"{spec.domain} {spec.label}: " + "; ".join(problems))
    return specs


def task_specs(domain: str, ids: Sequence[str] | Literal["all"], base: SessionSpec) -> list[SessionSpec]:
    """One spec per task of `domain`: "all" in the tasks file's order, else the ids given in their order (each
    once). Raises ValueError naming the unknown ids (or the domain that ships no tasks)."""
    if isinstance(ids, str) and ids != "all":
        raise ValueError(f"task ids: expected a list of ids or 'all', got {ids!r}")
    chosen = list(shipped_tasks(domain)) if ids == "all" else list(dict.fromkeys(ids))
    problem = unknown_tasks(domain, chosen)
    if problem is not None:
        raise ValueError(problem)
    return _checked([replace(base, domain=domain, task=task, scenario=None) for task in chosen])


def _domain_scenarios(domain: str) -> list[str]:
    try:
        return list(list_scenarios(load_domain(domain).scenarios_dir))
    except UnknownDomain as exc:
        raise ValueError(str(exc.args[0])) from exc


def scenario_specs(domain: str | None, names: Sequence[str] | Literal["all"],
                   base: SessionSpec) -> list[SessionSpec]:
    """One spec per scenario. With a domain: "all" its scenarios by name, or the names given. With domain None:
    every domain's (domains by name, then scenarios by name), and a given name is `domain/name` or a name only
    one domain has. Raises ValueError naming the unknown (or ambiguous) names."""
    if isinstance(names, str) and names != "all":
        raise ValueError(f"scenario names: expected a list of names or 'all', got {names!r}")
    domains = list(DOMAINS) if domain is None else [domain]
    available = [(d, name) for d in domains for name in _domain_scenarios(d)]
    if names == "all":
        chosen = available
    else:
        chosen, unknown, ambiguous = [], [], []
        for wanted in dict.fromkeys(names):
            where, _, name = wanted.rpartition("/") if domain is None else (domain, "/", wanted)
            matches = [(d, n) for d, n in available if n == name and (not where or d == where)]
            if not matches:
                unknown.append(wanted)
            elif len(matches) > 1:
                ambiguous.append(f"{wanted} (in {', '.join(d for d, _ in matches)})")
            else:
                chosen.append(matches[0])
        if unknown or ambiguous:
            scope = domain or "any domain"
            parts = [f"unknown scenario(s) for {scope}: {', '.join(unknown)}"] if unknown else []
            parts += [f"ambiguous scenario(s), name the domain as domain/name: {', '.join(ambiguous)}"] \
                if ambiguous else []
            raise ValueError("; ".join(parts))
    return _checked([replace(base, domain=d, scenario=name, task=None, user_model=None) for d, name in chosen])
