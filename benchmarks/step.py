"""Figure 2: the ledger/gate/event overhead of one agent step on a 200-record ledger.

What is timed, per sample, through the real `core.executor.CallExecutor` (the path the agent loop uses):
1. a read: `get_order_details` of the order about to be changed: argument validation, the tool result
   event, `Ledger.absorb`, the ledger-updated event;
2. `ledger.render()`, the block that goes into the next prompt;
3. a write: `return_delivered_order_items`: argument validation, the gate decision (all retail predicates)
   and its event, the autopilot supervisor, the tool result event, `Ledger.mark_stale` and its event.
Every event goes through an `EventBus` with a `TraceWriter` on a real temporary file subscribed, as in a
session (one JSON line written and flushed per event).

Why this setup is realistic: 200 records is a long trial's ledger (tau2 retail trials read a handful of
users, orders and products); the read re-reads the order the previous step's write made stale, which is
exactly what the gate asks a model to do, so the ledger stays at 200 records and every write is ALLOWed.
The model call is not part of the figure, and neither is the database: the backend is an in-process
object returning precomputed records (a fresh copy per read, as a real backend returns a freshly parsed
document), because the backend has its own figures.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.data import Docs, build_ledger
from benchmarks.gate import make_gate
from benchmarks.timing import MS, Result, summarise, time_async
from core.events import EventBus
from core.executor import CallExecutor
from core.tools import ToolCall, ToolError
from core.trace import TraceWriter
from domains.retail import DOMAIN

STEP_TARGET_NS = 2 * MS


class InstantBackend:
    """A `ToolBackend` that answers from precomputed records without doing any work."""

    def __init__(self, reads: Mapping[str, list[Any]], writes: Mapping[str, Any]) -> None:
        self._reads = {name: list(results) for name, results in reads.items()}
        self._next = dict.fromkeys(self._reads, 0)
        self._writes = dict(writes)
        self.calls = 0

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        self.calls += 1
        if name in self._writes:
            return self._writes[name]
        results = self._reads.get(name)
        if not results:
            raise ToolError(f"Tool '{name}' not found.")
        index = self._next[name]
        self._next[name] = index + 1
        return results[index % len(results)]


async def _run(docs: Docs, records: int, repeat: int, warmup: int, trace_dir: Path) -> tuple[list[int], int]:
    setup = build_ledger(docs, records)
    ledger, order, write = setup.ledger, setup.order, setup.call
    returned = copy.deepcopy(order) | {"status": "return requested",
                                       "return_items": sorted(write.arguments["item_ids"]),
                                       "return_payment_method_id": write.arguments["payment_method_id"]}
    backend = InstantBackend(
        reads={"get_order_details": [copy.deepcopy(order) for _ in range(warmup + repeat)]},
        writes={write.name: returned},
    )
    bus = EventBus()
    trace = TraceWriter(trace_dir / "trace.jsonl")
    bus.subscribe(trace)
    executor = CallExecutor(DOMAIN, backend, bus, ledger=ledger, gate=make_gate())
    step = setup.steps
    read_args = {"order_id": order["order_id"]}

    async def agent_step() -> None:
        nonlocal step
        step += 1
        read = await executor.execute(ToolCall(id=f"r{step}", name="get_order_details", arguments=read_args), step)
        ledger.render()
        written = await executor.execute(ToolCall(id=f"w{step}", name=write.name, arguments=write.arguments), step)
        if not (read.ok and written.ok and written.verdict == "ALLOW"):
            raise RuntimeError(f"benchmark step did not run cleanly: {read.outcome}, {written.content}")

    try:
        samples = await time_async(agent_step, repeat=repeat, warmup=warmup)
    finally:
        trace.close()
    return samples, len(ledger)


def bench_step(docs: Docs, *, records: int = 200, repeat: int = 1000, warmup: int = 100,
               trace_dir: Path | None = None) -> Result:
    """Median/p95 of one agent step's overhead (read + render + gated write + 5 events to disk)."""
    with tempfile.TemporaryDirectory(prefix="ledgeragent-bench-") as tmp:
        samples, size = asyncio.run(_run(docs, records, repeat, warmup, trace_dir or Path(tmp)))
    return summarise("agent_step", f"agent step: read+absorb, render, gate+write, 5 events→trace "
                     f"({size}-record ledger)", samples, STEP_TARGET_NS,
                     note="in-process instant backend; TraceWriter on a real temp file")
