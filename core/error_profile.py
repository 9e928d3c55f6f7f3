"""Simulated errors: the mistakes real models make on these domains, as a deterministic, seeded profile for the
offline scripted agent (`eval --error-profile realistic`, task sessions in the console).

Why a profile and not one error rate. `--error-rate P` makes the scripted agent slip into *any* violating variant
a domain planner offers, uniformly: a careful script with random noise. The failures documented for real models
on tau-bench / tau2-bench are not uniform: some policy points are missed again and again (a cancellation with no
basis, compensation for an ineligible customer, bags that should have been free), others rarely. A profile
names each kind of mistake, how often the agent makes it when a task offers the chance, and where that kind is
documented. The weights are probabilities per opportunity; where no source gives a rate (none of them counts
these exact kinds), the weight is our estimate, ranked by how often and how independently the kind is
reported, and `estimated` says so. docs/evaluation.md lists the sources.

What stays the same. The draw is seeded per (seed, domain, task, trial) and made before either agent runs, so
the ledger agent and the function-calling baseline make exactly the same mistakes; the comparison isolates the
method. Without a profile nothing here runs and the scripted agent is byte for byte what it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class FailureKind(StrEnum):
    """A kind of mistake, named by what the customer or the business loses, not by the rule that catches it."""

    FREE_BAG_CHARGED = "free_bag_charged"
    CANCEL_WITHOUT_BASIS = "cancel_without_basis"
    CANCEL_FLOWN_TRIP = "cancel_flown_trip"
    BASIC_ECONOMY_CHANGE = "basic_economy_change"
    INELIGIBLE_COMPENSATION = "ineligible_compensation"
    REFUND_WRONG_METHOD = "refund_wrong_method"
    UNAVAILABLE_VARIANT = "unavailable_variant"
    OTHER_CUSTOMER_RECORD = "other_customer_record"
    REFUEL_OVER_CAP = "refuel_over_cap"
    STALE_RECORD = "stale_record"


@dataclass(frozen=True)
class KindSpec:
    kind: FailureKind
    label: str  # stakeholder words: what went wrong for the customer or the business
    weight: float  # probability that the agent makes this mistake when a task offers it
    sources: tuple[str, ...]  # where real models were documented making it (docs/evaluation.md cites them)
    estimated: bool = True  # the weight is our estimate: the sources document the kind, not its rate


LABELS: Mapping[FailureKind, str] = {
    FailureKind.FREE_BAG_CHARGED: "charged for bags within the free allowance",
    FailureKind.CANCEL_WITHOUT_BASIS: "cancelled without a basis (outside 24 h, uninsured, not business)",
    FailureKind.CANCEL_FLOWN_TRIP: "cancelled a trip already partly flown",
    FailureKind.BASIC_ECONOMY_CHANGE: "changed the flights of a basic economy reservation",
    FailureKind.INELIGIBLE_COMPENSATION: "compensated a customer who is not eligible",
    FailureKind.REFUND_WRONG_METHOD: "refunded to a method other than the original payment or a gift card",
    FailureKind.UNAVAILABLE_VARIANT: "exchanged into a variant that is not available",
    FailureKind.OTHER_CUSTOMER_RECORD: "acted on another customer's record",
    FailureKind.REFUEL_OVER_CAP: "refuelled data past the cap",
    FailureKind.STALE_RECORD: "acted on a stale record after its own write",
}

PAPER = "LedgerAgent paper"
TAU_BENCH = "tau-bench (Yao et al., 2024)"
TAU3_FIXES = "tau3-bench task fixes (taubench.com blog, 2026)"


@dataclass(frozen=True)
class ErrorProfile:
    name: str
    kinds: Mapping[FailureKind, KindSpec]

    def weight(self, kind: str) -> float:
        """The chance of a mistake of `kind` (0 for a kind the profile does not make, or no kind at all)."""
        try:
            spec = self.kinds.get(FailureKind(kind))
        except ValueError:
            return 0.0
        return spec.weight if spec is not None else 0.0

    @property
    def label(self) -> str:
        return f"simulated errors ({self.name} profile)"


def _spec(kind: FailureKind, weight: float, *sources: str) -> KindSpec:
    return KindSpec(kind, LABELS[kind], weight, sources)


REALISTIC = ErrorProfile("realistic", {spec.kind: spec for spec in (
    _spec(FailureKind.CANCEL_WITHOUT_BASIS, 0.5,
          f"{PAPER}, figure 1 and appendix B (the baseline cancels outside the window)",
          f"{TAU3_FIXES}: airline tasks 9 and 37 expected such cancellations",
          f"{PAPER} §6: airline extra or unauthorized actions after user pushback"),
    _spec(FailureKind.INELIGIBLE_COMPENSATION, 0.45,
          f"{TAU3_FIXES}: airline tasks 2, 27 and 38 compensated regular, uninsured economy passengers"),
    _spec(FailureKind.BASIC_ECONOMY_CHANGE, 0.4,
          f"{PAPER} §6: 'concedes after user pushback and performs a policy-disallowed flight change'"),
    _spec(FailureKind.REFUND_WRONG_METHOD, 0.4,
          f"{PAPER}, appendix C (the model proposes the customer's credit card)",
          "tau2-bench issue #316 (retail task 10: refunds to the other order's payment method)"),
    _spec(FailureKind.FREE_BAG_CHARGED, 0.35,
          f"{TAU_BENCH} pull request #32: a gold member's bags annotated as non-free"),
    _spec(FailureKind.REFUEL_OVER_CAP, 0.35,
          "tau2-bench telecom policy (refuel at most 2 GB); the customer asks for more"),
    _spec(FailureKind.CANCEL_FLOWN_TRIP, 0.3, f"{PAPER} §6: airline extra or unauthorized actions"),
    _spec(FailureKind.UNAVAILABLE_VARIANT, 0.3,
          f"{TAU_BENCH} pull request #4: retail task 9's gold exchange named an unavailable item"),
    _spec(FailureKind.STALE_RECORD, 0.3,
          f"{PAPER} §1: agents 'act on stale, missing, or incorrectly reconstructed state'"),
    _spec(FailureKind.OTHER_CUSTOMER_RECORD, 0.25,
          f"{PAPER} §3.3: ownership is the first recurring check its predicates encode",
          f"{TAU_BENCH} issue #3: GPT-4o analysis, the simulated user confirms whatever the agent shows"),
)})

PROFILES: Mapping[str, ErrorProfile] = {REALISTIC.name: REALISTIC}


def load_profile(name: str) -> ErrorProfile:
    """The profile called `name`; ValueError (one line) naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown error profile {name!r} (known: {', '.join(PROFILES)})") from None
