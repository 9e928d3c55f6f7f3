"""Airline tools (tau2 names and arguments), path map, identity rule, stale rules, clock and the DOMAIN value."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from core.ledger import Ledger
from core.tools import ToolCall, ToolKind, validate_arguments
from domains.airline import (
    DOMAIN,
    PATH_MAP,
    POLICY,
    POLICY_NOTES,
    PREDICATES,
    REFERENCE_TIME,
    TOOLS,
    airline_domain,
    identify,
)
from domains.airline.clock import EST, local_now, parse_local
from domains.registry import DOMAINS, load_domain
from tests.support.airline_records import (
    JULIA,
    LENA,
    THEO,
    THEO_ECONOMY,
    AirlineSession,
    julia_reservation,
    julia_user,
    lena_cancelled,
    lena_delayed,
    lena_user,
    nadia_reservation,
    nadia_user,
    offer,
    segment,
    theo_basic,
    theo_business,
    theo_economy,
    theo_user,
)

# tau2-bench airline tool names and argument names (API.md §1.2), in tau2's order.
TAU2_TOOLS: dict[str, tuple[str, ...]] = {
    "book_reservation": ("user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers",
                         "payment_methods", "total_baggages", "nonfree_baggages", "insurance"),
    "calculate": ("expression",),
    "cancel_reservation": ("reservation_id",),
    "get_reservation_details": ("reservation_id",),
    "get_user_details": ("user_id",),
    "list_all_airports": (),
    "search_direct_flight": ("origin", "destination", "date"),
    "search_onestop_flight": ("origin", "destination", "date"),
    "send_certificate": ("user_id", "amount"),
    "transfer_to_human_agents": ("summary",),
    "update_reservation_baggages": ("reservation_id", "total_baggages", "nonfree_baggages", "payment_id"),
    "update_reservation_flights": ("reservation_id", "cabin", "flights", "payment_id"),
    "update_reservation_passengers": ("reservation_id", "passengers"),
    "get_flight_status": ("flight_number", "date"),
}
WRITES = {"book_reservation", "cancel_reservation", "send_certificate", "update_reservation_baggages",
          "update_reservation_flights", "update_reservation_passengers"}


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
            assert spec.name.startswith(("get_", "list_", "search_")) and spec.kind is ToolKind.READ, spec.name


def test_no_tool_can_add_or_remove_insurance_after_booking() -> None:
    """tau2 tasks 6 and 46 (add insurance, refund insurance) have no write for the gate to refuse: no tool
    takes an insurance argument except a new booking."""
    assert [t.name for t in TOOLS if "insurance" in t.parameters["properties"]] == ["book_reservation"]


def test_arguments_are_validated_against_the_schemas() -> None:
    spec = DOMAIN.tool("book_reservation")
    assert spec is not None
    good = {"user_id": THEO, "origin": "BOS", "destination": "DEN", "flight_type": "one_way", "cabin": "economy",
            "flights": [segment("HAT119", "2024-05-20")],
            "passengers": [{"first_name": "Theo", "last_name": "Brennan", "dob": "1990-06-21"}],
            "payment_methods": [{"payment_id": "credit_card_3391001", "amount": 214}], "total_baggages": 0,
            "nonfree_baggages": 0, "insurance": "no"}
    assert validate_arguments(spec, good) == []
    bad = good | {"cabin": "first", "passengers": [{"first_name": "Theo"}], "insurance": True,
                  "payment_methods": [{"payment_id": "x", "amount": "214"}], "seat": "12A"}
    errors = validate_arguments(spec, bad)
    assert 'argument \'cabin\' must be one of ["basic_economy", "economy", "business"], got "first"' in errors
    assert "missing required argument 'passengers[0].last_name'" in errors
    assert "missing required argument 'passengers[0].dob'" in errors
    assert any(e.startswith("argument 'insurance' must be string") for e in errors)
    assert any(e.startswith("argument 'payment_methods[0].amount' must be integer") for e in errors)
    assert "unexpected argument 'seat'" in errors


# ---------------------------------------------------------------------------------------------------
# Path map and identity.


def test_first_profile_read_is_the_customer() -> None:
    session = AirlineSession()
    absorbed = session.read_user(theo_user())
    assert set(absorbed.added) == {"users.theo_brennan_3391", "user"}
    assert identify(session.ledger) == THEO and session.context().customer_id == THEO
    other = session.read_user(lena_user())
    assert other.added == ("users.lena_varga_7702",)
    assert any("user: condition not met" in s for s in other.skipped)
    assert session.context().customer_id == THEO
    again = session.read_user(theo_user(gift_card=20))
    assert set(again.changed) == {"user", "users.theo_brennan_3391"}
    assert session.context().customer_id == THEO


def test_no_profile_no_customer() -> None:
    session = AirlineSession()
    session.read_reservation(theo_economy())
    assert session.context().customer_id is None
    assert identify(Ledger(PATH_MAP)) is None


def test_identity_survives_a_write_that_stales_the_profile() -> None:
    session = AirlineSession()
    session.read_user(theo_user())
    session.wrote("update_reservation_baggages", reservation_id=THEO_ECONOMY)
    assert session.ledger.entry("user").is_stale  # type: ignore[union-attr]
    assert session.context().customer_id == THEO


@pytest.mark.parametrize(
    ("tool", "arguments", "result", "paths"),
    [
        ("get_reservation_details", {"reservation_id": "TB3K9Q"}, theo_economy(), {"reservations.TB3K9Q"}),
        ("search_direct_flight", {"origin": "BOS", "destination": "DEN", "date": "2024-05-20"},
         [offer("HAT117", "2024-05-20"), offer("HAT119", "2024-05-20")],
         {"flight_search.BOS.DEN.2024-05-20", "flights.HAT117.2024-05-20", "flights.HAT119.2024-05-20"}),
        ("search_direct_flight", {"origin": "BOS", "destination": "SFO", "date": "2024-05-20"}, [],
         {"flight_search.BOS.SFO.2024-05-20"}),
        ("search_onestop_flight", {"origin": "MIA", "destination": "PHX", "date": "2024-05-16"},
         [[offer("HAT162", "2024-05-16", date="2024-05-16"), offer("HAT184", "2024-05-17", date="2024-05-17")]],
         {"onestop_search.MIA.PHX.2024-05-16"}),
        ("get_flight_status", {"flight_number": "HAT150", "date": "2024-05-15"}, "delayed",
         {"flights.HAT150.2024-05-15.status"}),
        ("list_all_airports", {}, [{"iata": "SFO", "city": "San Francisco"}], {"airports"}),
    ],
)
def test_read_paths(tool: str, arguments: dict[str, str], result: object, paths: set[str]) -> None:
    ledger = Ledger(PATH_MAP)
    absorbed = ledger.absorb(ToolCall(id="c1", name=tool, arguments=arguments), result, step=1)
    assert set(absorbed.added) == paths
    if tool == "search_direct_flight" and result:
        assert ledger.get("flights.HAT119.2024-05-20") == offer("HAT119", "2024-05-20")


def test_paths_suggest_the_exact_read() -> None:
    assert PATH_MAP.suggest_read("reservations.TB3K9Q") == 'get_reservation_details(reservation_id="TB3K9Q")'
    assert PATH_MAP.suggest_read("users.lena_varga_7702") == 'get_user_details(user_id="lena_varga_7702")'
    assert PATH_MAP.suggest_read("flights.HAT150.2024-05-15.status") == \
        'get_flight_status(flight_number="HAT150", date="2024-05-15")'


def _full_ledger() -> AirlineSession:
    session = AirlineSession()
    session.read_user(theo_user())
    session.read_user(lena_user())
    for record in (theo_economy(), theo_basic(), theo_business()):
        session.read_reservation(record)
    session.search("BOS", "DEN", "2024-05-20", [offer("HAT117", "2024-05-20"), offer("HAT119", "2024-05-20")])
    session.search("DEN", "BOS", "2024-05-24", [offer("HAT121", "2024-05-24")])
    session.status("HAT133", "2024-05-10", "landed")
    return session


@pytest.mark.parametrize(
    ("tool", "arguments", "staled"),
    [
        ("book_reservation", {"user_id": THEO, "flights": [segment("HAT119", "2024-05-20")]},
         {"user", "users.theo_brennan_3391", "flights.HAT119.2024-05-20", "flight_search.BOS.DEN.2024-05-20"}),
        ("cancel_reservation", {"reservation_id": "TB3K9Q"}, {"reservations.TB3K9Q"}),
        # the payment method is unknown: the owner's profile (Theo's, as the reservation shows), nobody else's
        ("update_reservation_flights", {"reservation_id": "TB3K9Q"},
         {"reservations.TB3K9Q", "user", "users.theo_brennan_3391"}),
        ("update_reservation_baggages", {"reservation_id": "TB5N1W"},
         {"reservations.TB5N1W", "user", "users.theo_brennan_3391"}),
        ("update_reservation_passengers", {"reservation_id": "TB8R2D"}, {"reservations.TB8R2D"}),
        ("send_certificate", {"user_id": THEO, "amount": 100}, {"user", "users.theo_brennan_3391"}),
    ],
)
def test_writes_mark_what_they_may_change_stale(tool: str, arguments: dict[str, object], staled: set[str]) -> None:
    session = _full_ledger()
    assert set(session.wrote(tool, **arguments)) == staled
    # statuses and offers of flights the write did not book are never made stale
    assert not session.ledger.entry("flights.HAT133.2024-05-10.status").is_stale  # type: ignore[union-attr]
    assert not session.ledger.entry("flights.HAT121.2024-05-24").is_stale  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------------
# The clock.


def test_reference_time_is_tau2s() -> None:
    assert REFERENCE_TIME == datetime(2024, 5, 15, 15, 0, tzinfo=EST)
    assert DOMAIN.reference_time == REFERENCE_TIME
    assert DOMAIN.context(Ledger(PATH_MAP)).now == REFERENCE_TIME
    assert "The current time is 2024-05-15 15:00:00 EST." in POLICY
    assert local_now(None) == datetime(2024, 5, 15, 15, 0)
    assert local_now(REFERENCE_TIME.astimezone(EST).replace(tzinfo=None) + timedelta(hours=1)) == \
        datetime(2024, 5, 15, 16, 0)
    assert parse_local("2024-05-14T16:03:16") == datetime(2024, 5, 14, 16, 3, 16)
    assert parse_local("yesterday") is None and parse_local(None) is None


def test_domain_for_another_moment() -> None:
    later = airline_domain(datetime(2024, 5, 20, 9, 30, tzinfo=EST))
    assert later.reference_time == datetime(2024, 5, 20, 9, 30, tzinfo=EST)
    assert "The current time is 2024-05-20 09:30:00 EST." in later.policy
    assert later.predicates is DOMAIN.predicates and later.tools is DOMAIN.tools


# ---------------------------------------------------------------------------------------------------
# The DOMAIN value and the policy text.


def test_domain_wiring() -> None:
    assert "airline" in DOMAINS and load_domain("airline") is DOMAIN
    assert DOMAIN.name == "airline"
    assert DOMAIN.tools is TOOLS and DOMAIN.path_map is PATH_MAP and DOMAIN.predicates is PREDICATES
    assert DOMAIN.scenarios_dir is not None and DOMAIN.scenarios_dir.name == "scenarios"
    assert {DOMAIN.kind_of(name) for name in WRITES} == {ToolKind.WRITE}


def test_predicates_are_many_unique_and_guard_only_writes() -> None:
    ids = [p.id for p in PREDICATES]
    assert len(ids) >= 10 and len(set(ids)) == len(ids)
    assert all(i.startswith("airline.") for i in ids)
    for pred in PREDICATES:
        assert pred.tools and pred.tools <= WRITES, pred.id
        assert pred.policy.endswith("."), pred.id
    assert set().union(*(p.tools for p in PREDICATES)) == WRITES


def test_policy_for_the_model_does_not_mention_the_gate() -> None:
    assert POLICY == DOMAIN.policy and POLICY_NOTES == DOMAIN.policy_notes
    assert "`airline." not in POLICY and "gate" not in POLICY.lower() and "{now}" not in POLICY
    assert POLICY_NOTES.startswith("## What the gate checks and what it cannot")
    for pred in PREDICATES:
        assert f"`{pred.id}` | {pred.severity.value} |" in POLICY_NOTES, pred.id
    assert "explicit" in POLICY_NOTES and "one tool call per turn" in POLICY_NOTES


def test_record_builders_match_the_shipped_seed() -> None:
    """airline_records tells the same story as the mock backend's seed, so scenarios and tests agree."""
    seed_module = pytest.importorskip("mock_backends.airline.data")
    seed = seed_module.load_seed()
    for record in (julia_user(), nadia_user(), theo_user(), lena_user()):
        assert seed["users"][record["user_id"]] == record, record["user_id"]
    for record in (julia_reservation(), nadia_reservation(), theo_economy(), theo_basic(), theo_business(),
                   lena_cancelled(), lena_delayed()):
        assert seed["reservations"][record["reservation_id"]] == record, record["reservation_id"]
    for number, day in [("HAT117", "2024-05-20"), ("HAT119", "2024-05-20"), ("HAT121", "2024-05-24"),
                        ("HAT142", "2024-05-17"), ("HAT134", "2024-05-22"), ("HAT162", "2024-05-16"),
                        ("HAT184", "2024-05-17")]:
        flight = seed["flights"][number]
        hit = offer(number, day)
        assert (flight["origin"], flight["destination"]) == (hit["origin"], hit["destination"])
        assert flight["dates"][day] == {k: hit[k] for k in ("status", "available_seats", "prices")}
    assert seed["flights"]["HAT171"]["dates"]["2024-05-13"] == {"status": "cancelled"}
    assert seed["flights"]["HAT150"]["dates"]["2024-05-15"]["status"] == "delayed"
    assert seed["flights"]["HAT133"]["dates"]["2024-05-10"]["status"] == "landed"
    assert {JULIA, LENA} <= set(seed["users"])
