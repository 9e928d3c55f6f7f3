"""Airline domain, compatible with tau2-bench: same tools, arguments and record shapes; our own policy text.

`policy.md` holds two things. Everything above its final section is the policy the model reads: it is the
same text whether or not the gate is on, so a baseline run and a LedgerAgent run get identical
instructions. The final section ("What the gate checks and what it cannot") maps policy sentences to
predicate ids and lists what no predicate can see; it is for the operator and becomes `policy_notes`.

The domain has a clock: "now" is 2024-05-15 15:00 EST, as in tau2-bench, stated in the policy and handed
to the predicates as the gate context's `now`. `airline_domain(now=...)` builds the same domain for
another moment (per task, or to test the window rules); the policy text follows.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from core.domain import Domain, split_policy
from core.ledger import LedgerReader
from domains.airline.clock import EST, REFERENCE_TIME, describe
from domains.airline.conversation import stated_customer
from domains.airline.paths import EVIDENCE_READS, PATH_MAP, identify
from domains.airline.predicates import PREDICATES
from domains.airline.tools import TOOLS

_HERE = Path(__file__).parent
_NOW_MARK = "{now}"


POLICY_TEMPLATE, POLICY_NOTES = split_policy((_HERE / "policy.md").read_text(encoding="utf-8"),
                                            required=(_NOW_MARK,))


def policy_at(now: datetime) -> str:
    """The policy the model reads, stating `now` as its current time."""
    return POLICY_TEMPLATE.replace(_NOW_MARK, describe(now))


def identify_customer(ledger: LedgerReader) -> str | None:
    """Who the customer is: the user of the first profile read (`identify`) or, before any, the one user id the
    customer stated (the upstream policy's "obtain the user id from the user"; domains.airline.conversation)."""
    return identify(ledger) or stated_customer(ledger)


def airline_domain(now: datetime = REFERENCE_TIME) -> Domain:
    """The airline domain with "now" at `now` (a naive time is taken as EST)."""
    moment = now if now.tzinfo is not None else now.replace(tzinfo=EST)
    return Domain(
        name="airline",
        title="Airline (tau2-bench compatible)",
        policy=policy_at(moment),
        tools=TOOLS,
        path_map=PATH_MAP,
        predicates=PREDICATES,
        reference_time=moment,
        identify=identify_customer,
        scenarios_dir=_HERE / "scenarios",
        policy_notes=POLICY_NOTES,
        evidence_reads=EVIDENCE_READS,
    )


DOMAIN = airline_domain()
POLICY = DOMAIN.policy

__all__ = ["DOMAIN", "PATH_MAP", "POLICY", "POLICY_NOTES", "PREDICATES", "REFERENCE_TIME", "TOOLS",
           "airline_domain", "identify", "identify_customer", "policy_at"]
