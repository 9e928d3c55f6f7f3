"""The telecom reader of the offline agent: phone numbers, customer and line ids, and which line a request means."""

from __future__ import annotations

from core.llm.offline_agent import Observation, Proposal, Question
from domains.telecom.offline import READER

CUSTOMER = {"customer_id": "C2001", "phone_number": "555-210-3001", "line_ids": ["L2001", "L2002"]}
SEEN = [Observation("get_customer_by_phone", {"phone_number": "555-210-3001"}, CUSTOMER),
        Observation("get_details_by_id", {"id": "L2001"}, {"line_id": "L2001", "phone_number": "555-210-3001"}),
        Observation("get_details_by_id", {"id": "L2002"}, {"line_id": "L2002", "phone_number": "555-210-3002"})]


def test_phone_numbers_identify_the_customer_once() -> None:
    assert READER.reads_for("it's (555) 210-3001, about line L2002", []) == [
        Proposal("get_customer_by_phone", {"phone_number": "555-210-3001"}),
        Proposal("get_details_by_id", {"id": "L2002"})]
    assert READER.reads_for("my son's phone is 555-210-3002", SEEN) == []


def test_the_line_a_request_means() -> None:
    assert READER.request("turn on roaming", SEEN) == Proposal("enable_roaming",
                                                               {"customer_id": "C2001", "line_id": "L2001"})
    assert READER.request("add 2 GB to 555-210-3002", SEEN) == Proposal(
        "refuel_data", {"customer_id": "C2001", "line_id": "L2002", "gb_amount": 2.0})
    assert READER.request("hello", SEEN) is None


def test_a_request_for_one_of_several_lines_nobody_named_asks_which() -> None:
    by_id = [Observation("get_customer_by_id", {"customer_id": "C2001"}, CUSTOMER), *SEEN[1:]]
    asked = READER.request("turn on roaming", by_id)  # identified by id: no number says which line
    assert isinstance(asked, Question) and "L2001" in asked.text and "L2002" in asked.text
    assert READER.request("L2002", by_id, earlier="turn on roaming") == Proposal(
        "enable_roaming", {"customer_id": "C2001", "line_id": "L2002"})
    asked = READER.request("turn on roaming on L2001 and L2002", SEEN)
    assert isinstance(asked, Question)
