"""Figure 4 (and one informative row): tool calls on the full retail DB, through `backend.call`.

What is timed: `await backend.call(name, arguments)`, the call the executor makes, so argument checking,
dispatch, the store's task guard, the SQLite query on aiosqlite's worker thread and JSON decoding are all
in. The reads are the three an agent makes most: `get_order_details`, `find_user_id_by_email` (an
indexed, case-insensitive JSON-field lookup) and `get_product_details` (the largest documents).

Why this setup is realistic: the DB is the full tau2 retail DB in a file on disk, and successive samples
walk through different orders, users and products instead of asking for one cached key.

The write row (informative) times `return_delivered_order_items`: parse into the tau2 models, check,
write the order in a transaction. The database is restored to its starting state (untimed) after each
sample so every sample performs the same, successful write.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.data import RetailData, return_call, returnable_order
from benchmarks.restore import open_db
from benchmarks.timing import MS, Result, summarise, time_async
from mock_backends.retail import RetailBackend

READ_TARGET_NS = 1 * MS


def read_arguments(data: RetailData) -> dict[str, list[dict[str, Any]]]:
    """Per read tool, the arguments the samples cycle through (every record of the DB)."""
    docs = data.docs
    return {
        "get_order_details": [{"order_id": key} for key in docs["orders"]],
        "find_user_id_by_email": [{"email": user["email"]} for user in docs["users"].values()],
        "get_product_details": [{"product_id": key} for key in docs["products"]],
    }


async def measure_reads(backend: RetailBackend, data: RetailData, *, repeat: int = 1000,
                        warmup: int = 50) -> list[Result]:
    results: list[Result] = []
    for name, argument_list in read_arguments(data).items():
        arguments: Iterator[dict[str, Any]] = itertools.cycle(argument_list)

        async def read(name: str = name, arguments: Iterator[dict[str, Any]] = arguments) -> None:
            await backend.call(name, next(arguments))

        samples = await time_async(read, repeat=repeat, warmup=warmup)
        results.append(summarise(f"read_{name}", f"read tool call: {name} [{data.label}]", samples,
                                 READ_TARGET_NS, note=f"cycles over {len(argument_list)} keys"))
    return results


async def measure_write(backend: RetailBackend, data: RetailData, *, repeat: int = 200,
                        warmup: int = 10) -> Result:
    order, _user = returnable_order(data.docs)
    call = return_call(order)
    snapshot = await backend.snapshot()
    written = False

    async def reset() -> None:
        nonlocal written
        if written:
            await backend.restore(snapshot)

    async def write() -> None:
        nonlocal written
        await backend.call(call.name, call.arguments)
        written = True

    samples = await time_async(write, repeat=repeat, warmup=warmup, setup=reset)
    await backend.restore(snapshot)
    return summarise("write_tool_call", f"write tool call: {call.name} [{data.label}]", samples, target_ns=1 * MS,
                     note="crash-safe journal (WAL, synchronous=NORMAL); 0.22 ms with the old "
                          "journal_mode=MEMORY, synchronous=OFF; restored (untimed) after every sample")


def bench_tools(data: RetailData, *, repeat: int = 1000, warmup: int = 50, write_repeat: int = 200,
                write_warmup: int = 10) -> list[Result]:
    """The read rows and the write row, on a database of their own in a temporary directory."""

    async def run() -> list[Result]:
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-") as tmp:
            backend = await open_db(data, Path(tmp))
            try:
                reads = await measure_reads(backend, data, repeat=repeat, warmup=warmup)
                return [*reads, await measure_write(backend, data, repeat=write_repeat, warmup=write_warmup)]
            finally:
                await backend.close()

    return asyncio.run(run())
