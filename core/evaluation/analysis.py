"""Per-trial analysis from the facts: token counts, gate statistics, what the gate would have refused, and
the failure category of a failed trial.

The failure taxonomy follows the paper's §6 categories and, like the paper's classifier, is deterministic:
rules over reward signals, per-write checks and trace evidence, applied in a fixed order (first match wins):

1. harness error: the trial crashed or timed out, or the model/user endpoint failed (not the agent's reasoning)
2. reasoning loop / max steps: max_steps, too_many_errors, or the gate escalated a repeated REVISE to BLOCK
3. authentication failure: a gold write is missing and the agent never identified the customer (no
   successful `find_*` lookup although the gold actions use one)
4. policy violation: an executed write that the domain's gate, re-run over the trial's own observations,
   finds in violation of a predicate (how FC failures that the gate would prevent are counted)
5. wrong action arguments: a gold write was attempted with the right tool but other arguments
6. extra or unauthorized action: a write that is not in the gold actions
7. refused for a read / refused as breaking a rule: a gold write never executed, and the gate's last verdict
   on a call of that tool was a REVISE of that kind (the two are told apart: a read the agent did not make
   after being asked, versus a rule the gate found broken, which may be the gate refusing a legal write)
8. missed required action: a gold write never executed
9. failed to communicate: the database is right but required information was not said
10. NL assertion not met, or other (kept, never dropped)
"""

from __future__ import annotations

from core.domain import Domain
from core.evaluation.facts import TrialFacts
from core.evaluation.results import Failure, GateStats, StepTokens, TokenStats
from core.evaluation.rewards import RewardInfo, WriteCheck
from core.evaluation.tasks import Task, side_of
from core.events import GateDecided
from core.gate import PolicyGate, Status
from core.ledger import Ledger
from core.tools import Requestor, ToolCall

HARNESS_REASONS = frozenset({"crashed", "timeout", "agent_error", "user_error", "script_diverged", "unknown"})
LOOP_REASONS = frozenset({"max_steps", "too_many_errors"})


def token_stats(facts: TrialFacts) -> TokenStats:
    stats = TokenStats()
    for turn in facts.turns:
        stats.prompt += turn.prompt_tokens
        stats.completion += turn.completion_tokens
        stats.ledger += turn.ledger_tokens
        stats.model_calls += 1
        stats.estimated = stats.estimated or turn.tokens_estimated
        stats.steps.append(StepTokens(step=turn.step, prompt=turn.prompt_tokens, completion=turn.completion_tokens,
                                      ledger=turn.ledger_tokens))
    return stats


def gate_stats(facts: TrialFacts) -> GateStats:
    stats = GateStats()
    for decision in facts.decisions:
        stats.verdicts[decision.verdict] = stats.verdicts.get(decision.verdict, 0) + 1
        if decision.refusal is not None:
            stats.refusals[decision.refusal] = stats.refusals.get(decision.refusal, 0) + 1
        stats.gate_reads += len(decision.gate_reads)
        stats.escalated += decision.escalated
        stats.repeated += decision.repeated
        for result in decision.results:
            if result.status in ("violation", "missing", "error"):
                counts = stats.predicates.setdefault(result.predicate_id, {})
                counts[result.status] = counts.get(result.status, 0) + 1
    for override in facts.overrides:
        stats.overrides[override.decision] = stats.overrides.get(override.decision, 0) + 1
    return stats


def would_refuse(facts: TrialFacts, domain: Domain) -> list[str]:
    """Predicates that fail (as violations, not missing evidence) on the writes that executed, judged by a
    fresh gate over a ledger rebuilt from the trial's own successful reads: "what the gate would have said"."""
    ledger = Ledger(domain.path_map)
    gate = PolicyGate(domain.predicates, path_map=domain.path_map)
    violated: list[str] = []
    for step, call in enumerate(facts.executed, start=1):
        if not call.ok:
            continue
        tool_call = ToolCall(call.call_id, call.name, call.arguments, requestor=Requestor(side_of(call.requestor)))
        if call.kind == "read":
            ledger.absorb(tool_call, call.result, step)
        elif call.kind == "write":
            if call.requestor != "user":  # the customer's phone actions are never gated, but they stale
                decision = gate.evaluate(tool_call, ledger, domain.context(ledger))
                violated += [r.predicate_id for r in decision.results if r.status is Status.VIOLATION]
            ledger.mark_stale(tool_call, step, result=call.result)
    return list(dict.fromkeys(violated))


REFUSAL_CATEGORIES = {"needs_read": "refused for a read", "breaks_rule": "refused as breaking a rule"}


def _refused_gold(facts: TrialFacts, missing: list[WriteCheck]) -> Failure | None:
    """Rule 7: the first missing gold write whose tool's last gate verdict was a REVISE, by its kind."""
    last: dict[str, GateDecided] = {}
    for decision in facts.decisions:
        last[decision.call.name] = decision
    for check in missing:
        found = last.get(check.name)
        if found is not None and found.verdict == "REVISE" and found.refusal in REFUSAL_CATEGORIES:
            decision = found
            rules = ", ".join(r.predicate_id for r in decision.results if r.status in ("violation", "missing",
                                                                                        "error"))
            return Failure(category=REFUSAL_CATEGORIES[str(decision.refusal)],
                           evidence=f"{check.name} ({check.action_id}): REVISE from {rules}")
    return None


def ending_failure(reason: str, *, escalated: bool, subject: str = "trial") -> Failure | None:
    """Rules 1 and 2, the ones that need only how a session ended (no task, no reward): the same words for an
    evaluation trial and for a standalone session trace replayed in the console. None: the ending is no failure."""
    if reason in HARNESS_REASONS:
        return Failure(category="harness error", evidence=f"{subject} ended with {reason}")
    if reason in LOOP_REASONS or escalated:
        evidence = f"ended with {reason}" if reason in LOOP_REASONS else "gate escalated a repeated REVISE"
        return Failure(category="reasoning loop / max steps", evidence=evidence)
    return None


def classify(*, status: str, facts: TrialFacts, reward: RewardInfo | None, task: Task,
             refused: list[str]) -> Failure:
    """The failure category of a failed trial (see the module docstring for the rules and their order)."""
    reason = facts.termination if status == "ok" else status
    if reward is None:
        return Failure(category="harness error", evidence=f"trial ended with {reason}")
    ending = ending_failure(reason, escalated=any(d.escalated for d in facts.decisions))
    if ending is not None:
        return ending
    checks = reward.write_checks
    missing = [c for c in checks if c.status == "missing"]
    lookups = [a for a in task.gold_actions if a.name.startswith("find_")]
    identified = any(c.ok and c.name.startswith("find_") for c in facts.executed)
    if missing and lookups and not identified:
        return Failure(category="authentication failure",
                       evidence=f"no successful {lookups[0].name}; missed {missing[0].name}")
    if refused:
        return Failure(category="policy violation", evidence=f"executed write violates {', '.join(refused)}")
    wrong = [c for c in checks if c.status == "wrong_arguments"]
    if wrong:
        return Failure(category="wrong action arguments", evidence=f"{wrong[0].name}: expected {wrong[0].expected}, "
                                                                   f"got {wrong[0].actual}")
    extra = [c for c in checks if c.status == "extra"]
    if extra:
        return Failure(category="extra or unauthorized action", evidence=f"{extra[0].name}({extra[0].actual})")
    refused_gold = _refused_gold(facts, missing)
    if refused_gold is not None:
        return refused_gold
    if missing:
        return Failure(category="missed required action", evidence=f"{missing[0].name} ({missing[0].action_id})")
    if reward.db_check is not None and not reward.db_check.db_match:
        return Failure(category="missed required action", evidence="database differs from the gold end state")
    if not all(c.met for c in reward.communicate_checks):
        unmet = [c.item for c in reward.communicate_checks if not c.met]
        return Failure(category="failed to communicate", evidence=f"never said {unmet[0]!r}")
    if reward.breakdown.get("ENV_ASSERTION") == 0.0:
        return Failure(category="other", evidence="an environment assertion failed")
    if reward.breakdown.get("ACTION") == 0.0 and "ACTION" in reward.reward_basis:
        return Failure(category="missed required action", evidence="a gold action (read or generic) was not made")
    if reward.nl_assertions and not all(c.met for c in reward.nl_assertions):
        return Failure(category="NL assertion not met", evidence=next(c.item for c in reward.nl_assertions
                                                                      if not c.met))
    return Failure(category="other", evidence=f"reward {reward.reward:g}")
