"""The telecom domain's fixed clock and the words its policy, predicates and mock backend share.

Why one module: the gate judges a call by the same facts the mock backend acts on (what "today" is, which
statuses exist, the refuel cap, the reasons a line may be suspended for). Defining them once here, in the
domain layer the backend may import, keeps the two from drifting apart.

The clock. tau2-bench's telecom domain calls 2025-02-25 "today" (its `get_today()`), 12:08 in the
afternoon. Suspensions, refuel charges and usage cycles are stamped with it, never with the wall clock,
so the same calls always give the same database.
"""

from __future__ import annotations

from datetime import date, datetime

REFERENCE_TIME = datetime(2025, 2, 25, 12, 8)
REFERENCE_DATE: date = REFERENCE_TIME.date()

LINE_STATUSES = ("Active", "Suspended", "Pending Activation", "Closed")
BILL_STATUSES = ("Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed")
ACCOUNT_STATUSES = ("Active", "Suspended", "Pending Verification", "Closed")

# A bill is unpaid debt while it is overdue or its payment was requested but not made yet (a payment
# request turns an Overdue bill into Awaiting Payment, so that status hides the overdue past).
UNPAID_STATUSES = frozenset({"Overdue", "Awaiting Payment"})

# The policy's cap on one data refuel, in GB (tau2's tool does not enforce it).
MAX_REFUEL_GB = 2.0

# The reasons a line may be suspended for, as the policy words them. A reason is given as one of these
# phrases, optionally followed by ":" and details ("overdue bill: B2003").
SUSPENSION_REASONS = ("overdue bill", "contract ended")

# Who the ids belong to, by their first letter (tau2's `get_details_by_id` dispatches on it).
ID_PREFIXES = {"L": "lines", "D": "devices", "B": "bills", "C": "customers", "P": "plans"}


def parse_day(value: object) -> date | None:
    """A YYYY-MM-DD date (or the date part of an ISO datetime); None when it does not parse."""
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None
