"""Template for one gate rule: copy the block between the `rule:` markers into `domains/<domain>/predicates.py`.

Where it goes. Paste the block above the module's `PREDICATES` tuple and add the function's name to that
tuple (the order of the tuple is the order rules are listed and run in). Add any import the block needs
that the module lacks (`ruff check` names each one as an undefined name). The imports below are this file's
own, so that it is real Python as it stands: `domains.retail.predicates` defines the last two names itself.

The skeleton, placeholders in <angle brackets>:

    @predicate(
        id="<domain>.<what_it_checks>",         # unique; the id tests, policy.md and operators use
        tools=[<WRITE_TOOL>, ...],              # the writes it guards; reads are never gated
        severity=Verdict.<REVISE or BLOCK>,     # REVISE: an argument or a read can fix it; BLOCK: nothing can
        policy="<the policy.md sentence it encodes, word for word | what a house rule adds>",
        house_rule=<True only when the upstream policy does not state it>,  # then REVISE at most
    )
    @<for_customer | once_identified>         # the domain's requires_customer(...) decorators
    def <what_it_checks>(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
        record = view.need("<path>.<id>", call_text("<read_tool>", <arg>=<id>))  # absent/stale: "read it"
        if <the rule is broken by what the record and the arguments say>:
            return Violation(f"<what is wrong> (<path>.<id>.<field> is {<value>!r}); <what to do instead>")
        return Pass()

The filled-in example is a house rule of the retail domain (the upstream policy does not say it): moving
a pending order to the address it already ships to changes nothing, and the customer most likely meant
another address, so the model is sent back to ask (REVISE, never BLOCK: it is a house rule). Its test is
`docs/templates/test_predicate_rule.py`; `docs/predicates.md` walks through both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.gate import GateContext, LedgerView, Outcome, Pass, Verdict, Violation, predicate
from core.tools import ToolCall, call_text
from domains.retail.predicates import MODIFY_ADDRESS, once_identified

# --- rule: copy from here ---


ADDRESS_FIELDS = ("address1", "address2", "city", "state", "country", "zip")


@predicate(
    id="retail.new_address_differs",
    tools=[MODIFY_ADDRESS],
    severity=Verdict.REVISE,
    policy="A pending order is moved to a new address only when it differs from the one the order already ships "
           "to; when they are the same, ask the customer which address they meant.",
    house_rule=True,
)
@once_identified
def new_address_differs(call: ToolCall, view: LedgerView, ctx: GateContext, customer: str) -> Outcome:
    order_id = str(call.arguments.get("order_id", ""))
    order: Mapping[str, Any] = view.need(f"orders.{order_id}", call_text("get_order_details", order_id=order_id))
    current = order.get("address")
    if not isinstance(current, Mapping):
        return Pass("the order shows no shipping address to compare with")
    if all(call.arguments.get(field) == current.get(field) for field in ADDRESS_FIELDS):
        shown = ", ".join(str(current[field]) for field in ADDRESS_FIELDS if current.get(field))
        return Violation(f"order {order_id} already ships to {shown} (orders.{order_id}.address); ask the customer "
                         "which address they want instead")
    return Pass()


# --- rule: to here ---
