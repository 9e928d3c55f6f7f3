"""The replay slider's ledger: rebuilt from the trace alone, it must equal what the live session had.

The strongest check is the first test: a spy records the live ledger after every event of a real toy
session, and the rebuilt timeline must agree at every single position. The retail tests then pin concrete
states of the paper's refund scenario at given steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.agent import AgentConfig
from core.events import AssistantTurnEvent, GateDecided, MessageSent, ToolResultEvent
from core.gate import GateDecision
from core.ledger import LedgerSnapshot, PathMap
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.scenario import list_scenarios, load_scenario
from core.session import Session
from core.supervisor import Decision, Resolution
from core.timeline import LedgerTimeline, apply_event, gate_rows, transcript_events
from core.tools import ToolCall
from core.trace import load_trace
from core.users import ScriptedUser
from domains.retail import DOMAIN as RETAIL
from mock_backends.retail import RetailBackend
from tests.support.toy_domain import DOMAIN, PATH_MAP, ToyBackend


def c(tool: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(tool, arguments)


# step 1 is the customer's message; the agent's model calls are steps 2..6
TOY = [
    ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),  # 2: two reads
    ScriptedStep(calls=(c("transfer", account_id="A1", amount=10),)),  # 3: ALLOW, runs, A1 stale
    ScriptedStep(calls=(c("get_account", account_id="A1"),)),  # 4: re-read: balance 90, fresh again
    ScriptedStep(calls=(c("transfer", account_id="A1", amount=500),)),  # 5: REVISE, nothing changes
    ScriptedStep(say="Moved 10."),  # 6
]


class Operator:
    def __init__(self, *answers: Resolution) -> None:
        self.answers = list(answers)

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        return self.answers.pop(0) if self.answers else Resolution(Decision.APPROVE)


async def toy_session(steps: Sequence[ScriptedStep], tmp_path: Path, **kwargs: Any) -> Session:
    s = Session(domain=DOMAIN, backend=ToyBackend(), model=ScriptedChatModel(steps), user=ScriptedUser(["hi"]),
                trace_path=tmp_path / "trace.jsonl", clock=lambda: "2026-01-01T00:00:00+00:00", **kwargs)
    return s


def entries(snapshot: Any) -> list[Any]:
    return list(snapshot.entries())


async def test_rebuilt_ledger_equals_the_live_ledger_at_every_event(tmp_path: Path) -> None:
    s = await toy_session(TOY, tmp_path)
    live: dict[int, tuple[str, LedgerSnapshot]] = {}
    s.bus.subscribe(lambda e: live.__setitem__(e.seq, (e.type, s.ledger.snapshot())))
    await s.run()
    timeline = LedgerTimeline.build(s.bus.history, PATH_MAP)
    assert timeline.divergences == () and timeline.tracked
    assert len(live) == len(s.bus.history) > 20
    for seq, (kind, snapshot) in live.items():
        # live, a tool result is emitted just before the ledger absorbs it; the timeline attributes the
        # change to that event, so the live view at emission is the timeline's "before" state
        rebuilt = timeline.before(seq) if kind == "tool_result" else timeline.at(seq)
        assert entries(rebuilt) == entries(snapshot), f"seq {seq} ({kind})"
        assert rebuilt.version == snapshot.version
        assert rebuilt.render() == snapshot.render()
    assert entries(timeline.final) == entries(s.ledger.snapshot())


async def test_states_at_given_steps(tmp_path: Path) -> None:
    s = await toy_session(TOY, tmp_path)
    await s.run()
    timeline = LedgerTimeline.build(s.bus.history, PATH_MAP)
    assert timeline.steps() == [0, 1, 2, 3, 4, 5, 6, 7]  # 7: the customer's closing ###STOP###
    assert len(timeline.at_step(1)) == 0 and len(timeline.at_step(-5)) == 0

    after_reads = timeline.at_step(2)
    assert after_reads.paths() == ["accounts.A1", "auth.customer"]
    assert after_reads.get("auth.customer") == "ann"
    a1 = after_reads.entry("accounts.A1")
    assert a1 is not None and a1.value["balance"] == 100.0 and not a1.is_stale
    assert a1.provenance.step == 2 and a1.provenance.tool == "get_account"
    assert timeline.step_changes(2).added == ("accounts.A1", "auth.customer")

    after_write = timeline.at_step(3)
    a1 = after_write.entry("accounts.A1")
    assert a1 is not None and a1.value["balance"] == 100.0  # observe, don't assume: value kept, marked stale
    assert a1.stale is not None and (a1.stale.tool, a1.stale.step) == ("transfer", 3)
    assert "STALE" in after_write.render()
    assert timeline.step_changes(3).staled == ("accounts.A1",)

    reread = timeline.at_step(4)
    a1 = reread.entry("accounts.A1")
    assert a1 is not None and a1.value["balance"] == 90.0 and not a1.is_stale
    assert timeline.step_changes(4).changed == ("accounts.A1",)

    assert entries(timeline.at_step(5)) == entries(reread)  # a REVISE changes nothing
    assert timeline.step_changes(5).empty and timeline.step_changes(42).empty
    assert entries(timeline.at_step(99)) == entries(timeline.final) == entries(reread)
    assert len(timeline.change_points()) == 4  # login, get_account, transfer (stale), get_account again


async def test_at_seq_changes_and_events_until(tmp_path: Path) -> None:
    s = await toy_session(TOY, tmp_path)
    await s.run()
    events = s.bus.history
    timeline = LedgerTimeline.build(events, PATH_MAP)
    read = next(e for e in events if isinstance(e, ToolResultEvent) and e.call.name == "get_account")
    assert timeline.at(read.seq).has("accounts.A1") and not timeline.at(read.seq - 1).has("accounts.A1")
    assert timeline.changes(read.seq).added == ("accounts.A1",)
    message = next(e for e in events if isinstance(e, MessageSent))
    assert timeline.changes(message.seq).empty
    assert len(timeline.at(0)) == 0 and entries(timeline.at(10**9)) == entries(timeline.final)
    until = timeline.events_until(read.seq)
    assert [e.seq for e in until] == list(range(1, read.seq + 1)) and until[-1] is read
    assert timeline.events_until(0) == [] and len(timeline.events_until(10**9)) == len(events)
    assert timeline.step_of(read.seq) == 2 and timeline.step_of(0) == 0
    assert timeline.last_seq_of_step(2) is not None and timeline.last_seq_of_step(77) is None


async def test_trace_file_rebuilds_the_same_timeline(tmp_path: Path) -> None:
    s = await toy_session(TOY, tmp_path)
    await s.run()
    from_memory = LedgerTimeline.build(s.bus.history, PATH_MAP)
    from_disk = LedgerTimeline.build(load_trace(tmp_path / "trace.jsonl"), PATH_MAP)
    assert from_disk.divergences == ()
    assert from_disk.change_points() == from_memory.change_points()
    for seq in from_memory.change_points():
        assert entries(from_disk.at(seq)) == entries(from_memory.at(seq))


async def test_a_changed_path_map_is_reported_not_hidden(tmp_path: Path) -> None:
    s = await toy_session(TOY, tmp_path)
    await s.run()
    timeline = LedgerTimeline.build(s.bus.history, PathMap(rules=PATH_MAP.rules))  # stale rules dropped
    assert any("marked accounts.A1 stale" in d and "rebuilt ledger marked nothing" in d
               for d in timeline.divergences)


async def test_fc_session_is_rebuilt_but_flagged_untracked(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),
             ScriptedStep(say="ok")]
    s = await toy_session(steps, tmp_path, config=AgentConfig(ledger=False, gate=False))
    await s.run()
    assert len(s.ledger) == 0
    timeline = LedgerTimeline.build(s.bus.history, PATH_MAP)
    assert not timeline.tracked and timeline.divergences == ()
    assert timeline.final.paths() == ["accounts.A1", "auth.customer"]


def test_unnumbered_events_are_refused() -> None:
    with pytest.raises(ValueError, match="strictly increasing seq"):
        LedgerTimeline.build([MessageSent(role="user", text="a"), MessageSent(role="user", text="b")], PATH_MAP)


async def test_gate_rows_link_overrides_and_results_and_the_transcript_skips_ledger_events(tmp_path: Path) -> None:
    steps = [
        ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=30),)),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=30),)),
        ScriptedStep(say="ok"),
    ]
    operator = Operator(Resolution(Decision.VETO, who="dana", reason="ask first"),
                        Resolution(Decision.EDIT, who="dana", reason="typo", arguments={"account_id": "A1",
                                                                                         "amount": 3000}),
                        Resolution(Decision.EDIT, who="dana", reason="less", arguments={"account_id": "A1",
                                                                                         "amount": 3}))
    s = await toy_session(steps, tmp_path, supervisor=operator)
    await s.run()
    events = s.bus.history
    rows = gate_rows(events)
    assert [r.verdict for r in rows] == ["ALLOW", "ALLOW", "REVISE", "ALLOW"]
    vetoed, first_edit, revise, final = rows
    assert vetoed.override is not None and vetoed.override.decision == "veto"
    assert vetoed.result is not None and vetoed.result.outcome == "vetoed" and vetoed.executed is False
    assert first_edit.override is not None and first_edit.override.decision == "edit" and first_edit.result is None
    assert revise.call.arguments == {"account_id": "A1", "amount": 3000}
    assert revise.failed == ("toy.balance",) and "exceeds balance 100.0" in revise.reason
    assert revise.evidence == ("accounts.A1",) and "REVISE" in revise.feedback
    assert final.call.arguments == {"account_id": "A1", "amount": 3} and final.executed is True
    assert final.override is None and not final.force_allowed

    # mid-step on the slider: the REVISE is shown, the operator's edit that followed is not yet
    cut = gate_rows(events, until=revise.seq)
    assert len(cut) == 3 and cut[-1].override is None and cut[-1].result is None

    transcript = transcript_events(events)
    assert {e.type for e in transcript} >= {"session_started", "message", "assistant_turn", "gate_decision",
                                             "supervisor_decision", "tool_result", "session_ended"}
    assert not any(e.type.startswith("ledger_") for e in transcript)

    timeline = LedgerTimeline.build(events, PATH_MAP)
    frame = timeline.frame(revise.seq)
    assert frame.step == revise.step and frame.ledger is timeline.at(revise.seq)
    assert [r.seq for r in frame.gate_rows] == [r.seq for r in cut]
    assert frame.transcript[-1] == events[revise.seq - 1] and frame.changes.empty
    assert isinstance(next(e for e in frame.transcript if e.type == "assistant_turn"), AssistantTurnEvent)


def test_apply_event_ignores_everything_but_successful_calls() -> None:
    from core.events import CallInfo
    from core.ledger import Ledger

    ledger = Ledger(PATH_MAP)
    call = CallInfo(id="x", name="get_account", arguments={"account_id": "A1"})
    failed = ToolResultEvent(call=call, kind="read", executed=True, ok=False, outcome="error", content="Error: x")
    assert not apply_event(ledger, failed) and len(ledger) == 0
    ok = failed.model_copy(update={"ok": True, "outcome": "ok", "result": {"id": "A1", "owner": "ann",
                                                                         "balance": 1.0}})
    assert apply_event(ledger, ok) and ledger.paths() == ["accounts.A1"]
    assert not apply_event(ledger, MessageSent(role="user", text="hi"))


# ------------------------------------------------------------------------------------------- retail

SCENARIOS = list_scenarios(RETAIL.scenarios_dir)
ORDER = "orders.#W4821001"


async def retail_events(name: str, folder: Path) -> list[Any]:
    scenario = load_scenario(SCENARIOS[name])
    backend = await RetailBackend.open(folder / "db.sqlite")
    try:
        session = Session(domain=RETAIL, backend=backend, model=scenario.build_model(),
                          user=scenario.build_user(), trace_path=folder / "trace.jsonl", scenario=scenario.name)
        await session.run()
        return list(session.bus.history)
    finally:
        await backend.close()


async def test_refund_scenario_states_at_the_revise_the_allow_and_the_reread(tmp_path: Path) -> None:
    events = await retail_events("refund-to-original-payment", tmp_path)
    timeline = LedgerTimeline.build(events, RETAIL.path_map)
    assert timeline.divergences == ()
    revise, allow = [e for e in events if isinstance(e, GateDecided)]
    assert (revise.verdict, allow.verdict) == ("REVISE", "ALLOW")

    at_revise = timeline.at(revise.seq)
    assert at_revise.get("auth.user_id") == "mia_garcia_4821"
    assert {"auth.user_id", "user", "users.mia_garcia_4821", ORDER, "orders.#W4821002"} <= set(at_revise.paths())
    order = at_revise.entry(ORDER)
    assert order is not None and order.value["status"] == "delivered" and not order.is_stale
    assert order.value["payment_history"][0]["payment_method_id"] == "gift_card_4821001"
    # everything the REVISE cited as evidence was on the ledger at that moment, but the customer's stated reason for
    # the return, which the confirmation rule looks for and quotes when there is one (this customer gave none)
    cited = {p for r in revise.results for p in r.evidence}
    assert ORDER in cited and all(at_revise.has(p) for p in cited - {"conversation.stated.reason"})
    assert at_revise.get("conversation.confirmation")["confirmed"] is True

    allowed_ran = next(e for e in events if isinstance(e, ToolResultEvent) and e.seq > allow.seq)
    assert allowed_ran.executed and allowed_ran.ok
    after_return = timeline.at(allowed_ran.seq)
    stale = after_return.entry(ORDER)
    assert stale is not None and stale.is_stale and stale.value["status"] == "delivered"
    assert timeline.changes(allowed_ran.seq).staled == (ORDER,)
    assert not after_return.entry("orders.#W4821002").is_stale  # type: ignore[union-attr]

    reread = timeline.final.entry(ORDER)
    assert reread is not None and not reread.is_stale and reread.value["status"] == "return requested"
    assert timeline.step_changes(reread.provenance.step).changed == (ORDER,)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_every_retail_scenario_rebuilds_without_divergence(name: str, tmp_path: Path) -> None:
    events = await retail_events(name, tmp_path)
    from_disk = LedgerTimeline.build(load_trace(tmp_path / "trace.jsonl"), RETAIL.path_map)
    assert from_disk.divergences == ()
    assert entries(from_disk.final) == entries(LedgerTimeline.build(events, RETAIL.path_map).final)


@pytest.mark.parametrize("statuses", [("missing",), ("missing", "missing", "pass"), ("violation",),
                                      ("missing", "violation"), ("missing", "error"), ("pass", "disabled")])
@pytest.mark.parametrize("verdict", ["ALLOW", "REVISE", "BLOCK"])
def test_a_recorded_refusal_is_the_kind_the_live_decision_had(verdict: str, statuses: tuple[str, ...]) -> None:
    """What a screen or a report reads off a trace's gate_decision is what the gate said when it decided."""
    from core.gate import PredicateResult, Status, Verdict
    from core.timeline import recorded_refusal

    results = tuple(PredicateResult(f"p{n}", Status(s), Verdict.ALLOW if s in ("pass", "disabled") else Verdict.REVISE,
                                    "why", (), "policy") for n, s in enumerate(statuses))
    decision = GateDecision(ToolCall("c1", "transfer", {"account_id": "A1", "amount": 10}), Verdict(verdict), results,
                            "feedback", 0)
    assert recorded_refusal(GateDecided.of(decision, step=1)) == decision.refusal
