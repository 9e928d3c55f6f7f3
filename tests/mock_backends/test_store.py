"""DocumentStore: ordering, all-or-nothing transactions, undo-log snapshots, hashing, backup."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mock_backends.store import Collection, DocumentStore, Index

DATA: dict[str, dict[str, Any]] = {
    "users": {
        "u1": {"name": "Ann", "email": "Ann@Example.com", "zip": "10001", "tags": ["a"]},
        "u2": {"name": "Bob", "email": "bob@example.com", "zip": "10002", "tags": []},
        "u3": {"name": "Cy", "email": "cy@example.com", "zip": "10001", "tags": ["b"]},
    },
    "orders": {"o2": {"total": 2.5}, "o1": {"total": 1.0}},
}
SPECS = [Collection("users", (Index("$.email", ignore_case=True), Index("$.zip"))), Collection("orders")]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[DocumentStore]:
    async with await DocumentStore.open(tmp_path / "db.sqlite", SPECS) as opened:
        await opened.load(DATA)
        yield opened


def recipe_hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


async def test_load_get_scan_keep_insertion_order(store: DocumentStore) -> None:
    assert await store.get("users", "u2") == DATA["users"]["u2"]
    assert await store.get("users", "nope") is None
    assert await store.keys("orders") == ["o2", "o1"]
    assert [k for k, _ in await store.scan("users")] == ["u1", "u2", "u3"]
    assert await store.count("users") == 3
    assert await store.export() == DATA
    assert list((await store.export())["orders"]) == ["o2", "o1"]


async def test_load_existing_key_replaces_doc_but_keeps_place(store: DocumentStore) -> None:
    await store.load({"users": {"u1": {"name": "Ann 2"}, "u9": {"name": "Zed"}}})
    assert await store.keys("users") == ["u1", "u2", "u3", "u9"]
    assert await store.get("users", "u1") == {"name": "Ann 2"}


async def test_open_rejects_bad_names_and_unknown_collections(tmp_path: Path, store: DocumentStore) -> None:
    with pytest.raises(ValueError):
        await DocumentStore.open(tmp_path / "x.sqlite", ["bad-name"])
    with pytest.raises(ValueError):
        await DocumentStore.open(tmp_path / "x.sqlite", ["a", "a"])
    with pytest.raises(KeyError):
        await store.get("nope", "k")
    with pytest.raises(KeyError):
        await store.load({"nope": {}})


async def test_data_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite"
    async with await DocumentStore.open(path, SPECS) as first:
        await first.load(DATA)
        async with first.transaction() as tx:
            await tx.put("orders", "o3", {"total": 3.0})
    async with await DocumentStore.open(path, SPECS) as second:
        assert await second.keys("orders") == ["o2", "o1", "o3"]


async def test_transaction_commits_and_new_keys_go_last(store: DocumentStore) -> None:
    async with store.transaction() as tx:
        await tx.put("users", "u0", {"name": "New"})
        await tx.put("users", "u1", {"name": "Ann*"})
        assert await tx.get("users", "u1") == {"name": "Ann*"}
        assert await store.get("users", "u0") == {"name": "New"}  # the owning task reads its own writes
        assert await tx.delete("users", "u2") is True
        assert await tx.delete("users", "u2") is False
    assert await store.keys("users") == ["u1", "u3", "u0"]
    with pytest.raises(RuntimeError):
        await tx.put("users", "late", {})


async def test_exception_rolls_back_everything_and_reraises(store: DocumentStore) -> None:
    before = await store.state_hash()
    with pytest.raises(ZeroDivisionError):
        async with store.transaction() as tx:
            await tx.put("users", "u1", {"name": "changed"})
            await tx.delete("orders", "o1")
            await tx.put("orders", "o9", {"total": 9})
            _ = 1 / 0
    assert await store.state_hash() == before
    assert await store.export() == DATA


async def test_nested_transaction_is_a_savepoint(store: DocumentStore) -> None:
    async with store.transaction() as tx:
        await tx.put("orders", "outer", {"total": 1})
        with pytest.raises(ValueError):
            async with store.transaction() as inner:
                await inner.put("orders", "inner", {"total": 2})
                raise ValueError("inner fails")
        async with store.transaction() as inner:
            await inner.put("orders", "inner-ok", {"total": 3})
    assert await store.keys("orders") == ["o2", "o1", "outer", "inner-ok"]


async def test_other_tasks_do_not_see_uncommitted_writes(store: DocumentStore) -> None:
    async with store.transaction() as tx:
        await tx.put("users", "u1", {"name": "pending write"})
        reader = asyncio.create_task(store.get("users", "u1"))
        await asyncio.sleep(0.02)
        assert not reader.done()  # waits for the commit instead of reading half a write
    assert await reader == {"name": "pending write"}


async def test_find_and_values_use_fields(store: DocumentStore) -> None:
    assert await store.find("users", iequals={"$.email": "ANN@example.COM"}) == ["u1"]
    assert await store.find("users", equals={"$.zip": "10001"}) == ["u1", "u3"]
    assert await store.find("users", equals={"$.zip": "10001"}, limit=1) == ["u1"]
    assert await store.find("users", equals={"$.zip": 10001}) == []  # no type coercion, as in Python
    assert await store.find("users", exists=["$.tags"], equals={"$.name": "Bob"}) == ["u2"]
    assert await store.find("users", exists=['$."missing key"']) == []
    assert await store.find_docs("orders", equals={"$.total": 1.0}) == [("o1", {"total": 1.0})]
    assert await store.values("users", "$.name", "$.zip") == [("Ann", "10001"), ("Bob", "10002"),
                                                              ("Cy", "10001")]
    with pytest.raises(ValueError):
        await store.find("users", equals={"$.x') OR 1=1 --": 1})


async def test_field_lookups_use_the_declared_indexes(store: DocumentStore) -> None:
    plan = await store._db.execute_fetchall(
        "EXPLAIN QUERY PLAN SELECT key FROM main.\"users\" "
        "WHERE lower(replace(json_extract(doc, '$.email'), char(8490), 'k')) = ? ORDER BY ord", ("x",))
    assert any("users__ix0" in str(row) for row in plan)


async def test_restore_undoes_inserts_updates_and_deletes(store: DocumentStore) -> None:
    before = await store.state_hash()
    snap = await store.snapshot()
    async with store.transaction() as tx:
        await tx.put("users", "u9", {"name": "Inserted"})
        await tx.put("users", "u1", {"name": "Updated"})
        await tx.put("users", "u1", {"name": "Updated twice"})
        await tx.delete("users", "u2")
    async with store.transaction() as tx:
        await tx.put("users", "u2", {"name": "Re-inserted after delete"})
        await tx.delete("orders", "o2")
    await store.restore(snap)
    assert await store.export() == DATA
    assert await store.keys("users") == ["u1", "u2", "u3"]  # deleted rows come back in their place
    assert await store.state_hash() == before
    await store.restore(snap)  # restoring twice is a no-op
    assert await store.state_hash() == before


async def test_nested_snapshots(store: DocumentStore) -> None:
    s0 = await store.snapshot()
    async with store.transaction() as tx:
        await tx.put("orders", "a", {"step": 1})
    s1 = await store.snapshot()
    state1 = await store.export()
    async with store.transaction() as tx:
        await tx.put("orders", "b", {"step": 2})
        await tx.put("orders", "a", {"step": 2})
    s2 = await store.snapshot()
    async with store.transaction() as tx:
        await tx.delete("orders", "a")
    await store.restore(s2)
    assert await store.get("orders", "a") == {"step": 2}
    await store.restore(s1)
    assert await store.export() == state1
    with pytest.raises(ValueError):
        await store.restore(s2)  # a later state is gone once an earlier one was restored
    async with store.transaction() as tx:
        await tx.put("orders", "c", {"step": 3})
    s3 = await store.snapshot()
    await store.restore(s0)
    assert await store.export() == DATA
    for stale in (s1, s3):
        with pytest.raises(ValueError):
            await store.restore(stale)


async def test_snapshot_rules(store: DocumentStore, tmp_path: Path) -> None:
    snap = await store.snapshot()
    async with await DocumentStore.open(tmp_path / "other.sqlite", SPECS) as other:
        with pytest.raises(ValueError):
            await other.restore(snap)
    async with store.transaction():
        for refused in (store.snapshot(), store.restore(snap), store.load({}), store.discard_history(),
                        store.backup_to(tmp_path / "never.sqlite")):
            with pytest.raises(RuntimeError):
                await refused  # refused at once instead of waiting forever for the store lock
    await store.load({"orders": {"late": {}}})
    with pytest.raises(ValueError):
        await store.restore(snap)  # loading sets a new baseline
    after_load = await store.snapshot()
    await store.discard_history()
    with pytest.raises(ValueError):
        await store.restore(after_load)


async def test_state_hash_is_tau2_recipe_stable_and_tracks_writes(store: DocumentStore) -> None:
    first = await store.state_hash()
    assert first == recipe_hash(DATA)
    assert await store.state_hash() == first
    async with store.transaction() as tx:
        await tx.put("orders", "o1", {"total": 1})  # int vs float is a different state for tau2
    assert await store.state_hash() != first


async def test_backup_to_copies_data_only(store: DocumentStore, tmp_path: Path) -> None:
    async with store.transaction() as tx:
        await tx.put("orders", "o3", {"total": 3.0})
    target = tmp_path / "copy.sqlite"
    await store.backup_to(target)
    with pytest.raises(FileExistsError):
        await store.backup_to(target)
    async with await DocumentStore.open(target, SPECS) as copy:
        assert await copy.state_hash() == await store.state_hash()
        assert await copy.keys("orders") == ["o2", "o1", "o3"]
        snap = await copy.snapshot()
        assert snap.seq == 0  # the undo log is per connection, not part of the copy
        async with copy.transaction() as tx:
            await tx.delete("orders", "o3")
        assert await store.get("orders", "o3") == {"total": 3.0}


async def test_memory_database(tmp_path: Path) -> None:
    async with await DocumentStore.open(":memory:", ["things"]) as mem:
        await mem.load({"things": {"k": {"v": 1}}})
        snap = await mem.snapshot()
        async with mem.transaction() as tx:
            await tx.put("things", "k", {"v": 2})
        await mem.restore(snap)
        assert await mem.get("things", "k") == {"v": 1}



async def _write(store: DocumentStore) -> None:
    async with store.transaction() as tx:
        await tx.put("orders", "o7", {"total": 7})


async def _load(store: DocumentStore) -> None:
    await store.load({"orders": {"o7": {"total": 7}}})


COMMITTING = {"write": _write, "load": _load}


@pytest.mark.parametrize("operation", ["write", "load", "restore"])
async def test_an_operation_cancelled_while_it_commits_stays_cancelled(store: DocumentStore, operation: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A session stopped (quit, new session) while its write commits: the COMMIT is already on the database's
    thread and runs anyway. Before, the store then queued a ROLLBACK behind it, whose "no transaction is
    active" error replaced the cancellation: the agent took it for a failed tool call ("nothing was changed",
    though the write had committed), the session went on, and the console waited for it forever on quit.

    The database thread is held (a SQL function waiting on an event) so that the cancellation lands while the
    COMMIT is queued but not yet run, as it does on a busy machine; nothing here depends on timing."""
    if operation == "restore":
        before = await store.snapshot()
        await _write(store)

        async def run() -> None:
            await store.restore(before)
    else:
        async def run() -> None:
            await COMMITTING[operation](store)
    db = store._db  # noqa: SLF001 - the connection whose thread the test holds
    held = threading.Event()
    await db.create_function("hold_thread", 0, lambda: held.wait(60))
    real_execute = db.execute
    holding: list[asyncio.Future[Any]] = []

    async def execute(sql: str, *args: Any, **kwargs: Any) -> Any:
        if sql == "ROLLBACK":
            held.set()  # (the old code's path: let the thread run the COMMIT, then this ROLLBACK)
        if sql == "COMMIT":
            holding.append(asyncio.ensure_future(real_execute("SELECT hold_thread()")))
            await asyncio.sleep(0)  # the hold is queued on the database thread before the COMMIT
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # the session is stopped now: at the COMMIT's await
        return await real_execute(sql, *args, **kwargs)

    monkeypatch.setattr(db, "execute", execute)
    outcome = await asyncio.gather(asyncio.ensure_future(run()), return_exceptions=True)
    held.set()
    await holding[0]
    monkeypatch.setattr(db, "execute", real_execute)
    assert isinstance(outcome[0], asyncio.CancelledError), outcome[0]  # not an OperationalError
    committed = None if operation == "restore" else {"total": 7}
    assert await store.get("orders", "o7") == committed  # the COMMIT ran
    async with store.transaction() as tx:  # and the store takes the next write
        await tx.put("orders", "o8", {"total": 8})
    assert await store.get("orders", "o8") == {"total": 8}
