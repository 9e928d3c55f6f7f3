"""Retail tools (tau2 names and arguments), path map, identity rule, stale rules and the DOMAIN value."""

from __future__ import annotations

import json

import pytest

from core.ledger import Ledger
from core.tools import ToolCall, ToolKind, validate_arguments
from domains.retail import DOMAIN, PATH_MAP, POLICY, POLICY_NOTES, PREDICATES, TOOLS, identify
from tests.support.retail_records import (
    MIA,
    MIA_EMAIL,
    MIA_PENDING,
    NOAH,
    TABLET,
    TABLET_GOLD_128,
    TSHIRT,
    RetailSession,
    mia_delivered_order,
    mia_pending_order,
    mia_session,
    mia_user,
    noah_delivered_order,
    noah_pending_order,
    noah_user,
    tablet_product,
    tshirt_product,
)

# tau2-bench retail tool names and argument names (API.md §2.2), in tau2's order.
TAU2_TOOLS: dict[str, tuple[str, ...]] = {
    "find_user_id_by_email": ("email",),
    "find_user_id_by_name_zip": ("first_name", "last_name", "zip"),
    "get_user_details": ("user_id",),
    "get_order_details": ("order_id",),
    "get_product_details": ("product_id",),
    "get_item_details": ("item_id",),
    "list_all_product_types": (),
    "cancel_pending_order": ("order_id", "reason"),
    "modify_pending_order_address": ("order_id", "address1", "address2", "city", "state", "country", "zip"),
    "modify_pending_order_items": ("order_id", "item_ids", "new_item_ids", "payment_method_id"),
    "modify_pending_order_payment": ("order_id", "payment_method_id"),
    "modify_user_address": ("user_id", "address1", "address2", "city", "state", "country", "zip"),
    "return_delivered_order_items": ("order_id", "item_ids", "payment_method_id"),
    "exchange_delivered_order_items": ("order_id", "item_ids", "new_item_ids", "payment_method_id"),
    "calculate": ("expression",),
    "transfer_to_human_agents": ("summary",),
}
WRITES = {"cancel_pending_order", "modify_pending_order_address", "modify_pending_order_items",
          "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items",
          "exchange_delivered_order_items"}


# ---------------------------------------------------------------------------------------------------
# Tools.


def test_tools_match_tau2_names_and_arguments() -> None:
    assert [t.name for t in TOOLS] == list(TAU2_TOOLS)
    for spec in TOOLS:
        params = spec.parameters
        assert params["type"] == "object"
        assert tuple(params["properties"]) == TAU2_TOOLS[spec.name]
        assert params["required"] == list(TAU2_TOOLS[spec.name])
        assert params["additionalProperties"] is False
        assert spec.description and all(p.get("description") for p in params["properties"].values())
        json.dumps(spec.openai_schema())


def test_tool_kinds() -> None:
    for spec in TOOLS:
        if spec.name in WRITES:
            assert spec.kind is ToolKind.WRITE, spec.name
        elif spec.name in ("calculate", "transfer_to_human_agents"):
            assert spec.kind is ToolKind.GENERIC, spec.name
        else:
            assert spec.name.startswith(("find_", "get_", "list_")) and spec.kind is ToolKind.READ, spec.name


def test_item_lists_are_string_arrays_and_cancel_reason_has_no_enum() -> None:
    for spec in TOOLS:
        for name, schema in spec.parameters["properties"].items():
            if name in ("item_ids", "new_item_ids"):
                assert schema["type"] == "array" and schema["items"] == {"type": "string"}
            else:
                assert schema["type"] == "string"
    reason = DOMAIN.tool("cancel_pending_order")
    assert reason is not None and "enum" not in reason.parameters["properties"]["reason"]


def test_arguments_are_validated_against_the_schemas() -> None:
    spec = DOMAIN.tool("return_delivered_order_items")
    assert spec is not None
    good = {"order_id": "#W4821001", "item_ids": ["2000000011"], "payment_method_id": "gift_card_4821001"}
    assert validate_arguments(spec, good) == []
    errors = validate_arguments(spec, {"order_id": "#W4821001", "item_ids": "2000000011", "refund_to": "x"})
    assert "missing required argument 'payment_method_id'" in errors
    assert "unexpected argument 'refund_to'" in errors
    assert any(e.startswith("argument 'item_ids' must be array") for e in errors)


# ---------------------------------------------------------------------------------------------------
# Path map and identity.


def test_authentication_records_the_bare_user_id() -> None:
    session = RetailSession()
    absorbed = session.read("find_user_id_by_email", MIA, email=MIA_EMAIL)
    assert absorbed.added == ("auth.user_id",)
    assert session.ledger.get("auth.user_id") == MIA
    assert identify(session.ledger) == MIA
    assert session.context().customer_id == MIA


def test_customer_profile_lands_at_user_and_users() -> None:
    session = RetailSession()
    session.authenticate(MIA)
    absorbed = session.read_user(mia_user())
    assert set(absorbed.added) == {"users.mia_garcia_4821", "user"}
    assert session.ledger.get("user") == session.ledger.get("users.mia_garcia_4821") == mia_user()


def test_another_users_profile_lands_only_at_users() -> None:
    session = mia_session()
    absorbed = session.read_user(noah_user())
    assert absorbed.added == ("users.noah_kim_3107",)
    assert any("user: condition not met" in s for s in absorbed.skipped)
    assert session.ledger.get("user")["user_id"] == MIA
    assert session.context().customer_id == MIA


def test_profile_read_before_authentication_is_not_the_customer() -> None:
    session = RetailSession()
    session.read_user(mia_user())
    assert session.ledger.paths() == ["users.mia_garcia_4821"]
    assert session.context().customer_id is None


def test_first_authentication_wins() -> None:
    session = RetailSession()
    session.authenticate(MIA)
    other = session.authenticate(NOAH)
    assert other.added == ("lookups.noah_kim_3107",)
    assert session.ledger.get("auth.user_id") == MIA
    assert session.context().customer_id == MIA
    same = session.read("find_user_id_by_email", MIA, email=MIA_EMAIL)
    assert same.refreshed == ("auth.user_id",) and not same.added


@pytest.mark.parametrize(
    ("tool", "arguments", "result", "path"),
    [
        ("get_order_details", {"order_id": MIA_PENDING}, mia_pending_order(), "orders.#W4821002"),
        ("get_product_details", {"product_id": TABLET}, tablet_product(), "products.1000000001"),
        ("get_item_details", {"item_id": TABLET_GOLD_128}, tablet_product()["variants"][TABLET_GOLD_128],
         "items.2000000011"),
        ("list_all_product_types", {}, json.dumps({"T-Shirt": "1000000002", "Tablet": "1000000001"}),
         "catalog.product_types"),
    ],
)
def test_read_paths(tool: str, arguments: dict[str, str], result: object, path: str) -> None:
    ledger = Ledger(PATH_MAP)
    absorbed = ledger.absorb(ToolCall(id="c1", name=tool, arguments=arguments), result, step=1)
    assert absorbed.added == (path,)
    assert ledger.get(path) == result


def test_user_path_suggests_the_exact_read() -> None:
    assert PATH_MAP.suggest_read("users.noah_kim_3107") == 'get_user_details(user_id="noah_kim_3107")'


def _full_ledger() -> RetailSession:
    session = mia_session()
    session.read_user(noah_user())
    return session


@pytest.mark.parametrize(
    ("tool", "arguments", "staled"),
    [
        # paid by credit card: the refund goes outside the profile
        ("cancel_pending_order", {"order_id": MIA_PENDING, "reason": "no longer needed"}, {"orders.#W4821002"}),
        # a gift card pays the difference: the owner's profile (Mia's, as the order shows), nobody else's
        ("modify_pending_order_items", {"order_id": MIA_PENDING, "item_ids": [], "new_item_ids": [],
                                        "payment_method_id": "gift_card_4821001"},
         {"orders.#W4821002", "user", "users.mia_garcia_4821"}),
        ("modify_pending_order_items", {"order_id": MIA_PENDING, "item_ids": [], "new_item_ids": [],
                                        "payment_method_id": "credit_card_4821002"}, {"orders.#W4821002"}),
        ("modify_pending_order_payment", {"order_id": MIA_PENDING, "payment_method_id": "gift_card_4821001"},
         {"orders.#W4821002", "user", "users.mia_garcia_4821"}),
        ("modify_pending_order_address", {"order_id": MIA_PENDING}, {"orders.#W4821002"}),
        ("return_delivered_order_items", {"order_id": "#W4821001"}, {"orders.#W4821001"}),
        ("exchange_delivered_order_items", {"order_id": "#W4821001"}, {"orders.#W4821001"}),
        ("modify_user_address", {"user_id": MIA}, {"users.mia_garcia_4821", "user"}),
    ],
)
def test_writes_mark_what_they_may_change_stale(tool: str, arguments: dict[str, object],
                                                staled: set[str]) -> None:
    session = _full_ledger()
    assert set(session.wrote(tool, **arguments)) == staled
    # identity, products and other orders are never made stale by a write
    assert session.ledger.entry("auth.user_id") is not None
    assert not session.ledger.entry("auth.user_id").is_stale  # type: ignore[union-attr]
    assert not session.ledger.entry("products.1000000001").is_stale  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------------
# The DOMAIN value and the policy text.


def test_domain_wiring() -> None:
    assert DOMAIN.name == "retail"
    assert DOMAIN.tools is TOOLS and DOMAIN.path_map is PATH_MAP and DOMAIN.predicates is PREDICATES
    assert DOMAIN.reference_time is None
    assert DOMAIN.scenarios_dir is not None and DOMAIN.scenarios_dir.name == "scenarios"
    assert {DOMAIN.kind_of(name) for name in WRITES} == {ToolKind.WRITE}


def test_predicates_are_many_unique_and_guard_only_writes() -> None:
    ids = [p.id for p in PREDICATES]
    assert len(ids) >= 12 and len(set(ids)) == len(ids)
    assert all(i.startswith("retail.") for i in ids)
    for pred in PREDICATES:
        assert pred.tools and pred.tools <= WRITES, pred.id
        assert pred.policy.endswith("."), pred.id
    guarded = set().union(*(p.tools for p in PREDICATES))
    assert guarded == WRITES


def test_policy_for_the_model_does_not_mention_the_gate() -> None:
    assert POLICY == DOMAIN.policy and POLICY_NOTES == DOMAIN.policy_notes
    assert "retail." not in POLICY and "gate" not in POLICY.lower()
    assert POLICY_NOTES.startswith("## What the gate checks and what it cannot")
    for pred in PREDICATES:
        assert f"`{pred.id}`" in POLICY_NOTES, pred.id
    assert "explicit" in POLICY_NOTES and "one tool call per turn" in POLICY_NOTES


def test_record_builders_match_the_shipped_seed() -> None:
    """retail_records tells the same story as the mock backend's seed, so scenarios and tests agree."""
    seed_module = pytest.importorskip("mock_backends.retail.data")
    seed = seed_module.load_seed()
    assert seed["users"][MIA] == mia_user()
    assert seed["users"][NOAH] == noah_user()
    assert seed["products"][TABLET] == tablet_product()
    assert seed["products"][TSHIRT] == tshirt_product()
    for record in (mia_delivered_order(), mia_pending_order(), noah_delivered_order(), noah_pending_order()):
        assert seed["orders"][record["order_id"]] == record, record["order_id"]
