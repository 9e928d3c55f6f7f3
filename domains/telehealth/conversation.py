"""What the ledger takes from a telehealth patient's messages (core.conversation): the ids they state.

A patient is identified by a lookup (by email, or name with date of birth), never by what they say, so stated
ids are evidence shown to the operator: the appointment a patient asks to cancel or move, by its id.

Forms, from the records of tau-Trait's telehealth database:

    patient_ids       sarah_johnson_1234    first name, last name, four digits
    appointment_ids   APPT001
"""

from __future__ import annotations

from core.conversation import ConversationForms, IdForm

CONVERSATION = ConversationForms(
    ids=(
        IdForm("patient_ids", r"[a-z]+_[a-z]+_[0-9]{4}", note="a patient id: first name, last name, four digits"),
        IdForm("appointment_ids", r"APPT[0-9]{3,}", note="an appointment id"),
    ),
)
