"""`check` streams: memory does not grow with the file, progress shows in table mode.
Peak RSS over 600k calls is a benchmark (benchmarks/check_memory.py); here Python's own allocation peak is
compared between a short and a four times longer file, on the real retail backend."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from rich.console import Console

import console.cli.check_report as check_report
from benchmarks.check_memory import write_trajectory
from console.cli.check_report import run_check
from core.replay import Checker
from domains.registry import load_domain
from mock_backends.registry import open_backend


async def _peak(tmp_path: Path, calls: int) -> int:
    path = tmp_path / f"t{calls}.jsonl"
    write_trajectory(path, calls)
    backend = await open_backend("retail", tmp_path / f"db{calls}.sqlite")
    try:
        checker = Checker(load_domain("retail"), backend)
        tracemalloc.start()
        report = await run_check(path, checker, json_lines=True, show_all=False)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        await backend.close()
    assert report.calls == calls and report.exit_code == 0
    return peak


async def test_memory_does_not_grow_with_the_number_of_calls(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    short = await _peak(tmp_path, 400)
    long = await _peak(tmp_path, 1600)
    capsys.readouterr()
    assert long < short * 1.5 + 512 * 1024, (short, long)


async def test_table_mode_prints_progress_and_one_header(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_report, "PROGRESS_EVERY", 40)
    monkeypatch.setattr(check_report, "TABLE_CHUNK", 10)
    # a wide terminal (piped output is blocks, with no width limit): each chunk a table
    monkeypatch.setattr(check_report, "report_console",
                        lambda: Console(highlight=False, force_terminal=True, color_system=None, width=300))
    path = tmp_path / "t.jsonl"
    write_trajectory(path, 120)
    backend = await open_backend("retail", tmp_path / "db.sqlite")
    try:
        report = await run_check(path, Checker(load_domain("retail"), backend), json_lines=False, show_all=False)
    finally:
        await backend.close()
    captured = capsys.readouterr()
    assert report.calls == 120 and report.writes["BLOCK"] == 15 and report.writes["ALLOW"] == 15
    assert [line.split("…")[1].split("(")[0].strip() for line in captured.err.splitlines()] == [
        "40 calls checked", "80 calls checked", "120 calls checked"]
    assert captured.out.count("verdict") == 1  # the header once, however many chunks
    assert captured.out.count("cancel_pending_order") == 15 and captured.out.count("modify_user_address") == 15
    assert "120 calls, 30 writes: ALLOW 15" in captured.out


async def test_a_failed_expectation_names_the_rule_that_crashed(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Same verdict, same objecting rule, but the rule crashed: the line must say so, not "expected REVISE,
    got REVISE"."""
    from dataclasses import replace

    from core.gate import GateContext, LedgerView, Outcome, Verdict, predicate
    from core.tools import ToolCall
    from tests.support.toy_domain import DOMAIN, PREDICATES, ToyBackend

    @predicate(id="toy.balance", tools=["transfer"], severity=Verdict.REVISE, policy="No overdraft.")
    def crashing(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        raise KeyError("balance")

    monkeypatch.setenv("COLUMNS", "300")
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"name": "login", "arguments": {"name": "ann"}}\n'
        '{"name": "get_account", "arguments": {"account_id": "A1"}}\n'
        '{"name": "transfer", "arguments": {"account_id": "A1", "amount": 1000}, "expect": "REVISE", '
        '"expect_rules": ["toy.balance"], "expect_crashed": []}\n', encoding="utf-8")
    domain = replace(DOMAIN, predicates=tuple(crashing if p.id == "toy.balance" else p for p in PREDICATES))
    report = await run_check(path, Checker(domain, ToyBackend()), json_lines=False, show_all=False)
    err = capsys.readouterr().err
    assert report.failed == 1
    assert "expected REVISE, got REVISE" not in err
    assert (f"{path}:3: transfer expected REVISE from [toy.balance], got REVISE from [toy.balance] "
            "(crashed: toy.balance)") in " ".join(err.split())
