"""`--evidence`: assist by default, the scenario's own mode when it names one, the operator's choice above both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli.main import main
from console.cli.options import evidence_mode
from core.evidence import EvidenceMode
from core.scenario import list_scenarios, load_scenario
from domains.registry import load_domain


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    return tmp_path


def _scenario(domain: str, name: str) -> object:
    return load_scenario(list_scenarios(load_domain(domain).scenarios_dir)[name])


def test_the_mode_is_the_operators_then_the_scenarios_then_assist() -> None:
    pinned = _scenario("telecom", "roaming-abroad")  # written for the paper's gate: "evidence": "ask"
    plain = _scenario("retail", "refund-to-original-payment")
    assert evidence_mode(None, pinned) is EvidenceMode.ASK  # type: ignore[arg-type]
    assert evidence_mode("assist", pinned) is EvidenceMode.ASSIST  # type: ignore[arg-type]
    assert evidence_mode(None, plain) is evidence_mode(None) is EvidenceMode.ASSIST  # type: ignore[arg-type]


def _started(out: Path) -> dict[str, object]:
    first: dict[str, object] = json.loads((out / "trace.jsonl").read_text(encoding="utf-8").splitlines()[0])
    return first


def test_run_records_the_mode_and_checks_a_scripts_verdicts_only_in_its_own(home: Path) -> None:
    """roaming-abroad expects [REVISE, ALLOW] (the gate asks for the line); with the gate reading the line
    itself it is one ALLOW, which is no failure of the script: its expected verdicts are for `ask`."""
    assert main(["run", "--domain", "telecom", "--scenario", "roaming-abroad", "--out", str(home / "a")]) == 0
    assert _started(home / "a")["evidence"] == "ask"
    assert main(["run", "--domain", "telecom", "--scenario", "roaming-abroad", "--evidence", "assist",
                 "--out", str(home / "b")]) == 0
    assert _started(home / "b")["evidence"] == "assist"
    decisions = [json.loads(line) for line in (home / "b" / "trace.jsonl").read_text().splitlines()
                 if '"gate_decision"' in line]
    assert [(d["verdict"], [r["text"] for r in d["gate_reads"]]) for d in decisions] == [
        ("ALLOW", ['get_details_by_id(id="L2001")'])]


def test_a_bad_mode_is_a_one_line_error(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--scenario", "refund-to-original-payment", "--evidence", "sometimes"])
    assert exit_.value.code == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err
