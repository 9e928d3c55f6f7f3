"""Informative rows (no target): the once-per-session and worst-case costs around the figures above.

- `RetailBackend.open` with the full DB: what a session pays before its first step (normalise the raw
  tau2 data through the pydantic models, create a fresh SQLite file, bulk-insert, build indexes).
- `open_backend("retail", ..., source=db.json)`: the same through the CLI's path (`--db db.json`), which
  also reads and parses the JSON file.
- `state_hash()`: tau2's DB hash, computed once at the end of every session (export every document,
  canonical JSON, SHA-256).
- `ledger.render()` of a 10,000-record ledger: the prompt block at a size no trial reaches, to show the
  render cost scales gently (entries keep their rendered line; render is a sort and a join).
- `Ledger.mark_stale` after a successful write: the step figure's return on its 200-record ledger (one
  exact path), and a money write (`cancel_pending_order`: `orders.<id>`, `user`, `users.*`) on the
  10,000-record ledger, where the `users.*` glob stales every absorbed profile. The ledger is restored
  from a snapshot (untimed) before each sample, so every sample stales the same entries.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from benchmarks.data import TAU2_DB, Docs, LedgerSetup, RetailData, build_ledger
from benchmarks.restore import open_db
from benchmarks.timing import Result, summarise, time_async, time_sync
from core.tools import ToolCall
from domains.retail import DOMAIN
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import open_backend
from mock_backends.retail import RetailBackend


async def measure_open(data: RetailData, directory: Path, *, repeat: int = 5, warmup: int = 1) -> Result:
    opened: list[RetailBackend] = []
    counter = iter(range(1_000_000))

    async def close_previous() -> None:
        while opened:
            await opened.pop().close()

    async def open_one() -> None:
        opened.append(await open_db(data, directory, f"open-{next(counter)}.sqlite"))

    samples = await time_async(open_one, repeat=repeat, warmup=warmup, setup=close_previous)
    await close_previous()
    return summarise("backend_open", f"RetailBackend.open, full DB [{data.label}]", samples,
                     note="normalise + new SQLite file + bulk insert + indexes")


async def measure_open_backend(data: RetailData, directory: Path, *, repeat: int = 3,
                               warmup: int = 1) -> Result:
    source = TAU2_DB if data.source == "tau2" and TAU2_DB.is_file() else directory / "db.json"
    if source != TAU2_DB:
        source.write_text(json.dumps(data.raw), encoding="utf-8")
    opened: list[SQLiteToolBackend] = []
    counter = iter(range(1_000_000))

    async def close_previous() -> None:
        while opened:
            await opened.pop().close()

    async def open_one() -> None:
        opened.append(await open_backend("retail", directory / f"cli-{next(counter)}.sqlite", source=source))

    samples = await time_async(open_one, repeat=repeat, warmup=warmup, setup=close_previous)
    await close_previous()
    return summarise("open_backend_db_json", f"open_backend(source=db.json) (CLI --db) [{data.label}]",
                     samples, note="reads + parses the JSON file, then as RetailBackend.open")


async def measure_state_hash(backend: RetailBackend, data: RetailData, *, repeat: int = 10,
                             warmup: int = 1) -> Result:
    samples = await time_async(backend.state_hash, repeat=repeat, warmup=warmup)
    return summarise("state_hash", f"state_hash(), full DB [{data.label}]", samples,
                     note="once per session, at its end")


def bench_render(docs: Docs, *, records: int = 10_000, repeat: int = 100, warmup: int = 5,
                 setup: LedgerSetup | None = None) -> Result:
    setup = setup or build_ledger(docs, records)
    ledger = setup.ledger
    samples = time_sync(ledger.render, repeat=repeat, warmup=warmup)
    size = len(ledger.render())
    return summarise("ledger_render_10k", f"ledger.render(), {len(ledger):,} records", samples,
                     note=f"{size / 1_000_000:.1f} MB of prompt text")


def bench_mark_stale(docs: Docs, *, records: int, tool: str = "cancel_pending_order", repeat: int = 20,
                     warmup: int = 2, setup: LedgerSetup | None = None) -> Result:
    setup = setup or build_ledger(docs, records)
    ledger = setup.ledger
    order_id = setup.call.arguments["order_id"]
    arguments = ({"order_id": order_id, "reason": "no longer needed"} if tool == "cancel_pending_order"
                 else dict(setup.call.arguments))
    call = ToolCall(id="stale-bench", name=tool, arguments=arguments)
    start = ledger.snapshot()
    staled: list[str] = []

    def mark() -> None:
        staled[:] = ledger.mark_stale(call, step=setup.steps + 1)

    samples = time_sync(mark, repeat=repeat, warmup=warmup, setup=lambda: ledger.restore(start))
    ledger.restore(start)
    return summarise(f"mark_stale_{tool}_{len(ledger)}",
                     f"ledger.mark_stale({tool}), {len(ledger):,} records, {len(staled):,} staled", samples,
                     note=f"targets: {', '.join(p for p, _ in DOMAIN.path_map.stale_targets(call, ledger))}")


def bench_backend_info(data: RetailData, *, open_repeat: int = 5, cli_repeat: int = 3,
                       hash_repeat: int = 10) -> list[Result]:
    """The open, CLI-open and state-hash rows, in a temporary directory of their own."""

    async def run() -> list[Result]:
        with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-") as tmp:
            directory = Path(tmp)
            opened = await measure_open(data, directory, repeat=open_repeat)
            cli = await measure_open_backend(data, directory, repeat=cli_repeat)
            backend = await open_db(data, directory)
            try:
                hashed = await measure_state_hash(backend, data, repeat=hash_repeat)
            finally:
                await backend.close()
            return [opened, cli, hashed]

    return asyncio.run(run())
