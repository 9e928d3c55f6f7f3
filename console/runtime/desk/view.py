"""What a desk shows, as plain values: session rows, inbox items, service levels, and the API screens use.

Snapshots, not live objects: a screen renders a `DeskSnapshot` and never reaches into a session, so the
same screen can draw a desk in this process or one served over a socket (every field is JSON-ready, see
`to_json` / `from_json`). Times are seconds on the desk's own monotonic clock (`DeskSnapshot.now`), so a
remote screen computes "waited" against the desk's clock, not its own.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class RowPhase(StrEnum):
    """Where a desk session is (a StrEnum: the words the table shows)."""

    QUEUED = "queued"  # waiting for a free slot (the concurrency bound)
    RUNNING = "running"
    WAITING = "waiting for operator"  # a call of this session is in the inbox
    PAUSED = "paused"  # step mode, between model calls
    ENDED = "ended"
    FAILED = "failed"  # crashed, model endpoint failed, or could not start: `failure` says why


class ItemKind(StrEnum):
    WRITE = "write"  # a write call the supervision mode wants a human on
    STEP = "step"  # a step-mode session waits to take its next step (a model call or a customer turn)


class Service(StrEnum):
    """A pending item's service level: amber after `amber_s` seconds, red after `red_s`."""

    OK = "ok"
    AMBER = "amber"
    RED = "red"


@dataclass(frozen=True)
class RuleView:
    """One predicate's result on a pending call, as the gate recorded it."""

    id: str
    status: str  # pass | violation | missing | error | disabled (core.gate.Status)
    verdict: str
    reason: str
    evidence: tuple[str, ...] = ()
    policy: str = ""


@dataclass(frozen=True)
class ItemView:
    """One inbox item: a call (or a step) that waits for a human."""

    id: str
    session_id: str
    kind: ItemKind
    asked_at: float
    asked_when: str
    tool: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    verdict: str | None = None  # None: no gate in this agent configuration
    refusal: str | None = None  # a REVISE's kind: "needs_read" or "breaks_rule" (core.gate.RefusalKind)
    feedback: str = ""
    rules: tuple[RuleView, ...] = ()
    claimed_by: str | None = None
    claim_until: float | None = None
    error: str = ""  # the last operator input the desk refused for this item (e.g. an edit that is not valid)
    call_id: str = ""  # the call it asks about ("" for a step): the session's panes mark it as waiting

    @property
    def failing(self) -> tuple[RuleView, ...]:
        """Rules that did not pass: the ones an operator has to weigh."""
        return tuple(r for r in self.rules if r.status != "pass")

    @property
    def evidence(self) -> tuple[str, ...]:
        """Every ledger path the gate cited for this call, in order, once each."""
        seen: dict[str, None] = {}
        for rule in self.rules:
            for path in rule.evidence:
                seen.setdefault(path)
        return tuple(seen)

    @property
    def rule_free(self) -> bool:
        """An ALLOW every rule passed (none failed, skipped or crashed): the only kind bulk approval takes."""
        return self.kind is ItemKind.WRITE and self.verdict == "ALLOW" and not self.failing

    def waited(self, now: float) -> float:
        return max(0.0, now - self.asked_at)

    def decision_facts(self) -> tuple[Any, ...]:
        """What a decision on this item means: which call, its arguments, the gate's verdict and reasons, the
        desk's last refusal. Not who holds the claim nor until when: a claim renewed (or taken by someone else,
        whose claim the desk itself enforces) changes no decision's meaning, so it does not make a key typed
        meanwhile "typed before the change"."""
        return (self.id, self.kind, self.tool, json.dumps(dict(self.arguments), sort_keys=True, default=str),
                self.verdict, self.refusal, self.feedback, self.rules, self.error)


@dataclass(frozen=True)
class RowView:
    """One session of the desk, as its row shows it."""

    id: str
    domain: str
    label: str  # scenario name or "task <id>"
    model: str
    mode: str
    folder: str = ""
    customer: str = ""
    phase: RowPhase = RowPhase.QUEUED
    steps: int = 0
    allow: int = 0
    revise: int = 0
    returned: int = 0  # needs-a-read REVISEs that went straight back to the model, no human asked
    block: int = 0
    overridden: int = 0  # calls a human force-allowed, edited or vetoed
    pending: str | None = None  # the inbox item this session waits on
    pending_since: float | None = None
    end_reason: str | None = None
    failure: str = ""


@dataclass(frozen=True)
class DeskStats:
    """Time-to-decision over every decision made at this desk (seconds)."""

    decisions: int = 0
    median_s: float | None = None
    worst_s: float | None = None

    @classmethod
    def of(cls, waits: Sequence[float]) -> DeskStats:
        if not waits:
            return cls()
        return cls(len(waits), statistics.median(waits), max(waits))


@dataclass(frozen=True)
class DeskSnapshot:
    now: float
    rows: tuple[RowView, ...]
    items: tuple[ItemView, ...]  # oldest first
    stats: DeskStats
    amber_s: float
    red_s: float
    audit_path: str = ""
    # Why this desk cannot be worked right now, in plain words ("" while it can): set by a remote desk that lost
    # its host (or has not heard from it for a while), never by the desk itself. Then its clock stands still
    # (waits stop counting) and the screens take no decision.
    lost: str = ""

    def service(self, item: ItemView) -> Service:
        waited = item.waited(self.now)
        if waited >= self.red_s:
            return Service.RED
        if waited >= self.amber_s:
            return Service.AMBER
        return Service.OK

    @property
    def done(self) -> bool:
        """Every session has ended or failed."""
        return all(r.phase in (RowPhase.ENDED, RowPhase.FAILED) for r in self.rows)

    def row(self, session_id: str) -> RowView | None:
        return next((r for r in self.rows if r.id == session_id), None)

    def item(self, item_id: str) -> ItemView | None:
        return next((i for i in self.items if i.id == item_id), None)

    def bulk_groups(self) -> dict[str, tuple[ItemView, ...]]:
        """Pending rule-free ALLOWs by tool: what one bulk approval may take, one tool at a time."""
        groups: dict[str, list[ItemView]] = {}
        for item in self.items:
            if item.rule_free:
                groups.setdefault(item.tool, []).append(item)
        return {tool: tuple(items) for tool, items in sorted(groups.items())}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeskSnapshot:
        items = tuple(
            ItemView(**{**i, "kind": ItemKind(i["kind"]), "rules": tuple(
                RuleView(**{**r, "evidence": tuple(r["evidence"])}) for r in i["rules"])})
            for i in data["items"])
        rows = tuple(RowView(**{**r, "phase": RowPhase(r["phase"])}) for r in data["rows"])
        return cls(now=data["now"], rows=rows, items=items, stats=DeskStats(**data["stats"]),
                   amber_s=data["amber_s"], red_s=data["red_s"], audit_path=data.get("audit_path", ""),
                   lost=data.get("lost", ""))


class DeskRefused(Exception):
    """An operator action the desk did not carry out; the message says why in one line. Nothing changed."""


DeskListener = Callable[[], object]


class DeskAPI(Protocol):
    """What the desk screens need. `Desk` implements it in this process; a remote desk over a socket."""

    def snapshot(self) -> DeskSnapshot: ...

    def subscribe(self, listener: DeskListener) -> None: ...

    def unsubscribe(self, listener: DeskListener) -> None: ...

    async def claim(self, item_id: str, operator: str) -> None: ...

    async def release(self, item_id: str, operator: str) -> None: ...

    async def release_all(self, operator: str) -> None: ...

    async def decide(self, item_id: str, operator: str, decision: str, *, reason: str = "",
                     arguments: Mapping[str, Any] | None = None) -> None: ...

    async def bulk_approve(self, item_ids: Sequence[str], operator: str) -> list[str]: ...

    async def step(self, session_id: str, operator: str) -> None: ...

    async def resume(self, session_id: str, operator: str) -> None: ...

    async def session_events(self, session_id: str, since: int = 0) -> list[dict[str, Any]]:
        """The session's events from index `since` on, as JSON (`core.events.EVENT_ADAPTER` loads them)."""
        ...
