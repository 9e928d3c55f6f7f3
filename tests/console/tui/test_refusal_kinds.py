"""The two kinds of REVISE on the operator's side: worded apart from the recorded event, and a needs-a-read REVISE
never stops a session for a human in `approve non-ALLOW` (it goes back to the model, counted on the desk).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from console.runtime.desk.desk import Desk
from console.runtime.desk.view import RowPhase
from console.runtime.facts import refusal_words, returned_for_read, verdict_summary, verdict_words
from console.runtime.live import OperatorSupervisor, SessionSpec, SupervisionMode
from core.events import CallInfo, GateDecided, GateReadInfo, PredicateResultInfo


def _decided(verdict: str, refusal: str | None, **extra: Any) -> GateDecided:
    status = {"needs_read": "missing", "breaks_rule": "violation"}.get(refusal or "", "pass")
    return GateDecided(call=CallInfo(id="c1", name="enable_roaming", arguments={}), verdict=verdict,  # type: ignore[arg-type]
                       results=[PredicateResultInfo(predicate_id="telecom.x", status=status, verdict=verdict,
                                                    reason="r", evidence=[], policy="p")],
                       feedback="", refusal=refusal, **extra)  # type: ignore[arg-type]


def test_the_kind_is_worded_from_the_event() -> None:
    assert verdict_summary(_decided("REVISE", "needs_read")) == "REVISE (needs a read): telecom.x"
    assert verdict_summary(_decided("REVISE", "breaks_rule")) == "REVISE (breaks a rule): telecom.x"
    assert verdict_words("REVISE", "needs_read") == "REVISE · needs a read"
    assert verdict_words("BLOCK", None) == "BLOCK" and refusal_words(None) == ""
    read = GateReadInfo(call_id="c1~gate1", text='get_details_by_id(id="L1")', outcome="error", detail="not found")
    assert verdict_summary(_decided("REVISE", "needs_read", gate_reads=[read])).endswith(
        'the gate read get_details_by_id(id="L1") (failed: not found) itself')
    assert returned_for_read([]) == ""


def test_approve_non_allow_asks_about_a_broken_rule_not_about_a_missing_read() -> None:
    asks = OperatorSupervisor(SupervisionMode.APPROVE_NON_ALLOW, "ann", lambda review: None).needs_review_of
    assert asks(_decided("REVISE", "breaks_rule")) and asks(_decided("BLOCK", None))
    assert not asks(_decided("REVISE", "needs_read")) and not asks(_decided("ALLOW", None))
    every_write = OperatorSupervisor(SupervisionMode.APPROVE_WRITES, "ann", lambda review: None).needs_review_of
    assert every_write(_decided("REVISE", "needs_read"))


async def test_a_needs_a_read_revise_goes_back_to_the_model_and_is_counted_on_the_desk(tmp_path: Path) -> None:
    """roaming-abroad is written for the paper's gate: its first enable_roaming lacks the line and is REVISEd.
    Under approve non-ALLOW that REVISE reaches no human; the session runs to its end with an empty inbox, and
    its row counts the REVISE as returned for a read."""
    spec = SessionSpec(domain="telecom", scenario="roaming-abroad", mode=SupervisionMode.APPROVE_NON_ALLOW)
    desk = Desk([spec], root=tmp_path, audit_path=tmp_path / "desk" / "audit.jsonl", clock=lambda: 1000.0,
                wall=lambda: "2026-12-01T10:00:00+00:00")
    runner = asyncio.create_task(desk.run())
    for _ in range(60_000):  # a bound on polls, not a time limit
        snapshot = desk.snapshot()
        assert not snapshot.items, "a needs-a-read REVISE was sent to the inbox"
        if runner.done():
            break
        await asyncio.sleep(0.001)
    await runner
    (row,) = desk.snapshot().rows
    assert (row.phase, row.revise, row.returned) == (RowPhase.ENDED, 1, 1)
    assert returned_for_read(desk.snapshot().rows) == "  returned for a read 1"
    events = [json.loads(line) for line in (Path(row.folder) / "trace.jsonl").read_text().splitlines()]
    assert [e["refusal"] for e in events if e["type"] == "gate_decision"] == ["needs_read", None]
    assert not [e for e in events if e["type"] == "supervisor_decision"]


def test_the_taxonomy_tells_a_gold_write_refused_for_a_read_from_one_refused_as_breaking_a_rule() -> None:
    from core.evaluation.analysis import classify
    from core.evaluation.facts import TrialFacts
    from core.evaluation.rewards import RewardInfo, WriteCheck
    from core.evaluation.tasks import Task
    from core.events import SessionEnded

    task = Task.model_validate({"id": "t1", "user_scenario": {"instructions": "x"},
                                "evaluation_criteria": {"actions": [{"action_id": "a1", "name": "enable_roaming",
                                                                     "arguments": {}}]}})
    reward = RewardInfo(reward=0.0, reward_basis=["DB"], breakdown={"DB": 0.0},
                        write_checks=[WriteCheck(status="missing", name="enable_roaming", action_id="a1")])
    for refusal, category in (("needs_read", "refused for a read"), ("breaks_rule", "refused as breaking a rule")):
        facts = TrialFacts(decisions=[_decided("REVISE", refusal)],
                           ended=SessionEnded(reason="user_stop", steps=3))
        failure = classify(status="ok", facts=facts, reward=reward, task=task, refused=[])
        assert (failure.category, failure.evidence) == (category, "enable_roaming (a1): REVISE from telecom.x")
