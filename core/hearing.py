"""One conversation message into the ledger, recorded: the one way a session, an MCP client's `log_message` and
the audit of a recording feed what was said to the ledger (`core.ledger.Ledger.hear`).

The facts a customer message gave are recorded as a `LedgerUpdated` (call id `said_<n>`, tool
`customer_message`) right after the event that carries the message (`MessageSent`, or the agent's
`AssistantTurnEvent`), so the replay's rebuilt ledger (core.timeline) meets them where the session did.
"""

from __future__ import annotations

from core.conversation import CUSTOMER_MESSAGE, said_id
from core.events import EventBus, LedgerUpdated
from core.ledger import AbsorbResult, Ledger


def hear(ledger: Ledger, bus: EventBus, role: str, text: str | None, step: int) -> AbsorbResult:
    """Let `ledger` hear one message (`role` "user" or "assistant") and record what it took."""
    absorbed = ledger.hear(role, text, step)
    if absorbed.touched:
        bus.emit(LedgerUpdated(step=step, call_id=said_id(ledger.hearing.customer_messages), tool=CUSTOMER_MESSAGE,
                               added=list(absorbed.added), changed=list(absorbed.changed),
                               refreshed=list(absorbed.refreshed), version=ledger.version))
    return absorbed
