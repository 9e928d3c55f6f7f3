"""The telehealth reader of the offline agent: emails, names with a date of birth, appointment and record ids."""

from __future__ import annotations

from core.llm.offline_agent import Observation, Proposal, Question
from domains.telehealth.offline import READER


def test_names_with_a_date_of_birth_and_ids() -> None:
    assert READER.reads_for("Tomas Herrera, born 1979-02-03. About appt003 and REC003.", []) == [
        Proposal("find_patient_by_name_dob", {"first_name": "Tomas", "last_name": "Herrera",
                                              "date_of_birth": "1979-02-03"}),
        Proposal("get_appointment_details", {"appointment_id": "APPT003"}),
        Proposal("get_medical_record", {"record_id": "REC003"})]
    assert READER.reads_for("Tomas Herrera here", []) == []  # a name alone identifies nobody


def test_cancel_needs_an_observed_appointment() -> None:
    seen = [Observation("get_appointment_details", {"appointment_id": "APPT003"},
                        {"appointment_id": "APPT003", "status": "completed"})]
    assert READER.request("cancel it please", seen) == Proposal("cancel_appointment", {"appointment_id": "APPT003"})
    assert READER.request("cancel it please", []) is None


def test_cancel_takes_the_appointment_named_not_the_one_read_last() -> None:
    seen = [Observation("get_appointment_details", {"appointment_id": a}, {"appointment_id": a, "status": "scheduled"})
            for a in ("APPT001", "APPT003")]
    assert READER.request("cancel appt001 please", seen) == Proposal("cancel_appointment",
                                                                     {"appointment_id": "APPT001"})
    assert READER.request("cancel it please", seen) == Proposal("cancel_appointment", {"appointment_id": "APPT003"})
    asked = READER.request("cancel APPT001 and APPT003", seen)
    assert isinstance(asked, Question) and "APPT001" in asked.text
