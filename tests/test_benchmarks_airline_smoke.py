"""Every airline benchmark figure runs and reports positive numbers (tiny repetition counts, the shipped seed).

Speed is never asserted here: timings depend on the machine and on what else it is doing. `make bench` is
where the figures are read.
"""

from __future__ import annotations

from benchmarks.airline import (
    GATE_TARGET_NS,
    bench_gate,
    bench_store,
    build_gate_ledger,
    load_airline_data,
    trial_writes,
)
from benchmarks.timing import Result


def check(result: Result, n: int) -> None:
    assert result.n == n and result.median_ns > 0 and result.p95_ns >= result.median_ns
    assert result.target_ns is not None and result.status in ("PASS", "FAIL")


def test_airline_figures_run_on_the_seed() -> None:
    data = load_airline_data(None)
    assert data.source is None and "SEED DB" in data.label
    assert [name for name, _ in trial_writes(data)][0] == "book_reservation"
    loaded, restored, searched = bench_store(data, load_repeat=1, load_warmup=0, restore_repeat=2,
                                             restore_warmup=0, search_repeat=3, search_warmup=0)
    check(loaded, 1)
    check(restored, 2)
    check(searched, 3)
    gate = bench_gate(data, records=300, repeat=3, warmup=0)
    check(gate, 3)
    assert gate.target_ns == GATE_TARGET_NS and "verdict ALLOW" in gate.note


def test_gate_ledger_has_the_requested_size() -> None:
    ledger, call = build_gate_ledger(load_airline_data(None), 500)
    assert len(ledger) == 500 and call.name == "book_reservation"
    assert ledger.get("user")["user_id"] == call.arguments["user_id"]
