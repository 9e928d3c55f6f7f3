"""Domains by name: every subpackage of `domains` that defines a `DOMAIN`. Discovered, so adding a domain
never means editing a shared list; imported lazily so listing names loads no predicate module."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from core.domain import Domain

DOMAINS: tuple[str, ...] = tuple(sorted(
    info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)]) if info.ispkg
))


class UnknownDomain(KeyError):
    pass


def load_domain(name: str) -> Domain:
    if name not in DOMAINS:
        raise UnknownDomain(f"unknown domain {name!r}; available: {', '.join(DOMAINS)}")
    module = importlib.import_module(f"domains.{name}")
    domain: Domain = module.DOMAIN
    return domain
