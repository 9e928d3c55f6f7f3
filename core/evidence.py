"""Evidence the gate reads itself (`--evidence assist`) and the declarations that bound it.

The paper's gate is only a verifier: a write whose rules lack a record is sent back with "read X first"
(`EvidenceMode.ASK`). On real model conversations most such refusals are bookkeeping: the profile of a
customer whose id is known, a flight's status, a record re-read after the agent's own write. In
`EvidenceMode.ASSIST` the executor (core.executor) makes those reads itself when the only objections to
a write are missing or stale evidence, absorbs them (provenance: read by the gate), and judges again.
No model call, deterministic, bounded (MAX_GATE_READS per write, in at most MAX_ROUNDS rounds: a record
read in one round can name the next, an order names its products).

Reads sized to the decision. A rule that needs one qualifying fact among many records (a cancelled or delayed
flight among all the flights of a customer's reservations) says so (`MissingEvidence.one_at_a_time`, with its
budget): the gate reads those one at a time, in the order the rule gives, judging again after each, and stops
at the first that answers (the rule passes, or finds its conflict). Those reads count against the rule's own
budget (at most MAX_SEARCH_READS), not against MAX_GATE_READS, so a long list the rule needs only one answer
from is no reason to refuse; when the budget is spent without an answer the refusal says so, with the number.

What the gate may read is declared per domain, next to its path map (`EvidenceReads`): which ledger path
is refilled by which read, with which arguments, and whose record the result is. Never declared, and
refused here whatever a domain declares:

- any read before a customer is identified (`GateContext.customer_id` is None): the gate never decides
  who the customer is, and never reads a record that may be anyone's. The domain's identity rule does:
  a lookup's result, a profile read, or what the customer stated where the policy says so (airline's "obtain
  the user id from the user": then the gate may read that customer's own profile);
- identification itself (`find_user_id_*`, a patient lookup, anything that proves who the customer is):
  a domain lists those tools in `identification`, and a rule naming one is refused when it is built;
- another customer's record in the model's prompt: a fetched record whose `owner` is not the customer
  is evidence for this one decision only (`Assisted.private`), never absorbed into the ledger the model
  sees; the rule that reads it cites the mismatch.

All or nothing per round: when one of the paths the rules asked for cannot be read by the gate, it reads
none of them, and the model is told to read (the paper's behaviour), so the gate never does half a job the
model then has to finish anyway.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from core.gate import GateContext, GateDecision
from core.ledger import LedgerEntry, LedgerReader
from core.tools import ToolCall, call_text

JSON = Any
MAX_GATE_READS = 6  # reads the gate makes for one proposed write, at most
MAX_ROUNDS = 3  # judge, read, judge again: at most this many times per proposed write
MAX_SEARCH_READS = 16  # the most one-at-a-time reads any one rule may ask for one proposed write
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class EvidenceMode(StrEnum):
    """Who makes the reads a write's rules lack: the model when told (ASK, the paper) or the gate (ASSIST)."""

    ASK = "ask"
    ASSIST = "assist"

    @property
    def label(self) -> str:
        return "the gate reads missing evidence itself" if self is EvidenceMode.ASSIST else \
            "the model is asked to read missing evidence"

    @classmethod
    def choose(cls, chosen: str | None, scripted: str | None = None) -> EvidenceMode:
        """The mode a session runs in: the operator's explicit choice, else the one a scenario was written for,
        else ASSIST (the product's default; `eval` passes ASK explicitly, the paper's)."""
        return cls(chosen or scripted or cls.ASSIST.value)


# (placeholders of the path, the write being judged, the ledger, the context) -> the read's arguments, or None
# when the gate cannot name them (then it reads nothing this round).
ReadArguments = Callable[[Mapping[str, str], ToolCall, LedgerReader, GateContext], Mapping[str, Any] | None]
# (the fetched record, the ledger) -> whose record it is: a customer id, or None for a record that is nobody's
# in particular (a product, a flight, a plan). A customer-specific record whose owner cannot be established
# must answer something that is not the customer (e.g. "?"): it then stays the gate's evidence only.
Owner = Callable[[JSON, LedgerReader], str | None]


@dataclass(frozen=True)
class GateRead:
    """The read that refills ledger paths matching `path` (`{name}` matches one path segment).

    `arguments` defaults to the placeholders, by name (`orders.{order_id}` -> order_id)."""

    path: str
    tool: str
    arguments: ReadArguments | None = None
    owner: Owner | None = None
    note: str = ""

    def __post_init__(self) -> None:
        parts = _PLACEHOLDER.split(self.path)
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^.]+)" for i, p in enumerate(parts))
        object.__setattr__(self, "_regex", re.compile(regex))

    def match(self, path: str) -> dict[str, str] | None:
        """The placeholders' values when `path` is one this rule refills; never for a pattern (`orders.*`: a rule
        asking for "any order" names no record the gate could read)."""
        if any(ch in path for ch in "*?["):
            return None
        found = self._regex.fullmatch(path)  # type: ignore[attr-defined]
        return None if found is None else dict(found.groupdict())


def record_of(field: str) -> Owner:
    """The owner of a record that names it in `field` (an order's `user_id`); "?" (nobody known, so not the
    customer) for a result that does not."""

    def owner(result: Any, _ledger: LedgerReader) -> str | None:
        value = result.get(field) if isinstance(result, Mapping) else None
        return value if isinstance(value, str) else "?"

    return owner


def customer_as(argument: str) -> ReadArguments:
    """Arguments naming the identified customer (`{argument: ctx.customer_id}`): the read of their own profile."""

    def arguments(_names: Mapping[str, str], _call: ToolCall, _ledger: LedgerReader,
                  ctx: GateContext) -> Mapping[str, Any] | None:
        return None if ctx.customer_id is None else {argument: ctx.customer_id}

    return arguments


@dataclass(frozen=True)
class PlannedRead:
    """One read the gate is about to make, for the paths it refills; `search`: the rule it reads one at a time
    for (MissingEvidence.one_at_a_time), None for a read some rule needs in any case."""

    rule: GateRead
    arguments: Mapping[str, Any]
    paths: tuple[str, ...]
    search: str | None = None

    @property
    def text(self) -> str:
        return call_text(self.rule.tool, **self.arguments)


@dataclass(frozen=True)
class EvidenceReads:
    """A domain's declaration of the reads the gate may make itself, and of its identification tools."""

    reads: tuple[GateRead, ...] = ()
    identification: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        refused = sorted({r.tool for r in self.reads} & self.identification)
        if refused:
            raise ValueError(f"the gate never identifies anyone: {', '.join(refused)} cannot be a gate read")

    def rules_for(self, path: str) -> list[tuple[GateRead, dict[str, str]]]:
        """The rules that refill `path`, in declaration order, with its placeholders."""
        return [(rule, found) for rule in self.reads if (found := rule.match(path)) is not None]

    def read_for(self, path: str, call: ToolCall, ledger: LedgerReader, ctx: GateContext) -> PlannedRead | None:
        """The read that refills `path`: the first matching rule that can name its arguments."""
        for rule, names in self.rules_for(path):
            arguments = rule.arguments(names, call, ledger, ctx) if rule.arguments is not None else names
            if arguments is not None:
                return PlannedRead(rule, dict(arguments), (path,))
        return None

    def plan(self, decision: GateDecision, ledger: LedgerReader, ctx: GateContext,
             tried: Iterable[str] = (), budget: int = MAX_GATE_READS,
             searched: Mapping[str, int] | None = None) -> list[PlannedRead]:
        """The reads that supply every path `decision` lacks, in the order the rules asked, plus the next read of
        each rule that needs only one answer among its paths; [] when the gate may not or cannot supply all of
        that (then the model is asked), or when the needed reads exceed `budget`.

        `tried`: the texts of reads already made for this write; asking for one again means it did not
        supply what the rule needs, so the gate stops rather than loop (a rule reading one at a time goes on to
        its next path instead). `searched`: how many reads each such rule (by id) has had for this write; one
        whose budget is spent stops the gate, and the model is asked."""
        if ctx.customer_id is None or not self.reads:
            return []
        done = set(tried)
        planned: dict[str, PlannedRead] = {}
        for path in decision.required:
            read = self.read_for(path, decision.call, ledger, ctx)
            if read is None or read.text in done:
                return []
            previous = planned.get(read.text)
            planned[read.text] = read if previous is None else PlannedRead(read.rule, previous.arguments,
                                                                           (*previous.paths, path))
        if len(planned) > budget:
            return []
        spent = searched or {}
        for search in decision.searches:
            if spent.get(search.predicate_id, 0) >= min(search.one_at_a_time, MAX_SEARCH_READS):
                return []
            following = self._next_read(search.missing, decision.call, ledger, ctx, done)
            if following is None:
                return []
            if following.text not in planned:  # else another rule's read answers this one too
                planned[following.text] = replace(following, search=search.predicate_id)
        return list(planned.values())

    def _next_read(self, paths: Iterable[str], call: ToolCall, ledger: LedgerReader, ctx: GateContext,
                   done: set[str]) -> PlannedRead | None:
        """The first of `paths` the gate can read and has not read for this write yet."""
        for path in paths:
            read = self.read_for(path, call, ledger, ctx)
            if read is not None and read.text not in done:
                return read
        return None


@dataclass
class Assisted:
    """The gate's own reads for one proposed write: what it read, and the records kept for its eyes only."""

    private: dict[str, LedgerEntry] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)


class PrivateOverlay(LedgerReader):
    """The ledger as the gate judges one write with records it may not show the model (another customer's):
    those first, then the ledger's own entries; nothing is copied, and the version is the ledger's."""

    def __init__(self, ledger: LedgerReader, private: Mapping[str, LedgerEntry]) -> None:
        self._entries = ChainMap(dict(private), ledger._entries)  # type: ignore[arg-type]
        self._history = ledger._history
        self._effects = ledger._effects
        self.version = int(getattr(ledger, "version", 0))
