"""What the ledger takes from a telecom customer's messages (core.conversation): the ids they state.

A customer is identified by a lookup (`get_customer_by_phone`, `get_customer_by_id`, name with date of birth),
never by what they say, so stated ids are evidence shown to the operator. The phone number matters to the
policy: data is refuelled on "the line associated with the phone number the user provided" (upstream policy,
Data Refueling).

Forms, from the records of tau2's telecom database:

    phone_numbers   555-123-2001        written as the records do, however the customer spaced it
    customer_ids    C1001
    line_ids        L1002
"""

from __future__ import annotations

import re

from core.conversation import ConversationForms, IdForm


def _phone(found: str) -> str:
    digits = re.sub(r"[^0-9]", "", found)
    return f"{digits[:3]}-{digits[3:6]}-{digits[6:]}"


CONVERSATION = ConversationForms(
    ids=(
        IdForm("phone_numbers", r"\(?[0-9]{3}\)?[-. ]?[0-9]{3}[-. ][0-9]{4}|[0-9]{3}-[0-9]{3}-[0-9]{4}", _phone,
               note="a phone number, written ddd-ddd-dddd"),
        IdForm("customer_ids", r"C[0-9]{4}", note="a customer id"),
        IdForm("line_ids", r"L[0-9]{4}", note="a line id"),
    ),
)
