"""`ledgeragent run / predicates / scenarios` as a user types them (in-process, real seed DB, temp home)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli.main import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path / "home"


def test_run_prints_a_readable_transcript_and_keeps_the_session_on_disk(home: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--headless"]) == 0
    out = capsys.readouterr().out
    assert "agent  Hi! How can I help you today?" in out
    assert "gate REVISE" in out and "retail.refund_to_original_or_gift_card" in out
    assert "gate ALLOW" in out
    assert "ended: user_stop" in out
    sessions = list((home / "sessions").iterdir())
    assert len(sessions) == 1
    assert (sessions[0] / "trace.jsonl").stat().st_size > 0 and (sessions[0] / "db.sqlite").exists()


def test_run_json_is_one_event_per_line(home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "s"
    assert main(["run", "--scenario", "other-customers-order", "--headless", "--json", "--out", str(out_dir)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["type"] == "session_started" and lines[-1]["type"] == "session_ended"
    assert [e["verdict"] for e in lines if e["type"] == "gate_decision"] == ["BLOCK"]
    on_disk = [json.loads(line) for line in (out_dir / "trace.jsonl").read_text().splitlines()]
    assert on_disk == lines


def test_run_reports_unmet_expectations(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--scenario", "refund-to-original-payment", "--headless",
                 "--disable-predicate", "retail.refund_to_original_or_gift_card"])
    err = capsys.readouterr().err
    assert code == 1 and "expected gate verdicts ['REVISE', 'ALLOW'], got" in err


def test_unknown_names_are_clear_errors(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--scenario", "nope", "--headless"]) == 2
    err = capsys.readouterr().err
    assert "unknown scenario 'nope'" in err and "refund-to-original-payment" in err
    assert main(["run", "--scenario", "refund-to-original-payment", "--headless",
                 "--disable-predicate", "retail.nope"]) == 2
    assert "unknown predicate(s): retail.nope" in capsys.readouterr().err
    assert main(["run", "--scenario", "refund-to-original-payment"]) == 0  # `run` is headless: no flag needed


def test_disabling_the_refund_rule_lets_the_script_diverge(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--scenario", "refund-to-original-payment", "--headless",
                 "--disable-predicate", "retail.refund_to_original_or_gift_card"])
    assert code == 1
    assert "Payment method should be the original payment method" in capsys.readouterr().out


def test_bad_db_source_is_a_clear_error(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "db.json"
    bad.write_text('{"users": 3}')
    assert main(["run", "--scenario", "refund-to-original-payment", "--headless", "--db", str(bad)]) == 2
    assert "not a tau2 retail database" in capsys.readouterr().err
    assert main(["run", "--scenario", "refund-to-original-payment", "--headless", "--db", "/nope.json"]) == 2
    assert "no such database file" in capsys.readouterr().err


def test_predicates_and_scenarios_listings(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predicates", "--domain", "retail", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) >= 12
    assert all(set(r) >= {"id", "tools", "severity", "policy"} for r in rows)
    assert main(["predicates", "--domain", "retail"]) == 0
    assert "retail.refund_to_original_or_gift_card" in capsys.readouterr().out
    assert main(["scenarios"]) == 0
    assert "other-customers-order" in capsys.readouterr().out


def test_installed_entry_point_runs(home: Path) -> None:
    exe = Path(sys.executable).with_name("ledgeragent")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "console"]
    done = subprocess.run([*command, "predicates", "--domain", "retail", "--json"], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert "retail.authenticated" in done.stdout
