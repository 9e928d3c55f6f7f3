"""`ledgeragent check` on a session's own trace.jsonl: it reads the calls the session recorded (the tool calls as
the agent proposed them, and the customer's phone actions, each with its requestor) and takes the domain from
the trace's session_started. In-process `main`, real sessions recorded by `ledgeragent run`, real SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli.main import main
from core.trace import read_session_start
from tests.support.cli import cli_home, one_error_line


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


def record(tmp_path: Path, capsys: pytest.CaptureFixture[str], domain: str, scenario: str) -> Path:
    out = tmp_path / f"{domain}-{scenario}"
    main(["run", "--domain", domain, "--scenario", scenario, "--out", str(out)])
    capsys.readouterr()
    return out / "trace.jsonl"


def recorded_calls(trace: Path) -> list[tuple[str, str]]:
    """(tool, requestor) of every call the session made, in order, as its tool results say."""
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    return [(e["call"]["name"], e["call"]["requestor"]) for e in events if e["type"] == "tool_result"]


def test_check_reads_a_session_trace_and_takes_its_domain_from_it(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path, capsys, "retail", "refund-to-original-payment")
    assert main(["check", str(trace), "--json"]) == 0
    captured = capsys.readouterr()
    assert "broken" not in captured.err and "pass --domain" not in captured.err and captured.err == ""
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [(r["name"], r["requestor"]) for r in rows] == recorded_calls(trace)
    writes = [(r["name"], r["verdict"]) for r in rows if r["kind"] == "write"]
    assert writes == [("return_delivered_order_items", "REVISE"), ("return_delivered_order_items", "ALLOW")]
    lines = trace.read_text(encoding="utf-8").splitlines()
    for row in rows:  # each call is reported at the trace line that recorded it
        assert row["name"] in lines[row["line"] - 1]
    assert main(["check", str(trace)]) == 0  # the table: the same calls, no broken line
    out = capsys.readouterr().out
    assert "2 writes: ALLOW 1, REVISE 1, BLOCK 0, ERROR 0; 0 expectation(s) failed, 0 broken line(s)" in out


def test_check_replays_the_customers_phone_actions_as_the_users(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path, capsys, "telecom", "overdue-bill-resume")
    assert main(["check", str(trace), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["name"], r["requestor"]) for r in rows] == recorded_calls(trace)
    assert ("make_payment", "user") in [(r["name"], r["requestor"]) for r in rows]
    assert [(r["name"], r["verdict"]) for r in rows if r["name"] == "resume_line"] == [
        ("resume_line", "REVISE"), ("resume_line", "ALLOW")]  # the gate the session had: it asked for a read
    assert main(["check", str(trace), "--json", "--evidence", "assist"]) == 0  # the gate that reads for itself
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["verdict"] for r in rows if r["name"] == "resume_line"][0] == "ALLOW"


def test_a_domain_that_contradicts_the_trace_is_refused(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path, capsys, "airline", "cancel-outside-window")
    assert main(["check", str(trace), "--domain", "retail"]) == 2
    assert "is a session trace of the airline domain, not retail" in one_error_line(capsys.readouterr().err)
    assert main(["check", str(trace), "--domain", "airline", "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_the_session_trace_test_is_the_first_line_only(tmp_path: Path) -> None:
    trajectory = tmp_path / "t.jsonl"
    trajectory.write_text('{"name": "get_user_details", "arguments": {"user_id": "x"}}\n', encoding="utf-8")
    assert read_session_start(trajectory) is None
    fake = tmp_path / "fake.jsonl"
    fake.write_text('\n{"type": "session_started", "domain": "retail"}\n', encoding="utf-8")  # not a whole event
    assert read_session_start(fake) is None
    real = tmp_path / "real.jsonl"
    real.write_text('\n{"seq":1,"step":0,"type":"session_started","domain":"retail","agent":"ledger","model":"m",'
                    '"user":"u"}\n{broken\n', encoding="utf-8")
    started = read_session_start(real)
    assert started is not None and started.domain == "retail"
