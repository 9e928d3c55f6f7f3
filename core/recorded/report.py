"""The audit of many recordings as the facts of one report: what a person auditing their agents reads.

`ledgeragent audit` runs `RecordedAudit` over every conversation of every file and hands each result here,
one conversation at a time; nothing here keeps a conversation's events or calls, only what the report shows:

- counts of the agents' writes per model and domain, by what the gate would have said (`KINDS`: ALLOW, needs a
  read, breaks a rule, BLOCK, not judged; whatever `AuditedCall.category` names, so a category added there is
  counted here without a change), per objecting rule, and per model;
- one `WriteFinding` per write the gate would have refused or could not judge (the allowed ones are counted
  only), with the conversation it sits in (task, trial, reward), the call, every objecting rule with its
  policy sentence and source, and the gate's reason;
- the writes that break the customer's explicit confirmation, per model (every rule whose id is
  `<domain>.explicit_confirmation`, `CONFIRMATION_RULE`);
- the problems of the input, each with its file and position.

A finding's `kind` says why the write was refused, in the order a reader weighs them: `policy` (a rule citing
a sentence of the written policy found a conflict), `house rule` (only rules our policy adds objected),
`crashed` (only a rule that raised: the gate fails closed, which says nothing of the write), `needs a read`,
`BLOCK`'s rule is always a policy one. A benchmark's reward of 1 (it accepted the end state) with a `policy`
finding that took effect in the recording is the report's headline: a write the written policy forbids that the
benchmark rewarded (an attempt the recorded tool refused is listed with the other refusals).

Domain-free: the rules' sentences and sources come from the `Domain` each conversation was audited in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.domain import Domain
from core.gate import HOUSE_RULE, HOUSE_RULE_PREFIX, POLICY_SOURCE, Predicate, Status
from core.recorded.audit import CATEGORIES, NOT_JUDGED, AuditedCall, ConversationAudit
from core.recorded.model import Problem, RecordedConversation
from core.tools import Requestor

REFUSED = ("needs a read", "breaks a rule", "BLOCK")
KINDS: tuple[str, ...] = CATEGORIES  # every category a write can be counted in, in the order the report shows them
CONFIRMATION_RULE = "explicit_confirmation"  # `<domain>.explicit_confirmation`
REWARDED = 1.0  # tau2 and tau-bench give 1.0 to a conversation whose end state they accepted

FINDING_KINDS = ("policy", HOUSE_RULE, "crashed", "needs a read", NOT_JUDGED)


def is_confirmation_rule(rule_id: str) -> bool:
    return rule_id.partition(".")[2] == CONFIRMATION_RULE


def is_agent_write(call: AuditedCall) -> bool:
    """A write the agent made: the calls the gate judges (a customer's own phone action never is)."""
    return call.kind == "write" and call.call.requestor is Requestor.ASSISTANT


def write_category(call: AuditedCall) -> str | None:
    """What the report counts an agent's write as (None: not an agent's write). A write the gate never saw (its
    arguments could not be read, its result is missing) is "not judged", never left out of the counts."""
    if not is_agent_write(call):
        return None
    return call.category or NOT_JUDGED


def not_judged_reason(call: AuditedCall) -> str:
    """Why a write could not be judged: the audit's own words where it gives them (`AuditedCall.not_judged`),
    else the problem that kept the call from the gate."""
    return call.not_judged or call.problem or call.reason or NOT_JUDGED


@dataclass(frozen=True)
class RuleResult:
    """One objecting rule of a write: its id, what it found (violation, missing, error), where it comes from
    ("policy" or "house rule"), the sentence it encodes and its reason, citing the ledger values it read."""

    id: str
    status: str
    source: str
    policy: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "source": self.source, "policy": self.policy,
                "reason": self.reason}


@dataclass(frozen=True)
class ConversationRef:
    """Which conversation of which file: `conversation` is its index among the file's conversations (what the
    console's `--at` takes), `label` how the file names it."""

    file: int
    conversation: int
    label: str
    task_id: str | None
    trial: int | None
    reward: float | None

    @property
    def rewarded(self) -> bool:
        return self.reward is not None and self.reward >= REWARDED

    def words(self) -> str:
        """"task 14, trial 0" (or the file's own label when the benchmark named neither)."""
        about = ([f"task {self.task_id}"] if self.task_id is not None else []) + (
            [f"trial {self.trial}"] if self.trial is not None else [])
        return ", ".join(about) or self.label or f"conversation {self.conversation}"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.conversation, "label": self.label, "task_id": self.task_id, "trial": self.trial,
                "reward": self.reward}


@dataclass(frozen=True)
class WriteFinding:
    """A write the gate would have refused, or could not judge, in its conversation."""

    at: ConversationRef
    model: str
    domain: str
    call: int  # the call's index among the conversation's calls (the console's `--at FILE_CONV:CALL`)
    where: str  # its position in the file
    name: str
    arguments: Mapping[str, Any]
    raw_arguments: str | None  # the arguments as written, when they were no JSON object the gate could read
    category: str
    kind: str  # one of FINDING_KINDS, or BLOCK (see the module docstring)
    rules: tuple[RuleResult, ...]
    reason: str  # the gate's whole reason, or why the write could not be judged
    recorded: str  # what the recording says became of it (ok, error, not run, ...)
    ran: bool = True  # it took effect in the recording (a write its tool refused there, or that never ran, did not)

    @property
    def rewarded_violation(self) -> bool:
        """A write the written policy forbids, that took effect, in a conversation the benchmark rewarded (an
        attempt the recorded tool refused changed nothing the benchmark could have accepted)."""
        return self.at.rewarded and self.ran and self.kind in ("policy", "BLOCK")

    def to_json(self) -> dict[str, Any]:
        return {"conversation": self.at.to_json(), "model": self.model, "domain": self.domain,
                "call": {"index": self.call, "where": self.where, "name": self.name,
                         "arguments": dict(self.arguments), "raw_arguments": self.raw_arguments},
                "category": self.category, "kind": self.kind, "rules": [r.to_json() for r in self.rules],
                "reason": self.reason, "recorded": self.recorded, "ran": self.ran}


@dataclass
class SourceFile:
    """One file named on the command line and what became of it."""

    index: int
    path: str
    format: str | None = None
    domain: str | None = None
    model: str | None = None
    model_source: str = ""  # "recording", "--model" or "file name": where the model's name came from
    database: str | None = None  # the database the gate read from (None: the recorded results only)
    conversations: int = 0
    problems: int = 0
    unusable: str | None = None  # why nothing of it was audited

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "domain": self.domain, "model": self.model,
                "model_source": self.model_source, "database": self.database,
                "conversations": self.conversations, "problems": self.problems, "unusable": self.unusable}


def _counts() -> Counter[str]:
    return Counter(dict.fromkeys(KINDS, 0))


def _ordered(counts: Mapping[str, int]) -> dict[str, int]:
    """Every kind in report order, then any other category the audit named, by name."""
    return {**{k: counts.get(k, 0) for k in KINDS}, **{k: v for k, v in sorted(counts.items()) if k not in KINDS}}


@dataclass
class GroupTally:
    """The writes of one model in one domain."""

    model: str
    domain: str
    conversations: int = 0
    rewarded: int = 0
    writes: Counter[str] = field(default_factory=_counts)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "domain": self.domain, "conversations": self.conversations,
                "rewarded": self.rewarded, "writes": sum(self.writes.values()), "categories": _ordered(self.writes)}


@dataclass
class RuleTally:
    """The writes one rule objected to, by the category each write got."""

    id: str
    domain: str
    source: str
    policy: str
    refusals: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "domain": self.domain, "source": self.source, "policy": self.policy,
                "refused": sum(self.refusals.values()), "categories": dict(sorted(self.refusals.items()))}


@dataclass
class ModelTally:
    model: str
    writes: Counter[str] = field(default_factory=_counts)
    confirmation: int = 0  # writes that break the customer's explicit confirmation
    confirmation_judged: int = 0  # writes judged by an explicit-confirmation rule (its domain has one)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "writes": sum(self.writes.values()), "categories": _ordered(self.writes),
                "explicit_confirmation": {"broken": self.confirmation, "judged": self.confirmation_judged}}


def _source(rule_id: str, policy: str, rules: Mapping[str, Predicate]) -> str:
    known = rules.get(rule_id)
    if known is not None:
        return known.source
    return HOUSE_RULE if policy.startswith(HOUSE_RULE_PREFIX) else POLICY_SOURCE


def finding_kind(category: str, rules: Iterable[RuleResult]) -> str:
    """Why a write was refused (see the module docstring): policy, house rule, crashed, needs a read, BLOCK."""
    if category in (NOT_JUDGED, "needs a read", "ALLOW"):
        return category
    objecting = list(rules)
    violations = [r for r in objecting if r.status == Status.VIOLATION.value]
    if any(r.source == POLICY_SOURCE for r in violations):
        return "BLOCK" if category == "BLOCK" else "policy"
    if violations:
        return HOUSE_RULE
    if any(r.status == Status.ERROR.value for r in objecting):
        return "crashed"
    return category


@dataclass
class AuditReport:
    """Everything the report shows, added one conversation at a time (see the module docstring)."""

    files: list[SourceFile] = field(default_factory=list)
    groups: dict[tuple[str, str], GroupTally] = field(default_factory=dict)
    rules: dict[str, RuleTally] = field(default_factory=dict)
    models: dict[str, ModelTally] = field(default_factory=dict)
    findings: list[WriteFinding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "file:position: message", in the order found
    domains_with_confirmation: set[str] = field(default_factory=set)
    conversations: int = 0
    _rules_of: dict[str, dict[str, Predicate]] = field(default_factory=dict, repr=False)

    # -- adding ----------------------------------------------------------------------------------------------

    def add_file(self, path: str) -> SourceFile:
        source = SourceFile(len(self.files), path)
        self.files.append(source)
        return source

    def add_problem(self, source: SourceFile, problem: Problem | str) -> None:
        """A problem of the input, with its file and position: one line each, in the order found (a text that
        names its file already is kept as it is)."""
        source.problems += 1
        if isinstance(problem, Problem):
            self.problems.append(problem.at(source.path))
        else:
            self.problems.append(problem if problem.startswith(source.path) else f"{source.path}: {problem}")

    def _domain_rules(self, domain: Domain) -> dict[str, Predicate]:
        rules = self._rules_of.get(domain.name)
        if rules is None:
            rules = self._rules_of[domain.name] = {p.id: p for p in domain.predicates}
            if any(is_confirmation_rule(rule_id) for rule_id in rules):
                self.domains_with_confirmation.add(domain.name)
        return rules

    def add_conversation(self, source: SourceFile, index: int, recorded: RecordedConversation,
                         audit: ConversationAudit, domain: Domain, model: str) -> None:
        """Count one audited conversation (its `index` among the file's conversations) and keep a finding for
        each of its writes that was refused or not judged; its problems go to the report's problems."""
        rules = self._domain_rules(domain)
        at = ConversationRef(source.index, index, recorded.label, recorded.task_id, recorded.trial, recorded.reward)
        self.conversations += 1
        source.conversations += 1
        group = self.groups.get((model, domain.name))
        if group is None:
            group = self.groups[(model, domain.name)] = GroupTally(model, domain.name)
        tally = self.models.get(model)
        if tally is None:
            tally = self.models[model] = ModelTally(model)
        group.conversations += 1
        group.rewarded += at.rewarded
        for problem in audit.problems:
            self.add_problem(source, problem)
        confirmation_here = domain.name in self.domains_with_confirmation
        for call in audit.calls:
            category = write_category(call)
            if category is None:
                continue
            group.writes[category] += 1
            tally.writes[category] += 1
            objecting = self._objecting(call, rules)
            if confirmation_here and call.decision is not None:
                tally.confirmation_judged += 1
                tally.confirmation += any(is_confirmation_rule(r.id) and r.status == Status.VIOLATION.value
                                          for r in objecting)
            if category == "ALLOW":
                continue
            for rule in objecting:
                kept = self.rules.get(rule.id)
                if kept is None:
                    kept = self.rules[rule.id] = RuleTally(rule.id, domain.name, rule.source, rule.policy)
                kept.refusals[category] += 1
            self.findings.append(WriteFinding(
                at=at, model=model, domain=domain.name, call=call.index, where=call.where.short(),
                name=call.call.name, arguments=dict(call.call.arguments), raw_arguments=call.call.raw_arguments,
                category=category, kind=finding_kind(category, objecting), rules=objecting,
                reason=not_judged_reason(call) if category == NOT_JUDGED else call.reason, recorded=call.recorded,
                ran=call.taken))

    @staticmethod
    def _objecting(call: AuditedCall, rules: Mapping[str, Predicate]) -> tuple[RuleResult, ...]:
        decision = call.decision
        if decision is None:
            return ()
        return tuple(RuleResult(r.predicate_id, r.status.value, _source(r.predicate_id, r.policy, rules), r.policy,
                                r.reason) for r in decision.failed)

    # -- reading ---------------------------------------------------------------------------------------------

    def totals(self) -> dict[str, int]:
        total: Counter[str] = _counts()
        for group in self.groups.values():
            total.update(group.writes)
        return _ordered(total)

    @property
    def writes(self) -> int:
        return sum(self.totals().values())

    def rewarded_violations(self) -> list[WriteFinding]:
        """The writes the written policy forbids in conversations the benchmark rewarded, in audit order."""
        return [f for f in self.findings if f.rewarded_violation]

    def other_refusals(self) -> list[WriteFinding]:
        """Every other write the gate would have refused (not rewarded, only house rules, a read missing)."""
        return [f for f in self.findings if f.category in REFUSED and not f.rewarded_violation]

    def not_judged(self) -> list[WriteFinding]:
        return [f for f in self.findings if f.category == NOT_JUDGED]

    def not_judged_reasons(self) -> list[tuple[str, int]]:
        """Why writes could not be judged, most frequent first (the reads named are left out of the key, so
        "needs a database read" is one line however many different records the writes needed)."""
        reasons = Counter(f.reason.split(":", 1)[0] for f in self.not_judged())
        return sorted(reasons.items(), key=lambda item: (-item[1], item[0]))

    def rules_by_refusals(self) -> list[RuleTally]:
        return sorted(self.rules.values(), key=lambda r: (-sum(r.refusals.values()), r.id))

    def sorted_groups(self) -> list[GroupTally]:
        return [self.groups[key] for key in sorted(self.groups)]

    def sorted_models(self) -> list[ModelTally]:
        return [self.models[key] for key in sorted(self.models)]

    def to_json(self, replay: Callable[[WriteFinding], str] | None = None) -> dict[str, Any]:
        """The report's facts as one JSON document (`audit.json`); `replay` gives each finding's console command
        (the command line is the console's business, not this module's)."""

        def finding(f: WriteFinding) -> dict[str, Any]:
            return {"file": self.files[f.at.file].path, **f.to_json(),
                    **({} if replay is None else {"replay": replay(f)})}

        return {
            "conversations": self.conversations, "writes": self.writes, "categories": self.totals(),
            "files": [f.to_json() for f in self.files],
            "groups": [g.to_json() for g in self.sorted_groups()],
            "models": [m.to_json() for m in self.sorted_models()],
            "rules": [r.to_json() for r in self.rules_by_refusals()],
            "explicit_confirmation_domains": sorted(self.domains_with_confirmation),
            "rewarded_violations": [finding(f) for f in self.rewarded_violations()],
            "other_refusals": [finding(f) for f in self.other_refusals()],
            "not_judged": [finding(f) for f in self.not_judged()],
            "problems": list(self.problems),
        }
