"""`ledgeragent check --domain airline` in-process over the shipped seed data (no upstream tau2 data needed).

The story records of mock_backends/airline/seed.py: Julia Reyes (julia_reyes_4521) holds UX789J, an economy
flight booked days ago without insurance; Theo Brennan (theo_brennan_3391) holds TB5N1W, booked this morning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli.main import main

LINES = [
    {"name": "get_user_details", "arguments": {"user_id": "julia_reyes_4521"}, "expect": "ALLOW"},
    {"name": "get_reservation_details", "arguments": {"reservation_id": "UX789J"}, "expect": "ALLOW"},
    {"name": "cancel_reservation", "arguments": {"reservation_id": "UX789J"}, "expect": "REVISE",
     "note": "did the airline cancel HAT142? the gate asks for its status first"},
    {"name": "get_flight_status", "arguments": {"flight_number": "HAT142", "date": "2024-05-17"}, "expect": "ALLOW"},
    {"name": "cancel_reservation", "arguments": {"reservation_id": "UX789J"}, "expect": "BLOCK"},
    {"name": "get_reservation_details", "arguments": {"reservation_id": "TB5N1W"}, "expect": "ALLOW"},
    {"name": "cancel_reservation", "arguments": {"reservation_id": "TB5N1W"}, "expect": "BLOCK",
     "note": "booked this morning, but it is Theo's reservation, not Julia's"},
    {"name": "send_certificate", "arguments": {"user_id": "julia_reyes_4521", "amount": -50}, "expect": "BLOCK"},
    {"name": "get_flight_status", "arguments": {"flight_number": "HAT142", "date": "2024-13-45"}},
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps stderr at the console width; keep messages on one line
    return tmp_path


def test_check_over_the_seed(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The paper's gate (`--evidence ask`): the missing status is asked for, the model reads it."""
    path = env / "julia.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES), encoding="utf-8")
    code = main(["check", str(path), "--domain", "airline", "--json", "--out", str(env / "out"), "--evidence", "ask"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [json.loads(row) for row in captured.out.splitlines()]
    assert [(r["name"], r["verdict"], r["executed"]) for r in rows] == [
        ("get_user_details", "ALLOW", True),
        ("get_reservation_details", "ALLOW", True),
        ("cancel_reservation", "REVISE", False),
        ("get_flight_status", "ALLOW", True),
        ("cancel_reservation", "BLOCK", False),
        ("get_reservation_details", "ALLOW", True),
        ("cancel_reservation", "BLOCK", False),
        ("send_certificate", "BLOCK", False),
        ("get_flight_status", "ERROR", True),
    ]
    assert rows[2]["predicates"] == ["airline.cancel_basis"] and "get_flight_status" in rows[2]["reason"]
    assert rows[2]["refusal"] == "needs_read" and rows[2]["gate_reads"] == []
    assert rows[4]["predicates"] == ["airline.cancel_basis"] and rows[4]["refusal"] is None
    assert rows[6]["predicates"] == ["airline.reservation_owned_by_customer"]
    assert "Flight HAT142 not found on date 2024-13-45" in rows[8]["reason"]
    assert all(r["met"] is not False for r in rows)
    assert (env / "out" / "db.sqlite").is_file() and not (env / "home").exists()


def test_by_default_the_gate_reads_the_status_itself(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`check`'s default (`--evidence assist`): the first cancel gets the verdict the status read gives, BLOCK,
    with the read the gate made named on its line; the flight status is then in the ledger like any read."""
    path = env / "julia.jsonl"
    lines = [*LINES[:2], {**LINES[2], "expect": "BLOCK"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code = main(["check", str(path), "--domain", "airline", "--json", "--out", str(env / "out")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    cancel = json.loads(captured.out.splitlines()[2])
    assert (cancel["verdict"], cancel["predicates"], cancel["refusal"]) == ("BLOCK", ["airline.cancel_basis"], None)
    assert cancel["gate_reads"] == ['get_flight_status(flight_number="HAT142", date="2024-05-17")']
    assert "flights.HAT142.2024-05-17.status" in cancel["evidence"]


def test_an_unmet_expectation_exits_1_and_names_the_line(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = env / "wrong.jsonl"
    lines = [*LINES[:2], {**LINES[2], "expect": "ALLOW"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["check", str(path), "--domain", "airline", "--json", "--out", str(env / "out"),
                 "--evidence", "ask"]) == 1
    assert f"{path}:3: cancel_reservation expected ALLOW, got REVISE" in capsys.readouterr().err
