"""Open a domain's mock backend on a per-session database file, from seed data or a given source.

Each `mock_backends/<domain>/` package exports `BACKEND` (its SQLiteToolBackend subclass) and
`load_seed()`; they are discovered by name, so a new domain needs no edit here.
"""

from __future__ import annotations

import importlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.private_files import sqlite_file
from mock_backends.base import SQLiteToolBackend
from mock_backends.store import StoreError, disk_full_error


class BackendSourceError(ValueError):
    """The data source given for a backend cannot be used (missing, wrong format, wrong domain)."""


def _parts(domain: str) -> tuple[type[SQLiteToolBackend], Callable[[], Any]]:
    try:
        module = importlib.import_module(f"mock_backends.{domain}")
    except ModuleNotFoundError as exc:
        if exc.name == f"mock_backends.{domain}":
            raise BackendSourceError(f"no mock backend for domain {domain!r}") from exc
        raise
    return module.BACKEND, module.load_seed


def backend_class(domain: str) -> type[SQLiteToolBackend]:
    return _parts(domain)[0]


def _copy_sqlite(source: Path, target: Path) -> None:
    """Copy with SQLite's backup API, not byte by byte: a source in WAL mode keeps its latest commits in
    its -wal file, which a plain file copy would miss. The source is opened read-only."""
    try:
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise BackendSourceError(f"{source}: cannot open it as SQLite ({exc})") from exc
    try:
        sqlite_file(target)  # 0600 before SQLite opens it: its -wal and -shm files take its mode
        dest = sqlite3.connect(str(target))
        try:
            src.backup(dest)
        finally:
            dest.close()
    except sqlite3.DatabaseError as exc:
        target.unlink(missing_ok=True)
        raise disk_full_error(target, exc) or BackendSourceError(f"{source}: not a usable SQLite database ({exc})") \
            from exc
    finally:
        src.close()


async def open_backend(domain: str, db_path: Path, source: Path | None = None) -> SQLiteToolBackend:
    """A fresh session database at `db_path`.

    `source` may be data in the domain's native format (a tau2 `db.json`, a folder of JSON files, as the
    domain's `read_source` decides; loaded through the domain's models) or a
    `.sqlite` file made by an earlier session (copied, so the original is never modified). Default: the
    shipped seed data.
    """
    cls, seed = _parts(domain)
    if source is None:
        return await cls.create(db_path, seed())
    if not source.exists():
        raise BackendSourceError(f"no such database file: {source}")
    if source.is_file() and source.suffix in (".sqlite", ".db", ".sqlite3"):
        if source.resolve() != db_path.resolve():
            _copy_sqlite(source, db_path)
        try:
            return await cls.attach(db_path)
        except StoreError as exc:
            raise BackendSourceError(f"{source}: {exc.reason} (a {domain} session database was expected)") from exc
    try:
        data = cls.read_source(source)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, OSError) as exc:
        raise BackendSourceError(f"{source}: cannot read it as a {domain} database ({exc})") from exc
    try:
        # `create` normalises the raw data through the domain's models exactly once.
        return await cls.create(db_path, data)
    except (ValidationError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BackendSourceError(f"{source}: not a tau2 {domain} database: {str(exc).splitlines()[0]}") from exc
