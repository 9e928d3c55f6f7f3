"""Re-gating recorded sessions with changed predicates, and exporting sessions as `ledgeragent check` fixtures.

The export tests close the loop: a recorded session, exported and replayed through `core.replay.Checker`
on a fresh database, must reproduce every exported expectation and end in the same database state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.agent import AgentConfig
from core.domain import Domain
from core.events import CallInfo, Event, GateDecided, SessionStarted, ToolResultEvent
from core.gate import GateContext, GateDecision, LedgerView, Outcome, Pass, Status, Verdict, Violation, predicate
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.regate import export_trajectory, regate, write_trajectory
from core.replay import Checker, parse_trajectory
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from core.supervisor import Decision, Resolution
from core.tools import ToolBackend, ToolCall
from core.trace import load_trace
from core.users import ScriptedUser
from domains.retail import DOMAIN as RETAIL
from mock_backends.retail import RetailBackend
from tests.support.toy_domain import DOMAIN, ToyBackend


def c(tool: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(tool, arguments)


class Operator:
    def __init__(self, *answers: Resolution) -> None:
        self.answers = list(answers)

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        return self.answers.pop(0) if self.answers else Resolution(Decision.APPROVE)


async def toy_events(steps: Sequence[ScriptedStep], tmp_path: Path, backend: ToyBackend | None = None,
                     **kwargs: Any) -> list[Any]:
    s = Session(domain=DOMAIN, backend=backend or ToyBackend(), model=ScriptedChatModel(steps),
                user=ScriptedUser(["hi"]), trace_path=tmp_path / "trace.jsonl",
                clock=lambda: "2026-01-01T00:00:00+00:00", **kwargs)
    await s.run()
    return list(s.bus.history)


LOGIN_READ = ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1")))
STREAK = [LOGIN_READ, *[ScriptedStep(calls=(c("transfer", account_id="A1", amount=1000 + i),)) for i in range(3)],
          ScriptedStep(say="I cannot do that.")]


async def check(domain: Domain, backend: ToolBackend, text: str,
                disabled: frozenset[str] = frozenset()) -> list[tuple[str, str | None]]:
    trajectory = parse_trajectory(text)
    assert trajectory.problems == []
    results = await Checker(domain, backend, disabled=disabled).run(trajectory.calls)
    return [(r.verdict, r.expect) for r in results]


# ------------------------------------------------------------------------------------------- regate, toy


async def test_unchanged_predicates_reproduce_every_verdict_including_escalation(tmp_path: Path) -> None:
    events = await toy_events(STREAK, tmp_path)
    rows = regate(events, DOMAIN)
    assert [(r.old_verdict, r.new_verdict) for r in rows] == [("REVISE", "REVISE"), ("REVISE", "REVISE"),
                                                              ("BLOCK", "BLOCK")]
    assert not any(r.changed for r in rows)
    assert rows[2].decision.escalated and "escalated" in rows[2].new_reason
    assert [r.index for r in rows] == [0, 1, 2] and rows[0].arguments == {"account_id": "A1", "amount": 1000}
    # loaded from disk, too
    assert [r.new_verdict for r in regate(load_trace(tmp_path / "trace.jsonl"), DOMAIN)] == ["REVISE", "REVISE",
                                                                                             "BLOCK"]


async def test_streak_memory_follows_the_new_settings(tmp_path: Path) -> None:
    events = await toy_events(STREAK, tmp_path)
    rows = regate(events, DOMAIN, max_revise_streak=5)
    assert [r.new_verdict for r in rows] == ["REVISE", "REVISE", "REVISE"]
    assert [r.changed for r in rows] == [False, False, True]
    assert rows[2].old_failed == rows[2].new_failed == ("toy.balance",)


async def test_a_repeated_rejection_is_reproduced(tmp_path: Path) -> None:
    same = ScriptedStep(calls=(c("transfer", account_id="A1", amount=500),))
    events = await toy_events([LOGIN_READ, same, same, ScriptedStep(say="no")], tmp_path)
    recorded = [e for e in events if isinstance(e, GateDecided)]
    assert [e.repeated for e in recorded] == [False, True]
    rows = regate(events, DOMAIN)
    assert [r.decision.repeated for r in rows] == [False, True] and not any(r.changed for r in rows)


async def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    events = await toy_events(STREAK, tmp_path)
    with pytest.raises(ValueError, match="unknown predicate"):
        regate(events, DOMAIN, disabled=["toy.balanse"])
    other = Domain(name="elsewhere", title="x", policy="", tools=DOMAIN.tools, path_map=DOMAIN.path_map,
                   predicates=DOMAIN.predicates)
    with pytest.raises(ValueError, match="from domain 'toy'"):
        regate(events, other)


# ------------------------------------------------------------------------------------------- regate, retail

SCENARIOS = list_scenarios(RETAIL.scenarios_dir)
REFUND_RULE = "retail.refund_to_original_or_gift_card"


async def retail_run(name: str, folder: Path) -> tuple[list[Any], str | None]:
    scenario = load_scenario(SCENARIOS[name])
    backend = await RetailBackend.open(folder / "db.sqlite")
    try:
        session = Session(domain=RETAIL, backend=backend, model=scenario.build_model(),
                          user=scenario.build_user(), scenario=scenario.name)
        result = await session.run()
        return list(session.bus.history), result.db_hash
    finally:
        await backend.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_retail_regate_with_unchanged_predicates_changes_nothing(name: str, tmp_path: Path) -> None:
    events, _ = await retail_run(name, tmp_path)
    rows = regate(events, RETAIL)
    assert [r.new_verdict for r in rows] == load_scenario(SCENARIOS[name]).expect.verdicts
    assert [r.changed for r in rows] == [False] * len(rows)
    assert all(r.new_failed == r.old_failed for r in rows)


async def test_disabling_the_refund_rule_turns_the_revise_into_allow(tmp_path: Path) -> None:
    events, _ = await retail_run("refund-to-original-payment", tmp_path)
    revise, allow = regate(events, RETAIL, disabled=[REFUND_RULE])
    assert (revise.old_verdict, revise.new_verdict, revise.changed) == ("REVISE", "ALLOW", True)
    assert revise.old_failed == (REFUND_RULE,) and revise.new_failed == ()
    assert "credit_card_4821002" in revise.old_reason and revise.new_feedback == ""
    assert revise.arguments["payment_method_id"] == "credit_card_4821002"
    assert next(r for r in revise.decision.results if r.predicate_id == REFUND_RULE).status is Status.DISABLED
    assert (allow.old_verdict, allow.new_verdict, allow.changed) == ("ALLOW", "ALLOW", False)


@predicate(id="test.big_refunds_need_a_manager", tools=["return_delivered_order_items"], severity=Verdict.BLOCK,
           policy="Refunds over $500 go to a manager.")
def big_refunds_need_a_manager(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    order_id = call.arguments["order_id"]
    order = view.require(f"orders.{order_id}")
    total = sum(i["price"] for i in order["items"] if i["item_id"] in call.arguments["item_ids"])
    if total > 500:
        return Violation(f"refund of {total} exceeds 500 (orders.{order_id}.items)")
    return Pass()


@predicate(id="test.broken", tools=["return_delivered_order_items"], severity=Verdict.BLOCK, policy="Buggy.")
def broken(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    raise RuntimeError("oops")


async def test_a_stricter_predicate_turns_the_allow_into_block(tmp_path: Path) -> None:
    events, _ = await retail_run("refund-to-original-payment", tmp_path)
    rows = regate(events, RETAIL, predicates=[*RETAIL.predicates, big_refunds_need_a_manager])
    assert [(r.old_verdict, r.new_verdict, r.changed) for r in rows] == [("REVISE", "BLOCK", True),
                                                                         ("ALLOW", "BLOCK", True)]
    allow = rows[1]
    assert allow.old_failed == () and allow.new_failed == ("test.big_refunds_need_a_manager",)
    assert "refund of 989.7 exceeds 500" in allow.new_reason and "BLOCK" in allow.new_feedback
    assert "orders.#W4821001" in allow.new_evidence


async def test_a_raising_predicate_fails_closed_in_the_new_column(tmp_path: Path) -> None:
    events, _ = await retail_run("refund-to-original-payment", tmp_path)
    rows = regate(events, RETAIL, predicates=[*RETAIL.predicates, broken])
    allow = rows[1]
    assert (allow.old_verdict, allow.new_verdict, allow.changed) == ("ALLOW", "REVISE", True)
    assert allow.new_failed == ("test.broken",)
    assert "raised RuntimeError: oops" in allow.new_reason and "failing closed" in allow.new_reason
    assert next(r for r in allow.decision.results if r.predicate_id == "test.broken").status is Status.ERROR


@predicate(id=REFUND_RULE, tools=["return_delivered_order_items"], severity=Verdict.REVISE,
           policy="Refunds go to the original payment method or a gift card.")
def crashing_refund_rule(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
    raise KeyError("payment_history")  # an edit that broke the rule: the gate fails closed with REVISE


async def test_a_rule_that_went_from_violation_to_crashing_is_a_change(tmp_path: Path) -> None:
    events, _ = await retail_run("refund-to-original-payment", tmp_path)
    predicates = [crashing_refund_rule if p.id == REFUND_RULE else p for p in RETAIL.predicates]
    revise, allow = regate(events, RETAIL, predicates=predicates)
    # same verdict, same objecting rule: only its status tells the crash apart
    assert (revise.old_verdict, revise.new_verdict, revise.old_failed, revise.new_failed) == (
        "REVISE", "REVISE", (REFUND_RULE,), (REFUND_RULE,))
    assert revise.changed
    assert revise.status_changes == ((REFUND_RULE, "violation", "error"),)
    assert dict(revise.new_statuses)[REFUND_RULE] == "error"
    assert (allow.old_verdict, allow.new_verdict, allow.changed) == ("ALLOW", "REVISE", True)
    assert allow.status_changes == ((REFUND_RULE, "pass", "error"),)


async def test_a_rule_switched_off_is_not_a_status_change_of_a_passing_call(tmp_path: Path) -> None:
    events, _ = await retail_run("refund-to-original-payment", tmp_path)
    _, allow = regate(events, RETAIL, disabled=[REFUND_RULE])
    assert allow.status_changes == () and not allow.changed


# ------------------------------------------------------------------------------------------- export


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_exported_retail_session_replays_through_check_exactly(name: str, tmp_path: Path) -> None:
    events, db_hash = await retail_run(name, tmp_path)
    exported = export_trajectory(events)
    assert exported.omitted_count == 0 and exported.warnings == ()
    writes = [line["expect"] for line in exported.lines if line["name"] in RETAIL_WRITES]
    assert writes == load_scenario(SCENARIOS[name]).expect.verdicts
    path = write_trajectory(tmp_path / "fixture" / f"{name}.jsonl", exported.lines)
    fresh = await RetailBackend.open(tmp_path / "fresh.sqlite")
    try:
        outcome = await check(RETAIL, fresh, path.read_text(encoding="utf-8"))
        assert outcome == [(line["expect"], line["expect"]) for line in exported.lines]
        # same calls, same verdicts, same writes: the check run ends in the session's database state
        assert await fresh.state_hash() == db_hash
    finally:
        await fresh.close()


RETAIL_WRITES = {spec.name for spec in RETAIL.tools if spec.kind.value == "write"}


async def test_export_lines_are_plain_check_jsonl(tmp_path: Path) -> None:
    events, _ = await retail_run("refund-to-original-payment", tmp_path)
    exported = export_trajectory(events)
    text = exported.to_jsonl()
    first = json.loads(text.splitlines()[0])
    assert first == {"name": "find_user_id_by_name_zip", "expect": "ALLOW",
                     "arguments": {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"}}
    assert [json.loads(line)["name"] for line in text.splitlines()] == [line["name"] for line in exported.lines]
    writes_only = export_trajectory(events, include_reads=False)
    assert [(line["name"], line["expect"]) for line in writes_only.lines] == [
        ("return_delivered_order_items", "REVISE"), ("return_delivered_order_items", "ALLOW")]


async def test_invalid_calls_are_left_out_and_counted(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(ScriptedCall("get_account", raw_arguments='{"account_id": "A1"'),
                                 c("no_such_tool", x=1), c("get_account", account_id=7), c("get_account"),
                                 c("get_account", account_id="ZZ"))),
             ScriptedStep(say="Sorry.")]
    exported = export_trajectory(await toy_events(steps, tmp_path))
    assert exported.lines == [{"name": "get_account", "arguments": {"account_id": "ZZ"}, "expect": "ERROR"}]
    assert exported.omitted_count == 4
    assert all(o.reason.startswith("refused as invalid") for o in exported.omitted)
    assert "not valid JSON" in exported.omitted[0].reason


async def test_force_allowed_call_exports_the_gate_verdict_with_a_warning(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="B1"))),
             ScriptedStep(calls=(c("transfer", account_id="B1", amount=5),)),
             ScriptedStep(say="ok")]
    op = Operator(Resolution(Decision.FORCE_ALLOW, who="dana", reason="bob consented"))
    session_backend = ToyBackend()
    exported = export_trajectory(await toy_events(steps, tmp_path, session_backend, supervisor=op))
    transfer = exported.lines[-1]
    assert (transfer["name"], transfer["expect"]) == ("transfer", "BLOCK")
    assert "force-allowed by dana (bob consented)" in transfer["note"]
    assert len(exported.warnings) == 1 and exported.warnings[0].startswith("line 3 (transfer")
    check_backend = ToyBackend()
    outcome = await check(DOMAIN, check_backend, exported.to_jsonl())
    assert all(verdict == expect for verdict, expect in outcome)
    # ...and the documented divergence: the session ran the write, check did not
    assert session_backend.state != check_backend.state


async def test_vetoed_allow_is_left_out_and_edited_call_exports_its_last_arguments(tmp_path: Path) -> None:
    steps = [
        LOGIN_READ,
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=30),)),
        ScriptedStep(calls=(c("get_account", account_id="A1"),)),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=30),)),
        ScriptedStep(say="ok"),
    ]
    op = Operator(Resolution(Decision.VETO, who="dana", reason="confirm first"),
                  Resolution(Decision.EDIT, who="dana", reason="typo", arguments={"account_id": "A1", "amount": 3000}),
                  Resolution(Decision.EDIT, who="dana", reason="smaller", arguments={"account_id": "A1", "amount": 3}))
    session_backend = ToyBackend()
    exported = export_trajectory(await toy_events(steps, tmp_path, session_backend, supervisor=op))
    assert [(line["name"], line["expect"]) for line in exported.lines] == [
        ("login", "ALLOW"), ("get_account", "ALLOW"), ("get_account", "ALLOW"), ("transfer", "ALLOW")]
    assert exported.lines[-1]["arguments"] == {"account_id": "A1", "amount": 3}
    assert "edited by dana" in exported.lines[-1]["note"]
    assert [o.reason for o in exported.omitted] == [
        "vetoed by the operator although the gate allowed it; check would run it"]
    check_backend = ToyBackend()
    outcome = await check(DOMAIN, check_backend, exported.to_jsonl())
    assert all(verdict == expect for verdict, expect in outcome)
    assert check_backend.state == session_backend.state  # balance 97 in both


async def test_fc_session_exports_outcomes_and_check_shows_where_the_gate_disagrees(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(c("login", name="ann"), c("transfer", account_id="B1", amount=10))),
             ScriptedStep(say="Done.")]
    events = await toy_events(steps, tmp_path, config=AgentConfig(ledger=False, gate=False))
    assert regate(events, DOMAIN) == []
    exported = export_trajectory(events)
    assert [(line["name"], line["expect"]) for line in exported.lines] == [("login", "ALLOW"), ("transfer", "ALLOW")]
    outcome = await check(DOMAIN, ToyBackend(), exported.to_jsonl())
    assert outcome == [("ALLOW", "ALLOW"), ("REVISE", "ALLOW")]  # the gate wants accounts.B1 read first


def test_user_side_calls_and_session_settings() -> None:
    call = CallInfo(id="u1", name="toggle_airplane_mode", arguments={}, requestor="user")
    events: list[Event] = [
        SessionStarted(seq=1, domain="toy", agent="ledger", model="m", user="u", disabled_predicates=["toy.owner"]),
        ToolResultEvent(seq=2, step=1, call=call, kind="write", executed=True, ok=True, outcome="ok", content="ok"),
    ]
    exported = export_trajectory(events)
    assert exported.lines == [] and exported.omitted_count == 1 and "user-side" in exported.omitted[0].reason
    assert exported.disabled_predicates == ("toy.owner",)
