"""The airline reader of the offline agent: user ids and reservation codes, never a flight number."""

from __future__ import annotations

from core.llm.offline_agent import Observation, Proposal, Question
from domains.airline.offline import READER


def test_user_ids_and_reservation_codes() -> None:
    assert READER.reads_for("I'm julia_reyes_4521; move UX789J to HAT119", []) == [
        Proposal("get_user_details", {"user_id": "julia_reyes_4521"}),
        Proposal("get_reservation_details", {"reservation_id": "UX789J"})]


def test_a_reservation_is_followed_by_its_flights_status() -> None:
    seen = Observation("get_reservation_details", {"reservation_id": "UX789J"},
                       {"reservation_id": "UX789J", "flights": [{"flight_number": "HAT142", "date": "2024-05-17"}]})
    assert READER.follow_up(seen, [seen]) == [
        Proposal("get_flight_status", {"flight_number": "HAT142", "date": "2024-05-17"})]
    assert READER.request("please cancel", [seen]) == Proposal("cancel_reservation", {"reservation_id": "UX789J"})


def test_cancel_takes_the_reservation_named_not_the_one_read_last() -> None:
    first = Observation("get_reservation_details", {"reservation_id": "UX789J"},
                        {"reservation_id": "UX789J", "status": None, "flights": []})
    second = Observation("get_reservation_details", {"reservation_id": "ZFA04Y"},
                         {"reservation_id": "ZFA04Y", "status": None, "flights": []})
    assert READER.request("please cancel UX789J", [first, second]) == Proposal(
        "cancel_reservation", {"reservation_id": "UX789J"})
    assert READER.request("please cancel it", [first, second]) == Proposal(
        "cancel_reservation", {"reservation_id": "ZFA04Y"})  # "it": the one just talked about
    asked = READER.request("cancel UX789J and ZFA04Y", [first, second])
    assert isinstance(asked, Question) and "UX789J" in asked.text and "ZFA04Y" in asked.text
    assert READER.request("ZFA04Y", [first, second], earlier="cancel UX789J and ZFA04Y") == Proposal(
        "cancel_reservation", {"reservation_id": "ZFA04Y"})
