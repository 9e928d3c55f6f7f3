"""The telehealth gate figure runs on a small ledger and reports positive numbers (speed is never asserted in
tests; `make bench` is where the figure is read)."""

from __future__ import annotations

import json

from benchmarks.telehealth import TELEHEALTH_GATE_TARGET_NS, bench_telehealth_gate, build_telehealth_ledger
from core.ledger import Ledger


def test_the_ledger_has_the_requested_size_and_the_trials_records() -> None:
    setup = build_telehealth_ledger(400)  # more than the seed holds: topped up with fresh-id copies
    assert isinstance(setup.ledger, Ledger) and len(setup.ledger) == 400
    assert setup.ledger.get("auth.patient_id") == "priya_raman_6120"
    for path in ("patient", "providers.dr_lindqvist_primary", "appointment_lists.priya_raman_6120"):
        assert setup.ledger.has(path), path
    assert any(path.endswith("_g1") for path in setup.ledger.paths())
    assert setup.call.name == "schedule_appointment"


def test_the_figure_runs_a_full_length_allow() -> None:
    result = bench_telehealth_gate(records=120, repeat=5, warmup=1)
    assert result.n == 5 and result.median_ns > 0 and result.p95_ns >= result.median_ns
    assert result.target_ns == TELEHEALTH_GATE_TARGET_NS == 100_000
    assert "9 predicates" in result.figure and "verdict ALLOW" in result.note
    assert json.dumps(result.to_json())
