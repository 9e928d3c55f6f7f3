"""Money at the exact cent, one definition for the gate and the mock backends.

Why: prices and balances are floats in tau2's records, and a sum of float prices carries noise
(0.1 + 0.2 = 0.30000000000000004). When the gate rounded a price difference and the tool compared the raw
float, a gift card holding exactly the difference was allowed by the gate and refused by the tool. Both
now ask `covers`, which compares whole cents, so they agree at the boundary. Stored amounts are untouched
(tau2's records keep their floats, so database hashes stay tau2-compatible); only the comparisons and the
sums that feed them go through cents.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Decimal

_CENT = Decimal("0.01")


def cents(amount: float | int) -> int:
    """`amount` dollars as whole cents, rounded half-even at the cent from its shortest decimal form."""
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        raise TypeError(f"not an amount of money: {amount!r}")
    return int(Decimal(repr(amount)).quantize(_CENT, rounding=ROUND_HALF_EVEN) * 100)


def total_cents(amounts: Iterable[float | int]) -> int:
    """The sum of `amounts`, each taken at the cent first (no float noise accumulates)."""
    return sum(cents(a) for a in amounts)


def dollars(amount_cents: int) -> float:
    """Whole cents back to a float dollar amount (for records and messages)."""
    return amount_cents / 100


def covers(balance: float | int, charge_cents: int) -> bool:
    """Whether `balance` dollars pay `charge_cents` (a charge of zero or less is always covered)."""
    return cents(balance) >= charge_cents


def show(amount_cents: int) -> str:
    """'$12.30', '-$0.05': an amount as people read it."""
    sign = "-" if amount_cents < 0 else ""
    return f"{sign}${abs(amount_cents) // 100}.{abs(amount_cents) % 100:02d}"
