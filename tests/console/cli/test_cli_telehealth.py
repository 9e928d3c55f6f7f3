"""`ledgeragent` for the telehealth domain, in-process, over the shipped seed (no upstream tau2 data needed).

The seed's story (mock_backends/telehealth/seed.py): Priya Raman books with Dr. Lindqvist, Tomas Herrera's
APPT003 is completed, Marcus Feld's REC003 prescribes Atorvastatin (cheapest Indian offer: Kaveri Generics'
Atorvika at $3.95).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli.main import main
from mock_backends.telehealth.seed import SEED_FILE

SCENARIOS = {"schedule-after-checking": ["REVISE", "ALLOW"], "cancel-completed-appointment": ["BLOCK"],
             "unobserved-supplier-price": ["REVISE", "ALLOW"]}

TRAJECTORY = [
    {"name": "find_patient_by_email", "arguments": {"email": "marcus.feld@example.org"}, "expect": "ALLOW"},
    {"name": "get_medical_record", "arguments": {"record_id": "REC003"}, "expect": "ALLOW"},
    {"name": "update_prescription_supplier", "arguments": {
        "record_id": "REC003", "medication": "Atorvastatin", "supplier_company": "Kaveri Generics",
        "brand_name": "Atorvika", "price_usd": 3.95}, "expect": "REVISE", "note": "no listing read yet"},
    {"name": "list_medication_suppliers", "arguments": {"medication": "Atorvastatin", "country_filter": "India"},
     "expect": "ALLOW"},
    {"name": "update_prescription_supplier", "arguments": {
        "record_id": "REC003", "medication": "Atorvastatin", "supplier_company": "Kaveri Generics",
        "brand_name": "Atorvika", "price_usd": 3.95}, "expect": "ALLOW"},
    {"name": "get_appointment_details", "arguments": {"appointment_id": "APPT003"}, "expect": "ALLOW"},
    {"name": "cancel_appointment", "arguments": {"appointment_id": "APPT003"}, "expect": "BLOCK",
     "note": "Tomas's completed visit: not Marcus's either"},
    {"name": "get_patient_details", "arguments": {"patient_id": "nobody"}, "expect": "ERROR"},
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "300")
    return tmp_path / "home"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_run_headless_json(name: str, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / name
    assert main(["run", "--domain", "telehealth", "--scenario", name, "--headless", "--json", "--out", str(out)]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0]["type"] == "session_started" and events[0]["reference_time"] == "2025-05-20T05:00:00"
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == SCENARIOS[name]
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "user_stop"


@pytest.mark.parametrize("db", [None, SEED_FILE])
def test_check_over_the_seed(db: Path | None, home: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "marcus.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in TRAJECTORY), encoding="utf-8")
    argv = ["check", str(path), "--domain", "telehealth", "--json", "--evidence", "ask"] + \
        ([] if db is None else ["--db", str(db)])
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [row["verdict"] for row in rows] == [line["expect"] for line in TRAJECTORY]
    assert all(row["met"] for row in rows)
    assert rows[2]["predicates"] == ["telehealth.supplier_observed"]
    assert 'list_medication_suppliers(medication="Atorvastatin")' in rows[2]["reason"]
    assert set(rows[6]["predicates"]) == {"telehealth.appointment_belongs_to_patient",
                                          "telehealth.appointment_actionable"}
    assert [row["executed"] for row in rows if row["kind"] == "write"] == [False, True, False]


def test_check_rejects_a_folder_that_is_not_telehealth_data(home: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(TRAJECTORY[0]) + "\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    assert main(["check", str(path), "--domain", "telehealth", "--db", str(tmp_path / "folder")]) == 2
    assert "missing patients.json" in capsys.readouterr().err


def test_predicates_and_scenarios_are_listed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["predicates", "--domain", "telehealth", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 15 and {row["severity"] for row in rows} == {"REVISE", "BLOCK"}
    assert main(["scenarios", "--domain", "telehealth"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in SCENARIOS)
