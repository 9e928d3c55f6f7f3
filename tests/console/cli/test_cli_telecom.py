"""`ledgeragent` for the telecom domain, in-process, over the shipped seed (no upstream tau2 data needed).

The seed's story (mock_backends/telecom/seed.py): Maria Lopez (C2001, 555-210-3001) is abroad with roaming off,
her tablet line L2003 is suspended for the Overdue bill B2003 ($15.00), her son's line L2002 has used its 5 GB.
The phone in the user DB is hers, so a `check` trajectory can have her pay on it (requestor "user").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.cli.main import main
from mock_backends.telecom.seed import SEED_FILE

SCENARIOS = {"roaming-abroad": ["REVISE", "ALLOW"], "overdue-bill-resume": ["ALLOW", "REVISE", "ALLOW"],
             "refuel-over-cap": ["REVISE", "ALLOW"]}


def line(name: str, expect: str, requestor: str = "assistant", **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "requestor": requestor, "expect": expect}


TRAJECTORY = [
    line("get_customer_by_phone", "ALLOW", phone_number="555-210-3001"),
    line("resume_line", "REVISE", customer_id="C2001", line_id="L2003"),  # nothing about bills or the line read
    line("get_bills_for_customer", "ALLOW", customer_id="C2001"),
    line("get_details_by_id", "ALLOW", id="L2003"),
    line("resume_line", "REVISE", customer_id="C2001", line_id="L2003"),  # B2003 is still Overdue
    line("send_payment_request", "BLOCK", customer_id="C2001", bill_id="B2001"),  # Paid long ago
    line("send_payment_request", "ALLOW", customer_id="C2001", bill_id="B2003"),
    line("check_payment_request", "ALLOW", "user"),
    line("make_payment", "ALLOW", "user"),
    line("get_bills_for_customer", "ALLOW", customer_id="C2001"),
    line("resume_line", "ALLOW", customer_id="C2001", line_id="L2003"),
    line("toggle_roaming", "ERROR", customer_id="C2001"),  # the agent cannot reach the phone
    line("get_details_by_id", "ERROR", id="Z1"),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "300")
    return tmp_path / "home"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_run_headless_json(name: str, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / name
    assert main(["run", "--domain", "telecom", "--scenario", name, "--headless", "--json", "--out", str(out)]) == 0
    events = [json.loads(row) for row in capsys.readouterr().out.splitlines()]
    assert events[0]["type"] == "session_started" and events[0]["reference_time"] == "2025-02-25T12:08:00"
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == SCENARIOS[name]
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "user_stop"
    phone = [e for e in events if e["type"] == "tool_result" and e["call"]["requestor"] == "user"]
    assert phone or name == "refuel-over-cap"  # the customer acts on the phone in the other two


def test_run_headless_transcript(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--domain", "telecom", "--scenario", "roaming-abroad", "--headless", "--out",
                 str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "Data Roaming is now ON." in printed and "ledger +device.network_status" in printed


@pytest.mark.parametrize("db", [None, SEED_FILE])
def test_check_over_the_seed_with_phone_lines(db: Path | None, home: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tablet.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in TRAJECTORY), encoding="utf-8")
    argv = ["check", str(path), "--domain", "telecom", "--json", "--evidence", "ask"] + \
        ([] if db is None else ["--db", str(db)])
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [json.loads(row) for row in captured.out.splitlines()]
    assert [row["verdict"] for row in rows] == [row["expect"] for row in TRAJECTORY]
    assert all(row["met"] for row in rows)
    assert [row["requestor"] for row in rows] == [row["requestor"] for row in TRAJECTORY]
    assert rows[1]["predicates"] == ["telecom.resume_only_suspended", "telecom.resume_contract_not_ended",
                                     "telecom.resume_after_overdue_paid", "telecom.resume_pending_activation"]
    assert rows[4]["predicates"] == ["telecom.resume_after_overdue_paid"]
    assert rows[5]["predicates"] == ["telecom.payment_request_for_overdue_bill"]
    assert rows[11]["reason"] == "Tool 'toggle_roaming' not found."
    assert [row["executed"] for row in rows if row["kind"] == "write"] == [False, False, False, True, True, True]


def test_check_rejects_a_db_toml_without_its_user_db(home: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(TRAJECTORY[0]) + "\n", encoding="utf-8")
    (tmp_path / "lonely").mkdir()
    (tmp_path / "lonely" / "db.toml").write_text("", encoding="utf-8")
    assert main(["check", str(path), "--domain", "telecom", "--db", str(tmp_path / "lonely" / "db.toml")]) == 2
    assert "no user_db.toml beside db.toml" in capsys.readouterr().err


def test_a_bad_requestor_line_is_reported_and_skipped(home: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(TRAJECTORY[0]) + "\n" + json.dumps({**TRAJECTORY[7], "requestor": "phone"}) + "\n",
                    encoding="utf-8")
    assert main(["check", str(path), "--domain", "telecom", "--json"]) == 1
    assert f"{path}:2: 'requestor' must be one of assistant, user, got 'phone' (line skipped)" in \
        " ".join(capsys.readouterr().err.split())


def test_predicates_and_scenarios_are_listed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predicates", "--domain", "telecom", "--json"]) == 0
    rows = [json.loads(row) for row in capsys.readouterr().out.splitlines()]
    assert len(rows) == 15 and {row["severity"] for row in rows} == {"REVISE", "BLOCK"}
    assert main(["scenarios", "--domain", "telecom"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in SCENARIOS)
