"""An async JSON document store over SQLite, shared by every domain's mock backend.

Why documents and not a relational schema: tau2-bench's databases are pydantic trees keyed by id, and
hash parity with tau2 needs the exact same tree back. Storing each top-level record (a user, an order)
as one JSON document keeps the data model in the domain's pydantic classes, keeps the store generic,
and makes a tool call one primary-key lookup.

Why snapshots are an undo log: a session needs cheap "time travel" (reset to the start, try a write,
roll back) on databases of thousands of documents. Copying the database costs O(size); the undo log
filled by triggers costs O(changes since the snapshot), so restore stays fast however big the data is.
The log and its triggers live in the connection's TEMP schema: they never bloat the session file and
`backup_to` copies only the data.

Why WAL with synchronous=NORMAL: a process killed mid-write (kill -9, a crash, the OOM killer) must leave a
database that opens, passes `PRAGMA integrity_check` and answers correctly. With the rollback journal in
memory and no syncs (the old setting) 331 kills gave one corrupted index. In WAL mode a commit is one append
to the -wal file, with no fsync at NORMAL: after a process crash every committed transaction is there, a
half-written one is ignored, and a write costs about what it did. Only a power cut may lose the last
commits, never the file's consistency.

Why a full disk is named as such: SQLite reports a write the disk cannot take as "database or disk is full" or
just "disk I/O error", which read as a damaged database ("not a usable SQLite database (disk I/O error)") when
the disk is the cause. Every writing operation here turns such an error into `DiskFull` ("no space left on
device while writing …/db.sqlite") when the disk confirms it (`core.disk_full.disk_cause`).

Why only built-in SQL in the schema: the file is the session's record, and an operator opens it with the
stock `sqlite3` shell or any other tool. An expression index over a Python function (the old
`ledger_lower()`) makes every such tool fail, even `PRAGMA integrity_check`. The case-insensitive index is
`lower(replace(x, 'K', 'k'))`, which equals Python's `str.lower` whenever the result is ASCII (the
KELVIN SIGN is the one non-ASCII character Python lowers to ASCII); a non-ASCII search text falls back to a
scan with Python's lower, registered on the connection but never stored in the schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import itertools
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite

from core.disk_full import DiskFull, disk_cause, is_disk_full
from core.private_files import sqlite_file

JSON = Any
Doc = dict[str, Any]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# `$.a.b` or `$.a."any label"`: everything the domains need, nothing that could break out of a literal.
_PATH = re.compile(r'^\$(\.([A-Za-z_][A-Za-z0-9_ ]*|"[^"\\]*"))+$')
_LOWER = "ledger_lower"  # Python's str.lower for queries only: never in the schema (see the module doc)
_KELVIN = "char(8490)"
_COLUMNS = ("key", "ord", "doc")
_STORE_IDS = itertools.count(1)


def _lower(value: object) -> object:
    # Python's str.lower, not SQLite's ASCII-only lower(): tau2 matches with Python semantics.
    return value.lower() if isinstance(value, str) else value


def _encode(doc: Mapping[str, JSON]) -> str:
    # allow_nan=False: a document never holds NaN/Infinity (newer SQLite would store and index it; the
    # caller gets a ValueError, which a tool call reports as a tool error and `--db` as a bad source).
    try:
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise NonFiniteNumber("a number is not finite (NaN or Infinity) and cannot be stored") from None


class NonFiniteNumber(ValueError):
    """A document holding NaN or Infinity: refused before it reaches SQLite."""


def _quote_path(path: str) -> str:
    if not _PATH.match(path):
        raise ValueError(f"unsupported JSON path {path!r}")
    return "'" + path.replace("'", "''") + "'"


def _extract(path: str, ignore_case: bool = False) -> str:
    """The SQL expression for a document field. Index and query use this one function, because
    SQLite only uses an expression index when the query spells the expression identically."""
    expr = f"json_extract(doc, {_quote_path(path)})"
    return f"lower(replace({expr}, {_KELVIN}, 'k'))" if ignore_case else expr


_DISK_CODES = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN})


def disk_full_error(path: Path | str, exc: BaseException) -> DiskFull | None:
    """`exc`, raised by SQLite on the database at `path`, as the full disk it was; None when it was not."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.Error) or str(path) == ":memory:" or not isinstance(code, int) \
            or code & 0xFF not in _DISK_CODES:
        return None
    target = Path(path)
    cause = disk_cause(target.parent, [Path(f"{target}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")])
    if cause is None and code & 0xFF == sqlite3.SQLITE_FULL:
        cause = errno.ENOSPC  # "database or disk is full", and no page limit is ever set here: the disk
    return None if cause is None else DiskFull(target, cause, f"SQLite: {exc}")


@contextlib.contextmanager
def _naming_the_disk(path: Path | str) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        full = disk_full_error(path, exc)
        if full is None:
            raise
        raise full from exc


def _private_file(path: Path | str) -> None:
    """A new database file made 0600 before SQLite opens it (SQLite would make it 0644 less the umask, and its
    -wal, -shm and -journal files take its mode): a session's data is its user's alone. Not for `:memory:`
    or a `file:` URI."""
    text = str(path)
    if text == ":memory:" or text.startswith("file:"):
        return
    try:
        sqlite_file(Path(path))
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(path, exc.errno or 0) from exc
        raise


class StoreError(ValueError):
    """A database file that cannot be used: not SQLite, damaged, or not this domain's. One-line message;
    `reason` is the message without the file's path (a caller that copied the file names the original)."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class Index:
    """A JSON field worth an index: lookups by email or zip would otherwise parse every document."""

    path: str
    ignore_case: bool = False


@dataclass(frozen=True)
class Collection:
    name: str
    indexes: tuple[Index, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    """A point in the undo log. Only meaningful for the store (and connection) that issued it."""

    store_id: int
    epoch: int
    seq: int


@dataclass
class _Sql:
    """Per-collection statements, built once so a call does no string work."""

    table: str
    get: str
    scan: str
    keys: str
    put: str
    upsert_exact: str
    load: str
    delete: str
    count: str
    ddl: list[str] = field(default_factory=list)


def _collection_sql(spec: Collection) -> _Sql:
    t = f'main."{spec.name}"'
    ddl = [
        f"CREATE TABLE IF NOT EXISTS {t} (key TEXT PRIMARY KEY, ord INTEGER NOT NULL, doc TEXT NOT NULL)",
        f'CREATE INDEX IF NOT EXISTS main."{spec.name}__ord" ON "{spec.name}"(ord)',
    ]
    for number, index in enumerate(spec.indexes):
        ddl.append(
            f'CREATE INDEX IF NOT EXISTS main."{spec.name}__ix{number}" '
            f'ON "{spec.name}"({_extract(index.path, index.ignore_case)})'
        )
    lit = "'" + spec.name + "'"
    ddl += [
        # Undo entries hold the row as it was before the change; doc NULL means "did not exist".
        f'CREATE TEMP TRIGGER IF NOT EXISTS "{spec.name}__undo_ins" AFTER INSERT ON {t} BEGIN '
        f"INSERT INTO _undo(coll, key, ord, doc) VALUES ({lit}, NEW.key, NULL, NULL); END",
        f'CREATE TEMP TRIGGER IF NOT EXISTS "{spec.name}__undo_upd" AFTER UPDATE ON {t} BEGIN '
        f"INSERT INTO _undo(coll, key, ord, doc) VALUES ({lit}, OLD.key, OLD.ord, OLD.doc); "
        f"INSERT INTO _undo(coll, key, ord, doc) SELECT {lit}, NEW.key, NULL, NULL "
        f"WHERE NEW.key IS NOT OLD.key; END",
        f'CREATE TEMP TRIGGER IF NOT EXISTS "{spec.name}__undo_del" AFTER DELETE ON {t} BEGIN '
        f"INSERT INTO _undo(coll, key, ord, doc) VALUES ({lit}, OLD.key, OLD.ord, OLD.doc); END",
    ]
    return _Sql(
        table=t,
        get=f"SELECT doc FROM {t} WHERE key = ?",
        scan=f"SELECT key, doc FROM {t} ORDER BY ord",
        keys=f"SELECT key FROM {t} ORDER BY ord",
        put=(
            f"INSERT INTO {t}(key, ord, doc) VALUES (?, (SELECT coalesce(max(ord), 0) + 1 FROM {t}), ?) "
            "ON CONFLICT(key) DO UPDATE SET doc = excluded.doc"
        ),
        upsert_exact=(
            f"INSERT INTO {t}(key, ord, doc) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET ord = excluded.ord, doc = excluded.doc"
        ),
        # Loading an existing key replaces its document but keeps its place.
        load=f"INSERT INTO {t}(key, ord, doc) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET doc = excluded.doc",
        delete=f"DELETE FROM {t} WHERE key = ?",
        count=f"SELECT count(*) FROM {t}",
        ddl=ddl,
    )


async def _check_existing(db: aiosqlite.Connection, path: Path | str, specs: Sequence[Collection]) -> None:
    """Refuse a file that is not SQLite, is damaged, or holds another schema, before anything writes to it."""
    try:
        rows = list(await db.execute_fetchall("PRAGMA integrity_check"))
    except sqlite3.DatabaseError as exc:
        raise disk_full_error(path, exc) or StoreError(path, f"not a usable SQLite database ({exc})") from exc
    verdict = "; ".join(str(row[0]) for row in rows[:3])
    if verdict != "ok":
        raise StoreError(path, f"the database is damaged (integrity check: {verdict})")
    tables = {str(name) for (name,) in await db.execute_fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [spec.name for spec in specs if spec.name not in tables]
    if missing:
        what = "an empty database" if not tables else f"tables {', '.join(sorted(tables)[:6])}"
        raise StoreError(path, f"not a database of this domain (it has {what}; missing {', '.join(missing)})")
    for spec in specs:
        columns = tuple(str(row[1]) for row in await db.execute_fetchall(f'PRAGMA table_info("{spec.name}")'))
        if columns != _COLUMNS:
            raise StoreError(path, f"table {spec.name} has columns {', '.join(columns)}, expected "
                                   f"{', '.join(_COLUMNS)}")


async def _drop_legacy_indexes(db: aiosqlite.Connection) -> None:
    """Files written before the built-in-SQL indexes: drop the `ledger_lower()` ones (recreated below)."""
    rows = await db.execute_fetchall(
        f"SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '%{_LOWER}(%'")
    for (name,) in rows:
        await db.execute(f'DROP INDEX main."{name}"')


class Transaction:
    """Write access, valid only inside `store.transaction()`; reads see the transaction's own writes."""

    def __init__(self, store: DocumentStore) -> None:
        self._store = store
        self.active = True

    def _check(self) -> DocumentStore:
        if not self.active:
            raise RuntimeError("transaction is finished")
        return self._store

    async def get(self, collection: str, key: str) -> Doc | None:
        store = self._check()
        return await store._get(collection, key)

    async def put(self, collection: str, key: str, doc: Mapping[str, JSON]) -> None:
        """Insert or replace. A new key goes to the end of the collection's order; an existing key keeps
        its place, as assigning to an existing dict key does in tau2."""
        store = self._check()
        await store._db.execute(store._sql(collection).put, (key, _encode(doc)))

    async def delete(self, collection: str, key: str) -> bool:
        store = self._check()
        cursor = await store._db.execute(store._sql(collection).delete, (key,))
        return cursor.rowcount > 0


class DocumentStore:
    """Collections of JSON documents in one SQLite file. Reads from any task; writes only through
    `transaction()`, which is all-or-nothing so a failing write tool leaves no trace."""

    def __init__(self, db: aiosqlite.Connection, specs: Sequence[Collection], path: Path | str = ":memory:") -> None:
        self._db = db
        self.path = path  # the file, named when the disk under it is full
        self._id = next(_STORE_IDS)
        self._specs = {spec.name: spec for spec in specs}
        self._stmts = {spec.name: _collection_sql(spec) for spec in specs}
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._depth = 0
        # Restore targets in order; a snapshot is valid while no later restore went below it.
        self._restores: list[int] = []

    # ----------------------------------------------------------------------------------- lifecycle

    @classmethod
    async def open(cls, path: Path | str, collections: Sequence[str | Collection], *,
                   existing: bool = False) -> DocumentStore:
        """Open (creating when needed) the store at `path`. With `existing=True` the file must already be a
        sound database of exactly these collections: its integrity and schema are checked first and a bad
        file raises StoreError (a session's own db.sqlite, or one given with `--db`)."""
        specs = [c if isinstance(c, Collection) else Collection(c) for c in collections]
        for spec in specs:
            if not _NAME.match(spec.name) or spec.name.lower().startswith("sqlite"):
                raise ValueError(f"invalid collection name {spec.name!r}")
        if len({s.name for s in specs}) != len(specs):
            raise ValueError("duplicate collection names")
        if not existing:
            _private_file(path)
        with _naming_the_disk(path):
            db = await aiosqlite.connect(str(path), isolation_level=None)
        try:
            await db.create_function(_LOWER, 1, _lower, deterministic=True)
            if existing:
                await _check_existing(db, path, specs)
            # Crash-safe (see the module doc): WAL, synced at checkpoints only.
            for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "temp_store = MEMORY",
                           "cache_size = -16000", "foreign_keys = OFF"):
                await db.execute(f"PRAGMA {pragma}")
            await _drop_legacy_indexes(db)
            script = [
                "CREATE TEMP TABLE IF NOT EXISTS _undo "
                "(seq INTEGER PRIMARY KEY, coll TEXT NOT NULL, key TEXT NOT NULL, ord INTEGER, doc TEXT)"
            ]
            for spec in specs:
                script += _collection_sql(spec).ddl
            await db.executescript("BEGIN;\n" + ";\n".join(script) + ";\nCOMMIT;")
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                await db.close()
            raise disk_full_error(path, exc) or StoreError(path, f"not a usable SQLite database ({exc})") from exc
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await db.close()
            raise
        return cls(db, specs, path)

    async def close(self) -> None:
        with _naming_the_disk(self.path):
            await self._db.close()

    async def __aenter__(self) -> DocumentStore:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    @property
    def collections(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def _sql(self, collection: str) -> _Sql:
        try:
            return self._stmts[collection]
        except KeyError:
            raise KeyError(f"unknown collection {collection!r}") from None

    def _guard(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Other tasks wait while a transaction is open (the connection is shared, so they would
        otherwise read its uncommitted state); the owning task reads through."""
        owner = self._owner
        if owner is not None and owner is asyncio.current_task():
            return contextlib.nullcontext()
        return self._lock

    def _in_transaction(self) -> bool:
        return self._owner is not None and self._owner is asyncio.current_task()

    def _refuse_in_transaction(self, operation: str) -> None:
        # These take the store lock, which the transaction's own task already holds: fail, don't hang.
        if self._in_transaction():
            raise RuntimeError(f"{operation} is not allowed inside a transaction")

    # ----------------------------------------------------------------------------------- reads

    async def _get(self, collection: str, key: str) -> Doc | None:
        rows = await self._db.execute_fetchall(self._sql(collection).get, (key,))
        for (doc,) in rows:
            loaded: Doc = json.loads(doc)
            return loaded
        return None

    async def get(self, collection: str, key: str) -> Doc | None:
        async with self._guard():
            return await self._get(collection, key)

    async def scan(self, collection: str) -> list[tuple[str, Doc]]:
        async with self._guard():
            rows = await self._db.execute_fetchall(self._sql(collection).scan)
        return [(key, json.loads(doc)) for key, doc in rows]

    async def keys(self, collection: str) -> list[str]:
        async with self._guard():
            rows = await self._db.execute_fetchall(self._sql(collection).keys)
        return [key for (key,) in rows]

    async def count(self, collection: str) -> int:
        async with self._guard():
            rows = list(await self._db.execute_fetchall(self._sql(collection).count))
        return int(rows[0][0])

    def _where(self, equals: Mapping[str, JSON], iequals: Mapping[str, str],
               exists: Iterable[str]) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for path, value in equals.items():
            if value is None:
                clauses.append(f"{_extract(path)} IS NULL")
            else:
                clauses.append(f"{_extract(path)} = ?")
                params.append(int(value) if isinstance(value, bool) else value)
        for path, text in iequals.items():
            wanted = text.lower()
            if wanted.isascii():  # the index gives exactly Python's answer (see the module doc)
                clauses.append(f"{_extract(path, ignore_case=True)} = ? "
                               f"AND json_type(doc, {_quote_path(path)}) = 'text'")
            else:
                clauses.append(f"{_LOWER}({_extract(path)}) = ?")
            params.append(wanted)
        for path in exists:
            clauses.append(f"json_type(doc, {_quote_path(path)}) IS NOT NULL")
        return (" AND ".join(clauses) or "1"), params

    async def find(self, collection: str, *, equals: Mapping[str, JSON] | None = None,
                   iequals: Mapping[str, str] | None = None, exists: Iterable[str] = (),
                   limit: int | None = None) -> list[str]:
        """Keys of documents whose fields match, in insertion order (first match = tau2's first hit
        when it iterates a dict). `iequals` compares with Python's str.lower on both sides."""
        where, params = self._where(equals or {}, iequals or {}, exists)
        sql = f'SELECT key FROM {self._sql(collection).table} WHERE {where} ORDER BY ord'
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        async with self._guard():
            rows = await self._db.execute_fetchall(sql, params)
        return [key for (key,) in rows]

    async def find_docs(self, collection: str, *, equals: Mapping[str, JSON] | None = None,
                        iequals: Mapping[str, str] | None = None, exists: Iterable[str] = (),
                        limit: int | None = None) -> list[tuple[str, Doc]]:
        """Like `find`, returning the documents too (one query, so the pair is consistent)."""
        where, params = self._where(equals or {}, iequals or {}, exists)
        sql = f'SELECT key, doc FROM {self._sql(collection).table} WHERE {where} ORDER BY ord'
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        async with self._guard():
            rows = await self._db.execute_fetchall(sql, params)
        return [(key, json.loads(doc)) for key, doc in rows]

    async def values(self, collection: str, *paths: str) -> list[tuple[JSON, ...]]:
        """Selected fields of every document, in insertion order, without parsing whole documents."""
        if not paths:
            raise ValueError("values() needs at least one path")
        columns = ", ".join(_extract(path) for path in paths)
        sql = f'SELECT {columns} FROM {self._sql(collection).table} ORDER BY ord'
        async with self._guard():
            rows = await self._db.execute_fetchall(sql)
        return [tuple(row) for row in rows]

    # ----------------------------------------------------------------------------------- writes

    async def _commit(self) -> None:
        """COMMIT the open transaction; if that fails, roll it back.

        A cancellation that lands here is not a failure: the COMMIT is on the database's thread already and
        runs whatever happens here. A ROLLBACK queued behind it would fail ("no transaction is active") and
        that error would replace the cancellation: the caller would take a committed write for a failed one
        ("nothing was changed") and carry on instead of stopping (a console then waited forever on quit).
        """
        try:
            await self._db.execute("COMMIT")
        except asyncio.CancelledError:
            raise
        except BaseException:
            if self._db.in_transaction:
                await self._db.execute("ROLLBACK")
            raise

    async def _commit_restoring(self, target: int) -> None:
        """COMMIT a load (target -1) or a restore (to `target`), and record it, also when cancelled while
        committing: the COMMIT still runs, and older snapshots are no longer valid either way."""
        try:
            await self._commit()
        finally:
            self._restores.append(target)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """All-or-nothing writes: any exception inside rolls everything back and propagates.
        Nested use in the same task becomes a SAVEPOINT, so a helper may open its own transaction."""
        if self._in_transaction():
            name = f"sp{self._depth}"
            self._depth += 1
            inner = Transaction(self)
            try:
                await self._db.execute(f"SAVEPOINT {name}")
                try:
                    yield inner
                except BaseException:
                    await self._db.execute(f"ROLLBACK TO {name}")
                    await self._db.execute(f"RELEASE {name}")
                    raise
                await self._db.execute(f"RELEASE {name}")
            finally:
                inner.active = False
                self._depth -= 1
            return
        async with self._lock:
            self._owner = asyncio.current_task()
            tx = Transaction(self)
            try:
                with _naming_the_disk(self.path):
                    await self._db.execute("BEGIN IMMEDIATE")
                    try:
                        yield tx
                    except BaseException:
                        await self._db.execute("ROLLBACK")
                        raise
                    await self._commit()
            finally:
                tx.active = False
                self._owner = None

    async def load(self, data: Mapping[str, Mapping[str, JSON]]) -> None:
        """Bulk-insert documents in one transaction. Loading sets the baseline: it is not undoable, and
        snapshots taken before it become invalid (they could not account for the loaded documents)."""
        unknown = set(data) - set(self._specs)
        if unknown:
            raise KeyError(f"unknown collections {sorted(unknown)}")
        self._refuse_in_transaction("load()")
        with _naming_the_disk(self.path):
            async with self._lock:
                await self._db.execute("BEGIN IMMEDIATE")
                try:
                    for name, docs in data.items():
                        rows = await self._db.execute_fetchall(
                            f"SELECT coalesce(max(ord), 0) FROM {self._stmts[name].table}")
                        start = int(list(rows)[0][0]) + 1
                        await self._db.executemany(
                            self._stmts[name].load,
                            [(key, start + n, _encode(doc)) for n, (key, doc) in enumerate(docs.items())],
                        )
                    await self._db.execute("DELETE FROM temp._undo")
                except BaseException:
                    await self._db.execute("ROLLBACK")
                    raise
                await self._commit_restoring(-1)

    # ----------------------------------------------------------------------------------- time travel

    async def snapshot(self) -> Snapshot:
        """O(1): the current position in the undo log."""
        self._refuse_in_transaction("snapshot()")
        async with self._lock:
            rows = list(await self._db.execute_fetchall("SELECT coalesce(max(seq), 0) FROM temp._undo"))
        return Snapshot(store_id=self._id, epoch=len(self._restores), seq=int(rows[0][0]))

    def _check_snapshot(self, snapshot: Snapshot) -> None:
        if snapshot.store_id != self._id:
            raise ValueError("snapshot belongs to another store")
        if snapshot.epoch > len(self._restores) or any(
            target < snapshot.seq for target in self._restores[snapshot.epoch:]
        ):
            raise ValueError("snapshot is no longer valid (an earlier state was restored or loaded since)")

    async def restore(self, snapshot: Snapshot) -> None:
        """Undo every change made after `snapshot`, in one transaction. Cost is proportional to the
        number of changes since the snapshot, not to the size of the database."""
        self._refuse_in_transaction("restore()")
        self._check_snapshot(snapshot)
        with _naming_the_disk(self.path):
            async with self._lock:
                await self._db.execute("BEGIN IMMEDIATE")
                try:
                    rows = await self._db.execute_fetchall(
                        "SELECT coll, key, ord, doc FROM temp._undo WHERE seq > ? ORDER BY seq", (snapshot.seq,)
                    )
                    # The earliest entry per key after the snapshot holds that key's state at the snapshot.
                    first: dict[tuple[str, str], tuple[int | None, str | None]] = {}
                    for coll, key, ord_, doc in rows:
                        first.setdefault((coll, key), (ord_, doc))
                    deletes: dict[str, list[tuple[str]]] = {}
                    upserts: dict[str, list[tuple[str, int, str]]] = {}
                    for (coll, key), (ord_, doc) in first.items():
                        if doc is None or ord_ is None:
                            deletes.setdefault(coll, []).append((key,))
                        else:
                            upserts.setdefault(coll, []).append((key, ord_, doc))
                    for coll, keys in deletes.items():
                        await self._db.executemany(self._stmts[coll].delete, keys)
                    for coll, docs in upserts.items():
                        await self._db.executemany(self._stmts[coll].upsert_exact, docs)
                    # Also drops the entries the restore itself just logged.
                    await self._db.execute("DELETE FROM temp._undo WHERE seq > ?", (snapshot.seq,))
                except BaseException:
                    await self._db.execute("ROLLBACK")
                    raise
                await self._commit_restoring(snapshot.seq)

    async def discard_history(self) -> None:
        """Forget the undo log (memory) and invalidate every snapshot: for long runs that never go back."""
        self._refuse_in_transaction("discard_history()")
        async with self._lock:
            await self._db.execute("DELETE FROM temp._undo")
            self._restores.append(-1)

    # ----------------------------------------------------------------------------------- export

    async def export(self) -> dict[str, dict[str, JSON]]:
        async with self._guard():
            result: dict[str, dict[str, JSON]] = {}
            for name, stmts in self._stmts.items():
                rows = await self._db.execute_fetchall(stmts.scan)
                result[name] = {key: json.loads(doc) for key, doc in rows}
        return result

    async def state_hash(self) -> str:
        """tau2-bench's DB hash recipe, so equal states give equal hashes across the two systems."""
        text = json.dumps(await self.export(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    async def backup_to(self, path: Path | str) -> None:
        """Copy the data (not the undo log) to a new file with SQLite's online backup: how a
        per-session database is cloned from a prepared template in milliseconds."""
        self._refuse_in_transaction("backup_to()")
        target = Path(path)
        if target.exists():
            raise FileExistsError(str(target))
        _private_file(target)
        with _naming_the_disk(target):
            dest = sqlite3.connect(str(target), check_same_thread=False)
            try:
                async with self._lock:
                    await self._db.backup(dest)
            finally:
                dest.close()
