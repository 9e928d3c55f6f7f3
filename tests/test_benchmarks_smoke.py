"""Every benchmark figure runs and reports positive numbers (tiny repetition counts, small data).

Speed is never asserted here: timings depend on the machine and on what else it is doing. `make bench`
is where the figures are read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.data import RetailData, build_ledger, load_retail_data, synthetic_db, write_plan
from benchmarks.gate import bench_gate
from benchmarks.informative import bench_backend_info, bench_mark_stale, bench_render
from benchmarks.report import build_table, environment, write_json
from benchmarks.restore import bench_restore
from benchmarks.step import bench_step
from benchmarks.timing import Result, percentile
from benchmarks.tools import bench_tools
from core.ledger import Ledger
from mock_backends.retail.models import normalise

TINY = {"users": 30, "orders": 60, "products": 6}


@pytest.fixture(scope="module")
def data() -> RetailData:
    """A small synthetic DB (never the shared tau2 file, so the test is fast and self-contained)."""
    return load_retail_data(None, **TINY)


def check(result: Result, n: int) -> None:
    assert result.n == n
    assert result.median_ns > 0
    assert result.p95_ns >= result.median_ns
    assert result.status in ("PASS", "FAIL", "INFO")
    assert json.dumps(result.to_json())


def test_synthetic_db_is_tau2_shaped_and_deterministic() -> None:
    raw = synthetic_db(**TINY)
    assert {k: len(v) for k, v in raw.items()} == {"products": 6, "users": 30, "orders": 60}
    assert normalise(raw) == normalise(synthetic_db(**TINY))  # validates through the tau2 models


def test_build_ledger_has_the_requested_size(data: RetailData) -> None:
    setup = build_ledger(data.docs, 300)  # more than the DB holds: topped up with fresh-id copies
    assert isinstance(setup.ledger, Ledger)
    assert len(setup.ledger) == 300
    assert setup.ledger.get("auth.user_id") == setup.user["user_id"]
    assert setup.ledger.has(f"orders.{setup.order['order_id']}")


def test_write_plan_has_the_requested_length(data: RetailData) -> None:
    assert len(write_plan(data.docs, 4)) == 4
    assert len(write_plan(data.docs, 12)) == 12


def test_gate_and_render_and_mark_stale(data: RetailData) -> None:
    setup = build_ledger(data.docs, 150)
    check(bench_gate(data.docs, repeat=5, warmup=1, setup=setup), 5)
    check(bench_render(data.docs, repeat=3, warmup=0, setup=setup), 3)
    check(bench_mark_stale(data.docs, records=150, repeat=3, warmup=0, setup=setup), 3)


def test_step(data: RetailData, tmp_path: Path) -> None:
    check(bench_step(data.docs, records=60, repeat=5, warmup=1, trace_dir=tmp_path), 5)
    assert len((tmp_path / "trace.jsonl").read_text(encoding="utf-8").splitlines()) == (1 + 5) * 5  # steps × 5 events


def test_restore(data: RetailData) -> None:
    typical, many = bench_restore(data, repeat=3, warmup=0, many_repeat=2, many_warmup=0)
    check(typical, 3)
    check(many, 2)
    assert typical.target_ns is not None and many.target_ns is None


def test_tools(data: RetailData) -> None:
    results = bench_tools(data, repeat=3, warmup=0, write_repeat=3, write_warmup=0)
    assert len(results) == 4
    for result in results:
        check(result, 3)


def test_backend_info(data: RetailData) -> None:
    for result in bench_backend_info(data, open_repeat=1, cli_repeat=1, hash_repeat=2):
        assert result.median_ns > 0


def test_report(tmp_path: Path) -> None:
    rows = [Result("a", "fast", 10.0, 12.0, 3, 100), Result("b", "slow", 200.0, 300.0, 3, 100),
            Result("c", "info", 5.0, 5.0, 1)]
    assert [r.status for r in rows] == ["PASS", "FAIL", "INFO"]
    env = environment("test DB")
    assert build_table(rows, env).row_count == 3
    write_json(tmp_path / "out.json", rows, env)
    saved = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in saved["results"]] == ["PASS", "FAIL", "INFO"]
    assert percentile([5, 1, 3, 2, 4], 0.95) == 5


def test_the_assisted_gate_decision_reads_three_records(data: RetailData) -> None:
    from benchmarks.assist import bench_assist

    result = bench_assist(data, repeat=3, warmup=0)
    check(result, 3)
    assert result.note.count("get_") == 3 and "get_order_details" in result.note and "get_product_details" in \
        result.note
