"""Which version of a domain's rules is live: the predicates, a hash of their source, when they loaded.

The workbench's reload produces a new LiveRules; the App keeps the latest per domain, so every later
session of that console runs them (not only the session that was open), and each session's trace
records the version it ran.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from dataclasses import dataclass
from datetime import UTC, datetime

from core.domain import Domain
from core.gate import Predicate


@dataclass(frozen=True)
class LiveRules:
    domain: str
    predicates: tuple[Predicate, ...]
    version: str  # first 12 hex digits of the sha256 of the predicates module's source
    loaded_at: str  # UTC, ISO 8601; "" for the rules the domain shipped with

    def describe(self) -> str:
        when = f", reloaded {self.loaded_at}" if self.loaded_at else ", as shipped"
        return f"rules {self.version}{when}"


def _source_hash(module_name: str) -> str:
    module = sys.modules.get(module_name)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        source = ""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]


def shipped_rules(domain: Domain) -> LiveRules:
    """The rules the domain was loaded with, versioned by their source file."""
    return LiveRules(domain.name, tuple(domain.predicates), _source_hash(f"domains.{domain.name}.predicates"), "")


def reload_rules(domain_name: str) -> LiveRules:
    """Re-import the domain's predicates module from source. Raises whatever the edited file raises."""
    module_name = f"domains.{domain_name}.predicates"
    module = sys.modules.get(module_name)
    module = importlib.import_module(module_name) if module is None else importlib.reload(module)
    predicates: tuple[Predicate, ...] = tuple(module.PREDICATES)
    return LiveRules(domain_name, predicates, _source_hash(module_name),
                     datetime.now(UTC).isoformat(timespec="seconds"))
