"""The policy gate: executable predicates over the ledger decide ALLOW / REVISE / BLOCK for a write.

Design choices worth knowing before reading the code:
- A predicate reads the ledger only through a `LedgerView`, which records every path it touched. Those
  paths are the verdict's evidence; nobody has to declare them by hand, so they cannot drift.
- Fail closed: a predicate that raises is a REVISE carrying the error, never an ALLOW.
- Missing or stale evidence is a REVISE ("read X first"), whatever the rule's severity: the model can fix
  it by reading. Absence is not otherwise a violation.
- The gate is stateful per session in two small ways that stop a model from looping: an identical call
  rejected before, with the ledger unchanged since, is rejected again without re-running the rules; and a
  rule that finds a conflict N times in a row escalates to BLOCK (never a house rule: those never BLOCK; never
  a REVISE for a missing read, which reading fixes). That memory is of the model's own proposals: an
  operator's edit is judged on its own and never counts (`evaluate(..., proposal=False)`).
- Every predicate declares its source: the policy sentence it encodes, or "house rule" (a rule our policy
  adds and the upstream policy does not state). A house rule's `policy` text starts with "house rule:", so
  the label travels with every verdict, event, feedback line and listing without anyone adding it; its
  severity is capped at REVISE, and a domain can switch all its house rules off (`Domain.house_rules`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from core.ledger import EFFECTS_NAMESPACE, Effect, LedgerReader, PathMap
from core.strict_json import value_problem
from core.tools import ToolCall

JSON = Any


class Verdict(StrEnum):
    ALLOW = "ALLOW"
    REVISE = "REVISE"
    BLOCK = "BLOCK"


_RANK = {Verdict.ALLOW: 0, Verdict.REVISE: 1, Verdict.BLOCK: 2}


class Status(StrEnum):
    PASS = "pass"
    VIOLATION = "violation"
    MISSING = "missing"
    ERROR = "error"
    DISABLED = "disabled"


@dataclass(frozen=True)
class Pass:
    note: str = ""


@dataclass(frozen=True)
class Violation:
    reason: str


@dataclass(frozen=True)
class MissingEvidence:
    """The records a rule lacks to judge (a REVISE "needs a read").

    `one_at_a_time` 0: the rule needs every path (the gate reads them together, all or nothing). A number: the
    rule needs ONE qualifying fact among the paths (a cancelled flight among a customer's reservations), so
    each read may settle it. The gate (core.evidence) then reads them one at a time, in the order given,
    judging again after each, until the rule no longer asks, and at most that many for one proposed write:
    the rule states its budget, so a decision that needs one answer costs the reads it takes, not the size of
    the list. The rule lists the paths still unread each time it is asked, best candidates first."""

    paths: tuple[str, ...]
    reason: str = ""
    one_at_a_time: int = 0


Outcome = Pass | Violation | MissingEvidence


class EvidenceUnavailable(Exception):
    """Raised by `LedgerView.require` (missing) or any view read of a stale entry."""

    def __init__(self, path: str, stale_by: str | None = None, hint: str = "") -> None:
        self.path = path
        self.stale_by = stale_by
        self.hint = hint
        super().__init__(path)


@dataclass(frozen=True)
class GateContext:
    """What a predicate may know besides the ledger: the domain's clock and who the customer is."""

    domain: str
    now: datetime | None = None
    customer_id: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)


class LedgerView:
    """Read-only ledger access for one predicate check; remembers every path read (the evidence)."""

    def __init__(self, reader: LedgerReader) -> None:
        self._reader = reader
        self.evidence: list[str] = []

    def _note(self, path: str) -> None:
        if path not in self.evidence:
            self.evidence.append(path)

    def _fresh(self, path: str) -> Any:
        entry = self._reader.entry(path)
        if entry is None:
            return None
        if entry.stale is not None:
            raise EvidenceUnavailable(path, stale_by=entry.stale.describe())
        return entry.value

    def get(self, path: str) -> JSON:
        """The value at `path`, or None when it was never observed. Stale entries raise; a partly stale record
        (a write could change only some of its fields) is returned as a read-only mapping that raises when a
        rule reads one of those fields, so a rule that needs only the rest judges without a re-read."""
        # `_note` and `_fresh` inlined: every rule reads through here, several times per decision
        if path not in self.evidence:
            self.evidence.append(path)
        entry = self._reader.entry(path)
        if entry is None:
            return None
        stale = entry.stale
        if stale is not None:
            if stale.fields is not None and isinstance(entry.value, Mapping):
                return PartlyStale(entry.value, _field_tree(stale.fields), path, stale.describe())
            raise EvidenceUnavailable(path, stale_by=stale.describe())
        return entry.value

    def has(self, path: str) -> bool:
        self._note(path)
        return self._reader.has(path)

    def require(self, path: str, hint: str = "") -> JSON:
        """The value at `path`; absent or stale evidence stops the check with a REVISE asking to read it."""
        try:
            value = self.get(path)
        except EvidenceUnavailable as stale:
            raise EvidenceUnavailable(path, stale_by=stale.stale_by, hint=hint) from None
        if value is None:
            raise EvidenceUnavailable(path, hint=hint)
        if hint and isinstance(value, PartlyStale):
            return value.with_hint(hint)
        return value

    def need(self, path: str, read_call: str, note: str = "") -> JSON:
        """`require`, telling the model the exact read that fills the path (absent and stale alike).

        The hint text is built only when the evidence is missing: a rule that finds its record pays nothing."""
        try:
            value = self.get(path)
        except EvidenceUnavailable:
            value = None  # stale: `require` below says so, with the hint
        if isinstance(value, PartlyStale):
            return value.with_hint(f"Read it with {read_call}{note}")
        if value is not None:
            return value
        return self.require(path, hint=f"Read it with {read_call}{note}")  # raises, with the hint

    def observations(self, path: str) -> list[JSON]:
        """Every value ever observed at `path`, oldest first, the current one last (stale or not).

        For rules about what was true when it was read (a reservation held a delayed flight before our own
        change removed it), not about the present: a past observation stays a fact after a write."""
        self._note(path)
        return [entry.value for entry in self._reader.observations(path)]

    def observed_paths(self, pattern: str) -> list[str]:
        """Paths matching `pattern` observed at any time in this session (current or superseded)."""
        paths = self._reader.observed_paths(pattern)
        if not paths:
            self._note(pattern)
        return paths

    def effects(self, tool: str, *more: str) -> tuple[Effect, ...]:
        """What this session's executed calls of `tool` (and `more`) returned, in the order they ran (fed only
        by successful writes' own returns)."""
        self._note(f"{EFFECTS_NAMESPACE}.{tool}")
        if not more:
            return self._reader.effects(tool)
        for other in more:
            self._note(f"{EFFECTS_NAMESPACE}.{other}")
        tools = {tool, *more}
        return tuple(e for e in self._reader.effects() if e.tool in tools)

    def glob(self, pattern: str) -> dict[str, JSON]:
        """Every fresh entry matching `pattern`; a stale match raises (never decide on stale data)."""
        matches = self._reader.glob(pattern)
        if not matches:
            self._note(pattern)
        for path in matches:
            self._note(path)
            self._fresh(path)
        return matches


FieldTree = Mapping[str, "FieldTree | None"]  # key -> None (stale) or the stale fields below it


def _field_tree(fields: Iterable[str]) -> FieldTree:
    """Dotted field names as a tree: {"payment_methods": {"gift_card_1": {"balance": None}}}."""
    tree: dict[str, Any] = {}
    for name in sorted(fields, key=len):
        node = tree
        parts = name.split(".")
        for part in parts[:-1]:
            below = node.get(part, {})
            if below is None:  # a shorter name already stales this whole subtree
                break
            node = node.setdefault(part, below)
        else:
            node[parts[-1]] = None
    return tree


class PartlyStale(Mapping[str, Any]):
    """A record some of whose fields a write may have changed since it was read: reading one of them raises
    EvidenceUnavailable (a REVISE asking to read the record again), every other field reads as observed.

    Read-only and not a dict on purpose: `dict(...)`, `.items()`, `==` and the like go through `__getitem__`,
    so they cannot see a stale field without raising either (fail closed). Membership raises only for a key
    that is itself stale (a write may add or remove such a key: a certificate spent, a card added); a
    write that adds keys under a field declares that whole field."""

    __slots__ = ("_by", "_hint", "_path", "_stale", "_value")

    def __init__(self, value: Mapping[str, Any], stale: FieldTree, path: str, stale_by: str, hint: str = "") -> None:
        self._value, self._stale, self._path, self._by, self._hint = value, stale, path, stale_by, hint

    def with_hint(self, hint: str) -> PartlyStale:
        """The same record, naming the read that refreshes it when a stale field is read (`LedgerView.need`)."""
        return PartlyStale(self._value, self._stale, self._path, self._by, hint)

    def __getitem__(self, key: str) -> Any:
        value = self._value[key]
        if key not in self._stale:
            return value
        below = self._stale[key]
        if below is not None and isinstance(value, Mapping):
            return PartlyStale(value, below, self._path, self._by, self._hint)
        raise EvidenceUnavailable(self._path, stale_by=self._by, hint=self._hint)

    def __contains__(self, key: object) -> bool:
        if key in self._stale and self._stale[key] is None:  # type: ignore[index]
            # removed or added since: unknown
            raise EvidenceUnavailable(self._path, stale_by=self._by, hint=self._hint)
        return key in self._value

    def __iter__(self) -> Iterator[str]:
        return iter(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __repr__(self) -> str:
        return f"PartlyStale({self._path}, stale since {self._by})"


CheckFn = Callable[[ToolCall, LedgerView, GateContext], Outcome]
CustomerCheckFn = Callable[[ToolCall, LedgerView, GateContext, str], Outcome]

HOUSE_RULE = "house rule"
POLICY_SOURCE = "policy"
HOUSE_RULE_PREFIX = f"{HOUSE_RULE}: "
# The strongest verdict a house rule may ask for: a rule the upstream policy does not state never refuses
# an action outright; the model (or the operator) can always get past it.
HOUSE_RULE_MAX_SEVERITY = Verdict.REVISE
SWITCHED_OFF_REASON = "house rule switched off for this domain"


@dataclass(frozen=True)
class Predicate:
    """One policy rule. `policy` is the sentence it encodes; `check` is a plain function over the ledger.

    `house_rule` marks a rule the upstream policy does not state (its `policy` starts with "house rule:");
    `switched_off` is set by a domain built with its house rules off (the gate starts with it disabled).
    `location` is where the check is defined (file:line), for the operator."""

    id: str
    tools: frozenset[str]
    severity: Verdict
    policy: str
    check: CheckFn
    location: str = ""
    house_rule: bool = False
    switched_off: bool = False

    def guards(self, tool: str) -> bool:
        return tool in self.tools

    @property
    def source(self) -> str:
        """Where the rule comes from: "policy" (a sentence of policy.md) or "house rule"."""
        return HOUSE_RULE if self.house_rule else POLICY_SOURCE


def predicate(*, id: str, tools: Iterable[str], severity: Verdict, policy: str, house_rule: bool = False,
              enabled: bool = True) -> Callable[[CheckFn], Predicate]:
    """Declare a predicate next to its function so id, scope, severity and policy sit with the logic.

    `policy` quotes the sentence of policy.md the rule encodes; for a house rule it says what we add, and
    the "house rule:" label is prefixed here so no display can drop it. `enabled=False` (house rules only)
    declares a rule that gates start with switched off; an operator can switch it on."""
    if severity not in (Verdict.REVISE, Verdict.BLOCK):
        raise ValueError(f"predicate {id}: severity must be REVISE or BLOCK")
    if not enabled and not house_rule:
        raise ValueError(f"predicate {id}: only a house rule can be off by default")
    if house_rule and _RANK[severity] > _RANK[HOUSE_RULE_MAX_SEVERITY]:
        raise ValueError(f"predicate {id}: a house rule is at most {HOUSE_RULE_MAX_SEVERITY.value}, never "
                         f"{severity.value}")
    text = HOUSE_RULE_PREFIX + policy if house_rule and not policy.startswith(HOUSE_RULE_PREFIX) else policy

    def wrap(fn: CheckFn) -> Predicate:
        body = inspect.unwrap(fn)  # a @for_customer rule is located at its body, not at the wrapper
        try:
            location = f"{inspect.getsourcefile(body)}:{inspect.getsourcelines(body)[1]}"
        except (OSError, TypeError):
            location = getattr(fn, "__module__", "")
        return Predicate(id=id, tools=frozenset(tools), severity=severity, policy=text, check=fn,
                         location=location, house_rule=house_rule, switched_off=not enabled)

    return wrap


def requires_customer(identified_rule: str, customer: Callable[[LedgerView, GateContext], str | None],
                      waiting: str = "no customer yet") -> Callable[[CustomerCheckFn], CheckFn]:
    """A domain's `@for_customer`: rules that need to know who the customer is.

    Before anyone is identified only the identity rule (`identified_rule`) complains; every other rule
    passes with a note instead of piling up the same complaint. The decorator puts that dependency in the
    rule's header and hands the body the customer's id, so the body reads as the policy sentence."""

    def decorate(fn: CustomerCheckFn) -> CheckFn:
        @functools.wraps(fn)
        def check(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
            who = customer(view, ctx)
            if who is None:
                return Pass(f"{waiting} (see {identified_rule})")
            return fn(call, view, ctx, who)

        return check

    return decorate


_FAILED = frozenset((Status.VIOLATION, Status.MISSING, Status.ERROR))


class RefusalKind(StrEnum):
    """Why a REVISE sent a call back: the two are told apart everywhere a REVISE is shown or counted.

    NEEDS_READ: every objection is missing or stale evidence; reading the records named makes the call
    judgeable, and nothing observed says it breaks a rule. BREAKS_RULE: at least one rule found a conflict
    in the observed state, or crashed (fail closed), so a read alone does not make the call legal."""

    NEEDS_READ = "needs_read"
    BREAKS_RULE = "breaks_rule"

    @property
    def label(self) -> str:
        """The words the screens and reports use."""
        return "needs a read" if self is RefusalKind.NEEDS_READ else "breaks a rule"


def refusal_kind(verdict: Verdict, results: Iterable[PredicateResult]) -> RefusalKind | None:
    """The kind of a REVISE from its results (None for ALLOW and BLOCK, which are their own kinds)."""
    if verdict is not Verdict.REVISE:
        return None
    failed = [r for r in results if r.failed]
    if failed and all(r.status is Status.MISSING for r in failed):
        return RefusalKind.NEEDS_READ
    return RefusalKind.BREAKS_RULE


@dataclass(frozen=True)
class PredicateResult:
    predicate_id: str
    status: Status
    verdict: Verdict  # what this result alone asks for
    reason: str
    evidence: tuple[str, ...]
    policy: str
    missing: tuple[str, ...] = ()  # status MISSING: the paths that were absent or stale (what a read supplies)
    one_at_a_time: int = 0  # status MISSING: > 0 when one of `missing` may answer (MissingEvidence.one_at_a_time)

    @property
    def failed(self) -> bool:
        return self.status in _FAILED

    @classmethod
    def passed(cls, predicate_id: str, note: str, evidence: tuple[str, ...], policy: str) -> PredicateResult:
        """`PredicateResult(predicate_id, Status.PASS, Verdict.ALLOW, note, evidence, policy)`, the same value
        (equal, same hash and repr), built without the frozen dataclass's six `object.__setattr__` calls: a
        passing rule is the common case, once per rule per decision, and that `__init__` was a third of the
        gate's own cost per rule. The fields go straight into the new instance's dict, in field order."""
        result = object.__new__(cls)
        result.__dict__.update(predicate_id=predicate_id, status=Status.PASS, verdict=Verdict.ALLOW, reason=note,
                               evidence=evidence, policy=policy, missing=(), one_at_a_time=0)
        return result


# How the line before a write's result starts that tells the model a read the gate made itself, by the read's
# outcome (`core.executor.gate_read_note` writes them). The line is for the agent: an agent speaking to the
# customer leaves it out (`core.llm.offline_agent`).
GATE_READ_NOTES = {"ok": "NOTE: before judging this call the gate read ", "gate_only": "NOTE: the gate read ",
                   "error": "NOTE: the gate tried to read "}


@dataclass(frozen=True)
class GateReadRecord:
    """A read the gate made itself before a verdict (core.evidence): its call id and text, and whether it was
    absorbed ("ok"), kept as evidence for the gate only ("gate_only": another customer's record) or failed
    ("error", with the tool's message in `detail`)."""

    call_id: str
    text: str
    outcome: str
    detail: str = ""


@dataclass(frozen=True)
class GateDecision:
    call: ToolCall
    verdict: Verdict
    results: tuple[PredicateResult, ...]
    feedback: str
    ledger_version: int
    escalated: bool = False
    repeated: bool = False
    gate_reads: tuple[GateReadRecord, ...] = ()  # the reads the gate made itself before this verdict

    @property
    def failed(self) -> tuple[PredicateResult, ...]:
        return tuple(r for r in self.results if r.failed)

    @property
    def refusal(self) -> RefusalKind | None:
        """NEEDS_READ or BREAKS_RULE for a REVISE; None for ALLOW and BLOCK."""
        return refusal_kind(self.verdict, self.results)

    @property
    def evidence(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for result in self.results:
            for path in result.evidence:
                seen.setdefault(path, None)
        return tuple(seen)

    @property
    def missing(self) -> tuple[str, ...]:
        """The absent or stale paths the objecting rules asked for, in rule order (what a read would supply)."""
        seen: dict[str, None] = {}
        for result in self.results:
            if result.status is Status.MISSING:
                for path in result.missing:
                    seen.setdefault(path, None)
        return tuple(seen)

    @property
    def required(self) -> tuple[str, ...]:
        """The missing paths that are needed all together (every rule that needs each of its paths)."""
        seen: dict[str, None] = {}
        for result in self.results:
            if result.status is Status.MISSING and not result.one_at_a_time:
                for path in result.missing:
                    seen.setdefault(path, None)
        return tuple(seen)

    @property
    def searches(self) -> tuple[PredicateResult, ...]:
        """The objecting rules that need one qualifying fact among their paths (read one at a time)."""
        return tuple(r for r in self.results if r.status is Status.MISSING and r.one_at_a_time)


def _run_one(pred: Predicate, call: ToolCall, reader: LedgerReader, ctx: GateContext,
             path_map: PathMap | None, unfit: str | None) -> PredicateResult:
    """`unfit`: `value_problem(call.arguments)`, computed once per call by `_judge` (not once per rule)."""
    view = LedgerView(reader)
    if unfit is not None:
        # Structural, so no rule can be bypassed by a value its comparisons cannot order: `NaN > cap` and
        # `NaN <= 0` are both False. The executor refuses such calls first; re-gating and direct callers
        # of the gate land here, and fail closed.
        return PredicateResult(pred.id, Status.ERROR, Verdict.REVISE, f"the arguments are not valid: {unfit}; "
                               "failing closed", (), pred.policy)
    try:
        outcome = pred.check(call, view, ctx)
    except EvidenceUnavailable as missing:
        return _missing_result(pred, view, (missing.path,), missing.stale_by, missing.hint, path_map)
    except Exception as exc:  # noqa: BLE001 - fail closed on any predicate bug
        where = traceback.extract_tb(exc.__traceback__)[-1]
        reason = (f"predicate {pred.id} raised {type(exc).__name__}: {exc} "
                  f"(at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}); failing closed")
        return PredicateResult(pred.id, Status.ERROR, Verdict.REVISE, reason, tuple(view.evidence), pred.policy)
    if isinstance(outcome, Pass):
        return PredicateResult.passed(pred.id, outcome.note, tuple(view.evidence), pred.policy)
    if isinstance(outcome, Violation):
        return PredicateResult(pred.id, Status.VIOLATION, pred.severity, outcome.reason, tuple(view.evidence),
                               pred.policy)
    if isinstance(outcome, MissingEvidence):
        return _missing_result(pred, view, outcome.paths, None, outcome.reason, path_map,
                               max(0, int(outcome.one_at_a_time)))
    reason = f"predicate {pred.id} returned {type(outcome).__name__}, not Pass/Violation/MissingEvidence"
    return PredicateResult(pred.id, Status.ERROR, Verdict.REVISE, reason, tuple(view.evidence), pred.policy)


def _missing_result(pred: Predicate, view: LedgerView, paths: tuple[str, ...], stale_by: str | None,
                    hint: str, path_map: PathMap | None, one_at_a_time: int = 0) -> PredicateResult:
    for path in paths:
        if path not in view.evidence:
            view.evidence.append(path)
    shown = ", ".join(paths)
    if stale_by:
        reason = f"{shown} may have changed since {stale_by}; read it again before this call"
    else:
        reason = f"this rule needs {shown}, which has not been observed; read it first"
    suggestions = [] if hint or path_map is None else [s for s in map(path_map.suggest_read, paths) if s]
    if suggestions:
        reason += f" (e.g. {', '.join(suggestions)})"
    if hint:
        reason += f". {hint}"
    return PredicateResult(pred.id, Status.MISSING, Verdict.REVISE, reason, tuple(view.evidence), pred.policy,
                           tuple(paths), one_at_a_time if paths else 0)


def _feedback(call: ToolCall, verdict: Verdict, results: Iterable[PredicateResult], escalated: bool,
              repeated: bool, max_streak: int) -> str:
    if verdict is Verdict.ALLOW:
        return ""
    lines: list[str] = []
    kind = refusal_kind(verdict, results)
    if verdict is Verdict.BLOCK:
        lines.append(f"BLOCK: the action {call.name} was NOT executed and is refused by policy.")
    elif kind is RefusalKind.NEEDS_READ:
        lines.append(f"REVISE ({kind.label}): {call.name} was NOT executed because its rules need records that "
                     "have not been read, or may have changed since.")
    else:
        lines.append(f"REVISE: {call.name} was NOT executed because it conflicts with the policy or the "
                     "observed state.")
    if repeated:
        lines.append("This is the same call that was already rejected, and nothing observed has changed since.")
    missing: dict[str, list[str]] = {}
    for result in results:
        if result.status is Status.MISSING:
            label = f" ({HOUSE_RULE})" if result.policy.startswith(HOUSE_RULE_PREFIX) else ""
            missing.setdefault(result.reason, []).append(result.predicate_id + label)
        elif result.failed:
            evidence = f" [state read: {', '.join(result.evidence)}]" if result.evidence else ""
            lines.append(f"- rule {result.predicate_id} ({result.policy}): {result.reason}{evidence}")
    for reason, ids in missing.items():
        lines.append(f"- rule{'s' if len(ids) > 1 else ''} {', '.join(ids)}: {reason}")
    if escalated:
        lines.append(f"The same rule rejected this action {max_streak} times in a row, so the action is now "
                     "refused. Do not retry it; explain the policy to the customer or transfer.")
    elif verdict is Verdict.BLOCK:
        lines.append("Do not retry this action; explain to the customer why it cannot be done.")
    elif kind is RefusalKind.NEEDS_READ:
        lines.append("Read the records named, then propose the call again.")
    else:
        lines.append("Correct the arguments or read the missing state, then propose the call again.")
    return "\n".join(lines)


class PolicyGate:
    """Judges write calls one at a time. Holds the per-session anti-loop memory."""

    def __init__(self, predicates: Iterable[Predicate], *, max_revise_streak: int = 3,
                 disabled: Iterable[str] = (), path_map: PathMap | None = None) -> None:
        self.predicates: list[Predicate] = list(predicates)
        ids = [p.id for p in self.predicates]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate predicate ids: {', '.join(duplicates)}")
        if max_revise_streak < 1:
            raise ValueError("max_revise_streak must be at least 1")
        self.max_revise_streak = max_revise_streak
        self.disabled: set[str] = set(disabled) | {p.id for p in self.predicates if p.switched_off}
        self._house_rules = {p.id for p in self.predicates if p.house_rule}
        self._switched_off = {p.id for p in self.predicates if p.switched_off}
        self.path_map = path_map
        self._streak: dict[str, int] = {}
        # tool name -> call signature -> (ledger version, decision): by tool first, so a call of a tool with
        # nothing rejected never serialises its arguments to look itself up
        self._rejected: dict[str, dict[str, tuple[int, GateDecision]]] = {}
        # what the last evaluate changed in that memory, for `forget_last`
        self._undo: tuple[dict[str, int], str, dict[str, tuple[int, GateDecision]] | None] | None = None

    def reset(self) -> None:
        self._streak.clear()
        self._rejected.clear()

    def set_enabled(self, predicate_id: str, enabled: bool) -> None:
        if predicate_id not in {p.id for p in self.predicates}:
            raise KeyError(predicate_id)
        (self.disabled.discard if enabled else self.disabled.add)(predicate_id)

    def guarding(self, tool: str) -> list[Predicate]:
        return [p for p in self.predicates if p.guards(tool)]

    def dry_run(self, call: ToolCall, ledger: LedgerReader, ctx: GateContext) -> GateDecision:
        """What `evaluate` alone would answer now, leaving the anti-loop memory untouched. The gate's reads are
        not made here: an operator's preview goes through `CallExecutor.dry_run`, which judges as a send would."""
        with self.preview():
            return self.evaluate(call, ledger, ctx)

    @contextlib.contextmanager
    def preview(self) -> Iterator[None]:
        """Judge as often as needed inside, then leave the anti-loop memory (REVISE streaks, remembered
        rejections) exactly as it was: a dry-run is no proposal."""
        saved = (dict(self._streak), {tool: dict(calls) for tool, calls in self._rejected.items()}, self._undo)
        try:
            yield
        finally:
            self._streak, self._rejected, self._undo = saved

    def noted(self, decision: GateDecision, notes: Mapping[str, str]) -> GateDecision:
        """`decision` with `notes` appended to the reasons of those rules (by id), and its feedback written
        again from them: what the gate adds to a verdict after judging (the read budget a rule ran out of)."""
        if not notes:
            return decision
        results = tuple(replace(r, reason=f"{r.reason}; {notes[r.predicate_id]}") if r.predicate_id in notes
                        else r for r in decision.results)
        feedback = _feedback(decision.call, decision.verdict, results, decision.escalated, decision.repeated,
                             self.max_revise_streak)
        return replace(decision, results=results, feedback=feedback)

    def forget_last(self) -> None:
        """Undo what the last `evaluate` added to the anti-loop memory.

        For a decision that is judged again at once, with evidence the gate read itself: one proposal is one
        decision for the REVISE streaks and the repeat memory, however many passes it took."""
        if self._undo is not None:
            streak, tool, rejected = self._undo
            self._streak = streak
            if rejected is None:
                self._rejected.pop(tool, None)
            else:
                self._rejected[tool] = rejected
            self._undo = None

    def evaluate(self, call: ToolCall, ledger: LedgerReader, ctx: GateContext, *,
                 proposal: bool = True) -> GateDecision:
        """Judge `call`. `proposal=False` for a call the model did not propose (an operator's edit of one): it is
        judged on its own, against the ledger, and leaves the anti-loop memory as it was. That memory is about
        the model looping on its own proposals: an operator's edit, however often re-gated, never counts toward
        a REVISE streak (nor resets one), is never escalated, and is never "the same call again"."""
        if not proposal:
            self._undo = None
            results = tuple(self._judge(call, ledger, ctx))
            verdict = max((r.verdict for r in results), key=_RANK.__getitem__, default=Verdict.ALLOW)
            return GateDecision(call=call, verdict=verdict, results=results,
                                feedback=_feedback(call, verdict, results, False, False, self.max_revise_streak),
                                ledger_version=int(getattr(ledger, "version", 0)))
        remembered = self._rejected.get(call.name)
        self._undo = (dict(self._streak), call.name, None if remembered is None else dict(remembered))
        version = int(getattr(ledger, "version", 0))
        # The signature serialises every argument: it is computed at most once per decision, and not at all
        # while no call of this tool is remembered as rejected (an ALLOW then has nothing to look up or forget).
        rejected = self._rejected.get(call.name, {})
        signature = call.signature() if rejected else None
        previous = rejected.get(signature) if signature is not None else None
        if previous is not None and previous[0] == version:
            results = previous[1].results
            repeated = True
        else:
            results = tuple(self._judge(call, ledger, ctx))
            repeated = False
        verdict = max((r.verdict for r in results), key=_RANK.__getitem__, default=Verdict.ALLOW)
        streak_reached = False
        for result in results:
            if result.status is Status.DISABLED:
                continue
            # Only a rule that found a conflict counts towards the streak: a REVISE for missing or stale evidence
            # is fixed by reading, so refusing the action for good would refuse a possibly legal action for a
            # read, and a crash is not the model's doing (it fails closed as a REVISE each time).
            if result.status is Status.VIOLATION and result.verdict is Verdict.REVISE \
                    and result.predicate_id not in self._house_rules:
                self._streak[result.predicate_id] = self._streak.get(result.predicate_id, 0) + 1
                streak_reached |= self._streak[result.predicate_id] >= self.max_revise_streak
            elif not result.failed:
                self._streak[result.predicate_id] = 0
        escalated = verdict is Verdict.REVISE and streak_reached
        if escalated:
            verdict = Verdict.BLOCK
        feedback = _feedback(call, verdict, results, escalated, repeated, self.max_revise_streak)
        decision = GateDecision(call=call, verdict=verdict, results=results, feedback=feedback,
                                ledger_version=version, escalated=escalated, repeated=repeated)
        if verdict is Verdict.ALLOW:
            if signature is not None:
                rejected.pop(signature, None)
                if not rejected:
                    del self._rejected[call.name]
        else:
            remembered = self._rejected.setdefault(call.name, {})
            remembered[signature or call.signature()] = (version, replace(decision, repeated=False))
        return decision

    def _judge(self, call: ToolCall, ledger: LedgerReader, ctx: GateContext) -> Iterable[PredicateResult]:
        unfit = value_problem(call.arguments)
        tool = call.name
        for pred in self.predicates:
            if tool not in pred.tools:  # `pred.guards(tool)`, without a method call per rule
                continue
            if pred.id in self.disabled:
                why = SWITCHED_OFF_REASON if pred.id in self._switched_off else "disabled by the operator"
                yield PredicateResult(pred.id, Status.DISABLED, Verdict.ALLOW, why, (), pred.policy)
                continue
            yield _run_one(pred, call, ledger, ctx, self.path_map, unfit)
