"""Telehealth figure: one gate decision for a booking, all telehealth predicates, a 10,000-record ledger.

What is timed: `PolicyGate.evaluate(call, ledger, DOMAIN.context(ledger))` for the telehealth DOMAIN, the
exact expression the executor runs before every write, so the identity rule and the fixed clock are in it.

Why this setup is realistic, and the worst reasonable case for the telehealth gate:
- the call is `schedule_appointment`, the write with the most rules (six of the twelve run on it: who is
  booked, the provider's slots, the calendar, the type, the billing, authentication), and it is ALLOWed,
  so every one of them runs to completion; a REVISE or BLOCK could stop a rule early;
- the trial's own reads come from the real TelehealthBackend over the shipped seed (authentication, the
  patient's profile, the provider, the patient's unfiltered calendar), so the predicates read exactly the
  shapes a session produces;
- the rest of the ledger is ~10,000 other appointments, profiles, providers and records, copies of the
  backend's own results under fresh ids absorbed through `Ledger.absorb`, far more than any conversation
  observes, so a rule that scanned the ledger would show here;
- the gate's anti-loop memory is cleared (untimed) before each sample, so no sample is a replayed verdict.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.gate import time_gate
from benchmarks.timing import US, Result
from core.ledger import Ledger
from core.tools import ToolCall
from domains.telehealth import DOMAIN
from mock_backends.telehealth import TelehealthBackend

TELEHEALTH_GATE_TARGET_NS = 100 * US

PATIENT, PROVIDER = "priya_raman_6120", "dr_lindqvist_primary"
BOOKING = {"patient_id": PATIENT, "provider_id": PROVIDER, "date": "2025-05-29", "time": "11:00",
           "appointment_type": "follow_up"}
TRIAL_READS: list[tuple[str, dict[str, Any]]] = [
    ("find_patient_by_email", {"email": "priya.raman@example.org"}),
    ("get_patient_details", {"patient_id": PATIENT}),
    ("get_provider_details", {"provider_id": PROVIDER}),
    ("list_patient_appointments", {"patient_id": PATIENT}),
]
# Filler: (read tool, id argument, id field) of the record kinds a long conversation accumulates.
FILLER_READS = [("get_appointment_details", "appointment_id"), ("get_patient_details", "patient_id"),
                ("get_provider_details", "provider_id"), ("get_medical_record", "record_id")]


@dataclass
class TelehealthSetup:
    ledger: Ledger
    call: ToolCall


async def _backend_results(seed_reads: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Run reads on a fresh seed database (a temporary file), returning their results in order."""
    with tempfile.TemporaryDirectory() as folder:
        backend = await TelehealthBackend.open(Path(folder) / "bench.sqlite")
        try:
            return [await backend.call(name, arguments) for name, arguments in seed_reads]
        finally:
            await backend.close()


async def _seed_ids() -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        backend = await TelehealthBackend.open(Path(folder) / "ids.sqlite")
        try:
            return {id_field: await backend.store.keys(collection) for (_, id_field), collection in
                    zip(FILLER_READS, ("appointments", "patients", "providers", "medical_records"), strict=True)}
        finally:
            await backend.close()


def build_telehealth_ledger(records: int = 10_000) -> TelehealthSetup:
    """A telehealth ledger of exactly `records` entries (at least the trial's own five), absorbed read by read."""
    ids = asyncio.run(_seed_ids())
    filler_reads = [(tool, {field: key}) for tool, field in FILLER_READS for key in ids[field]]
    results = asyncio.run(_backend_results(TRIAL_READS + filler_reads))
    trial, templates = results[:len(TRIAL_READS)], list(zip(filler_reads, results[len(TRIAL_READS):], strict=True))
    ledger = Ledger(DOMAIN.path_map)
    counter = itertools.count(1)

    def absorb(tool: str, arguments: dict[str, Any], result: Any) -> None:
        number = next(counter)
        outcome = ledger.absorb(ToolCall(id=f"call_{number}", name=tool, arguments=arguments), result, step=number)
        if not outcome.touched:
            raise RuntimeError(f"{tool}{arguments} was not absorbed: {outcome.skipped}")

    for (tool, arguments), result in zip(TRIAL_READS, trial, strict=True):
        absorb(tool, arguments, copy.deepcopy(result))
    for generation in itertools.count():
        for (tool, arguments), result in templates:
            if len(ledger) >= records:
                return TelehealthSetup(ledger, ToolCall(id="w1", name="schedule_appointment", arguments=BOOKING))
            [(field, key)] = arguments.items()
            if generation == 0 and (key in (PATIENT, PROVIDER)):
                continue  # the trial's own records were read above, unmodified
            clone = copy.deepcopy(result)
            clone[field] = fresh = key if generation == 0 else f"{key}_g{generation}"
            absorb(tool, {field: fresh}, clone)
    raise AssertionError("unreachable")


def bench_telehealth_gate(*, records: int = 10_000, repeat: int = 3000, warmup: int = 200,
                          setup: TelehealthSetup | None = None) -> Result:
    """Median/p95 of one telehealth gate decision. Pass `setup` to reuse an already built ledger."""
    setup = setup or build_telehealth_ledger(records)
    return time_gate(DOMAIN, setup.ledger, setup.call, key="telehealth_gate_decision", what="telehealth booking",
                     repeat=repeat, warmup=warmup, target_ns=TELEHEALTH_GATE_TARGET_NS)
