"""Crash-safe session databases: they survive kill -9 and open in stock SQLite tooling.

A child process writes in a loop through the real retail backend (the zip index that was found corrupted
is updated by every write) and is killed with SIGKILL at random moments, at least 100 times in `make test` and
2000 in `make fuzz` (the Hypothesis profile sets the budget: tests/support/budget.py); after each kill the file
must pass `PRAGMA integrity_check` on a plain `sqlite3` connection (no custom function registered), still be
in WAL mode, and reopen through the backend, which runs its own integrity and schema check. With the old
`journal_mode=MEMORY, synchronous=OFF`, 331 kills gave one corrupted index: the journal mode is checked on
every kill, so the short run catches that setting coming back too.

Affordable: the child is forked (no interpreter start-up per kill), signals once it has written, and is killed
0-30 ms later. The test counts kills, never seconds: a busy machine makes it take longer, never fail (each
wait is bounded on its own, for a child that never writes).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from mock_backends.registry import open_backend
from mock_backends.retail import RetailBackend
from tests.support.budget import budget
from tests.support.crash_writer import USER, write_forever

MIN_KILLS = int(os.environ.get("CRASH_KILLS", budget(100, 2000)))

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs fork and SIGKILL")


def _check_plain(path: Path) -> str:
    with sqlite3.connect(path) as db:
        result = db.execute("PRAGMA integrity_check").fetchall()
        journal = db.execute("PRAGMA journal_mode").fetchone()
        row = db.execute("SELECT json_extract(doc, '$.address.zip') FROM users WHERE key = ?", (USER,)).fetchone()
        zip_code = str(row[0])
        hits = db.execute("SELECT key FROM users WHERE json_extract(doc, '$.address.zip') = ?",
                          (zip_code,)).fetchall()
    assert result == [("ok",)], result
    assert journal == ("wal",), journal  # the crash-safe mode the store sets (mock_backends/store.py)
    assert (USER,) in hits  # the index agrees with the row
    return zip_code


async def _reopen(path: Path, zip_code: str) -> None:
    backend = await RetailBackend.attach(path)  # integrity + schema check on open
    try:
        found = await backend.call("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia",
                                                                "zip": zip_code})
        assert found == USER
    finally:
        await backend.close()


@pytest.mark.fuzz
def test_a_writer_killed_at_random_points_never_corrupts_the_database(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"

    async def create() -> None:
        backend = await open_backend("retail", path)
        await backend.close()

    asyncio.run(create())
    original = _check_plain(path)
    ctx = multiprocessing.get_context("fork")  # no interpreter start-up per kill
    rng = random.Random(11)
    kills = 0
    zips = {original}
    while kills < MIN_KILLS:
        writing = ctx.Event()
        child = ctx.Process(target=write_forever, args=(str(path), kills, writing), daemon=True)
        child.start()
        assert writing.wait(60), f"the writer never wrote (kill {kills}, exit {child.exitcode})"
        time.sleep(rng.uniform(0.0, 0.03))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        assert child.exitcode == -signal.SIGKILL or child.exitcode is not None
        kills += 1
        zips.add(_check_plain(path))
        if kills % 25 == 0:
            asyncio.run(_reopen(path, _check_plain(path)))
    assert len(zips) > 10, "the writer barely wrote: the kills did not land mid-write"
    asyncio.run(_reopen(path, _check_plain(path)))


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="no sqlite3 shell installed")
def test_the_stock_sqlite3_shell_opens_a_session_database(tmp_path: Path) -> None:
    """Before: `unknown function: ledger_lower()`, even for PRAGMA integrity_check."""
    path = tmp_path / "db.sqlite"

    async def create() -> None:
        backend = await open_backend("retail", path)
        await backend.call("find_user_id_by_email", {"email": "MIA.GARCIA@example.com"})
        await backend.close()

    asyncio.run(create())
    shell = subprocess.run(["sqlite3", str(path), "PRAGMA integrity_check; SELECT count(*) FROM users "
                            "WHERE lower(json_extract(doc, '$.email')) LIKE '%@%';"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[0] == "ok" and int(shell.stdout.splitlines()[1]) > 0


async def test_a_legacy_database_with_a_ledger_lower_index_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    backend = await open_backend("retail", path)
    await backend.close()
    with sqlite3.connect(path) as db:
        db.create_function("ledger_lower", 1, lambda v: v.lower() if isinstance(v, str) else v, deterministic=True)
        db.execute('DROP INDEX "users__ix0"')
        db.execute('CREATE INDEX "users__ix0" ON "users"(ledger_lower(json_extract(doc, \'$.email\')))')
    backend = await RetailBackend.attach(path)
    await backend.close()
    with sqlite3.connect(path) as db:  # plain connection: would fail on the old index
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'users__ix0'").fetchone()[0]
    assert "ledger_lower" not in sql


async def test_case_insensitive_lookup_keeps_pythons_semantics(tmp_path: Path) -> None:
    from mock_backends.store import Collection, DocumentStore, Index

    store = await DocumentStore.open(tmp_path / "s.sqlite", [Collection("u", (Index("$.e", ignore_case=True),))])
    try:
        await store.load({"u": {"a": {"e": "ÄBC@x.com"}, "b": {"e": "\u212aelvin@x.com"}, "c": {"e": 123},
                                "d": {"e": "Kelvin@X.com"}}})
        assert await store.find("u", iequals={"$.e": "äbc@X.com"}) == ["a"]
        assert await store.find("u", iequals={"$.e": "kelvin@x.com"}) == ["b", "d"]
        assert await store.find("u", iequals={"$.e": "123"}) == []
    finally:
        await store.close()
