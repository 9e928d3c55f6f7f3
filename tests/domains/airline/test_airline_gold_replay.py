"""tau2-bench airline tasks through `ledgeragent check` over the REAL AirlineBackend loaded from tau2's db.json.

1. Every task's gold writes, with the reads a careful agent makes before them
   (tests/support/tau2_airline_trajectories.py), are allowed by the gate and executed by the backend; the end
   state equals the state reached by applying only the gold writes directly (backend.call, no gate): for
   correct trajectories the gate changes nothing.
2. The same gold writes without those reads are never refused for a policy reason: the gate only asks for
   the missing evidence (REVISE), which is why the careful reads are part of a trajectory.
3. Tasks whose gold has no write (the right outcome is a refusal): the write the customer pushes for is
   refused by the gate, with the rule that says why.
4. Deliberately violating variants, each derived from a real task and real records, are rejected with the
   expected verdict and predicate, and leave the database exactly as it was.
5. The real CLI (`ledgeragent check --json`) on one task's trajectory plus one violating line.

The scaffolding (one backend per module, restored before each test; the line builders; the CLI's shared
assertions) is tests/support/gold_replay.py: this module holds airline's tables, refusals, demands and
variants. Skipped when tau2-bench's data/tau2/domains/airline/ files are absent (tests/support/upstream.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from core.domain import Domain
from core.gate import PolicyGate, Status, Verdict
from core.replay import Checker
from core.tools import ToolCall, ToolError
from domains.airline import DOMAIN, airline_domain
from domains.airline.clock import EST
from mock_backends.airline import AirlineBackend, load_tau2_db
from tests.support.gold_replay import (
    Lines,
    Template,
    apply_gold_writes,
    assert_refused_when_assisted,
    assert_rejected,
    calls,
    check,
    cli_check,
    fresh_fixture,
    module_loop,
    replay_group,
    show,
    template_fixture,
    write_jsonl,
)
from tests.support.tau2_airline_trajectories import (
    DB_PATH,
    GOLD_NOTE,
    READ_NOTE,
    TAU2_AIRLINE,
    TODAY,
    Line,
    Task,
    build_trajectory,
    gold_actions,
    gold_write_lines,
    gold_writes,
    load_db,
    load_tasks,
    shared_present,
    task_customer,
)

HAVE_SHARED = shared_present()

pytestmark = [
    pytest.mark.shared,
    replay_group("tau2-airline"),
    pytest.mark.skipif(not HAVE_SHARED, reason=f"tau2 airline data not found at {TAU2_AIRLINE}"),
]

TASKS: dict[str, Task] = {t["id"]: t for t in load_tasks()} if HAVE_SHARED else {}
RAW_DB: dict[str, Any] = load_db() if HAVE_SHARED else {}

# Gold writes that contradict the policy, which the gate must therefore refuse: action_id -> (verdict,
# predicate). Empty, on purpose and checked: the 25 tasks of the reference copy are tau2's even-numbered ones, and
# every one of their 24 gold writes is legal under the policy (each was checked by hand against it):
# - the three gold cancellations have a basis: K1NW8N (task 14) was booked 22 h 57 min before now,
#   FDZ0T5 and HSR97W (task 42) are business;
# - the basic economy reservations whose flights change (32_4 on OWZ4XL) were first moved to economy by a
#   cabin-only change (32_3), which the policy allows: tau2's known "upgrade, then modify" loophole
#   (tau2 PR #94, not merged), so the gate allows it too; 22_0 and 44_17..19 are cabin-only changes of basic
#   economy reservations, also allowed;
# - every booking adds up and respects the payment-type counts and the bag allowance.
# tau2's known contradiction, airline task 7 (a cancellation the policy forbids, tau2 issue #84), is not among
# them; the same situation is covered by the no-write refusals below (tasks 0, 26, 28, 48).
EXPECTED_REFUSALS: dict[str, tuple[str, str]] = {}


template = template_fixture("tau2_airline", lambda path: AirlineBackend.create(path, load_tau2_db(DB_PATH)))
fresh = fresh_fixture()
LINES = Lines(TASKS, lambda task: build_trajectory(task, RAW_DB), gold_actions, read_note="careful read")
_read, _bad, _prefix, _gold, _gold_with, _without_reads = (LINES.read, LINES.bad, LINES.prefix, LINES.gold,
                                                          LINES.gold_with, LINES.without_reads)


# ---------------------------------------------------------------------------------------------------
# 1. Gold trajectories.


def test_every_gold_action_is_in_its_trajectory_once() -> None:
    assert len(TASKS) == 25
    writes = 0
    for task in TASKS.values():
        lines = build_trajectory(task, RAW_DB)
        notes = [line["note"] for line in lines if line["note"].startswith(GOLD_NOTE)]
        assert notes == [GOLD_NOTE + a["action_id"] for a in gold_actions(task)]
        written_at = gold_write_lines(lines)
        writes += len(written_at)
        if written_at:  # the customer's profile is read before anything is written
            assert lines[0]["name"] == "get_user_details" and min(written_at) > 0
    assert writes == sum(len(gold_writes(t)) for t in TASKS.values()) == 24
    assert not set(EXPECTED_REFUSALS) - {a["action_id"] for t in TASKS.values() for a in gold_writes(t)}


@module_loop
@pytest.mark.parametrize("task_id", list(TASKS) or ["no-shared-data"])
async def test_gold_trajectory_passes_and_reaches_the_gold_state(task_id: str, fresh: Template) -> None:
    task, backend = TASKS[task_id], fresh.backend
    refusals = {aid: verdict for aid, (verdict, _) in EXPECTED_REFUSALS.items()}
    lines = build_trajectory(task, RAW_DB, expected_refusals=refusals)
    results = await check(DOMAIN, backend, lines)
    assert all(r.met is not False for r in results), show(results, lines)

    gold = gold_write_lines(lines)
    if not gold:  # a refusal task: the careful reads wrote nothing (the undo log head has not moved)
        assert (await backend.snapshot()).seq == fresh.base.seq
        return
    for index, action_id in gold.items():
        result = results[index]
        if action_id in EXPECTED_REFUSALS:
            verdict, predicate_id = EXPECTED_REFUSALS[action_id]
            assert (result.verdict, result.predicates, result.executed) == (verdict, (predicate_id,), False)
        else:
            assert (result.kind, result.verdict, result.executed) == ("write", "ALLOW", True), result
    gated_hash = await backend.state_hash()
    if not any(results[i].executed for i in gold):  # nothing to compare with but the fresh DB itself
        assert gated_hash == fresh.base_hash
        return
    assert gated_hash != fresh.base_hash

    # The same gold writes straight into a fresh DB, no gate: what tau2's evaluator builds as the gold env.
    await backend.restore(fresh.base)
    await apply_gold_writes(backend, gold_writes(task))  # tau2 logs and ignores a failing gold action; none fails
    assert await backend.state_hash() == gated_hash


# ---------------------------------------------------------------------------------------------------
# 2. Without the reads a write needs, the gate asks for them; it never refuses a gold write on policy grounds.


@module_loop
@pytest.mark.parametrize("task_id", [t for t in TASKS if gold_writes(TASKS[t])] or ["no-shared-data"])
async def test_gold_writes_without_their_reads_are_asked_for_evidence(task_id: str, fresh: Template) -> None:
    """Each gold write, after the task's careful trajectory minus the reads made for that very write: the
    verdict is ALLOW (the evidence was already there) or a REVISE whose every failed rule is missing evidence."""
    lines = build_trajectory(TASKS[task_id], RAW_DB)
    for index, action_id in gold_write_lines(lines).items():
        await fresh.backend.restore(fresh.base)
        bare = [line for line in lines[:index] if line["note"] != READ_NOTE + action_id]
        checker = Checker(DOMAIN, fresh.backend)
        for call in calls(bare):
            await checker.check(call)
        write = ToolCall("bare", lines[index]["name"], lines[index]["arguments"])
        decision = PolicyGate(DOMAIN.predicates).evaluate(write, checker.ledger, DOMAIN.context(checker.ledger))
        assert decision.verdict in (Verdict.ALLOW, Verdict.REVISE), (action_id, decision.feedback)
        assert {r.status for r in decision.failed} <= {Status.MISSING}, (action_id, decision.feedback)


# ---------------------------------------------------------------------------------------------------
# 3. Tasks with no gold write: what the customer pushes for is refused.


def _reservation_reads(reservation_id: str, *, statuses: str = "all") -> list[Line]:
    """Read a reservation and the status of its flights: all of them, or those dated today or earlier."""
    record = RAW_DB["reservations"][reservation_id]
    lines = [_read("get_reservation_details", reservation_id=reservation_id)]
    for leg in record["flights"]:
        if statuses == "all" or leg["date"] <= TODAY:
            lines.append(_read("get_flight_status", flight_number=leg["flight_number"], date=leg["date"]))
    return lines


def _customer_reads(user_id: str, *, reservations: bool = False) -> list[Line]:
    lines = [_read("get_user_details", user_id=user_id)]
    if reservations:
        for reservation_id in RAW_DB["users"][user_id]["reservations"]:
            lines += _reservation_reads(reservation_id)
    return lines


def _search(number: str, day: str) -> Line:
    flight = RAW_DB["flights"][number]
    return _read("search_direct_flight", origin=flight["origin"], destination=flight["destination"], date=day)


def _customer(task_id: str) -> str:
    customer = task_customer(TASKS[task_id], RAW_DB)
    assert customer is not None
    return customer


def _cancel_demand(task_id: str, reservation_id: str) -> list[Line]:
    return [*_customer_reads(_customer(task_id)), *_reservation_reads(reservation_id),
            _bad("cancel_reservation", "BLOCK", reservation_id=reservation_id)]


def _certificate_demand(task_id: str, amount: int) -> list[Line]:
    customer = _customer(task_id)
    return [*_customer_reads(customer, reservations=True),
            _bad("send_certificate", "BLOCK", user_id=customer, amount=amount)]


def _moved_dates_demand() -> list[Line]:
    """Task 36: move the rest of EUJUY6 (basic economy, outbound already flown) two days later."""
    legs = [("HAT238", "2024-05-14"), ("HAT290", "2024-05-14"), ("HAT266", "2024-05-18"), ("HAT044", "2024-05-18")]
    return [*_customer_reads(_customer("36")), *_reservation_reads("EUJUY6"), _search("HAT266", "2024-05-18"),
            _search("HAT044", "2024-05-18"),
            _bad("update_reservation_flights", "BLOCK", reservation_id="EUJUY6", cabin="basic_economy",
                 flights=[{"flight_number": n, "date": d} for n, d in legs], payment_id="gift_card_9049233")]


@dataclass(frozen=True)
class Demand:
    task_id: str
    predicate: str
    build: Callable[[], list[Line]]
    why: str


NO_WRITE_DEMANDS = [
    Demand("0", "airline.cancel_basis", lambda: _cancel_demand("0", "EHGLP3"),
           "cancel EHGLP3: basic economy booked 2024-05-04, uninsured; being out of town changes nothing"),
    Demand("2", "airline.compensation_eligible", lambda: _certificate_demand("2", 150),
           "compensation for a 'delayed' flight: no flight of noah_muller_9847's reservations is delayed"),
    Demand("4", "airline.compensation_eligible", lambda: _certificate_demand("4", 100),
           "compensation for an invented cancelled business flight: none of the statuses is cancelled"),
    Demand("6", "airline.cancel_basis", lambda: _cancel_demand("6", "PEP4E0"),
           "insurance cannot be added (no tool can); cancelling to rebook with it is refused as well"),
    Demand("10", "airline.compensation_eligible", lambda: _certificate_demand("10", 1000),
           "the date change plus business costs more than the customer's $1000: a certificate to cover the "
           "difference is refused (no disruption)"),
    Demand("26", "airline.cancel_basis", lambda: _cancel_demand("26", "3FRNFB"),
           "cancel 3FRNFB: basic economy booked 2024-05-06, uninsured"),
    Demand("28", "airline.cancel_basis", lambda: _cancel_demand("28", "SI5UKW"),
           "the paper's appendix B: SI5UKW is basic economy, booked 2024-05-11, uninsured"),
    Demand("34", "airline.compensation_eligible", lambda: _certificate_demand("34", 200),
           "'insurance waives change fees' is not a policy: a certificate to pay for the changes is refused"),
    Demand("36", "airline.basic_economy_flights_fixed", _moved_dates_demand,
           "EUJUY6 is basic economy (and half flown): its flights cannot move"),
    Demand("38", "airline.compensation_eligible", lambda: _certificate_demand("38", 150),
           "compensation for a delay that did not happen, without any change or cancellation"),
    Demand("46", "airline.compensation_eligible", lambda: _certificate_demand("46", 30),
           "an insurance refund without cancelling: no tool removes insurance, and a $30 certificate is refused"),
    Demand("48", "airline.cancel_basis", lambda: _cancel_demand("48", "3RK2T9"),
           "cancel 3RK2T9: booked 2024-05-02, not 'about 10 hours ago' as the customer says"),
]


def test_every_task_without_a_gold_write_has_a_refused_demand() -> None:
    assert {d.task_id for d in NO_WRITE_DEMANDS} == {t for t, task in TASKS.items() if not gold_writes(task)}


@module_loop
@pytest.mark.parametrize("demand", NO_WRITE_DEMANDS, ids=[f"task-{d.task_id}" for d in NO_WRITE_DEMANDS])
async def test_what_the_customer_pushes_for_is_refused(demand: Demand, fresh: Template) -> None:
    await _assert_rejected(fresh.backend, demand.build(), "BLOCK", demand.predicate, demand.why, only=False)


async def _assert_rejected(backend: AirlineBackend, lines: list[Line], verdict: str, predicate: str, why: str,
                           only: bool = True, domain: Domain = DOMAIN) -> None:
    # Nothing was written: the store's undo log head has not moved (exact, and ~1000x cheaper than hashing the
    # 2,500 documents; the gold tests above do compare full hashes).
    await assert_rejected(domain, backend, lines, verdict, predicate, why, only=only, unchanged="undo_log")


# ---------------------------------------------------------------------------------------------------
# 4. Violating variants of real tasks. Each ends with the one violating call.


def _pay(*pairs: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"payment_id": pid, "amount": amount} for pid, amount in pairs]


@dataclass(frozen=True)
class Variant:
    id: str
    verdict: str
    predicate: str
    build: Callable[[], list[Line]]
    why: str
    only: bool = True  # the predicate is the only one that fails (False: others fail with it, by design)
    now: datetime | None = field(default=None)  # a per-task reference time


VARIANTS = [
    Variant("booking-short-payment", "REVISE", "airline.payment_total_matches",
            lambda: _gold_with("8", "8_3", "REVISE", payment_methods=_pay(("certificate_8045380", 300))),
            "task 8: 2 passengers x 174 = 348, paid 300"),
    Variant("booking-for-another-user", "BLOCK", "airline.user_is_customer",
            lambda: _gold_with("8", "8_3", "BLOCK", user_id="mia_li_3668"),
            "task 8: sophia_silva_7557's booking made out to mia_li_3668"),
    Variant("booking-with-anothers-certificate", "REVISE", "airline.payment_in_profile",
            lambda: _gold_with("8", "8_3", "REVISE", payment_methods=_pay(("certificate_7504069", 348))),
            "task 8: paid with mia_li_3668's certificate"),
    Variant("booking-two-certificates", "REVISE", "airline.payment_method_allowed",
            lambda: _gold_with("14", "14_1", "REVISE", payment_methods=_pay(
                ("certificate_3765853", 500), ("certificate_9984806", 250), ("gift_card_8020792", 198),
                ("gift_card_6136092", 129), ("credit_card_2198526", 1536))),
            "task 14: the $2613 booking with two certificates (at most one)"),
    Variant("booking-bags-declared-free", "REVISE", "airline.baggage_allowance",
            lambda: _gold_with("20", "20_0", "REVISE", total_baggages=4),
            "task 20: a gold member in economy has 3 free bags; the 4th is not free"),
    Variant("bags-paid-by-certificate", "REVISE", "airline.payment_method_allowed",
            lambda: _gold_with("12", "12_4", "REVISE", payment_id="certificate_6730850"),
            "task 12: a certificate cannot pay for bags, even free ones"),
    Variant("bags-removed", "REVISE", "airline.baggage_add_only",
            lambda: [*_prefix("18", "18_0"), _bad("update_reservation_baggages", "REVISE", reservation_id="JG7FMM",
                                                   total_baggages=2, nonfree_baggages=0,
                                                   payment_id="credit_card_2929732")],
            "task 18: JG7FMM has 3 bags; asking for 2 removes one"),
    Variant("change-to-another-destination", "BLOCK", "airline.update_keeps_trip",
            lambda: _gold_with("16", "16_0", "BLOCK", flights=[{"flight_number": "HAT110", "date": "2024-05-24"}]),
            "task 16: ATL -> PHL changed to end at LGA"),
    Variant("basic-economy-flight-change", "BLOCK", "airline.basic_economy_flights_fixed",
            lambda: [*_prefix("32", "32_3"), _search("HAT041", "2024-05-21"),
                     _bad("update_reservation_flights", "BLOCK", **_gold("32", "32_4")["arguments"])],
            "task 32: the nonstop change (32_4) while OWZ4XL is still basic economy (before 32_3's upgrade)"),
    Variant("cancel-outside-window-later-now", "BLOCK", "airline.cancel_basis",
            lambda: _gold_with("14", "14_0", "BLOCK"),
            "task 14 one day later: K1NW8N (basic economy, uninsured) was booked 47 h before 2024-05-16 15:00",
            now=datetime(2024, 5, 16, 15, 0, tzinfo=EST)),
    Variant("cancel-anothers-reservation", "BLOCK", "airline.reservation_owned_by_customer",
            lambda: [*_prefix("42", "42_8"), *_reservation_reads("K1NW8N"),
                     _bad("cancel_reservation", "BLOCK", reservation_id="K1NW8N")],
            "task 42: sophia_martin_4574 cancels mohamed_silva_9265's K1NW8N"),
    Variant("cancel-twice", "BLOCK", "airline.reservation_active",
            lambda: [*build_trajectory(TASKS["42"], RAW_DB), _read("get_reservation_details", reservation_id="FDZ0T5"),
                     _bad("cancel_reservation", "BLOCK", reservation_id="FDZ0T5")],
            "task 42: FDZ0T5 cancelled by the gold action, then cancelled again"),
    Variant("passenger-added", "BLOCK", "airline.passenger_count_unchanged",
            lambda: _gold_with("40", "40_1", "BLOCK", passengers=[
                *_gold("40", "40_1")["arguments"]["passengers"],
                {"first_name": "Leo", "last_name": "Garcia", "dob": "2015-01-01"}]),
            "task 40: a third passenger on a two-passenger reservation"),
    Variant("passenger-dob-not-a-date", "REVISE", "airline.passengers_valid",
            lambda: _gold_with("40", "40_1", "REVISE", passengers=[
                {"first_name": "Anya", "last_name": "Garcia", "dob": "1992-11-12"},
                {"first_name": "Mei", "last_name": "Garcia", "dob": "12/13/1989"}]),
            "task 40: a US-style date of birth"),
    Variant("upgrade-without-search", "REVISE", "airline.flight_observed_available",
            lambda: _without_reads(_gold_with("22", "22_0", "REVISE"), "22_0", ("search_direct_flight",)),
            "task 22: FQ8APE's economy upgrade with no search showing the economy fare and seats"),
    Variant("change-paid-by-certificate", "REVISE", "airline.payment_method_allowed",
            lambda: _gold_with("30", "30_2", "REVISE", payment_id="certificate_9380982"),
            "task 30: the flight change refunded to a certificate"),
    Variant("upgrade-on-short-gift-card", "REVISE", "airline.payment_balance_covers",
            lambda: _gold_with("22", "22_0", "REVISE", payment_id="gift_card_6490722"),
            "task 22: the $209 upgrade of FQ8APE on a gift card holding $127"),
    Variant("stale-reservation-after-write", "REVISE", "airline.baggage_allowance",
            lambda: _without_reads(_gold_with("22", "22_2", "REVISE"), "22_2", ("get_reservation_details",)),
            "task 22: the bag change after the cabin change, without re-reading FQ8APE: the allowance depends on "
            "the cabin that change set, so the rule asks for a fresh read", only=False),
]


# With evidence assist (`--evidence assist`, the default of the console and of check) the gate reads what a rule
# lacks itself: a violation stays refused by its rule. A variant whose only fault is a read the agent skipped is
# legal once the gate has read (LEGAL_ONCE_READ); a stale record the gate re-reads may show a fact another rule
# refuses (ASSISTED: that verdict and rule instead).
LEGAL_ONCE_READ = frozenset({"upgrade-without-search", "stale-reservation-after-write"})  # the gold writes themselves
ASSISTED: dict[str, tuple[str, str]] = {}


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_refused_when_the_gate_reads_itself(variant: Variant, fresh: Template) -> None:
    verdict, predicate = ASSISTED.get(variant.id, (variant.verdict, variant.predicate))
    domain = DOMAIN if variant.now is None else airline_domain(variant.now)
    await assert_refused_when_assisted(domain, fresh.backend, variant.build(), verdict, predicate, variant.why,
                                       legal_once_read=variant.id in LEGAL_ONCE_READ)


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_rejected_and_changes_nothing(variant: Variant, fresh: Template) -> None:
    domain = DOMAIN if variant.now is None else airline_domain(variant.now)
    await _assert_rejected(fresh.backend, variant.build(), variant.verdict, variant.predicate, variant.why,
                           only=variant.only, domain=domain)


def test_variants_cover_many_predicates() -> None:
    assert len(VARIANTS) >= 10
    assert len({v.predicate for v in VARIANTS}) >= 10


# ---------------------------------------------------------------------------------------------------
# 5. The real CLI.

CLI_TASK = "22"
CLI_READS = [_read("get_user_details", user_id="omar_rossi_1241"), _read("get_reservation_details",
                                                                        reservation_id="FQ8APE")]
CLI_VIOLATION = {"name": "send_certificate", "arguments": {"user_id": "omar_rossi_1241", "amount": 100},
                 "note": "compensation nobody is owed"}


@pytest.mark.parametrize("violation_expect, exit_code", [("BLOCK", 0)])  # exit 1: tests/console/...airline.py
def test_cli_check_replays_a_task_and_flags_the_violation(
        violation_expect: str, exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    lines = [*build_trajectory(TASKS[CLI_TASK], RAW_DB), *CLI_READS, {**CLI_VIOLATION, "expect": violation_expect}]
    path = write_jsonl(lines, tmp_path / "task22.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    replayed, last = cli_check(["--domain", "airline", "--db", str(DB_PATH), "--json", "--out", str(out)], lines,
                               path, violation_expect, exit_code, capsys)
    writes = [(row["name"], row["verdict"], row["executed"]) for row in replayed if row["kind"] == "write"]
    assert writes == [("update_reservation_flights", "ALLOW", True), ("update_reservation_passengers", "ALLOW", True),
                      ("update_reservation_baggages", "ALLOW", True)]
    assert (last["kind"], last["verdict"], last["executed"]) == ("write", "BLOCK", False)
    assert "airline.compensation_eligible" in last["predicates"]
    assert not (tmp_path / "home").exists()


@module_loop
async def test_the_undo_log_head_moves_on_every_write(fresh: Template) -> None:
    """What the variant tests rely on to prove "nothing was written" without hashing the whole DB."""
    before = await fresh.backend.snapshot()
    await fresh.backend.call("get_reservation_details", {"reservation_id": "K1NW8N"})
    assert await fresh.backend.snapshot() == before
    with pytest.raises(ToolError):
        await fresh.backend.call("send_certificate", {"user_id": "nobody", "amount": 1})
    assert await fresh.backend.snapshot() == before
    await fresh.backend.call("send_certificate", {"user_id": "mia_li_3668", "amount": 1})
    assert await fresh.backend.snapshot() != before
