"""The evaluation figures run and report positive numbers (tiny counts; speed is never asserted in tests)."""

from __future__ import annotations

from benchmarks.evaluation import bench_eval_memory, bench_eval_step, bench_eval_throughput
from benchmarks.report import build_table, environment
from benchmarks.timing import format_value


def test_evaluation_figures_run() -> None:
    step = bench_eval_step(trials=1, limit=3)
    throughput = bench_eval_throughput(trials=1, repeat=1, limit=3)
    memory = bench_eval_memory(trials=18, warm=6, limit=3)
    assert step.n == 3 and step.median_ns > 0 and step.target_ns is not None
    assert throughput.n == 1 and "task-trials/s" in throughput.figure
    assert memory.unit == "B" and memory.to_json()["unit"] == "B" and format_value(2048, "B") == "2.0 KiB"
    assert build_table([step, throughput, memory], environment("test")).row_count == 3
