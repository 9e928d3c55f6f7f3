"""The judgement a domain's `<domain>.explicit_confirmation` rule makes, over the conversation facts of the ledger.

The upstream policies ask for the customer's explicit "yes" after the agent listed the action's details. The
ledger holds the customer's latest message as `conversation.confirmation` (core.conversation): whether it is an
explicit yes, the words, and the agent message it answers. The rule reads it:

- no customer message heard at all (check trajectory lines, an MCP client that reports no messages): pass,
  noting "no customer messages recorded". The channel cannot show consent, so its absence is no finding;
- an explicit yes: pass, quoting it;
- anything else: a violation (REVISE: the agent can list the details and ask), quoting the customer's last
  words and why they are no yes.

Where the policy depends on a reason the customer gives (a cancellation, a return), the customer's stated
reason (`conversation.stated.reason`) is read too, so it is the verdict's evidence and quoted in its note or
reason for the operator: never judged by its wording, here or anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.conversation import CONFIRMATION_PATH, NO_MESSAGES, REASON_PATH
from core.gate import LedgerView, Outcome, Pass, Violation
from core.tools import ToolCall

RULE_SUFFIX = ".explicit_confirmation"  # every domain's rule id for it: `<domain>.explicit_confirmation`


def customer_said(results: Iterable[Any]) -> str:
    """What the customer said, as the confirmation rule quoted it when it passed: their yes, the agent message it
    answered and, where the policy depends on one, the reason they gave ("" when the rule objected, which its
    reason shows, or did not run). For the operator beside the verdict; works on `PredicateResult`s and on the
    `PredicateResultInfo`s of a recorded `GateDecided` alike."""
    for result in results:
        if result.predicate_id.endswith(RULE_SUFFIX) and result.status == "pass" and result.reason:
            return str(result.reason)
    return ""


def _stated_reason(view: LedgerView) -> str:
    reason = view.get(REASON_PATH)
    if isinstance(reason, str) and reason:
        return f'; their stated reason, for the operator to judge: "{reason}" ({REASON_PATH})'
    return f"; they have stated no reason the gate recognises ({REASON_PATH} is empty)"


def explicitly_confirmed(call: ToolCall, view: LedgerView, *, quote_reason: bool = False) -> Outcome:
    """Pass when the customer's latest message is an explicit yes (or no customer message was heard at all);
    a violation naming their last words otherwise. `quote_reason`: also read and quote their stated reason."""
    said = view.get(CONFIRMATION_PATH)
    reason = _stated_reason(view) if quote_reason else ""
    if said is None:
        return Pass(NO_MESSAGES + reason)
    if not isinstance(said, Mapping):  # never written so by the ledger; fail closed rather than guess
        return Violation(f"{CONFIRMATION_PATH} holds no confirmation record; ask the customer to confirm")
    words = said.get("customer", "")
    answers = said.get("answers")
    to = f' to "{answers}"' if isinstance(answers, str) and answers else ""
    if said.get("confirmed") is True:
        return Pass(f'the customer said "{words}"{to} ({CONFIRMATION_PATH}){reason}')
    why = said.get("why") or "no explicit yes"
    return Violation(f'the customer has not confirmed this {call.name}: their last message, "{words}", is no '
                     f"explicit yes ({why}; {CONFIRMATION_PATH}){reason}. List the action's details and ask them "
                     "to confirm with a yes, then call it")
