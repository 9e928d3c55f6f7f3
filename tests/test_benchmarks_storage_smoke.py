"""The storage figures run and report (small versions: a 2,000-event trace, a few refusals). Speed is never
asserted here: `make bench` is where the figures are read."""

from __future__ import annotations

from benchmarks.replay import bench_replay_open, bench_second_writer


def test_replay_open_rows() -> None:
    first, rss, end = bench_replay_open(events=2_000, repeat=1)
    assert (first.key, rss.key, end.key) == ("replay_open_first_step", "replay_open_rss", "replay_end")
    assert first.median_ns > 0 and end.median_ns > 0 and first.target_ns is not None
    assert rss.unit == "B" and rss.median_ns > 10 << 20 and rss.status in ("PASS", "FAIL")
    assert "2,00" in first.figure  # the trace's real size is in the row


def test_second_writer_rows() -> None:
    refused, cli = bench_second_writer(repeat=3, cli_repeat=1)
    assert refused.n == 3 and refused.median_ns > 0 and refused.target_ns is not None
    assert cli.n == 1 and cli.median_ns > refused.median_ns
