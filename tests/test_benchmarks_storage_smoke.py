"""The storage and sign-in figures run and report (small versions: a 2,000-event trace, a few refusals, a short
token flood). Speed is never asserted here: `make bench` is where the figures are read."""

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


def test_token_flood_rows() -> None:
    """The flood rows run against a real `serve --supervise` (small: 20 wrong tokens a second for 2 s)."""
    from benchmarks.token_flood import bench_token_flood

    one, many = bench_token_flood(rate=20, seconds=2.0, addresses=3)
    assert (one.key, many.key) == ("token_flood_one_address", "token_flood_many_addresses")
    assert one.n > 0 and many.n > 0 and one.target_ns is not None
    assert "429" in one.note  # one address: past its tries, answered without hashing
