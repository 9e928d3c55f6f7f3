"""Figure 3: `restore()` of the full retail DB to the trial's start, after a trial's worth of writes.

What is timed: `await backend.restore(snapshot)` on a `RetailBackend` holding the whole tau2 retail DB
(500 users, 1,000 orders, 50 products) in a file on disk, the way a session database is laid out. Before
each sample (untimed) the same writes run through `backend.call`, i.e. through the real write tools and
their transactions, so the undo log holds exactly what a trial leaves in it.

Why this setup is realistic: a tau2 retail trial makes 0-5 writes (typically a return or exchange, a
cancellation, an address change); four of those, one of each kind, are the target case. Restoring after
50 writes is reported too, without a target, to show the cost grows with the writes, not with the DB.
Each restore is checked once at the end to bring back the exact starting state hash.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.data import RetailData, write_plan
from benchmarks.timing import MS, Result, summarise, time_async
from mock_backends.retail import RetailBackend

RESTORE_TARGET_NS = 5 * MS
TYPICAL_WRITES = 4
MANY_WRITES = 50


async def open_db(data: RetailData, directory: Path, name: str = "bench.sqlite") -> RetailBackend:
    """A fresh session database file holding the whole DB, as a session opens it."""
    return await RetailBackend.open(directory / name, data.raw)


async def apply_writes(backend: RetailBackend, plan: Sequence[tuple[str, dict[str, Any]]]) -> None:
    for name, arguments in plan:
        await backend.call(name, arguments)


async def measure_restore(backend: RetailBackend, data: RetailData, *, writes: int, repeat: int,
                          warmup: int, target_ns: int | None) -> Result:
    plan = write_plan(data.docs, writes)
    before = await backend.state_hash()
    snapshot = await backend.snapshot()

    async def writes_then() -> None:
        await apply_writes(backend, plan)

    async def restore() -> None:
        await backend.restore(snapshot)

    samples = await time_async(restore, repeat=repeat, warmup=warmup, setup=writes_then)
    if await backend.state_hash() != before:
        raise RuntimeError("restore() did not bring back the starting state")
    kinds = sorted({name for name, _ in plan})
    label = "typical trial" if writes <= 5 else "informative"
    return summarise(f"restore_after_{writes}_writes",
                     f"restore() after {writes} writes ({label}) [{data.label}]", samples, target_ns,
                     note=f"writes: {', '.join(kinds)}")


async def measure_restores(backend: RetailBackend, data: RetailData, *, repeat: int = 150, warmup: int = 10,
                           many_repeat: int = 20, many_warmup: int = 2) -> list[Result]:
    typical = await measure_restore(backend, data, writes=TYPICAL_WRITES, repeat=repeat, warmup=warmup,
                                    target_ns=RESTORE_TARGET_NS)
    many = await measure_restore(backend, data, writes=MANY_WRITES, repeat=many_repeat, warmup=many_warmup,
                                 target_ns=None)
    return [typical, many]


def bench_restore(data: RetailData, **counts: int) -> list[Result]:
    """Both restore rows, on a database of their own in a temporary directory."""

    async def run() -> list[Result]:
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-") as tmp:
            backend = await open_db(data, Path(tmp))
            try:
                return await measure_restores(backend, data, **counts)
            finally:
                await backend.close()

    return asyncio.run(run())
