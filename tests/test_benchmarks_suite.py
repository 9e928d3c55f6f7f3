"""`python -m benchmarks` runs every group by default, a subset with `--only`, and a short `check` row unless
`--long` asks for the 600k-call one. Speed is never asserted: these tests check which rows run and print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import suite
from benchmarks.check_memory import CALLS
from benchmarks.timing import Result, summarise, time_sync


def test_every_group_has_a_unique_name_and_list_prints_them_in_table_order(capsys: pytest.CaptureFixture[str]) -> None:
    names = [g.name for g in suite.GROUPS]
    assert len(names) == len(set(names))
    assert suite.main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == names


def test_only_selects_by_substring_in_table_order() -> None:
    chosen = [g.name for g in suite.select(suite.GROUPS, ["gate"])]
    assert chosen == ["gate", "gate_assist", "telehealth_gate", "telecom_gate", "airline_gate"]
    assert [g.name for g in suite.select(suite.GROUPS, ["airline_gate", "step"])] == ["step", "airline_gate"]
    assert suite.select(suite.GROUPS, []) == list(suite.GROUPS)


def test_the_default_check_run_is_short_and_the_long_one_is_one_flag_away() -> None:
    assert suite.parse_args([]).check_calls == suite.DEFAULT_CHECK_CALLS < CALLS
    assert suite.parse_args(["--long"]).check_calls == CALLS == 600_000
    assert suite.parse_args(["--check-calls", "20000"]).check_calls == 20_000
    with pytest.raises(SystemExit):
        suite.parse_args(["--long", "--check-calls", "5"])


def test_an_unknown_group_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert suite.main(["--only", "no-such-figure"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-figure" in err and "--list" in err


def test_only_runs_the_chosen_groups_and_reports_just_their_rows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[str] = []

    def timed(name: str) -> suite.Group:
        def run(inputs: suite.Inputs) -> list[Result]:
            ran.append(name)
            return [summarise(f"{name}_row", f"{name} figure", time_sync(lambda: None, repeat=3, warmup=0))]
        return suite.Group(name, run, f"the {name} row")

    monkeypatch.setattr(suite, "GROUPS", (timed("alpha_gate"), timed("beta"), timed("gamma_gate")))
    out = tmp_path / "rows.json"
    assert suite.main(["--only", "gate", "--json", str(out)]) == 0
    assert ran == ["alpha_gate", "gamma_gate"]
    printed = capsys.readouterr().out
    assert "alpha_gate figure" in printed and "gamma_gate figure" in printed and "beta figure" not in printed
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert [r["key"] for r in payload["results"]] == ["alpha_gate_row", "gamma_gate_row"]
    assert payload["environment"]["groups"] == ["alpha_gate", "gamma_gate"]
    assert payload["environment"]["database"] == "retail DB not used by these groups"  # nothing loaded it
