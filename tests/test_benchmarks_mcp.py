"""The `ledgeragent mcp` figures run and report positive numbers (tiny counts; speed is never asserted in tests,
`make bench` is where the figures are read)."""

from __future__ import annotations

import json

from benchmarks.mcp import bench_mcp_churn, bench_mcp_concurrent, bench_mcp_stdio
from benchmarks.mcp_attacks import bench_mcp_silent_connections, bench_mcp_wrong_token_flood
from benchmarks.mcp_launch import bench_mcp_launch, reference_server
from benchmarks.timing import MS


def test_the_stdio_rows_measure_mcp_against_check() -> None:
    rows = {r.key: r for r in bench_mcp_stdio(rounds=3, warmup=1)}
    assert set(rows) == {"mcp_stdio_floor", "mcp_check_read", "mcp_stdio_read", "mcp_check_gated_write",
                         "mcp_stdio_gated_write"}
    for key in ("read", "gated_write"):
        assert rows[f"mcp_stdio_{key}"].target_ns == int(rows[f"mcp_check_{key}"].median_ns + 3 * MS)
    assert all(r.n == 3 and r.median_ns > 0 and json.dumps(r.to_json()) for r in rows.values())


def test_the_concurrent_rows_measure_round_trips_and_memory() -> None:
    p95, memory = bench_mcp_concurrent(sessions=3, calls=2, processes=2)  # 2 and 1 session, and the baseline
    assert p95.key == "mcp_http_concurrent_p95" and p95.n == 6 and p95.median_ns > 0 and p95.target_ns == 50 * MS
    assert memory.unit == "B" and memory.key == "mcp_memory_per_session"


def test_the_ended_sessions_row_measures_memory_left_behind() -> None:
    row = bench_mcp_churn(sessions=20)
    assert row.key == "mcp_memory_per_ended_session" and row.unit == "B" and row.median_ns >= 0


def test_the_attack_rows_measure_a_clients_round_trip_meanwhile() -> None:
    silent = bench_mcp_silent_connections(silent=20, calls=3)
    assert silent.key == "mcp_silent_connections" and silent.n == 3 and silent.median_ns > 0
    assert silent.target_ns == 50 * MS and "20 of 20 silent connections still open" in silent.note
    flood = bench_mcp_wrong_token_flood(rate=10, seconds=0.3)
    assert flood.key == "mcp_wrong_token_flood" and flood.n == 6 and flood.target_ns == 100 * MS


def test_the_launch_rows_put_ours_beside_the_reference_or_say_why_not() -> None:
    """Nothing is installed here (no test touches the network): the reference is measured only where `make
    bench` installed it before."""
    rows = {r.key: r for r in bench_mcp_launch(rounds=1, calls=2, install=False)}
    assert rows["mcp_launch_first_answer"].target_ns == 300 * MS and rows["mcp_launch_first_answer"].n == 1
    assert rows["mcp_launch_call"].n == 2
    reference = rows["mcp_launch_reference"]
    if isinstance(reference_server(install=False), str):
        assert reference.n == 0 and reference.note.startswith("not measured:")
    else:
        assert reference.n == 1 and reference.median_ns > 0
