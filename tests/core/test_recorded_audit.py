"""The as-recorded audit (core.recorded.audit): each write judged in the context the recording gave it, then applied
as recorded; recorded results absorbed without a database; with one, every call re-executed and compared.

The recordings are what an agent without our gate saw: real results of the retail backend over the seed data
(tests/support/recorded.py), written as OpenAI chat messages or a tau2 results file.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_asyncio

from core.evidence import EvidenceMode
from core.recorded.audit import INTERNAL_TOOLS, NO_DATABASE, ConversationAudit, RecordedAudit, RecordedBackend
from core.recorded.formats import parse_recording, read_recording
from core.recorded.model import RecordedCall, Recording, Where
from core.replay import Checker, parse_trajectory
from core.timeline import LedgerTimeline
from core.tools import ToolCall, ToolError
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend, load_seed
from tests.support.recorded import (
    ANOTHER_ADDRESS,
    MIA,
    SWAP,
    SWAP_THEN_ADDRESS,
    Exchange,
    call,
    check_lines,
    openai_messages,
    record_on_seed,
    say,
    tau2_results,
    tau_bench_list,
)
from tests.support.upstream import decompressed_recording, recording_names


@pytest_asyncio.fixture
async def backend(tmp_path: Path) -> AsyncIterator[RetailBackend]:
    store = await RetailBackend.create(tmp_path / "db.sqlite", load_seed())
    try:
        yield store
    finally:
        await store.close()


async def recorded(tmp_path: Path, script: Sequence[Exchange]) -> list[Exchange]:
    return await record_on_seed("retail", tmp_path / "recorded.sqlite", script)


async def audit(recording: Recording, database: RetailBackend | None = None) -> list[ConversationAudit]:
    return [a async for a in RecordedAudit(DOMAIN, database).run(recording)]


def writes(audits: Sequence[ConversationAudit]) -> list[tuple[str, str | None, str, bool]]:
    return [(w.call.name, w.category, w.recorded, w.taken) for a in audits for w in a.writes]


async def plain_check(backend: RetailBackend, script: Sequence[Exchange]) -> list[str]:
    results = await Checker(DOMAIN, backend).run(parse_trajectory(check_lines(script)).calls)
    return [r.verdict for r in results if r.kind == "write"]


async def test_a_refused_write_the_recording_ran_is_applied_so_the_next_write_sees_its_effect(
        tmp_path: Path, backend: RetailBackend) -> None:
    script = SWAP_THEN_ADDRESS
    exchanges = await recorded(tmp_path, script)
    assert not exchanges[4].error  # the swap ran in the recording
    audits = await audit(parse_recording(json.dumps(openai_messages(exchanges)), "m.json"))
    swap, address = audits[0].writes
    # no database: the product read the swap lacks is one the gate would make itself, so it is not judged
    assert (swap.category, swap.recorded, swap.taken) == ("not judged", "ok", True)
    assert swap.needs_database == ('get_product_details(product_id="1000000002")',)
    assert swap.decision is not None and "products.1000000002" in swap.decision.evidence
    assert "orders.#W4821002" in swap.staled  # applied as recorded: what it can have changed is stale
    assert address.category == "not judged"
    assert address.needs_database == ('get_order_details(order_id="#W4821002")',)
    assert address.decision is not None
    assert any("orders.#W4821002 may have changed since modify_pending_order_items" in r.reason
               for r in address.decision.failed)
    # Plain check drops the refused swap, so the address change is judged on an order that never changed.
    assert await plain_check(backend, script) == ["REVISE", "ALLOW"]
    row = swap.to_json("m.json")
    assert (row["where"], row["verdict"], row["refusal"], row["category"]) == (
        "m.json: [8].tool_calls[0]", "REVISE", "needs_read", "not judged")
    assert row["not_judged"] == 'needs a database read (pass --db): get_product_details(product_id="1000000002")'
    assert row["predicates"] == ["retail.replacement_is_available_variant"]
    assert "products.1000000002" in row["evidence"] and (row["recorded"], row["taken"]) == ("ok", True)


async def test_a_later_read_shows_the_write_took_effect_and_the_gate_judges_on_it(
        tmp_path: Path, backend: RetailBackend) -> None:
    script = [*MIA, SWAP, call("get_order_details", order_id="#W4821002"), *ANOTHER_ADDRESS]
    exchanges = await recorded(tmp_path, script)
    assert '"status": "pending (item modified)"' in exchanges[5].content  # tau2's tool still takes an address
    audits = await audit(parse_recording(json.dumps(openai_messages(exchanges)), "m.json"))
    assert writes(audits) == [("modify_pending_order_items", "not judged", "ok", True),
                              ("modify_pending_order_address", "BLOCK", "ok", True)]  # broken on what was read
    address = audits[0].writes[1].decision
    assert address is not None and [r.predicate_id for r in address.failed] == ["retail.items_modified_once"]
    assert await plain_check(backend, script) == ["REVISE", "ALLOW"]


async def test_failed_results_are_what_the_agent_saw_but_never_observed_state(tmp_path: Path) -> None:
    script = [*MIA[:2], call("get_user_details", user_id="nobody_1"), call("get_order_details", order_id="#W0"),
              call("cancel_pending_order", order_id="#W4821001", reason="no longer needed")]
    exchanges = await recorded(tmp_path, script)
    assert [e.error for e in exchanges[1:]] == [False, True, True, True]
    audits = await audit(parse_recording(json.dumps(openai_messages(exchanges)), "m.json"))
    calls = audits[0].calls
    assert [(c.call.name, c.recorded, c.taken) for c in calls] == [
        ("find_user_id_by_name_zip", "ok", True), ("get_user_details", "error", False),
        ("get_order_details", "error", False), ("cancel_pending_order", "error", False)]
    assert calls[-1].staled == ()
    ledger = LedgerTimeline.build(audits[0].events, DOMAIN.path_map).final
    # what the customer said is there (their message), no record the failed calls named
    assert ledger.paths() == ["auth.user_id", "conversation.confirmation"]


async def test_bad_calls_are_one_problem_each_and_the_rest_is_judged(tmp_path: Path) -> None:
    exchanges = await recorded(tmp_path, [*MIA, SWAP])
    messages = openai_messages(exchanges)
    messages.insert(2, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "u", "type": "function", "function": {"name": "teleport", "arguments": "{}"}},
        {"id": "s", "type": "function", "function": {"name": "get_user_details", "arguments": '{"user_id": 7}'}},
        {"id": "j", "type": "function", "function": {"name": "cancel_pending_order", "arguments": '{"order_id": '}}]})
    messages.insert(3, {"role": "tool", "tool_call_id": "u", "content": "Error: Tool 'teleport' not found."})
    messages.insert(4, {"role": "tool", "tool_call_id": "s", "content": USER_TEXT})
    recording = parse_recording(json.dumps(messages), "m.json")
    audits = await audit(recording)
    assert [p.at("m.json") for p in audits[0].problems] == [
        "m.json: [2].tool_calls[2]: cancel_pending_order: no result for this call in the recording (it is judged, but "
        "nothing is taken from it)",
        "m.json: [2].tool_calls[0]: teleport: the retail domain has no such tool, so its calls are not judged (it may "
        "be a write; said once for the file)",
        "m.json: [2].tool_calls[1]: get_user_details: invalid arguments for get_user_details: argument 'user_id' must "
        "be string, got integer 7 (not judged)",
        "m.json: [2].tool_calls[2]: cancel_pending_order: arguments are not valid JSON (Expecting value at column 14) "
        "(not judged)"]
    assert writes(audits) == [("cancel_pending_order", "not judged", "no result", False),
                              ("modify_pending_order_items", "not judged", "ok", True)]
    broken = next(c for c in audits[0].calls if c.call.name == "cancel_pending_order")
    assert broken.decision is None and broken.problem is not None and not broken.taken
    assert broken.not_judged == broken.problem


@pytest.fixture
def refund_trace(tmp_path: Path) -> Path:
    """A real session's trace: the retail demo scenario, as `ledgeragent run` records it."""
    from console.cli.main import main

    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--out",
                 str(tmp_path / "s")]) == 0
    return tmp_path / "s" / "trace.jsonl"


async def test_a_trace_is_audited_with_its_own_outcomes(refund_trace: Path) -> None:
    audits = await audit(read_recording(refund_trace))
    assert writes(audits) == [("return_delivered_order_items", "breaks a rule", "not run", False),
                              ("return_delivered_order_items", "ALLOW", "ok", True)]
    assert audits[0].writes[1].staled == ("orders.#W4821001",)


@pytest.fixture
def roaming_trace(tmp_path: Path) -> Path:
    """A real dual-control session: telecom's roaming scenario, the customer's phone actions included."""
    from console.cli.main import main

    assert main(["run", "--domain", "telecom", "--scenario", "roaming-abroad", "--out", str(tmp_path / "t")]) == 0
    return tmp_path / "t" / "trace.jsonl"


async def test_a_dual_control_trace_re_executed_on_its_starting_data_differs_nowhere(tmp_path: Path,
                                                                                   roaming_trace: Path) -> None:
    from domains.telecom import DOMAIN as TELECOM
    from mock_backends.registry import open_backend

    database = await open_backend("telecom", tmp_path / "seed.sqlite")
    try:
        (conversation,) = [a async for a in RecordedAudit(TELECOM, database).run(read_recording(roaming_trace))]
    finally:
        await database.close()
    assert conversation.differences == [] and conversation.problems == []
    assert writes([conversation]) == [("enable_roaming", "needs a read", "not run", False),
                                      ("enable_roaming", "ALLOW", "ok", True)]
    phone = [c for c in conversation.calls if c.call.requestor.value == "user"]
    assert phone and all(c.taken and c.decision is None for c in phone)  # the customer's own: run, never gated
    assert "environment_synced" in [e.type for e in conversation.events]  # the phone and the line kept in step
    ledger = LedgerTimeline.build(conversation.events, TELECOM.path_map).final
    assert any(path.startswith("device.") for path in ledger.paths())


async def test_the_events_replay_the_audit_exactly(tmp_path: Path) -> None:
    """What the console's replay shows: the rebuilt ledger agrees with every ledger event, a write the gate would
    have refused shows the gate's verdict and the recording's outcome (it ran), and seqs increase."""
    exchanges = await recorded(tmp_path, [*MIA, SWAP, *ANOTHER_ADDRESS])
    (conversation,) = await audit(parse_recording(json.dumps(openai_messages(exchanges)), "m.json"))
    timeline = LedgerTimeline.build(conversation.events, DOMAIN.path_map)
    assert timeline.divergences == ()
    rows = timeline.gate_rows()
    assert [(r.call.name, r.verdict, r.executed) for r in rows] == [
        ("modify_pending_order_items", "REVISE", True), ("modify_pending_order_address", "REVISE", True)]
    swap_result = rows[0].result
    assert swap_result is not None and swap_result.content == exchanges[4].content  # the recorded text, verbatim
    started = conversation.events[0]
    assert started.type == "session_started" and started.agent == "as-recorded"
    assert [e.type for e in conversation.events].count("message") == 3
    assert conversation.events[-1].type == "session_ended"


async def test_with_a_database_every_differing_result_is_reported_per_call(tmp_path: Path,
                                                                           backend: RetailBackend) -> None:
    exchanges = await recorded(tmp_path, [*MIA, SWAP, call("get_order_details", order_id="#W4821002")])
    messages = openai_messages(exchanges)
    profile = json.loads(messages[5]["content"])
    profile["email"] = "someone.else@example.com"  # the recording was made on other data
    messages[5]["content"] = json.dumps(profile)
    (conversation,) = await audit(parse_recording(json.dumps(messages), "m.json"), backend)
    assert [(c.call.name, c.difference) for c in conversation.differences] == [
        ("get_user_details", 'email: recorded "someone.else@example.com", database "mia.garcia@example.com"')]
    assert writes([conversation]) == [("modify_pending_order_items", "needs a read", "ok", True)]
    order = await backend.call("get_order_details", {"order_id": "#W4821002"})
    assert order["status"] == "pending (item modified)"  # the database followed the recording


async def test_a_write_the_recording_says_failed_is_rolled_back_when_the_database_runs_it(
        tmp_path: Path, backend: RetailBackend) -> None:
    exchanges = await recorded(tmp_path, [*MIA, SWAP])
    messages = openai_messages(exchanges)
    messages[-1]["content"] = "Error: the payment was declined"
    (conversation,) = await audit(parse_recording(json.dumps(messages), "m.json"), backend)
    (swap,) = conversation.writes
    assert (swap.recorded, swap.taken, swap.staled) == ("error", False, ())
    assert swap.difference == ('the recording has an error ("the payment was declined"), the database ran it (rolled '
                               'back, as the recording has it)')
    order = await backend.call("get_order_details", {"order_id": "#W4821002"})
    assert order["status"] == "pending"


async def test_each_conversation_starts_from_a_fresh_database(tmp_path: Path, backend: RetailBackend) -> None:
    exchanges = await recorded(tmp_path, [*MIA, SWAP, call("get_order_details", order_id="#W4821002")])
    document = tau2_results("retail", [exchanges, exchanges])
    audits = await audit(parse_recording(json.dumps(document), "r.json"), backend)
    assert [a.label for a in audits] == ["simulations[0] (task 0, trial 0)", "simulations[1] (task 1, trial 0)"]
    assert [a.differences for a in audits] == [[], []]  # the second swap ran again on the original order
    assert writes(audits) == [("modify_pending_order_items", "needs a read", "ok", True)] * 2


async def test_check_lines_run_on_the_database_and_every_write_takes_effect(backend: RetailBackend) -> None:
    lines = check_lines(SWAP_THEN_ADDRESS)
    audits = await audit(parse_recording(lines, "t.jsonl"), backend)
    assert writes(audits) == [("modify_pending_order_items", "needs a read", "database", True),
                              ("modify_pending_order_address", "needs a read", "database", True)]
    with pytest.raises(ValueError, match="needs a database"):
        await audit(parse_recording(lines, "t.jsonl"))


async def test_any_other_call_is_a_read_of_the_database_or_fails_without_one(backend: RetailBackend) -> None:
    recorded_call = RecordedCall(Where(1), ToolCall("c", "get_order_details", {"order_id": "#W4821002"}), None)
    alone = RecordedBackend(None)
    alone.expect(recorded_call, write=False)
    with pytest.raises(ToolError) as caught:
        await alone.call("get_product_details", {"product_id": "1000000002"})
    assert caught.value.message == NO_DATABASE
    beside = RecordedBackend(backend)
    beside.expect(recorded_call, write=False)
    product = await beside.call("get_product_details", {"product_id": "1000000002"})
    assert product["product_id"] == "1000000002" and beside.difference is None


USER_TEXT = '{"user_id": "mia_garcia_4821"}'


async def test_a_write_nobody_decided_in_time_is_replayed_as_undecided_not_as_refused() -> None:
    """An MCP session's write that waited for an operator until its timeout did not run, and the gate had
    allowed it: the recording's reason is what the audit's replay shows, never "refused by the gate"."""
    from core.events import AssistantTurnEvent, CallInfo, SessionEnded, SessionStarted, ToolResultEvent

    call = CallInfo(id="mcp_1", name="cancel_pending_order", arguments={"order_id": "#W4821002",
                                                                        "reason": "no longer needed"})
    events = [SessionStarted(domain="retail", agent="ledger", model="mcp:client", user="mcp client"),
              AssistantTurnEvent(step=1, text=None, tool_calls=[call]),
              ToolResultEvent(step=1, call=call, kind="write", executed=False, ok=False, outcome="undecided",
                              content="NOT EXECUTED: no operator decided within 1 s"),
              SessionEnded(step=1, reason="client_disconnected", steps=1)]
    text = "\n".join(e.model_copy(update={"seq": n}).model_dump_json() for n, e in enumerate(events, 1))
    recording = parse_recording(text, "trace.jsonl")
    (recorded,) = recording.conversations[0].calls()
    assert recorded.result is not None and recorded.result.outcome == "undecided" and not recorded.result.ran
    (conversation,) = await audit(recording)
    (write,) = conversation.writes
    assert (write.recorded, write.taken) == ("not run", False)
    (shown,) = [e for e in conversation.events if isinstance(e, ToolResultEvent)]
    assert (shown.executed, shown.outcome) == (False, "undecided")


# -- tau-bench's own airline tools: another profile shape, tools the domain lacks, writes that cannot be judged -------


def _tau_bench_list(*conversations: Sequence[Exchange]) -> str:
    return json.dumps(tau_bench_list(conversations))


def _as_tau_bench(exchanges: list[Exchange]) -> list[Exchange]:
    """The exchanges with every profile as tau-bench's own get_user_details returns it: `users[user_id]`, the
    record without its user_id, the state under `province` (its first data release)."""
    shaped: list[Exchange] = []
    for step in exchanges:
        if step.name == "get_user_details" and not step.error:
            profile = json.loads(step.content)
            del profile["user_id"]
            profile["address"]["province"] = profile["address"].pop("state")
            step = Exchange(step.name, step.arguments, json.dumps(profile))
        shaped.append(step)
    return shaped


THEO = "theo_brennan_3391"
THEO_READS = [say("Hi, I'm theo_brennan_3391. I want two more bags on TB3K9Q.", "user"),
              call("get_user_details", user_id=THEO), call("get_reservation_details", reservation_id="TB3K9Q")]
THINK = Exchange("think", {"thought": "gold, economy: 3 free bags each"}, "")  # tau-bench's think returns ""
ASK_BAGS = say("Two more checked bags on TB3K9Q, $100 on your card ending 1001. Shall I add them?")
YES_PLEASE = say("Yes, please.", "user")
CALCULATE = Exchange("calculate", {"expression": "5 - 3"}, "2.0")


async def _airline_recording(tmp_path: Path, script: Sequence[Exchange]) -> list[Exchange]:
    return _as_tau_bench(await record_on_seed("airline", tmp_path / f"airline-{len(script)}.sqlite", script))


async def test_a_tau_bench_profile_identifies_the_customer_and_its_writes_are_judged(tmp_path: Path) -> None:
    from domains.airline import DOMAIN as AIRLINE

    exchanges = await _airline_recording(tmp_path, [*THEO_READS, ASK_BAGS, YES_PLEASE, call(
        "update_reservation_baggages", reservation_id="TB3K9Q", total_baggages=5, nonfree_baggages=2,
        payment_id="credit_card_3391001")])
    assert "user_id" not in json.loads(exchanges[1].content)  # the profile as tau-bench returns it
    recording = parse_recording(_tau_bench_list([*exchanges[:3], THINK, CALCULATE, *exchanges[3:]]), "tb.json")
    assert recording.format == "tau-bench"
    (conversation,) = [a async for a in RecordedAudit(AIRLINE).run(recording)]
    assert conversation.problems == []  # think and calculate touch no data: passed over in silence
    assert [(c.call.name, c.kind) for c in conversation.calls] == [
        ("get_user_details", "read"), ("get_reservation_details", "read"), ("think", "internal"),
        ("calculate", "generic"), ("update_reservation_baggages", "write")]  # the domain's own calculate runs
    (bags,) = conversation.writes
    assert bags.category == "ALLOW", bags.reason
    ledger = LedgerTimeline.build(conversation.events, AIRLINE.path_map).final
    entry = ledger.entry("user")
    assert entry is not None and entry.value["user_id"] == THEO and entry.value["address"]["state"] == "MA"
    assert entry.provenance.tool == "get_user_details" and entry.provenance.shaped  # the recording's own result


async def test_without_a_database_a_write_missing_only_what_the_gate_would_read_is_not_judged(tmp_path: Path) -> None:
    from domains.airline import DOMAIN as AIRLINE
    from mock_backends.registry import open_backend

    exchanges = await _airline_recording(tmp_path, [*THEO_READS, ASK_BAGS, YES_PLEASE, call(
        "update_reservation_baggages", reservation_id="TB3K9Q", total_baggages=0, nonfree_baggages=0,
        payment_id="credit_card_3391001"), call("cancel_reservation", reservation_id="TB5N1W")])
    recording = parse_recording(_tau_bench_list(exchanges), "tb.json")
    (conversation,) = [a async for a in RecordedAudit(AIRLINE).run(recording)]
    fewer, cancel = conversation.writes
    # bags below what was booked, on the recorded reservation: broken, with or without a database
    assert fewer.category == "breaks a rule" and "airline.baggage_add_only" in fewer.reason
    # the cancelled reservation was never read: a database read would tell, so the audit says it could not judge
    assert (cancel.category, cancel.needs_database) == ("not judged",
                                                        ('get_reservation_details(reservation_id="TB5N1W")',))
    assert cancel.not_judged == 'needs a database read (pass --db): get_reservation_details(reservation_id="TB5N1W")'
    assert conversation.counts() == {"ALLOW": 0, "needs a read": 0, "breaks a rule": 1, "BLOCK": 0, "not judged": 1}
    database = await open_backend("airline", tmp_path / "db.sqlite")
    try:  # with a database the gate is asked: it reads, or (told to ask) asks for the read, a refusal of its own
        (assisted,) = [a async for a in RecordedAudit(AIRLINE, database, evidence=EvidenceMode.ASSIST).run(recording)]
        (asked,) = [a async for a in RecordedAudit(AIRLINE, database, evidence=EvidenceMode.ASK).run(recording)]
    finally:
        await database.close()
    assert [w.category for w in assisted.writes] == ["breaks a rule", "ALLOW"]
    assert [w.category for w in asked.writes] == ["breaks a rule", "needs a read"]


async def test_a_tool_the_domain_lacks_is_one_problem_for_the_file_and_its_calls_are_not_judged(
        tmp_path: Path) -> None:
    exchanges = await recorded(tmp_path, MIA)
    lookup = Exchange("get_loyalty_points", {"user_id": "mia_garcia_4821"}, '{"points": 40}')
    recording = parse_recording(_tau_bench_list([*exchanges, lookup, lookup], [*exchanges, lookup]), "tb.json")
    audits = await audit(recording)
    assert [p.at("tb.json") for a in audits for p in a.problems] == [
        "tb.json: [0].traj[8].tool_calls[0]: get_loyalty_points: the retail domain has no such tool, so its calls are "
        "not judged (it may be a write; said once for the file)"]
    unknown = [c for a in audits for c in a.calls if c.kind == "unknown"]
    assert len(unknown) == 3 and all(c.problem and not c.taken and c.category is None for c in unknown)


# -- the development set: real model recordings nobody here wrote ---------------------------------------------


def _domain_of(recording: Recording, name: str) -> str:
    return recording.domain or next(d for d in ("airline", "retail", "telecom", "telehealth") if d in name)


@pytest.mark.shared
@pytest.mark.parametrize("name", recording_names())
async def test_every_recording_of_the_development_set_is_read_and_audited_without_a_spurious_problem(
        tmp_path: Path, name: str) -> None:
    from domains.registry import load_domain

    recording = read_recording(decompressed_recording(name, tmp_path))
    assert recording.format == ("tau2" if "tau2-bench" in name else "tau-bench")
    assert recording.problems == [] and [p for c in recording.conversations for p in c.problems] == []
    assert all(c.task_id is not None and c.trial is not None and c.reward is not None for c in recording.conversations)
    domain = load_domain(_domain_of(recording, name))
    audits = [a async for a in RecordedAudit(domain).run(recording)]
    problems = [p.message for a in audits for p in a.problems]
    unknown = [m.split(":")[0] for m in problems if "domain has no such tool" in m]
    assert len(unknown) == len(set(unknown))  # said once per tool, not once per call
    assert all(domain.tool(n) is None and n not in INTERNAL_TOOLS for n in unknown)
    # the only other problem: a call our schema refuses (nested keys tau2's own models ignore), not judged
    assert [m for m in problems if "domain has no such tool" not in m and "invalid arguments for" not in m] == []
    for audit in audits:  # a customer whose profile the recording read is identified, whatever its shape
        profile_read = False
        for judged in audit.calls:
            profile_read |= judged.call.name == "get_user_details" and judged.taken
            if judged.decision is not None and profile_read:
                assert "airline.customer_identified" not in [r.predicate_id for r in judged.decision.failed], (
                    audit.label, judged.where)
    if "telehealth" in name:  # tau-Trait's telehealth tools answer in prose: without a database no write is judged,
        assert {w.category for a in audits for w in a.writes} == {"not judged"}  # and none is called refused
        assert all(w.needs_database for a in audits for w in a.writes)
