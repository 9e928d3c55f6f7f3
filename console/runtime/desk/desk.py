"""The desk: runs many live sessions under a concurrency bound and gathers every call that waits for a human.

Each session is an ordinary `LiveSession` (own folder, database copy and trace): the desk only wires its
callbacks. A call its supervision mode sends to a human becomes an inbox item; the session waits on that item
alone, the others keep running. An operator's decision goes through the same `Resolution` the review modal
makes, so the executor re-checks it exactly as in the one-session console (an edit is gated again, only a
force-allow with a reason runs a REVISE/BLOCK call). Before a decision reaches the session it is on disk in
the desk's audit log; the session's trace records it as well, with who, when and how long it waited.

Several operators: an item may be claimed (for `claim_ttl` seconds, renewed by claiming again); a claimed
item can be decided only by its claimant until the claim runs out. Everything runs on one event loop, so
two decisions of one item cannot both land: the second finds the item gone and is refused.

A session that ended keeps only its row in memory (what the sessions table shows): its `LiveSession` and its
events are dropped, and its events are read back from its trace on disk when someone asks for them. The desk
keeps the rows of the last `keep_ended` ended sessions; older ones leave the table (their folders stay). So a
desk that sessions keep arriving at (`ledgeragent mcp`) holds a bounded amount whatever it has served.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console.runtime.desk.audit import AuditLog
from console.runtime.desk.view import (
    DeskListener,
    DeskRefused,
    DeskSnapshot,
    DeskStats,
    ItemKind,
    ItemView,
    RowPhase,
    RowView,
    RuleView,
)
from console.runtime.live import LiveSession, PendingReview, Phase, SessionSpec, SupervisionMode
from core import strict_json
from core.events import Event
from core.executor import utc_now
from core.gate import GateDecision
from core.llm.base import ChatModel, ModelError
from core.supervisor import Decision, Resolution
from core.tools import validate_arguments
from core.trace import TraceProblem
from core.trace_index import TraceIndex

MAX_OPERATOR = 64
MAX_REASON = 2000
KEEP_ENDED = 1000  # ended sessions whose rows the desk keeps (a row is a few hundred bytes)
MAX_GONE = 10_000  # items no longer waiting whose reason a late decision is told
INDEXES = 4  # ended sessions' trace indexes kept for paging through their events
DECISIONS = ("approve", "accept_verdict", "veto", "edit", "force_allow", "step")
CUSTOMER_PATHS = ("user", "customer", "patient")


def check_operator(name: str) -> str:
    """An operator name as recorded: printable, 1-64 characters, no surrounding blanks."""
    name = name.strip()
    if not name:
        raise DeskRefused("an operator name is required")
    if len(name) > MAX_OPERATOR or not name.isprintable():
        raise DeskRefused(f"an operator name is 1-{MAX_OPERATOR} printable characters")
    return name


def customer_of(record: Any) -> str:
    """Who a profile record belongs to, in words: the name when it has one, else its id."""
    if not isinstance(record, Mapping):
        return ""
    name = record.get("name")
    if isinstance(name, Mapping):
        name = " ".join(str(name[k]) for k in ("first_name", "last_name") if isinstance(name.get(k), str))
    if not isinstance(name, str) or not name.strip():
        parts = [record.get(k) for k in ("first_name", "last_name")]
        name = " ".join(p for p in parts if isinstance(p, str)) or record.get("full_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    for key in ("user_id", "customer_id", "patient_id", "id"):
        if isinstance(record.get(key), str):
            return str(record[key])
    return ""


@dataclass
class _Item:
    id: str
    session: _DeskSession
    kind: ItemKind
    asked_at: float
    asked_when: str
    review: PendingReview | None = None
    claimed_by: str | None = None
    claim_until: float = 0.0
    error: str = ""

    def view(self, now: float) -> ItemView:
        claimed = self.claimed_by if self.claimed_by is not None and self.claim_until > now else None
        base = ItemView(id=self.id, session_id=self.session.id, kind=self.kind, asked_at=self.asked_at,
                        asked_when=self.asked_when, claimed_by=claimed,
                        claim_until=self.claim_until if claimed else None, error=self.error)
        review = self.review
        if review is None:
            waiting = self.session.live.pacer.waiting if self.session.live is not None else None
            return replace(base, tool="customer turn" if waiting == "user" else "model call")
        decision = review.decision
        return replace(base, tool=review.call.name, arguments=dict(review.call.arguments), call_id=review.call.id,
                       verdict=None if decision is None else decision.verdict.value,
                       refusal=None if decision is None or decision.refusal is None else decision.refusal.value,
                       feedback="" if decision is None else decision.feedback, rules=_rules(decision))


def _rules(decision: GateDecision | None) -> tuple[RuleView, ...]:
    if decision is None:
        return ()
    return tuple(RuleView(id=r.predicate_id, status=r.status.value, verdict=r.verdict.value, reason=r.reason,
                          evidence=tuple(r.evidence), policy=r.policy) for r in decision.results)


@dataclass
class _DeskSession:
    id: str
    spec: SessionSpec
    live: LiveSession | None = None
    phase: RowPhase = RowPhase.QUEUED
    customer: str = ""
    named: bool = False  # the customer's profile was read (until then `customer` may be just an id)
    counts: dict[str, int] = field(default_factory=lambda: {"ALLOW": 0, "REVISE": 0, "BLOCK": 0})
    overridden: int = 0
    returned: int = 0  # needs-a-read REVISEs sent straight back to the model (the mode did not ask a human)
    end_reason: str | None = None
    failure: str = ""
    events: list[Event] = field(default_factory=list)
    item: _Item | None = None
    decided: dict[str, str] = field(default_factory=dict)  # call id -> the item id of its last decision
    regated: dict[str, Any] = field(default_factory=dict)  # call id -> the gate's verdict on an edit, not yet logged
    task: asyncio.Task[None] | None = None
    make: LiveFactory | None = None  # how an added session is built (None: a plain LiveSession of `spec`)
    bounded: bool = True  # waits for a slot under the desk's concurrency bound
    final: RowView | None = None  # the row of an ended session, once its LiveSession and events are dropped

    @property
    def label(self) -> str:
        """What it runs: the scenario, `task <id>`, or free chat."""
        return self.spec.label or "free chat"

    def retire(self) -> None:
        """The session is over: keep its row, drop what only a running session needs (its trace has the rest)."""
        self.final = self.view()
        self.live = None
        self.events = []
        self.item = None
        self.decided.clear()
        self.regated.clear()
        self.task = None
        self.make = None

    def view(self) -> RowView:
        if self.final is not None:
            return self.final
        live = self.live
        item = self.item
        return RowView(
            id=self.id, domain=self.spec.domain, label=self.label,
            model=live.model.name if live is not None else self.spec.model,
            mode=(live.supervisor.mode if live is not None else self.spec.mode).value,
            folder=str(live.folder) if live is not None and live.folder is not None else "",
            customer=self.customer, phase=self.phase, steps=live.state.steps if live is not None else 0,
            allow=self.counts["ALLOW"], revise=self.counts["REVISE"], block=self.counts["BLOCK"],
            returned=self.returned,
            overridden=self.overridden, pending=item.id if item is not None else None,
            pending_since=item.asked_at if item is not None else None, end_reason=self.end_reason,
            failure=self.failure)


# Builds a session the desk runs from its spec and the desk's callbacks (the keyword arguments LiveSession
# takes: on_event, on_review, on_state, on_model_error, root, model_factory).
LiveFactory = Callable[..., LiveSession]


class Desk:
    """Many sessions, one inbox. Implements `console.runtime.desk.view.DeskAPI` in this process."""

    def __init__(self, specs: Sequence[SessionSpec], *, concurrency: int = 8, root: Path | None = None,
                 audit_path: Path | None = None, amber_s: float = 30.0, red_s: float = 120.0,
                 claim_ttl: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], str] = utc_now,
                 model_factory: Callable[[SessionSpec], ChatModel] | None = None,
                 keep_ended: int = KEEP_ENDED) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 0 <= amber_s <= red_s:
            raise ValueError("the amber threshold must be between 0 and the red one")
        if keep_ended < 1:
            raise ValueError("keep_ended must be at least 1")
        self.sessions = [_DeskSession(f"s{n:02d}", spec) for n, spec in enumerate(specs, 1)]
        self._by_id = {s.id: s for s in self.sessions}
        self._numbers = itertools.count(len(self.sessions) + 1)  # session ids, never reused
        self.keep_ended = keep_ended
        self._ended: deque[str] = deque()  # ended sessions still in the table, the oldest first
        self._indexes: OrderedDict[str, TraceIndex] = OrderedDict()  # ended sessions' traces, the last read last
        self.concurrency = concurrency
        self.root = root
        self.amber_s = amber_s
        self.red_s = red_s
        self.claim_ttl = claim_ttl
        self.clock = clock
        self.wall = wall
        self.model_factory = model_factory
        self.audit = AuditLog(audit_path) if audit_path is not None else None
        self._ids = itertools.count(1)
        self._gone: OrderedDict[str, str] = OrderedDict()  # item id -> why it no longer waits (said to whoever
        # decides it late), the last MAX_GONE
        self._waits: list[float] = []
        self._listeners: list[DeskListener] = []
        self._slots = asyncio.Semaphore(concurrency)

    # ------------------------------------------------------------------------------------------ view

    def snapshot(self) -> DeskSnapshot:
        now = self.clock()
        items = sorted(self._items.values(), key=lambda i: (i.asked_at, i.id))
        return DeskSnapshot(now=now, rows=tuple(s.view() for s in self.sessions),
                            items=tuple(i.view(now) for i in items), stats=DeskStats.of(self._waits),
                            amber_s=self.amber_s, red_s=self.red_s,
                            audit_path=str(self.audit.path) if self.audit is not None else "")

    @property
    def _items(self) -> dict[str, _Item]:
        """Every pending item by id: each session waits on at most one (`_DeskSession.item`, the one record)."""
        return {s.item.id: s.item for s in self.sessions if s.item is not None}

    def subscribe(self, listener: DeskListener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: DeskListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def live(self, session_id: str) -> LiveSession | None:
        """The session itself (in this process only): the session view draws its panes from it."""
        session = self._by_id.get(session_id)
        return session.live if session is not None else None

    async def session_events(self, session_id: str, since: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """The session's events from `since` on (at most `limit`): from memory while it runs, from its trace on
        disk once it ended."""
        session = self._session(session_id)
        start = max(0, since)
        end = None if limit is None else start + max(0, limit)
        if session.final is None:
            return [e.model_dump(mode="json") for e in session.events[start:end]]
        events = await asyncio.to_thread(self._trace_events, session, start, end)
        return [e.model_dump(mode="json") for e in events]

    def events_of(self, session_id: str) -> list[Event]:
        session = self._session(session_id)
        return list(session.events) if session.final is None else self._trace_events(session, 0, None)

    def _trace_events(self, session: _DeskSession, start: int, end: int | None) -> list[Event]:
        """An ended session's events, read from its trace (unreadable lines left out, as replay skips them)."""
        assert session.final is not None
        index = self._indexes.pop(session.id, None)
        if index is None:
            trace = Path(session.final.folder) / "trace.jsonl" if session.final.folder else None
            if trace is None or not trace.is_file():
                return []
            index = TraceIndex.of_file(trace)
        self._indexes[session.id] = index
        while len(self._indexes) > INDEXES:
            self._indexes.popitem(last=False)
        stop = len(index) if end is None else min(end, len(index))
        return [e for e in index.read(range(start, stop)) if not isinstance(e, TraceProblem)]

    def _session(self, session_id: str) -> _DeskSession:
        session = self._by_id.get(session_id)
        if session is None:
            raise DeskRefused(f"no session {session_id!r} at this desk")
        return session

    # ------------------------------------------------------------------------------------------ running

    async def run(self) -> None:
        """Run every session to its end (at most `concurrency` at once); a failing one never stops the rest."""
        for session in self.sessions:
            if session.task is None and session.final is None:  # (an ended one has dropped its task)
                session.task = asyncio.create_task(self._run_one(session), name=f"desk {session.id}")
        tasks = [s.task for s in self.sessions if s.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)

    def add_session(self, spec: SessionSpec, *, make: LiveFactory | None = None, bounded: bool = True) -> str:
        """A session that arrives while the desk runs (an external agent connecting): started at once and shown,
        decided and audited like the others. `make` builds it (default: a `LiveSession` of `spec`); an
        unbounded one does not wait for a slot (its client is waiting). Returns its id; `live(id)` is the
        session once it is built."""
        session = _DeskSession(f"s{next(self._numbers):02d}", spec, make=make, bounded=bounded)
        self.sessions.append(session)
        self._by_id[session.id] = session
        session.task = asyncio.create_task(self._run_one(session), name=f"desk {session.id}")
        self._changed()
        return session.id

    def task_of(self, session_id: str) -> asyncio.Task[None] | None:
        """The task running the session (done once it ended, whatever the way)."""
        return self._session(session_id).task

    async def close(self) -> None:
        """Stop every session still running (each trace ends with `session_ended`), then close the log."""
        running = [s.task for s in self.sessions if s.task is not None and not s.task.done()]
        for session in self.sessions:
            if session.live is not None:
                session.live.cancel_reason = "desk_closed"
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(BaseException):
                await task
        if self.audit is not None:
            self.audit.close()

    async def _run_one(self, session: _DeskSession) -> None:
        async with self._slots if session.bounded else contextlib.nullcontext():
            try:
                live = (session.make or LiveSession)(
                    session.spec, root=self.root, model_factory=self.model_factory,
                    on_event=lambda e: self._event(session, e), on_review=lambda r: self._review(session, r),
                    on_state=lambda: self._state(session), on_model_error=lambda e: self._model_failed(session, e))
                session.live = live
                session.phase = RowPhase.RUNNING
                self._changed()
                result = await live.run()
            except asyncio.CancelledError:
                session.phase = RowPhase.ENDED
                session.end_reason = session.end_reason or "desk_closed"
                self._drop_item(session)
                self._retire(session)
                raise
            except Exception as exc:  # noqa: BLE001 - a crashing session is shown as failed, never stalls the desk
                session.phase = RowPhase.FAILED
                session.failure = f"{type(exc).__name__}: {exc}"[:500]
                self._drop_item(session)
                self._retire(session)
                self._changed()
                return
        session.end_reason = result.reason
        if result.reason in ("agent_error", "user_error", "environment_error", "script_diverged"):
            session.phase = RowPhase.FAILED
            session.failure = session.failure or result.detail or result.reason
        else:
            session.phase = RowPhase.ENDED
        self._drop_item(session)
        self._retire(session)
        self._changed()

    def _retire(self, session: _DeskSession) -> None:
        """An ended session keeps its row only; past `keep_ended` ended rows, the oldest leaves the table."""
        session.retire()
        self._ended.append(session.id)
        while len(self._ended) > self.keep_ended:
            gone = self._by_id.pop(self._ended.popleft(), None)
            if gone is not None:
                self.sessions.remove(gone)
                self._indexes.pop(gone.id, None)

    # ------------------------------------------------------------------------------------------ callbacks

    def _event(self, session: _DeskSession, event: Event) -> None:
        session.events.append(event)
        kind = event.type
        if kind == "gate_decision":
            session.counts[event.verdict] += 1  # type: ignore[union-attr]
            live = session.live
            if live is not None and not live.supervisor.needs_review_of(event):
                session.returned += getattr(event, "refusal", None) == "needs_read"
            if event.call.id in session.decided:  # type: ignore[union-attr]  # an edited call, judged again
                session.regated[event.call.id] = event  # type: ignore[union-attr]
        elif kind == "supervisor_decision":
            if event.decision in ("veto", "edit", "force_allow"):  # type: ignore[union-attr]
                session.overridden += 1
        elif kind == "ledger_updated" and not session.named:
            self._find_customer(session)
        elif kind == "tool_result":
            call_id = event.call.id  # type: ignore[union-attr]
            self._log_regate(session, call_id, None)
            pending = session.item.review if session.item is not None else None
            if pending is not None and pending.call.id == call_id:  # it has its outcome: it waits no more
                self._drop_item(session, f"its call has its outcome ({event.outcome}) without a decision: nobody "  # type: ignore[union-attr]
                                "decided in time")
            item_id = session.decided.pop(call_id, None)
            if item_id is not None and self.audit is not None:
                self.audit.write({"type": "outcome", "when": self.wall(), "session": session.id, "item": item_id,
                                  "call_id": call_id, "executed": event.executed, "ok": event.ok,  # type: ignore[union-attr]
                                  "outcome": event.outcome,  # type: ignore[union-attr]
                                  "content": event.content[:500]})  # type: ignore[union-attr]
        elif kind == "session_ended":
            self._log_unfinished(session, str(getattr(event, "reason", "")))
        self._changed()

    def _log_regate(self, session: _DeskSession, call_id: str, regated_item: str | None) -> None:
        """The gate's verdict on an edited call, linked to the edit's item (and to the item that asked about it
        again, when it was asked): the audit shows what an edit led to, not only that it was made."""
        gate = session.regated.pop(call_id, None)
        item_id = session.decided.get(call_id)
        if gate is None or item_id is None or self.audit is None:
            return
        self.audit.write({"type": "regate", "when": self.wall(), "session": session.id, "item": item_id,
                          "call_id": call_id, "regated_item": regated_item, "gate_verdict": gate.verdict,
                          "failing_rules": [r.predicate_id for r in gate.results
                                            if r.status in ("violation", "missing", "error")],
                          "arguments": strict_json.check_value(dict(gate.call.arguments))})

    def _log_unfinished(self, session: _DeskSession, reason: str) -> None:
        """The session ended: every decided call that never came to run has that as its outcome, so the audit
        never says "not known yet" of a session that is over."""
        for call_id in list(session.decided):
            self._log_regate(session, call_id, None)
            item_id = session.decided.pop(call_id)
            if self.audit is not None:
                self.audit.write({"type": "outcome", "when": self.wall(), "session": session.id, "item": item_id,
                                  "call_id": call_id, "executed": False, "ok": False, "outcome": "not_run",
                                  "content": f"the session ended ({reason or 'unknown'}) before a decision"})

    def _find_customer(self, session: _DeskSession) -> None:
        live = session.live
        ledger = live.agent.ledger if live is not None and live.session is not None else None
        if ledger is None:
            return
        for path in CUSTOMER_PATHS:
            name = customer_of(ledger.get(path))
            if name:
                session.customer, session.named = name, True
                return
        for path in ledger.paths():  # identified but no profile read yet: the id the agent authenticated
            value = ledger.get(path) if path.startswith("auth.") else None
            if isinstance(value, str) and value:
                session.customer = value
                return

    def _state(self, session: _DeskSession) -> None:
        live = session.live
        if live is None or session.phase in (RowPhase.ENDED, RowPhase.FAILED):
            return
        phase = live.state.phase
        if phase == Phase.WAITING:
            session.phase = RowPhase.WAITING
        elif live.pacer.waiting is not None and live.pacer.paused:  # (a step granted but not yet taken: no)
            session.phase = RowPhase.PAUSED
            if session.item is None:
                self._add(session, ItemKind.STEP, None)
        elif phase in (Phase.RUNNING, Phase.PAUSED, Phase.READY):
            session.phase = RowPhase.RUNNING
        if live.pacer.waiting is None and session.item is not None and session.item.kind is ItemKind.STEP:
            self._drop_item(session, "the session no longer waits for a step")
        self._changed()

    def _review(self, session: _DeskSession, review: PendingReview) -> None:
        session.phase = RowPhase.WAITING
        edited = session.decided.get(review.call.id)  # an edit's item, now asked about again
        self._add(session, ItemKind.WRITE, review)
        if edited is not None and session.item is not None:
            self._log_regate(session, review.call.id, session.item.id)
            self._gone[edited] = (f"replaced by {session.item.id}: {self._gone.get(edited, 'it was edited')} and "
                                  "the gate judged the edited call again")
        self._changed()

    def _model_failed(self, session: _DeskSession, error: ModelError) -> None:
        """No operator stands by one session's endpoint here: the session ends as failed, with the reason."""
        session.failure = f"model {error.kind}: {error.message}"[:500]
        if session.live is not None:
            session.live.retry(False)

    def _add(self, session: _DeskSession, kind: ItemKind, review: PendingReview | None) -> None:
        item = _Item(f"i{next(self._ids)}", session, kind, self.clock(), self.wall(), review)
        session.item = item

    def _drop_item(self, session: _DeskSession, why: str = "its session ended") -> None:
        if session.item is not None:
            self._gone.setdefault(session.item.id, why)
            while len(self._gone) > MAX_GONE:
                self._gone.popitem(last=False)
        session.item = None

    # ------------------------------------------------------------------------------------------ operators

    def _item(self, item_id: str, operator: str) -> _Item:
        item = self._items.get(item_id)
        if item is None:
            why = self._gone.get(item_id, "decided, or its session ended")
            raise DeskRefused(f"item {item_id} is no longer waiting: {why}; nothing was recorded")
        if item.review is not None and not item.review.open:
            raise DeskRefused(f"item {item_id} is no longer waiting: its call was given up on (no decision came in "
                              "time) or its session ended; nothing was recorded")
        now = self.clock()
        if item.claimed_by not in (None, operator) and item.claim_until > now:
            raise DeskRefused(f"item {item_id} is claimed by {item.claimed_by} for {item.claim_until - now:.0f} s more")
        return item

    async def claim(self, item_id: str, operator: str) -> None:
        operator = check_operator(operator)
        item = self._item(item_id, operator)
        item.claimed_by, item.claim_until = operator, self.clock() + self.claim_ttl
        self._changed()

    async def release(self, item_id: str, operator: str) -> None:
        item = self._items.get(item_id)
        if item is not None and item.claimed_by == operator:
            item.claimed_by, item.claim_until = None, 0.0
            self._changed()

    async def release_all(self, operator: str) -> None:
        """Drop every claim this operator holds (their browser tab closed)."""
        for item in self._items.values():
            if item.claimed_by == operator:
                item.claimed_by, item.claim_until = None, 0.0
        self._changed()

    async def step(self, session_id: str, operator: str) -> None:
        """Let a step-mode session take one more step (a model call or a customer turn).

        A decision like any other: its step item must not be another operator's claim, and it is in the audit
        log (operator, time, how long the step waited; no call) before it takes effect."""
        operator = check_operator(operator)
        session = self._session(session_id)
        live = session.live
        if live is None or live.pacer.waiting is None:
            raise DeskRefused(f"session {session_id} is not waiting for a step")
        step = session.item if session.item is not None and session.item.kind is ItemKind.STEP else None
        item = self._item(step.id, operator) if step is not None else None
        waited = round(self.clock() - item.asked_at, 3) if item is not None else None
        what = "a customer turn" if live.pacer.waiting == "user" else "a model call"
        if self.audit is not None:  # on disk before it takes effect
            self.audit.write(self._session_record(session, item, operator, waited, "step",
                                                  f"one more step: {what}"))
        if item is not None:
            self._drop_item(session, f"already decided by {operator} (step)")
        live.pacer.step()
        self._changed()

    async def resume(self, session_id: str, operator: str) -> None:
        """Take a step-mode session out of step mode: it runs on, asking a human for non-ALLOW writes.

        Only a session in step mode (any other mode would be silently weakened, e.g. 'approve writes' to
        'approve non-ALLOW'). Its pending step item, if any, is decided by this: it must not be another
        operator's claim; a pending write stays in the inbox. Recorded in the audit log (with the operator,
        the time and how long the step waited) before it takes effect; like a step, not counted in the
        time-to-decision figures (those are calls'). The session's trace has no event for a mode change."""
        operator = check_operator(operator)
        session = self._session(session_id)
        live = session.live
        if live is None or session.phase in (RowPhase.QUEUED, RowPhase.ENDED, RowPhase.FAILED):
            raise DeskRefused(f"session {session_id} is not running")
        mode = live.supervisor.mode
        if mode is not SupervisionMode.STEP:
            raise DeskRefused(f"session {session_id} is not in step mode (its mode is {mode.value!r})")
        step = session.item if session.item is not None and session.item.kind is ItemKind.STEP else None
        item = self._item(step.id, operator) if step is not None else None  # (a pending write stays pending)
        waited = round(self.clock() - item.asked_at, 3) if item is not None else None
        if self.audit is not None:  # on disk before it takes effect
            self.audit.write(self._session_record(
                session, item, operator, waited, "resume",
                f"step mode off: runs on in {SupervisionMode.APPROVE_NON_ALLOW.value!r}"))
        if item is not None:
            self._drop_item(session, f"already decided by {operator} (resume)")
        live.set_mode(SupervisionMode.APPROVE_NON_ALLOW)
        self._changed()

    async def decide(self, item_id: str, operator: str, decision: str, *, reason: str = "",
                     arguments: Mapping[str, Any] | None = None) -> None:
        operator = check_operator(operator)
        item = self._item(item_id, operator)
        reason = reason.strip()
        if len(reason) > MAX_REASON:
            raise DeskRefused(f"a reason is at most {MAX_REASON} characters")
        if item.kind is ItemKind.STEP:
            if decision != "step":
                raise DeskRefused(f"item {item_id} is a step: the only decision is step")
            await self.step(item.session.id, operator)
            return
        review = item.review
        assert review is not None
        resolution = self._resolution(item, review, operator, decision, reason, arguments)
        waited = round(self.clock() - item.asked_at, 3)
        resolution = replace(resolution, waited_s=waited)
        if self.audit is not None:  # on disk before it takes effect
            self.audit.write(self._record(item, review, resolution))
        item.session.decided[review.call.id] = item.id
        self._waits.append(waited)
        self._drop_item(item.session, f"{operator} edited its arguments" if resolution.decision is Decision.EDIT
                        else f"already decided by {operator} ({resolution.decision.value})")
        review.resolve(resolution)
        self._changed()

    async def bulk_approve(self, item_ids: Sequence[str], operator: str) -> list[str]:
        """Approve these items at once: every one must be a rule-free ALLOW of the same tool (checked before
        any is decided: all or nothing). Never a force-allow, never a REVISE or BLOCK."""
        operator = check_operator(operator)
        now = self.clock()
        items = [self._item(i, operator) for i in item_ids]
        views = [i.view(now) for i in items]
        bad = [v.id for v in views if not v.rule_free]
        if bad:
            raise DeskRefused(f"bulk approval takes only ALLOWs every rule passed; not {', '.join(bad)}")
        if len({v.tool for v in views}) > 1:
            raise DeskRefused("bulk approval takes one tool at a time")
        for item in items:
            await self.decide(item.id, operator, "approve")
        return [i.id for i in items]

    def _resolution(self, item: _Item, review: PendingReview, operator: str, decision: str, reason: str,
                    arguments: Mapping[str, Any] | None) -> Resolution:
        verdict = None if review.decision is None else review.decision.verdict.value
        allowed = verdict in (None, "ALLOW")
        if decision == "approve":
            return Resolution(Decision.APPROVE if allowed else Decision.ACCEPT_VERDICT, who=operator, reason=reason)
        if decision == "accept_verdict":
            if allowed:
                raise DeskRefused("there is no refusal to accept: the gate allowed this call (approve it)")
            return Resolution(Decision.ACCEPT_VERDICT, who=operator, reason=reason)
        if decision == "veto":
            if not reason:
                raise self._refuse(item, "write the message for the model to veto")
            return Resolution(Decision.VETO, who=operator, reason=reason)
        if decision == "force_allow":
            if allowed:
                raise DeskRefused("only a REVISE or BLOCK can be force-allowed")
            if not reason:
                raise self._refuse(item, "a force-allow needs a reason: it is recorded with your name and the time")
            return Resolution(Decision.FORCE_ALLOW, who=operator, reason=reason)
        if decision == "edit":
            problem = self._edit_problem(item, review, arguments)
            if problem:
                raise self._refuse(item, problem)
            assert arguments is not None
            return Resolution(Decision.EDIT, who=operator, reason=reason,
                              arguments=dict(arguments))
        raise DeskRefused(f"unknown decision {decision!r} (one of {', '.join(DECISIONS)})")

    def _edit_problem(self, item: _Item, review: PendingReview, arguments: Mapping[str, Any] | None) -> str:
        if not isinstance(arguments, Mapping):
            return "the edited arguments must be a JSON object"
        unfit = strict_json.value_problem(dict(arguments))
        if unfit is not None:
            return f"invalid value: {unfit}"
        live = item.session.live
        spec = live.domain.tool(review.call.name) if live is not None else None
        problems = validate_arguments(spec, arguments) if spec is not None else []
        if not problems and dict(arguments) == dict(review.call.arguments):
            return "the arguments are unchanged: an edit changes at least one (nothing is re-gated)"
        return "; ".join(problems)

    def _refuse(self, item: _Item, message: str) -> DeskRefused:
        """Refused input stays with its item (the inbox shows it) until the next attempt."""
        item.error = message
        self._changed()
        return DeskRefused(message)

    def _session_record(self, session: _DeskSession, item: _Item | None, operator: str, waited: float | None,
                        decision: str, reason: str) -> dict[str, Any]:
        """A step or a resume as an audit decision: the same fields as a call's, with no call (`call_id`
        None)."""
        return {
            "type": "decision", "when": self.wall(), "operator": operator, "session": session.id,
            "domain": session.spec.domain, "label": session.label,
            "folder": str(session.live.folder) if session.live is not None and session.live.folder else "",
            "item": item.id if item is not None else None, "call_id": None, "tool": None, "arguments": None,
            "gate_verdict": None, "failing_rules": [], "decision": decision, "reason": reason,
            "edited_arguments": None, "waited_s": waited,
            "asked_when": item.asked_when if item is not None else None,
        }

    def _record(self, item: _Item, review: PendingReview, resolution: Resolution) -> dict[str, Any]:
        view = item.view(self.clock())
        session = item.session
        return {
            "type": "decision", "when": self.wall(), "operator": resolution.who, "session": session.id,
            "domain": session.spec.domain, "label": session.label,
            "folder": str(session.live.folder) if session.live is not None and session.live.folder else "",
            "item": item.id, "call_id": review.call.id, "tool": review.call.name,
            "arguments": strict_json.check_value(dict(review.call.arguments)), "gate_verdict": view.verdict,
            "gate_refusal": view.refusal,
            "failing_rules": [r.id for r in view.failing], "decision": resolution.decision.value,
            "reason": resolution.reason, "edited_arguments": None if resolution.arguments is None
            else dict(resolution.arguments), "waited_s": resolution.waited_s, "asked_when": item.asked_when,
        }
