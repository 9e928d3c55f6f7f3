"""What the ledger takes from a retail customer's messages (core.conversation): the ids they state and the
reason they give for a cancellation or a return.

Retail identifies a customer only by a lookup: "authenticate the user identity by locating their user id via
email, or via name + zip code. This has to be done even when the user already provides the user id" (upstream
policy). A stated user id is therefore evidence shown to the operator, never who the customer is
(`domains.retail.paths.identify` is unchanged).

Forms, from the records of tau2's retail database:

    user_ids     noah_brown_6181     first name, last name, four digits
    order_ids    #W2611340           "#W" and seven digits (a customer may leave out the "#")

The stated reason ("The user needs to confirm the order id and the reason (either 'no longer needed' or
'ordered by mistake') for cancellation") is the customer's sentence holding one of REASON_CUES: quoted beside
the verdict, never judged (the reason the call passes is what `retail.cancel_reason_valid` checks).
"""

from __future__ import annotations

from core.conversation import ConversationForms, IdForm

REASON_CUES = (
    "because", "reason", "due to", "since i", "no longer need", "no longer needed", "don't need", "do not need",
    "ordered by mistake", "by mistake", "mistake", "defective", "broken", "damaged", "doesn't fit",
    "does not fit", "too small", "too big", "too large", "wrong size", "wrong item", "wrong color",
    "changed my mind", "not working", "doesn't work", "stopped working", "don't want", "do not want",
)


def _order_id(found: str) -> str:
    return found if found.startswith("#") else f"#{found}"


CONVERSATION = ConversationForms(
    ids=(
        IdForm("user_ids", r"[a-z]+_[a-z]+_[0-9]{4}", note="a user id: first name, last name, four digits"),
        IdForm("order_ids", r"#?W[0-9]{7}", _order_id, note="an order id, written #W and seven digits"),
    ),
    reason_cues=REASON_CUES,
)
