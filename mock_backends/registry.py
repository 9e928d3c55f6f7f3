"""Open a domain's mock backend on a per-session database file, from seed data or a given source."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mock_backends.base import SQLiteToolBackend
from mock_backends.retail import RetailBackend, load_seed


class BackendSourceError(ValueError):
    """The data source given for a backend cannot be used (missing, wrong format, wrong domain)."""


_BACKENDS: dict[str, tuple[type[SQLiteToolBackend], Callable[[], dict[str, Any]]]] = {
    "retail": (RetailBackend, load_seed),
}


def backend_class(domain: str) -> type[SQLiteToolBackend]:
    if domain not in _BACKENDS:
        raise BackendSourceError(f"no mock backend for domain {domain!r}")
    return _BACKENDS[domain][0]


async def open_backend(domain: str, db_path: Path, source: Path | None = None) -> SQLiteToolBackend:
    """A fresh session database at `db_path`.

    `source` may be a tau2-format `db.json` (loaded through the domain's models) or a `.sqlite` file made
    by an earlier session (copied, so the original is never modified). Default: the shipped seed data.
    """
    if domain not in _BACKENDS:
        raise BackendSourceError(f"no mock backend for domain {domain!r}")
    cls, seed = _BACKENDS[domain]
    if source is None:
        return await cls.create(db_path, seed())
    if not source.is_file():
        raise BackendSourceError(f"no such database file: {source}")
    if source.suffix in (".sqlite", ".db", ".sqlite3"):
        if source.resolve() != db_path.resolve():
            shutil.copyfile(source, db_path)
        return await cls.attach(db_path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BackendSourceError(f"{source}: not a JSON database ({exc})") from exc
    try:
        # `create` normalises the raw data through the domain's models exactly once.
        return await cls.create(db_path, data)
    except (ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise BackendSourceError(f"{source}: not a tau2 {domain} database: {str(exc).splitlines()[0]}") from exc
