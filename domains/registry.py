"""Domains by name. Imported lazily so listing domains does not load every predicate module."""

from __future__ import annotations

import importlib

from core.domain import Domain

DOMAINS = ("retail",)


class UnknownDomain(KeyError):
    pass


def load_domain(name: str) -> Domain:
    if name not in DOMAINS:
        raise UnknownDomain(f"unknown domain {name!r}; available: {', '.join(DOMAINS)}")
    module = importlib.import_module(f"domains.{name}")
    domain: Domain = module.DOMAIN
    return domain
