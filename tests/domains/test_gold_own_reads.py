"""Every upstream gold trajectory with ONLY the reads the gold itself makes (tests/support/gold_own_reads.py).

With the paper's gate (`--evidence ask`) many legal gold writes are refused for reads a careful agent would have
made; with evidence assist the gate makes them itself, and no gold write is refused but the documented
infeasible one (retail task 64's exchange of a pending order, which tau2's own tool refuses too). The figures
are docs/evidence.md's table (`python -m tests.support.gold_own_reads`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gold_own_reads import measure
from tests.support.upstream import TAU2_AIRLINE, TAU2_RETAIL, TAU2_TELECOM, TAU_TRAIT_TELEHEALTH

DATA = {"airline": TAU2_AIRLINE / "tasks.json", "retail": TAU2_RETAIL / "tasks.json",
        "telecom": TAU2_TELECOM / "tasks_small.json", "telehealth": TAU_TRAIT_TELEHEALTH / "tasks.json"}
# Gold writes no mode may allow: the upstream tool refuses them as well (see the retail gold-replay test).
INFEASIBLE = {"retail": {("64", "64_6")}}

pytestmark = pytest.mark.shared


@pytest.mark.parametrize("name", sorted(DATA))
async def test_gold_with_only_its_own_reads_is_allowed_when_the_gate_reads_itself(name: str, tmp_path: Path) -> None:
    if not DATA[name].is_file():
        pytest.skip(f"no upstream {name} tasks at {DATA[name]}")
    ask, assist = await measure(name, tmp_path)
    assert ask.writes == assist.writes > 0
    assert {(r.task_id, r.action_id) for r in assist.refused} == INFEASIBLE.get(name, set()), [
        (r.task_id, r.action_id, r.verdict, r.rules, r.reason[:200]) for r in assist.refused]
    assert assist.gate_reads > 0 and assist.failed_gate_reads == 0
    # the paper's gate bounces legal gold writes for reads: the problem evidence assist answers
    assert ask.needs_read > 0 and len(ask.refused) > len(assist.refused)
