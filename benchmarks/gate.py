"""Figure 1: one gate decision for a retail write, all retail predicates enabled, over a 10,000-record ledger.

What is timed: `PolicyGate.evaluate(call, ledger, DOMAIN.context(ledger))`, the exact expression the
executor runs before every write (`CallExecutor._judge`), so the identity rule (`DOMAIN.context`) is
included.

Why this setup is realistic, and the worst reasonable case for the gate:
- the call is `return_delivered_order_items` refunded to the original payment method, which is ALLOWed:
  every one of the seven predicates guarding it runs to completion (a REVISE/BLOCK can stop a predicate
  early), and all sixteen retail predicates are enabled and scanned;
- the ledger holds what a real trial reads (authentication, the customer's profile, the order and its
  products) plus ~10,000 other tau2-shaped orders, users and products absorbed through `Ledger.absorb`,
  far more than any trial observes, so a lookup that scaled with ledger size would show here;
- the gate's anti-loop memory is cleared (untimed) before each sample, so no sample is a replayed verdict.
"""

from __future__ import annotations

from benchmarks.data import Docs, LedgerSetup, build_ledger
from benchmarks.timing import US, Result, summarise, time_sync
from core.domain import Domain
from core.gate import PolicyGate, Status, Verdict
from core.ledger import Ledger
from core.tools import ToolCall
from domains.retail import DOMAIN

GATE_TARGET_NS = 100 * US


def make_gate(domain: Domain = DOMAIN) -> PolicyGate:
    """A gate exactly as `core.agent.Agent` builds it, with no predicate disabled."""
    return PolicyGate(domain.predicates, path_map=domain.path_map)


def check_allowed(domain: Domain, ledger: Ledger, call: ToolCall, gate: PolicyGate) -> int:
    """Fail loudly if the benchmark call is not a full-length ALLOW; returns how many predicates ran."""
    decision = gate.evaluate(call, ledger, domain.context(ledger))
    if decision.verdict is not Verdict.ALLOW:
        raise RuntimeError(f"benchmark {call.name} is not ALLOWed:\n{decision.feedback}")
    ran = [r for r in decision.results if r.status is Status.PASS]
    if len(ran) != len(decision.results) or not ran:
        raise RuntimeError("a predicate did not run to completion")
    return len(ran)


def time_gate(domain: Domain, ledger: Ledger, call: ToolCall, *, key: str, what: str, repeat: int, warmup: int,
              target_ns: int = GATE_TARGET_NS, note: str = "") -> Result:
    """Median/p95 of one gate decision over `ledger`, with a fresh anti-loop memory for every sample, so all
    guarding predicates run to completion each time (the decision is checked to be a full ALLOW first)."""
    gate = make_gate(domain)
    ran = check_allowed(domain, ledger, call, gate)

    def decide() -> None:
        gate.evaluate(call, ledger, domain.context(ledger))

    samples = time_sync(decide, repeat=repeat, warmup=warmup, setup=gate.reset)
    return summarise(key, f"gate: 1 {what}, {ran} predicates, {len(ledger):,}-record ledger", samples, target_ns,
                     note=f"{len(domain.predicates)} predicates enabled, {ran} guard {call.name}; verdict ALLOW"
                          + (f"; {note}" if note else ""))


def bench_gate(docs: Docs, *, records: int = 10_000, repeat: int = 3000, warmup: int = 200,
               setup: LedgerSetup | None = None) -> Result:
    """Median/p95 of one retail gate decision. Pass `setup` to reuse an already built ledger."""
    setup = setup or build_ledger(docs, records)
    return time_gate(DOMAIN, setup.ledger, setup.call, key="gate_decision", what="retail write", repeat=repeat,
                     warmup=warmup)
