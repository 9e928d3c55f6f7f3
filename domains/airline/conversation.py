"""What the ledger takes from an airline customer's messages (core.conversation): the ids they state, the
reason they give for a cancellation, and who they say they are.

tau2's airline has no lookup tool: "The agent must first obtain the user id from the user" (upstream policy,
Book flight; "The user must provide their user id" for changes and cancellations). So a user id the customer
stated identifies them (`stated_customer`) until a profile is read; the profile read first then decides, as
before (`domains.airline.paths.identify`). Only the form of the id is checked here: whether that user exists
is for the reads the gate makes once the customer is known.

Forms, from the records of tau2's airline database:

    user_ids          mia_li_3668           first name, last name, four digits
    reservation_ids   UX789J, 4WQ150        six capitals and digits, not a flight number (HAT170)

The stated reason for a cancellation (upstream: "The agent must also obtain the reason for cancellation";
insurance covers "health or weather reasons") is the customer's sentence holding one of REASON_CUES. It is
quoted beside the verdict, never judged.
"""

from __future__ import annotations

from core.conversation import ConversationForms, IdForm, stated_path
from core.ledger import LedgerReader

USER_IDS = "user_ids"
STATED_USER_IDS = stated_path(USER_IDS)

REASON_CUES = (
    "because", "reason", "due to", "since i", "change of plan", "change of plans", "plans changed", "my plans",
    "sick", "ill", "illness", "health", "medical", "hospital", "doctor", "surgery", "injury", "injured",
    "emergency", "death", "died", "passed away", "funeral", "weather", "storm", "hurricane", "snow",
    "airline cancelled", "airline canceled", "flight was cancelled", "flight was canceled", "cancelled by",
    "canceled by", "can't make it", "cannot make it", "no longer need", "conflict", "by mistake",
)

CONVERSATION = ConversationForms(
    ids=(
        IdForm(USER_IDS, r"[a-z]+_[a-z]+_[0-9]{4}", note="a user id: first name, last name, four digits"),
        IdForm("reservation_ids", r"(?!HAT[0-9]{3}(?![A-Za-z0-9_]))(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}",
               note="six capitals and digits with a letter, not a flight number"),
    ),
    reason_cues=REASON_CUES,
)


def stated_customer(ledger: LedgerReader) -> str | None:
    """The user id the customer stated, when they stated exactly one; None when none, or several (then who the
    customer is needs their profile read)."""
    stated = ledger.get(STATED_USER_IDS)
    if isinstance(stated, list) and len(stated) == 1 and isinstance(stated[0], str):
        return stated[0]
    return None
