"""The telecom gate figure runs on a small ledger and reports positive numbers (speed is never asserted in tests;
`make bench` is where the figure is read)."""

from __future__ import annotations

import json

from benchmarks.telecom import TELECOM_GATE_TARGET_NS, bench_telecom_gate, build_telecom_ledger
from core.ledger import Ledger


def test_the_ledger_has_the_requested_size_and_the_trials_records() -> None:
    setup = build_telecom_ledger(400)  # more than the seed holds: topped up with fresh-id copies
    assert isinstance(setup.ledger, Ledger) and len(setup.ledger) == 400
    assert setup.ledger.get("customer")["customer_id"] == "C2001"
    assert setup.ledger.get("bills.B2003")["status"] == "Paid"  # paid on the phone, synced, read again
    assert setup.ledger.get("lines.L2003")["status"] == "Suspended"
    assert setup.ledger.get("device.payment_request") == "You have a payment request for bill B2003 of 15.0 USD."
    assert any(path.endswith("x2") for path in setup.ledger.paths())
    assert setup.call.name == "resume_line"


def test_the_figure_runs_a_full_length_allow() -> None:
    result = bench_telecom_gate(records=120, repeat=5, warmup=1)
    assert result.n == 5 and result.median_ns > 0 and result.p95_ns >= result.median_ns
    assert result.target_ns == TELECOM_GATE_TARGET_NS == 100_000
    assert "6 predicates" in result.figure and "verdict ALLOW" in result.note
    assert json.dumps(result.to_json())
