"""tau2-bench telecom tasks through `ledgeragent check` over the REAL TelecomBackend loaded from the shared tau2
`db.toml` and `user_db.toml` (dual control: the customer's phone actions are lines with requestor "user").

1. Every task's setup (its `initialization_actions`, run by the backend as tau2 runs them, each followed by a sync)
   and then its gold actions of both sides, with the reads a careful agent makes and the looks at the phone it
   asks for (tests/support/tau2_telecom_trajectories.py): every line is ALLOWed (the agent's writes by the gate, the
   customer's phone actions ungated), the task's own `env_assertions` hold at the end (mobile data works at
   >= 200 Mbps "excellent", MMS can be sent, the line is connected, the overdue bill is paid...), and the end
   state equals the state reached by applying only the gold actions (backend.call with a sync after each, as
   tau2's evaluator builds its gold environment): for correct trajectories the gate changes nothing. No gold
   write needs an exception.
2. Deliberately violating variants, each built on a real task's scene and records, are rejected with the expected
   verdict and predicate, and leave both databases exactly as they were; what the tool alone would have done.
3. The real CLI (`ledgeragent check --domain telecom --db <copy>/db.toml --json`) on a payment flow whose
   customer pays on the phone, plus a violation.

The scaffolding (one backend per module, restored before each test; the line builders; the CLI's shared
assertions) is tests/support/gold_replay.py: this module holds telecom's tables, scenes and variants. Skipped
when tau2-bench's data/tau2/domains/telecom/ files are absent (tests/support/upstream.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from core.replay import Checker
from core.tools import ToolError
from domains.telecom import DOMAIN
from mock_backends.telecom import TelecomBackend
from tests.support.gold_replay import (
    JSON_KEYS,
    Lines,
    Template,
    assert_refused_when_assisted,
    assert_rejected,
    calls,
    cli_check,
    fresh_fixture,
    module_loop,
    replay_group,
    show,
    template_fixture,
    write_jsonl,
)
from tests.support.tau2_telecom_trajectories import (
    DATA_DIR,
    DB_PATH,
    GOLD_NOTE,
    Line,
    Task,
    assertions,
    build_trajectory,
    gold_actions,
    gold_lines,
    gold_writes,
    load_tasks,
    setup,
    shared_present,
    short_id,
)

HAVE_SHARED = shared_present()

pytestmark = [
    pytest.mark.shared,
    replay_group("tau2-telecom"),
    pytest.mark.skipif(not HAVE_SHARED, reason=f"tau2 telecom data not found at {DATA_DIR}"),
]

TASKS: dict[str, Task] = {short_id(t): t for t in load_tasks()} if HAVE_SHARED else {}
JOHN = "C1001"  # every small task's customer: John Smith, 555-123-2002 (line L1002)


template = template_fixture("tau2_telecom",
                            lambda path: TelecomBackend.create(path, TelecomBackend.read_source(DB_PATH)))
fresh = fresh_fixture()


async def set_scene(backend: TelecomBackend, actions: list[dict[str, Any]]) -> None:
    for action in actions:
        await backend.run_env_function(action["env_type"], action["func_name"], action["arguments"])


async def end_state_failures(backend: TelecomBackend, task: Task) -> list[str]:
    failures = []
    for check in assertions(task):
        value = await backend.assert_env(check["env_type"], check["func_name"], check["arguments"])
        if value != check.get("assert_value", True):
            failures.append(f"{check['func_name']}({check['arguments']}) is {value}")
    return failures


# ---------------------------------------------------------------------------------------------------
# 1. Gold trajectories.


def test_every_gold_action_is_in_its_trajectory_once_with_its_requestor() -> None:
    assert len(TASKS) == 10
    sides = {"assistant": 0, "user": 0}
    for task in TASKS.values():
        lines = build_trajectory(task, JOHN)
        gold = [lines[i] for i in gold_lines(lines)]
        assert [line["note"] for line in gold] == [GOLD_NOTE + a["action_id"] for a in gold_actions(task)]
        assert [line["requestor"] for line in gold] == [a["requestor"] for a in gold_actions(task)]
        for line in gold:
            sides[line["requestor"]] += 1
        assert lines[0]["name"] == "get_customer_by_phone" and all(line["expect"] == "ALLOW" for line in lines)
    assert sides == {"assistant": 4, "user": 11}
    assert sum(len(gold_writes(t)) for t in TASKS.values()) == 14  # 3 agent writes, 11 phone changes


@module_loop
@pytest.mark.parametrize("task_id", list(TASKS) or ["no-shared-data"])
async def test_gold_trajectory_passes_and_reaches_the_gold_state(task_id: str, fresh: Template) -> None:
    task, backend = TASKS[task_id], fresh.backend
    await set_scene(backend, setup(task))
    scene = await backend.snapshot()
    scene_hash = await backend.state_hash()
    if gold_writes(task):  # the scene is broken: there is something to fix (the locked SIM is transferred)
        assert await end_state_failures(backend, task) != []
    lines = build_trajectory(task, JOHN)
    results = await Checker(DOMAIN, backend).run(calls(lines))
    assert all(r.met is True for r in results), show(results, lines, unmet=True)
    for index in gold_lines(lines):
        result = results[index]
        assert (result.verdict, result.executed, result.requestor) == ("ALLOW", True, lines[index]["requestor"])
        if result.kind == "write" and result.requestor == "assistant":
            assert result.predicates == () and result.evidence, result  # gated, every rule passed
    assert await end_state_failures(backend, task) == []
    gated_hash = await backend.state_hash()

    # The same gold actions straight into the scene, no gate, no reads: what tau2's evaluator builds as gold.
    await backend.restore(scene)
    for action in gold_actions(task):
        await backend.call(action["name"], action["arguments"])
        await backend.sync()
    assert await backend.state_hash() == gated_hash
    if not gold_writes(task):  # the locked-SIM task ends in a transfer: nothing may change
        assert gated_hash == scene_hash


@module_loop
async def test_careful_reads_are_what_the_gate_needs(fresh: Template) -> None:
    """The overdue-bill task's gold writes without the careful reads: the gate asks for exactly those reads."""
    task = TASKS["overdue_bill_suspension"]
    await set_scene(fresh.backend, setup(task))
    bare = [line for line in build_trajectory(task, JOHN) if not line["note"].startswith("careful read")]
    results = await Checker(DOMAIN, fresh.backend).run(calls(bare))
    by_name = {r.name: r for r in results if r.kind == "write" and r.requestor == "assistant"}
    assert by_name["send_payment_request"].verdict == "REVISE"
    assert set(by_name["send_payment_request"].predicates) == {"telecom.payment_request_for_overdue_bill",
                                                               "telecom.no_payment_already_awaited"}
    assert 'get_details_by_id(id="B1234321")' in by_name["send_payment_request"].reason


# ---------------------------------------------------------------------------------------------------
# 2. Violating variants of real tasks. Each ends with the one violating call.

ToolOutcome = Literal["changes", "no-op", "refuses"]


LINES = Lines(TASKS, lambda task: build_trajectory(task, JOHN), gold_actions, requestor="assistant",
              prefix_keeps_reads=False)
_read, _bad, _prefix = LINES.read, LINES.bad, LINES.prefix


def _identify(number: str = "555-123-2002") -> list[Line]:
    return [_read("get_customer_by_phone", phone_number=number)]


OVERDUE = "overdue_bill_suspension"
ENABLED_OFF = "user_abroad_roaming_enabled_off"
DISABLED_OFF = "user_abroad_roaming_disabled_off"


def _action_id(task_id: str, name: str) -> str:
    return next(a["action_id"] for a in gold_actions(TASKS[task_id]) if a["name"] == name)


def _paid_overdue() -> list[Line]:
    """The overdue-bill task up to its resume_line: requested, paid on the phone, bills and line read again."""
    return [*_prefix(OVERDUE, _action_id(OVERDUE, "resume_line")), _read("get_bills_for_customer", customer_id=JOHN),
            _read("get_details_by_id", id="L1002")]


@dataclass(frozen=True)
class Variant:
    id: str
    task: str  # whose scene (initialization actions) it starts from
    verdict: str
    predicate: str
    build: Callable[[], list[Line]]
    why: str
    tool: ToolOutcome  # what the violating call alone does on the task's scene, without the gate
    extra_setup: tuple[dict[str, Any], ...] = field(default=())


VARIANTS = [
    Variant("write-before-identifying", DISABLED_OFF, "REVISE", "telecom.customer_identified",
            lambda: [_read("get_details_by_id", id="L1002"), _bad("enable_roaming", "REVISE", customer_id=JOHN,
                                                                  line_id="L1002")],
            "the roaming-disabled task's gold enable_roaming with the line read but nobody identified", "changes"),
    Variant("roaming-on-another-customers-line", DISABLED_OFF, "BLOCK", "telecom.line_belongs_to_customer",
            lambda: [*_identify(), _read("get_details_by_id", id="L1004"),
                     _bad("disable_roaming", "BLOCK", customer_id="C1002", line_id="L1004")],
            "John Smith is identified; the agent turns off roaming on Sarah Johnson's L1004", "changes"),
    Variant("payment-request-for-another-customers-bill", OVERDUE, "BLOCK", "telecom.bill_belongs_to_customer",
            lambda: [*_identify(), _read("get_bills_for_customer", customer_id="C1002"),
                     _bad("send_payment_request", "BLOCK", customer_id="C1002", bill_id="B1005")],
            "John is identified; Sarah Johnson's overdue B1005 is requested", "changes"),
    Variant("payment-request-for-a-paid-bill", OVERDUE, "BLOCK", "telecom.payment_request_for_overdue_bill",
            lambda: [*_identify(), _read("get_bills_for_customer", customer_id=JOHN),
                     _bad("send_payment_request", "BLOCK", customer_id=JOHN, bill_id="B1001")],
            "John's January bill B1001 is Paid; the tool would ask him to pay it again", "changes"),
    Variant("second-payment-request-while-one-awaits", OVERDUE, "REVISE", "telecom.no_payment_already_awaited",
            lambda: [*_identify("555-123-2004"), _read("get_bills_for_customer", customer_id="C1002"),
                     _bad("send_payment_request", "REVISE", customer_id="C1002", bill_id="B1005")],
            "Sarah Johnson's B1004 already awaits payment (set up with the tool); her overdue B1005 must wait",
            "refuses",
            ({"env_type": "assistant", "func_name": "send_payment_request",
              "arguments": {"customer_id": "C1002", "bill_id": "B1004"}},)),
    Variant("resume-an-active-line", OVERDUE, "BLOCK", "telecom.resume_only_suspended",
            lambda: [*_paid_overdue(), _read("get_details_by_id", id="L1001"),
                     _bad("resume_line", "BLOCK", customer_id=JOHN, line_id="L1001")],
            "after paying, the agent resumes L1001, which was never suspended", "refuses"),
    Variant("resume-after-the-contract-ended", OVERDUE, "BLOCK", "telecom.resume_contract_not_ended",
            lambda: [*_paid_overdue(), _bad("resume_line", "BLOCK", customer_id=JOHN, line_id="L1002")],
            "the same task with contract_ended true: L1002's contract ended 2025-01-31; paying does not help",
            "changes",
            ({"env_type": "assistant", "func_name": "set_contract_ended", "arguments": {}},)),
    Variant("resume-before-paying", OVERDUE, "REVISE", "telecom.resume_after_overdue_paid",
            lambda: [*_identify(), _read("get_bills_for_customer", customer_id=JOHN),
                     _read("get_details_by_id", id="L1002"),
                     _bad("resume_line", "REVISE", customer_id=JOHN, line_id="L1002")],
            "the gold resume_line before any payment request: B1234321 is still Overdue", "changes"),
    Variant("refuel-over-the-cap", ENABLED_OFF, "REVISE", "telecom.refuel_within_cap",
            lambda: [*_identify(), _read("get_details_by_id", id="L1002"), _read("get_details_by_id", id="P1002"),
                     _bad("refuel_data", "REVISE", customer_id=JOHN, line_id="L1002", gb_amount=5.0)],
            "5 GB for John's Premium line; the tool has no cap", "changes"),
    Variant("refuel-without-reading-the-plan", ENABLED_OFF, "REVISE", "telecom.refuel_priced_from_plan",
            lambda: [*_identify(), _read("get_details_by_id", id="L1002"),
                     _bad("refuel_data", "REVISE", customer_id=JOHN, line_id="L1002", gb_amount=1.0)],
            "1 GB with no plan read: the price quoted could not have come from P1002", "changes"),
    Variant("enable-roaming-that-is-on", ENABLED_OFF, "REVISE", "telecom.roaming_not_already_enabled",
            lambda: [*_identify(), _read("get_details_by_id", id="L1002"),
                     _bad("enable_roaming", "REVISE", customer_id=JOHN, line_id="L1002")],
            "the roaming-enabled task: the line allows roaming, the phone's Data Roaming is what is off", "no-op"),
    Variant("refuel-twice-past-the-cap", ENABLED_OFF, "REVISE", "telecom.refuel_within_cap",
            lambda: [*_identify(), _read("get_details_by_id", id="L1002"), _read("get_details_by_id", id="P1002"),
                     {**_bad("refuel_data", "ALLOW", customer_id=JOHN, line_id="L1002", gb_amount=1.5),
                      "note": "the first refuel, legal"},
                     *_identify(), _read("get_details_by_id", id="L1002"),
                     _bad("refuel_data", "REVISE", customer_id=JOHN, line_id="L1002", gb_amount=1.5)],
            "two 1.5 GB refuels on one line: each under the cap, together 3 GB (the executed one is counted)",
            "changes"),
    Variant("suspend-without-a-reason", OVERDUE, "REVISE", "telecom.suspension_reason_stated",
            lambda: [*_identify(), _read("get_details_by_id", id="L1001"),
                     _read("get_bills_for_customer", customer_id=JOHN),
                     _bad("suspend_line", "REVISE", customer_id=JOHN, line_id="L1001", reason="")],
            "an overdue bill would justify it, but the reason is empty", "changes"),
    Variant("suspend-for-travel", ENABLED_OFF, "BLOCK", "telecom.suspension_reason_allowed",
            lambda: [*_identify(), _read("get_details_by_id", id="L1001"),
                     _read("get_bills_for_customer", customer_id=JOHN),
                     _bad("suspend_line", "BLOCK", customer_id=JOHN, line_id="L1001", reason="customer is travelling")],
            "John asks to pause L1001 while abroad; the policy suspends only for an overdue bill or an ended "
            "contract", "changes"),
]


async def set_variant_scene(backend: TelecomBackend, variant: Variant) -> None:
    actions = setup(TASKS[variant.task])
    if any(a["func_name"] == "set_contract_ended" for a in variant.extra_setup):
        actions = [{**a, "arguments": {**a["arguments"], "contract_ended": True}}
                   if a["func_name"] == "suspend_line_for_overdue_bill" else a for a in actions]
    await set_scene(backend, actions)
    await set_scene(backend, [a for a in variant.extra_setup if a["func_name"] != "set_contract_ended"])


# With evidence assist (`--evidence assist`, the default of the console and of check) the gate reads what a rule
# lacks itself: a violation stays refused by its rule. A variant whose only fault is a read the agent skipped is
# legal once the gate has read (LEGAL_ONCE_READ); a stale record the gate re-reads may show a fact another rule
# refuses (ASSISTED: that verdict and rule instead).
LEGAL_ONCE_READ = frozenset({"refuel-without-reading-the-plan"})  # 1 GB is within the cap: legal once priced
ASSISTED: dict[str, tuple[str, str]] = {}


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_refused_when_the_gate_reads_itself(variant: Variant, fresh: Template) -> None:
    await set_variant_scene(fresh.backend, variant)
    verdict, predicate = ASSISTED.get(variant.id, (variant.verdict, variant.predicate))
    await assert_refused_when_assisted(DOMAIN, fresh.backend, variant.build(), verdict, predicate, variant.why,
                                       legal_once_read=variant.id in LEGAL_ONCE_READ)


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_rejected_and_changes_nothing(variant: Variant, fresh: Template) -> None:
    await set_variant_scene(fresh.backend, variant)
    await assert_rejected(DOMAIN, fresh.backend, variant.build(), variant.verdict, variant.predicate, variant.why,
                          setup_met=True)


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_what_the_tool_alone_would_have_done(variant: Variant, fresh: Template) -> None:
    """Sent straight to the backend on the task's scene (no gate): most variants change the database, so the gate
    is the only defence; enabling roaming twice changes nothing but hides the real fix; the others the tool refuses
    too, and the gate refuses them earlier, with the rule."""
    await set_variant_scene(fresh.backend, variant)
    scene = await fresh.backend.state_hash()
    *_, violation = variant.build()
    if variant.tool == "refuses":
        with pytest.raises(ToolError):
            await fresh.backend.call(violation["name"], violation["arguments"])
        assert await fresh.backend.state_hash() == scene
        return
    await fresh.backend.call(violation["name"], violation["arguments"])
    await fresh.backend.sync()
    changed = await fresh.backend.state_hash() != scene
    assert changed is (variant.tool == "changes")


def test_variants_cover_every_predicate() -> None:
    """Every rule the policy states has a violating variant of a real task; house rules may (tau2's data has no
    line Pending Activation to build one from)."""
    assert len(VARIANTS) >= 6
    covered = {v.predicate for v in VARIANTS}
    # A variant is check lines, which carry no customer message: the confirmation rule passes there ("no customer
    # messages recorded"), so its violations are tested with the customer's words (telecom's predicate tests).
    stated = {p.id for p in DOMAIN.predicates if not p.house_rule and p.id != "telecom.explicit_confirmation"}
    assert stated <= covered <= {p.id for p in DOMAIN.predicates}


# ---------------------------------------------------------------------------------------------------
# 3. The real CLI, with a copy of tau2's db.toml as --db (its user_db.toml given Sarah Johnson's line number,
# because `check` has no task setup to run `set_user_info`).

CLI_LINES: list[Line] = [
    _read("get_customer_by_phone", phone_number="555-123-2004"),
    _read("get_bills_for_customer", customer_id="C1002"),
    {**_read("send_payment_request", customer_id="C1002", bill_id="B1005"), "note": "her overdue bill"},
    _read("check_payment_request", "user"),
    _read("make_payment", "user"),
    _read("get_bills_for_customer", customer_id="C1002"),
]


@pytest.mark.parametrize("violation_expect, exit_code", [("BLOCK", 0), ("ALLOW", 1)])
def test_cli_check_replays_a_phone_payment_and_flags_the_violation(
        violation_expect: str, exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    data = tmp_path / "tau2"
    shutil.copytree(DATA_DIR, data)
    with (data / "user_db.toml").open("a", encoding="utf-8") as handle:
        handle.write('\n[surroundings]\nname = "Sarah Johnson"\nphone_number = "555-123-2004"\n')
    violation = {"name": "send_payment_request", "arguments": {"customer_id": "C1002", "bill_id": "B1005"},
                 "expect": violation_expect, "note": "the bill she just paid, requested again"}
    lines = [*CLI_LINES, violation]
    path = write_jsonl(lines, tmp_path / "payment.jsonl")
    replayed, last = cli_check(["--domain", "telecom", "--db", str(data / "db.toml"), "--json"], lines, path,
                               violation_expect, exit_code, capsys, JSON_KEYS | {"requestor"})
    assert [(r["name"], r["requestor"], r["verdict"]) for r in replayed if r["kind"] == "write"] == [
        ("send_payment_request", "assistant", "ALLOW"), ("make_payment", "user", "ALLOW")]
    assert replayed[3]["kind"] == "read" and replayed[3]["requestor"] == "user"
    assert (last["kind"], last["verdict"], last["executed"]) == ("write", "BLOCK", False)
    assert last["predicates"] == ["telecom.payment_request_for_overdue_bill"]
    assert "bill B1005 is 'Paid'" in last["reason"]
