"""tau2-bench retail tasks through `ledgeragent check` over the REAL RetailBackend loaded from tau2's db.json.

1. Every task's gold writes, with the reads a careful agent makes before them
   (tests/support/tau2_retail_trajectories.py), are allowed by the gate and executed by the backend; the end
   state equals the state reached by applying only the gold writes directly (backend.call, no gate): for
   correct trajectories the gate changes nothing.
2. Deliberately violating variants, each derived from a real task and real records, are rejected with the
   expected verdict and predicate, and leave the database exactly as it was.
3. The real CLI (`ledgeragent check --json`) on one task's trajectory plus one violating line.

The scaffolding (one backend per module, restored before each test; the line builders; the CLI's shared
assertions) is tests/support/gold_replay.py: this module holds retail's tables, refusals and variants. Skipped
when tau2-bench's data/tau2/domains/retail/ files are absent (tests/support/upstream.py says where they go).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend, load_tau2_db
from tests.support.gold_replay import (
    Lines,
    Template,
    apply_gold_writes,
    assert_refused_when_assisted,
    assert_rejected,
    check,
    cli_check,
    fresh_fixture,
    module_loop,
    replay_group,
    show,
    template_fixture,
    write_jsonl,
)
from tests.support.tau2_retail_trajectories import (
    DB_PATH,
    GOLD_NOTE,
    TAU2_RETAIL,
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
    replay_group("tau2-retail"),
    pytest.mark.skipif(not HAVE_SHARED, reason=f"tau2 retail data not found at {TAU2_RETAIL}"),
]

TASKS: dict[str, Task] = {t["id"]: t for t in load_tasks()} if HAVE_SHARED else {}
RAW_DB: dict[str, Any] = load_db() if HAVE_SHARED else {}

# Gold writes that tau2's own tool refuses, so the gate must refuse them too: action_id -> (verdict, predicate
# that fails, tau2's error text when the same write is sent straight to the backend).
# 64_6: task 64's gold list first tries exchange_delivered_order_items on #W7464385, but that order is
# *pending* (tau2: "Non-delivered order cannot be exchanged"); the next gold action, 64_7, does the same swap
# with modify_pending_order_items, which is the write that changes the DB. tau2's evaluator logs and ignores
# the failing gold action, so refusing it is correct, and BLOCK is right: no argument makes a pending order
# delivered.
EXPECTED_REFUSALS: dict[str, tuple[str, str, str]] = {
    "64_6": ("BLOCK", "retail.return_exchange_requires_delivered", "Non-delivered order cannot be exchanged"),
}

template = template_fixture("tau2_retail", lambda path: RetailBackend.create(path, load_tau2_db(DB_PATH)))
fresh = fresh_fixture()
LINES = Lines(TASKS, lambda task: build_trajectory(task, RAW_DB), gold_actions)
_read, _bad, _prefix, _gold, _gold_with, _without_reads = (LINES.read, LINES.bad, LINES.prefix, LINES.gold,
                                                          LINES.gold_with, LINES.without_reads)


# ---------------------------------------------------------------------------------------------------
# 1. Gold trajectories.


def test_every_gold_action_is_in_its_trajectory_once() -> None:
    assert len(TASKS) == 57
    writes = 0
    for task in TASKS.values():
        lines = build_trajectory(task, RAW_DB)
        notes = [line["note"] for line in lines if line["note"].startswith(GOLD_NOTE)]
        assert notes == [GOLD_NOTE + a["action_id"] for a in gold_actions(task)]
        written_at = gold_write_lines(lines)
        writes += len(written_at)
        if written_at:  # the customer is authenticated before anything is written
            assert lines[0]["name"] == "find_user_id_by_email" and min(written_at) > 0
    assert writes == sum(len(gold_writes(t)) for t in TASKS.values()) == 90


@module_loop
@pytest.mark.parametrize("task_id", list(TASKS) or ["no-shared-data"])
async def test_gold_trajectory_passes_and_reaches_the_gold_state(task_id: str, fresh: Template) -> None:
    task, backend = TASKS[task_id], fresh.backend
    refusals = {aid: verdict for aid, (verdict, _, _) in EXPECTED_REFUSALS.items()}
    lines = build_trajectory(task, RAW_DB, expected_refusals=refusals)
    results = await check(DOMAIN, backend, lines)
    assert all(r.met is not False for r in results), show(results, lines)

    gold = gold_write_lines(lines)
    for index, action_id in gold.items():
        result = results[index]
        if action_id in EXPECTED_REFUSALS:
            verdict, predicate_id, _ = EXPECTED_REFUSALS[action_id]
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
    await apply_gold_writes(backend, gold_writes(task), {aid: error for aid, (*_, error) in EXPECTED_REFUSALS.items()})
    assert await backend.state_hash() == gated_hash


# ---------------------------------------------------------------------------------------------------
# 2. Violating variants of real tasks. Each ends with the one violating call.


def _customer(task_id: str) -> str:
    customer = task_customer(TASKS[task_id], RAW_DB)
    assert customer is not None
    return customer


def _login(user_id: str) -> list[Line]:
    return [_read("find_user_id_by_email", email=RAW_DB["users"][user_id]["email"]),
            _read("get_user_details", user_id=user_id)]


ADDRESS = {"address1": "1 Test Street", "address2": "Suite 1", "city": "Austin", "state": "TX",
           "country": "USA", "zip": "78701"}


@dataclass(frozen=True)
class Variant:
    id: str
    verdict: str
    predicate: str
    build: Callable[[], list[Line]]
    why: str
    only: bool = True  # the predicate is the only one that fails (False: others fail with it, by design)


VARIANTS = [
    Variant("refund-to-other-orders-method", "REVISE", "retail.refund_to_original_or_gift_card",
            lambda: [*build_trajectory(TASKS["10"], RAW_DB)[:-1],
                     _bad("return_delivered_order_items", "REVISE", order_id="#W5490111",
                          item_ids=[RAW_DB["orders"]["#W5490111"]["items"][0]["item_id"]],
                          payment_method_id="paypal_9497703")],
            "task 10: mia_garcia_4516 wants #W5490111 (paid by credit_card_3124723) refunded to her PayPal, the "
            "other order's method; tau2's gold answer is a transfer"),
    Variant("cancel-invalid-reason", "REVISE", "retail.cancel_reason_valid",
            lambda: _gold_with("88", "88_0", "REVISE", reason="found a better price"),
            "task 88's cancel of #W8835847 with a reason outside the two accepted ones"),
    Variant("cancel-delivered-order", "BLOCK", "retail.cancel_requires_pending",
            lambda: [*_prefix("16", "16_8"), _bad("cancel_pending_order", "BLOCK", order_id="#W9389413",
                                                   reason="no longer needed")],
            "task 16: cancel the delivered order #W9389413 that the gold trajectory returns an item from"),
    Variant("another-customers-order", "BLOCK", "retail.order_owned_by_customer",
            lambda: [*_login(_customer("0")), _read("get_order_details", order_id="#W8835847"),
                     _bad("cancel_pending_order", "BLOCK", order_id="#W8835847", reason="ordered by mistake")],
            "authenticated as task 0's yusuf_rossi_9620, cancel task 88's order #W8835847 of daiki_silva_2903"),
    Variant("another-customers-address", "BLOCK", "retail.user_is_customer",
            lambda: _gold_with("22", "22_1", "BLOCK", user_id="yusuf_rossi_9620"),
            "task 22: ethan_garcia_1261's gold address change sent for user yusuf_rossi_9620"),
    Variant("exchange-to-unavailable-variant", "REVISE", "retail.replacement_is_available_variant",
            lambda: _gold_with("0", "0_4", "REVISE", new_item_ids=["9025753381", "7747408585"]),
            "task 0: the clicky / RGB / full-size keyboard 9025753381 the customer asks for first is unavailable"),
    Variant("exchange-to-other-products-variant", "REVISE", "retail.replacement_is_available_variant",
            lambda: _gold_with("0", "0_4", "REVISE", new_item_ids=["7747408585", "7706410293"]),
            "task 0: keyboard and thermostat replacements swapped, each a variant of the other product"),
    Variant("exchange-without-product-read", "REVISE", "retail.replacement_is_available_variant",
            lambda: _without_reads([*_prefix("70", "70_0"), _bad("exchange_delivered_order_items", "REVISE",
                                                                   **_gold("70", "70_0")["arguments"])],
                                   "70_0", ("get_product_details",)),
            "task 70's bare gold exchange without reading the products (evidence missing)"),
    Variant("return-item-not-in-order", "REVISE", "retail.items_in_order",
            lambda: _gold_with("82", "82_0", "REVISE",
                               item_ids=["5952720925", "8940227892", "7381052709", "6065192424"]),
            "task 82: product id 8940227892 given instead of its item id 9973034634"),
    Variant("return-pending-order", "BLOCK", "retail.return_exchange_requires_delivered",
            lambda: [*_prefix("16", "16_6"), _bad("return_delivered_order_items", "BLOCK", order_id="#W5199551",
                                                   item_ids=["1615379700"], payment_method_id="paypal_5364164")],
            "task 16: return an item of #W5199551, which is still pending"),
    Variant("modify-address-of-delivered-order", "BLOCK", "retail.modify_requires_pending",
            lambda: [*_prefix("16", "16_8"), _bad("modify_pending_order_address", "BLOCK", order_id="#W9389413",
                                                   **ADDRESS)],
            "task 16: change the shipping address of the delivered order #W9389413"),
    Variant("payment-to-same-method", "REVISE", "retail.payment_change_new_method",
            lambda: _gold_with("40", "40_3", "REVISE", payment_method_id="credit_card_8554680"),
            "task 40: #W4923227 is already paid with credit_card_8554680"),
    Variant("payment-to-short-gift-card", "REVISE", "retail.gift_card_covers_amount",
            lambda: _gold_with("40", "40_3", "REVISE", payment_method_id="gift_card_8245350"),
            "task 40: gift_card_8245350 has 60.0, the order amount is 321.18"),
    Variant("payment-method-of-another-customer", "REVISE", "retail.payment_method_in_profile",
            lambda: _gold_with("40", "40_3", "REVISE", payment_method_id="credit_card_9513926"),
            "task 40: pay #W4923227 with yusuf_rossi_9620's credit card"),
    Variant("modify-items-twice", "BLOCK", "retail.items_modified_once",
            lambda: [*build_trajectory(TASKS["72"], RAW_DB), _read("get_order_details", order_id="#W5270061"),
                     _read("get_user_details", user_id=_customer("72")),
                     _bad("modify_pending_order_items", "BLOCK", order_id="#W5270061", item_ids=["5917587651"],
                          new_item_ids=["6906307980"], payment_method_id="paypal_7729105")],
            "task 72: after the gold item change on #W5270061, a second one on the same order"),
    Variant("gift-card-short-for-difference", "REVISE", "retail.gift_card_covers_amount",
            lambda: _gold_with("112", "113_0", "REVISE", new_item_ids=["4510078629"]),
            "task 112: wristwatch 1355937109 (1985.30) -> 4510078629 (2127.62) on gift_card_7252880 (56.0)"),
    Variant("write-before-authentication", "REVISE", "retail.authenticated",
            lambda: [_read("get_order_details", order_id="#W8835847"),
                     _bad("cancel_pending_order", "REVISE", order_id="#W8835847", reason="ordered by mistake")],
            "task 88's cancel with the order read but nobody authenticated"),
    Variant("stale-order-after-write", "REVISE", "retail.modify_requires_pending",
            lambda: [*build_trajectory(TASKS["72"], RAW_DB),
                     _bad("modify_pending_order_address", "REVISE", order_id="#W5270061", **ADDRESS)],
            "task 72: an address change right after the gold item change, without re-reading #W5270061: the item "
            "change set its status, so the status rules ask for a fresh read", only=False),
]


# With evidence assist (`--evidence assist`, the default of the console and of check) the gate reads what a rule
# lacks itself: a violation stays refused by its rule. A variant whose only fault is a read the agent skipped is
# legal once the gate has read (LEGAL_ONCE_READ); a stale record the gate re-reads may show a fact another rule
# refuses (ASSISTED: that verdict and rule instead).
LEGAL_ONCE_READ = frozenset({"exchange-without-product-read"})  # task 70's gold exchange itself
# the re-read shows the status the item change set: no modification after that (policy), a BLOCK
ASSISTED = {"stale-order-after-write": ("BLOCK", "retail.items_modified_once")}


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_refused_when_the_gate_reads_itself(variant: Variant, fresh: Template) -> None:
    verdict, predicate = ASSISTED.get(variant.id, (variant.verdict, variant.predicate))
    await assert_refused_when_assisted(DOMAIN, fresh.backend, variant.build(), verdict, predicate, variant.why,
                                       legal_once_read=variant.id in LEGAL_ONCE_READ)


@module_loop
@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
async def test_violating_variant_is_rejected_and_changes_nothing(variant: Variant, fresh: Template) -> None:
    await assert_rejected(DOMAIN, fresh.backend, variant.build(), variant.verdict, variant.predicate, variant.why,
                          only=variant.only)


def test_variants_cover_many_predicates() -> None:
    assert len({v.predicate for v in VARIANTS}) >= 10


# ---------------------------------------------------------------------------------------------------
# 3. The real CLI.

CLI_TASK = "0"
CLI_VIOLATION = {"name": "modify_user_address", "arguments": {"user_id": "daiki_silva_2903", **ADDRESS},
                 "note": "another customer's profile"}


@pytest.mark.parametrize("violation_expect, exit_code", [("BLOCK", 0), ("ALLOW", 1)])
def test_cli_check_replays_a_task_and_flags_the_violation(
        violation_expect: str, exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    lines = [*build_trajectory(TASKS[CLI_TASK], RAW_DB), {**CLI_VIOLATION, "expect": violation_expect}]
    path = write_jsonl(lines, tmp_path / "task0.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    replayed, last = cli_check(["--domain", "retail", "--db", str(DB_PATH), "--json", "--out", str(out)], lines, path,
                               violation_expect, exit_code, capsys)
    write = next(row for row in replayed if row["kind"] == "write")
    assert (write["name"], write["verdict"], write["executed"]) == ("exchange_delivered_order_items", "ALLOW", True)
    assert (last["kind"], last["verdict"], last["predicates"], last["executed"]) == (
        "write", "BLOCK", ["retail.user_is_customer"], False)
    assert "daiki_silva_2903" in last["reason"]
    assert not (tmp_path / "home").exists()
