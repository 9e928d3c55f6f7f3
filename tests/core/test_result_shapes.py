"""Results of another release of a tool are stored in the canonical shape (core.ledger.ResultShape, declared
next to each domain's path map): tau-bench's profile without its `user_id`, and the `province` its first data
release wrote for `state`, land where tau2's profile lands, with the call that returned them as provenance."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.ledger import Ledger, PathMap, PathRule, ResultShape
from core.tools import ToolCall
from domains.airline import PATH_MAP as AIRLINE
from domains.airline.paths import identify
from domains.retail import PATH_MAP as RETAIL
from tests.support.airline_records import THEO, theo_user


def tau_bench_profile(record: dict[str, Any]) -> dict[str, Any]:
    """A tau2 profile as tau-bench's first release returns it: `users[user_id]` without the id, `province`."""
    profile = copy.deepcopy(record)
    del profile["user_id"]
    profile["address"]["province"] = profile["address"].pop("state")
    return profile


def read(path_map: PathMap, result: Any, user_id: str = THEO, ledger: Ledger | None = None) -> Ledger:
    ledger = ledger or Ledger(path_map)
    ledger.absorb(ToolCall(f"c{ledger.version}", "get_user_details", {"user_id": user_id}), result, 1)
    return ledger


def test_a_tau_bench_profile_lands_where_tau2s_does_with_what_was_done_in_its_provenance() -> None:
    canonical = theo_user()
    recorded = tau_bench_profile(canonical)
    original = copy.deepcopy(recorded)
    ledger = read(AIRLINE, recorded)
    assert identify(ledger) == THEO  # the customer is identified by the profile the call named
    assert ledger.get(f"users.{THEO}") == canonical and ledger.get("user") == canonical
    entry = ledger.entry("user")
    assert entry is not None and entry.provenance.shaped == ("user_id from the call's user_id",
                                                             "address.province read as address.state")
    assert entry.provenance.describe() == (f'get_user_details(user_id="{THEO}") at step 1 (user_id from the call\'s '
                                           "user_id; address.province read as address.state)")
    assert recorded == original  # the recording's own value is never changed


def test_a_profile_in_the_canonical_shape_is_stored_as_it_came() -> None:
    ledger = read(AIRLINE, theo_user())
    entry = ledger.entry("user")
    assert entry is not None and entry.provenance.shaped == () and entry.value == theo_user()


def test_nothing_a_result_holds_is_replaced_and_nothing_it_lacks_is_invented() -> None:
    other = theo_user() | {"user_id": "someone_else_1"}  # the result names its own user: that one it is
    ledger = read(AIRLINE, other)
    assert ledger.paths() == ["user", "users.someone_else_1"]
    both = theo_user()
    both["address"]["province"] = "Ontario"  # state present: province is not an alias here, it stays as it is
    entry = read(AIRLINE, both).entry(f"users.{THEO}")
    assert entry is not None and entry.value["address"]["province"] == "Ontario" and entry.provenance.shaped == ()
    bare = {k: v for k, v in tau_bench_profile(theo_user()).items() if k != "address"}
    entry = read(AIRLINE, bare).entry(f"users.{THEO}")
    assert entry is not None and "address" not in entry.value  # no address is made up for a profile without one
    assert read(AIRLINE, "Error: user not found").paths() == []


@pytest.mark.parametrize("path_map", [AIRLINE, RETAIL], ids=["airline", "retail"])
def test_both_domains_with_tau_bench_profiles_declare_the_same_shape(path_map: PathMap) -> None:
    shapes = [s for s in path_map.shapes if s.tool == "get_user_details"]
    assert [(s.key_from, s.aliases) for s in shapes] == [((("user_id", "user_id"),),
                                                          (("address.province", "address.state"),))]


def test_an_alias_moves_a_field_within_its_record_only() -> None:
    shape = ResultShape("t", aliases=(("a.old", "a.new"), ("x", "b.y")))
    value, shaped = shape.apply(ToolCall("1", "t", {}), {"a": {"old": 1}, "x": 2})
    assert value == {"a": {"new": 1}, "x": 2} and shaped == ("a.old read as a.new",)
    path_map = PathMap(rules=(PathRule("t", "things.{result.id}"),),
                       shapes=(ResultShape("t", key_from=(("id", "thing"),)),))
    ledger = Ledger(path_map)
    ledger.absorb(ToolCall("2", "t", {"thing": 7}), {"name": "n"}, 1)  # only a text id names a record
    assert ledger.paths() == []
