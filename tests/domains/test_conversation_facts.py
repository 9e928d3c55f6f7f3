"""What the customer said, judged by the domains' rules: an airline customer is identified by the user id they
stated (upstream: "The agent must first obtain the user id from the user"), after which the gate may read that
profile itself; retail's authentication is unchanged; every domain's `<domain>.explicit_confirmation` reads the
customer's yes, and passes where a channel shows no customer message at all.

The recordings are OpenAI chat messages over our seed data (tests/support/airline_records.py tells the same story
as the shipped seed), audited as `ledgeragent check --as-recorded` audits them (core.recorded.audit).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest_asyncio

from core.agent import AgentConfig
from core.conversation import NO_MESSAGES
from core.events import EventBus, GateDecided
from core.evidence import EvidenceMode
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.recorded.audit import AuditedCall, RecordedAudit
from core.recorded.formats import parse_recording
from core.replay import Checker, parse_trajectory
from core.session import Session
from core.timeline import LedgerTimeline
from core.trace import load_trace
from core.users import ScriptedUser
from domains.airline import DOMAIN as AIRLINE
from domains.retail import DOMAIN as RETAIL
from mock_backends.airline import AirlineBackend
from mock_backends.retail import RetailBackend
from tests.support.airline_records import THEO, THEO_CARD, THEO_ECONOMY, person, theo_economy

GREETING = "Hi! How can I help you today?"
NAME_FIX = {"reservation_id": THEO_ECONOMY, "passengers": [person("Theodore", "Brennan", "1990-06-21")]}
A_BAG = {"reservation_id": THEO_ECONOMY, "total_baggages": 2, "nonfree_baggages": 0, "payment_id": THEO_CARD}


def call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def result(n: int, value: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps(value)}


def theo_conversation(opening: str, answer: str, write: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Theo says who he is, the agent reads his reservation (never his profile), describes the write, he answers,
    and the agent makes it: tau2's airline, where the customer gives their user id."""
    return [{"role": "system", "content": "You are an airline agent."},
            {"role": "assistant", "content": GREETING}, {"role": "user", "content": opening},
            call(1, "get_reservation_details", {"reservation_id": THEO_ECONOMY}), result(1, theo_economy()),
            {"role": "assistant", "content": f"I'll {write.replace('_', ' ')} on {THEO_ECONOMY}. Shall I?"},
            {"role": "user", "content": answer}, call(2, write, arguments), result(2, theo_economy())]


async def audited(messages: Sequence[dict[str, Any]], database: AirlineBackend | None = None,
                  evidence: EvidenceMode = EvidenceMode.ASK) -> AuditedCall:
    recording = parse_recording(json.dumps(list(messages)), "theo.json")
    (conversation,) = [a async for a in RecordedAudit(AIRLINE, database, evidence=evidence).run(recording)]
    timeline = LedgerTimeline.build(conversation.events, AIRLINE.path_map)
    assert timeline.divergences == ()  # the replay rebuilds what the customer said where the audit heard it
    (write,) = conversation.writes
    return write


def failed(write: AuditedCall) -> list[str]:
    assert write.decision is not None
    return [r.predicate_id for r in write.decision.failed]


@pytest_asyncio.fixture
async def airline_db(tmp_path: Path) -> AsyncIterator[AirlineBackend]:
    backend = await AirlineBackend.open(tmp_path / "airline.sqlite")
    try:
        yield backend
    finally:
        await backend.close()


async def test_the_user_id_the_customer_stated_identifies_them() -> None:
    """No profile was read: the customer's own words say who they are, and the write is judged on them."""
    write = await audited(theo_conversation(f"Hi, my user id is {THEO}. My first name on {THEO_ECONOMY} should be "
                                            "Theodore.", "Yes, please.", "update_reservation_passengers", NAME_FIX))
    assert write.category == "ALLOW", write.reason
    assert write.decision is not None
    assert "conversation.stated.user_ids" in write.decision.evidence
    identified = next(r for r in write.decision.results if r.predicate_id == "airline.customer_identified")
    assert identified.reason == f"the customer stated their user id {THEO} (conversation.stated.user_ids)"


async def test_a_rule_that_needs_the_profile_asks_for_the_stated_customers_profile() -> None:
    write = await audited(theo_conversation(f"I'm {THEO}. Please add a bag to {THEO_ECONOMY}.", "Yes, go ahead.",
                                            "update_reservation_baggages", A_BAG))
    assert write.category == "not judged" and "airline.customer_identified" not in failed(write)  # no database here
    assert f'get_user_details(user_id="{THEO}")' in (write.not_judged or "")


async def test_with_assist_the_gate_reads_the_stated_customers_profile_itself(airline_db: AirlineBackend) -> None:
    write = await audited(theo_conversation(f"I'm {THEO}. Please add a bag to {THEO_ECONOMY}.", "Yes, go ahead.",
                                            "update_reservation_baggages", A_BAG), airline_db, EvidenceMode.ASSIST)
    assert write.category == "ALLOW", write.reason
    assert write.decision is not None
    assert [r.text for r in write.decision.gate_reads] == [f'get_user_details(user_id="{THEO}")']


async def test_several_stated_user_ids_leave_it_to_a_profile_read() -> None:
    write = await audited(theo_conversation(f"I'm {THEO}, or maybe it was theo_brennan_3392.", "Yes.",
                                            "update_reservation_passengers", NAME_FIX))
    assert failed(write) == ["airline.customer_identified"]
    assert f"several user ids ({THEO}, theo_brennan_3392" in write.reason


async def test_a_write_the_customer_did_not_say_yes_to_breaks_the_confirmation_rule() -> None:
    write = await audited(theo_conversation(f"Hi, my user id is {THEO}.", "Hmm, does that cost anything?",
                                            "update_reservation_passengers", NAME_FIX))
    assert (write.category, failed(write)) == ("breaks a rule", ["airline.explicit_confirmation"])
    assert '"Hmm, does that cost anything?"' in write.reason and "a question" in write.reason


async def test_retail_still_authenticates_by_lookup_even_with_a_stated_user_id(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "You are a retail agent."},
                {"role": "user", "content": "I'm mia_garcia_4821. Cancel #W4821002, I no longer need it."},
                {"role": "assistant", "content": "I'll cancel order #W4821002 as no longer needed. Shall I?"},
                {"role": "user", "content": "Yes."},
                call(1, "cancel_pending_order", {"order_id": "#W4821002", "reason": "no longer needed"}),
                result(1, {"order_id": "#W4821002", "status": "cancelled"})]
    recording = parse_recording(json.dumps(messages), "mia.json")
    (conversation,) = [a async for a in RecordedAudit(RETAIL).run(recording)]
    (write,) = conversation.writes
    assert failed(write) == ["retail.authenticated"]
    assert write.decision is not None
    confirmation = next(r for r in write.decision.results if r.predicate_id == "retail.explicit_confirmation")
    assert confirmation.reason.startswith('the customer said "Yes." to "I\'ll cancel order #W4821002')
    assert 'their stated reason, for the operator to judge: "Cancel #W4821002, I no longer need it."' in \
        confirmation.reason


async def test_check_lines_carry_no_customer_message_and_are_never_refused_for_it(tmp_path: Path) -> None:
    backend = await RetailBackend.open(tmp_path / "retail.sqlite")
    try:
        lines = "\n".join(json.dumps(line) for line in [
            {"name": "find_user_id_by_email", "arguments": {"email": "mia.garcia@example.com"}},
            {"name": "get_order_details", "arguments": {"order_id": "#W4821002"}},
            {"name": "cancel_pending_order", "arguments": {"order_id": "#W4821002", "reason": "no longer needed"}}])
        bus = EventBus()
        checker = Checker(RETAIL, backend, bus=bus)
        results = await checker.run(parse_trajectory(lines).calls)
    finally:
        await backend.close()
    assert results[-1].verdict == "ALLOW"
    (decision,) = [e for e in bus.history if isinstance(e, GateDecided)]
    confirmation = next(r for r in decision.results if r.predicate_id == "retail.explicit_confirmation")
    assert (confirmation.status, confirmation.reason.split(";")[0]) == ("pass", NO_MESSAGES)
    assert checker.ledger.get("conversation.confirmation") is None


async def test_a_live_session_hears_the_customer_once_and_the_trace_rebuilds_it(tmp_path: Path) -> None:
    """The customer's hesitation stops the write; their yes lets it run; each of their messages is one ledger
    update in the trace, and the replay's ledger is the session's."""
    backend = await AirlineBackend.open(tmp_path / "airline.sqlite")
    steps = [ScriptedStep(calls=(ScriptedCall("get_reservation_details", {"reservation_id": THEO_ECONOMY}),)),
             ScriptedStep(say="I'll change the first name on TB3K9Q to Theodore. Shall I?"),
             ScriptedStep(calls=(ScriptedCall("update_reservation_passengers", NAME_FIX),)),
             ScriptedStep(say="Shall I go ahead, then?"),
             ScriptedStep(calls=(ScriptedCall("update_reservation_passengers", NAME_FIX),)),
             ScriptedStep(say="Done.")]
    user = ScriptedUser([f"I'm {THEO}; my first name is misspelt on {THEO_ECONOMY}.", "Hmm, wait.", "Yes, go ahead.",
                         "###STOP###"])
    session = Session(domain=AIRLINE, backend=backend, model=ScriptedChatModel(steps), user=user,
                      config=AgentConfig(evidence=EvidenceMode.ASSIST), trace_path=tmp_path / "s" / "trace.jsonl")
    try:
        await session.run()
    finally:
        await backend.close()
    events = load_trace(tmp_path / "s" / "trace.jsonl")
    decisions = [e for e in events if e.type == "gate_decision"]
    assert [d.verdict for d in decisions] == ["REVISE", "ALLOW"]
    assert [r.predicate_id for r in decisions[0].results if r.status != "pass"] == ["airline.explicit_confirmation"]
    updates = [e for e in events if e.type == "ledger_updated" and e.tool == "customer_message"]
    assert [e.call_id for e in updates] == ["said_1", "said_2", "said_3", "said_4"]
    timeline = LedgerTimeline.build(events, AIRLINE.path_map)
    assert timeline.divergences == ()
    assert timeline.final.to_dict() == session.ledger.to_dict()
