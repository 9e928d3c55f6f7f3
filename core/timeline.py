"""The ledger as it evolved during a recorded session, rebuilt from the trace alone (the replay slider).

Why rebuild instead of storing snapshots in the trace: the trace already holds every successful read's
return (`ToolResultEvent.result`) and every executed write, and the ledger is a pure function of those
through the domain's path map. Re-absorbing them in order reproduces the session's ledger exactly,
including entry versions (the gate's repeat detection depends on them), without re-running any tool and
without making traces bigger. The same walk (`apply_event`) backs re-gating (`core.regate`), so the state a
re-gated call is judged against is, by construction, the state shown on the slider.

Memory: one immutable snapshot per *change point* (an event that moved the ledger version), not one per
event; `at(seq)` finds the last change point at or before `seq` by binary search. Most events (messages,
gate decisions, writes that stale nothing) share the snapshot before them.

Attribution: a read's return is attributed to its `ToolResultEvent`, a write's staling to the write's
`ToolResultEvent`. (Live, the ledger changes just after that event is emitted and `LedgerUpdated` /
`LedgerStaled` follow; those two only *confirm* the rebuild, see `divergences`.)

Pure core: no domain imports, no UI. The console passes the domain's path map in.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.conversation import said_id
from core.events import (
    AssistantTurnEvent,
    CallInfo,
    Event,
    GateDecided,
    LedgerStaled,
    LedgerUpdated,
    MessageSent,
    PredicateResultInfo,
    SessionStarted,
    SupervisorDecided,
    ToolResultEvent,
)
from core.gate import RefusalKind
from core.ledger import AbsorbResult, Ledger, LedgerDiff, LedgerSnapshot, PathMap
from core.trace import TraceProblem
from core.trace_index import TraceIndex

EMPTY_DIFF = LedgerDiff((), (), (), (), ())

# What the conversation pane shows. Ledger events are left out on purpose: the ledger pane shows their
# effect (the snapshot and its diff), so listing them in the transcript too would say everything twice.
TRANSCRIPT_TYPES = frozenset({
    "session_started", "message", "assistant_turn", "gate_decision", "supervisor_decision", "tool_result",
    "model_retry", "model_error", "session_ended",
})

FAILED_STATUSES = frozenset({"violation", "missing", "error"})


# The events that can move the ledger: tool results (reads absorbed, writes staling) and the conversation's
# messages (what the customer said, core.ledger.Ledger.hear).
LEDGER_EVENT_TYPES = ("tool_result", "message", "assistant_turn")


def _apply(ledger: Ledger, event: object) -> tuple[AbsorbResult | None, list[str] | None]:
    if isinstance(event, MessageSent):
        return ledger.hear(event.role, event.text, event.step), None
    if isinstance(event, AssistantTurnEvent):
        return ledger.hear("assistant", event.text, event.step), None
    if not isinstance(event, ToolResultEvent) or not event.ok or not event.executed:
        return None, None
    if event.kind == "read":
        if event.gate_only:  # another customer's record the gate read for one verdict: never in the ledger
            return None, None
        return ledger.absorb(event.call.to_call(), event.result, event.step, by=event.by), None
    if event.kind == "write":
        return None, ledger.mark_stale(event.call.to_call(), event.step, result=event.result)
    return None, None


def apply_event(ledger: Ledger, event: object) -> bool:
    """Move `ledger` the way the recorded `event` moved the session's ledger; True when it changed.

    A successful executed read is absorbed (a read by the gate too, with that provenance; not a record the gate
    kept for its own eyes, `gate_only`), a successful executed write marks its paths stale, a message is heard
    (what the customer said becomes `conversation.*` facts); nothing else touches the ledger (a refused, failed
    or invalid call observed nothing and changed nothing).
    This is the one definition of "how a trace moves the ledger", shared by the timeline and re-gating.
    """
    before = ledger.version
    _apply(ledger, event)
    return ledger.version != before


def recorded_refusal(event: GateDecided) -> RefusalKind | None:
    """The kind of a recorded REVISE (needs a read, breaks a rule; None for ALLOW and BLOCK), read from the
    statuses its rules recorded: `core.gate.refusal_kind`'s rule, for a decision known only by its event."""
    if event.verdict != "REVISE":
        return None
    failed = [r.status for r in event.results if r.status in FAILED_STATUSES]
    return RefusalKind.NEEDS_READ if failed and all(s == "missing" for s in failed) else RefusalKind.BREAKS_RULE


def failed_ids(results: Iterable[PredicateResultInfo]) -> tuple[str, ...]:
    """Ids of the predicates that objected (violation, missing evidence or error), in gate order."""
    return tuple(r.predicate_id for r in results if r.status in FAILED_STATUSES)


def failed_reason(results: Iterable[PredicateResultInfo]) -> str:
    """`id: reason | id: reason` over the objecting predicates: the same shape `ledgeragent check` prints."""
    return " | ".join(f"{r.predicate_id}: {r.reason}" for r in results if r.status in FAILED_STATUSES)


def _evidence(results: Iterable[PredicateResultInfo]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for result in results:
        for path in result.evidence:
            seen.setdefault(path, None)
    return tuple(seen)


@dataclass(frozen=True)
class GateRow:
    """One recorded gate decision, linked to what happened next (as far as the events given show).

    `override` is the operator's resolution of this decision, if a human resolved it; `result` is the
    call's tool result when this decision was the call's last one (an edited call gets a new decision
    for the edited arguments, and the result belongs to that one). Both are None while still pending
    at the cut (`until`), which is what the slider should show mid-step.
    """

    seq: int
    step: int
    call: CallInfo
    verdict: str
    failed: tuple[str, ...]
    reason: str
    evidence: tuple[str, ...]
    feedback: str
    escalated: bool
    repeated: bool
    results: tuple[PredicateResultInfo, ...]
    override: SupervisorDecided | None = None
    result: ToolResultEvent | None = None

    @property
    def executed(self) -> bool | None:
        """Whether the call ran after this decision; None when unknown at the cut or superseded by an edit."""
        return None if self.result is None else self.result.executed

    @property
    def force_allowed(self) -> bool:
        return self.override is not None and self.override.decision == "force_allow"


def _cut(events: Sequence[Any], until: int | None) -> Sequence[Any]:
    return events if until is None else [e for e in events if e.seq <= until]


def gate_rows(events: Sequence[Event], until: int | None = None) -> list[GateRow]:
    """Every `GateDecided` (with seq <= `until`), with its call, verdict, failed ids, reason and evidence."""
    rows: list[GateRow] = []
    open_rows: dict[str, int] = {}  # call id -> index of its latest decision that has no result yet
    for event in _cut(events, until):
        if isinstance(event, GateDecided):
            open_rows[event.call.id] = len(rows)
            rows.append(GateRow(
                seq=event.seq, step=event.step, call=event.call, verdict=event.verdict,
                failed=failed_ids(event.results), reason=failed_reason(event.results),
                evidence=_evidence(event.results), feedback=event.feedback, escalated=event.escalated,
                repeated=event.repeated, results=tuple(event.results)))
        elif isinstance(event, SupervisorDecided):
            index = open_rows.get(event.call.id)
            if index is not None and rows[index].override is None:
                rows[index] = replace(rows[index], override=event)
        elif isinstance(event, ToolResultEvent):
            index = open_rows.pop(event.call.id, None)
            if index is not None:
                rows[index] = replace(rows[index], result=event)
    return rows


def transcript_events(events: Sequence[Event], until: int | None = None) -> list[Event]:
    """The events the conversation pane shows (messages, turns, verdicts, overrides, results), up to `until`."""
    return [e for e in _cut(events, until) if e.type in TRANSCRIPT_TYPES]


@dataclass(frozen=True)
class TimelineFrame:
    """Everything the console's panes show at one slider position."""

    seq: int
    step: int
    ledger: LedgerSnapshot
    changes: LedgerDiff  # what the event at `seq` did to the ledger
    gate_rows: list[GateRow]
    transcript: list[Event]


class LedgerTimeline:
    """The rebuilt ledger at every point of a recorded session. Build it with `LedgerTimeline.build`.

    `tracked` is False for a plain function-calling session (`agent == "fc"`): that session kept no
    ledger, so what the timeline shows is the ledger the method *would* have had from the same reads
    (useful for comparing, but it was never shown to that model). `divergences` lists every place where the
    rebuilt ledger disagrees with the `LedgerUpdated` / `LedgerStaled` events the session recorded: empty
    for a trace replayed with the path map it was recorded with, non-empty when the path map has changed
    since (the console should say so rather than silently show a different ledger).
    """

    def __init__(self, events: Sequence[Event], change_seqs: list[int], snapshots: list[LedgerSnapshot],
                 *, tracked: bool, divergences: Sequence[str]) -> None:
        self.events: tuple[Event, ...] = tuple(events)
        self.tracked = tracked
        self.divergences: tuple[str, ...] = tuple(divergences)
        self._seqs = [e.seq for e in self.events]
        self._change_seqs = change_seqs
        self._snapshots = snapshots
        self._empty = LedgerSnapshot({}, 0)
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for event in self.events:
            first.setdefault(event.step, event.seq)
            last[event.step] = event.seq
        self._step_first = first
        self._step_last = last
        self._steps = sorted(last)

    @classmethod
    def build(cls, events: Sequence[Event], path_map: PathMap) -> LedgerTimeline:
        """Replay `events` (in order, strictly increasing `seq`, as an EventBus or a trace file gives them).

        Raises ValueError when the seqs do not increase: binary search needs them ordered, and events that
        were never numbered (all seq 0) would silently collapse into one slider position.
        """
        previous: int | None = None
        for event in events:
            if previous is not None and event.seq <= previous:
                raise ValueError(f"events must have strictly increasing seq (as numbered by EventBus); "
                                 f"seq {event.seq} ({event.type}) follows seq {previous}")
            previous = event.seq
        tracked = True
        ledger = Ledger(path_map)
        change_seqs: list[int] = []
        snapshots: list[LedgerSnapshot] = []
        divergences: list[str] = []
        pending_updates: dict[str, tuple[int, AbsorbResult, int]] = {}
        pending_stales: dict[str, tuple[int, list[str], int]] = {}
        for event in events:
            if isinstance(event, SessionStarted):
                tracked = event.agent != "fc"
            if isinstance(event, ToolResultEvent | MessageSent | AssistantTurnEvent):
                before = ledger.version
                absorbed, staled = _apply(ledger, event)
                if ledger.version != before:
                    change_seqs.append(event.seq)
                    snapshots.append(ledger.snapshot())
                call_id = event.call.id if isinstance(event, ToolResultEvent) \
                    else said_id(ledger.hearing.customer_messages)
                if absorbed is not None and absorbed.touched:
                    pending_updates[call_id] = (event.seq, absorbed, ledger.version)
                if staled:
                    pending_stales[call_id] = (event.seq, staled, ledger.version)
            elif isinstance(event, LedgerUpdated):
                divergences.extend(_check_update(event, pending_updates.pop(event.call_id, None)))
            elif isinstance(event, LedgerStaled):
                divergences.extend(_check_stale(event, pending_stales.pop(event.call_id, None)))
        if tracked:
            for seq, absorbed_left, _ in pending_updates.values():
                divergences.append(f"seq {seq}: the rebuilt ledger absorbed {', '.join(absorbed_left.touched)} "
                                   "but the session recorded no ledger update for this call")
            for seq, staled_left, _ in pending_stales.values():
                divergences.append(f"seq {seq}: the rebuilt ledger marked {', '.join(staled_left)} stale but the "
                                   "session recorded no staling for this call")
        return cls(events, change_seqs, snapshots, tracked=tracked, divergences=divergences)

    # ----------------------------------------------------------------------------------- positions

    @property
    def first_seq(self) -> int:
        return self._seqs[0] if self._seqs else 0

    @property
    def last_seq(self) -> int:
        return self._seqs[-1] if self._seqs else 0

    @property
    def final(self) -> LedgerSnapshot:
        """The ledger at the end of the recorded events."""
        return self._snapshots[-1] if self._snapshots else self._empty

    def change_points(self) -> list[int]:
        """The seqs of the events that changed the ledger (slider tick marks)."""
        return list(self._change_seqs)

    def steps(self) -> list[int]:
        """The step numbers present in the events, ascending (step 0 is the session start and greeting)."""
        return list(self._steps)

    def step_of(self, seq: int) -> int:
        """The step of the last event at or before `seq` (0 before the first event)."""
        index = bisect_right(self._seqs, seq) - 1
        return self.events[index].step if index >= 0 else 0

    def last_seq_of_step(self, step: int) -> int | None:
        return self._step_last.get(step)

    # ----------------------------------------------------------------------------------- ledger states

    def at(self, seq: int) -> LedgerSnapshot:
        """The ledger after the event with this seq (any int works: after every event with seq <= it)."""
        index = bisect_right(self._change_seqs, seq) - 1
        return self._snapshots[index] if index >= 0 else self._empty

    def before(self, seq: int) -> LedgerSnapshot:
        """The ledger just before the event with this seq (after every event with a smaller seq)."""
        index = bisect_left(self._change_seqs, seq) - 1
        return self._snapshots[index] if index >= 0 else self._empty

    def at_step(self, step: int) -> LedgerSnapshot:
        """The ledger at the end of `step` (for a step not present: at the end of the last step before it).

        Relies on steps never decreasing along the trace, which the session guarantees (a failed model call
        retried keeps its step number; nothing goes back).
        """
        index = bisect_right(self._steps, step) - 1
        if index < 0:
            return self._empty
        return self.at(self._step_last[self._steps[index]])

    def changes(self, seq: int) -> LedgerDiff:
        """What the event with this seq did to the ledger (empty for events that touch no ledger path)."""
        return self.at(seq).diff(self.before(seq))

    def step_changes(self, step: int) -> LedgerDiff:
        """What the whole step did to the ledger (empty for a step not present)."""
        first = self._step_first.get(step)
        if first is None:
            return EMPTY_DIFF
        return self.at(self._step_last[step]).diff(self.before(first))

    # ----------------------------------------------------------------------------------- panes

    def events_until(self, seq: int) -> list[Event]:
        """The recorded events with seq <= `seq`, in order."""
        return list(self.events[:bisect_right(self._seqs, seq)])

    def gate_rows(self, until: int | None = None) -> list[GateRow]:
        return gate_rows(self.events if until is None else self.events_until(until))

    def transcript(self, until: int | None = None) -> list[Event]:
        return transcript_events(self.events if until is None else self.events_until(until))

    def frame(self, seq: int) -> TimelineFrame:
        """The console's panes at slider position `seq`: ledger, its change, verdicts and transcript so far."""
        shown = self.events_until(seq)
        return TimelineFrame(seq=seq, step=self.step_of(seq), ledger=self.at(seq), changes=self.changes(seq),
                             gate_rows=gate_rows(shown), transcript=transcript_events(shown))


def _check_update(event: LedgerUpdated, rebuilt: tuple[int, AbsorbResult, int] | None) -> list[str]:
    if rebuilt is None:
        return [f"seq {event.seq}: the session absorbed {', '.join(event.added + event.changed + event.refreshed)} "
                f"from {event.tool} but the rebuilt ledger absorbed nothing for that call"]
    _, absorbed, version = rebuilt
    recorded = (tuple(event.added), tuple(event.changed), tuple(event.refreshed), event.version)
    mine = (absorbed.added, absorbed.changed, absorbed.refreshed, version)
    if recorded == mine:
        return []
    return [f"seq {event.seq}: {event.tool} recorded added={list(recorded[0])} changed={list(recorded[1])} "
            f"refreshed={list(recorded[2])} version={recorded[3]}, rebuilt added={list(mine[0])} "
            f"changed={list(mine[1])} refreshed={list(mine[2])} version={mine[3]}"]


def _check_stale(event: LedgerStaled, rebuilt: tuple[int, list[str], int] | None) -> list[str]:
    if rebuilt is None:
        return [f"seq {event.seq}: the session marked {', '.join(event.paths)} stale after {event.tool} but the "
                "rebuilt ledger marked nothing"]
    _, staled, version = rebuilt
    if (list(event.paths), event.version) == (staled, version):
        return []
    return [f"seq {event.seq}: {event.tool} recorded stale {event.paths} at version {event.version}, rebuilt "
            f"{staled} at version {version}"]


# ----------------------------------------------------------------------------------- replay of a trace file

# Events shown in the conversation at one step: the last ones up to it (about a hundred steps of a long
# session). Every one is drawn when the step is shown, so the window bounds what a slider move costs; the gate
# pane still gets every decision before it (`StepView.gate_events`).
REPLAY_WINDOW = 500
# Ledger snapshots kept while walking (going back restarts from the last one before the step): one every
# CHECKPOINT_EVERY events, and at most MAX_CHECKPOINTS in all (a long session's snapshots each hold the records
# read since the one before: 25 of them were 150 MB of a 50k-event replay).
CHECKPOINT_EVERY = 2_000
MAX_CHECKPOINTS = 6
CACHE_EVENTS = REPLAY_WINDOW + 2_000  # parsed events kept, so moving one step re-reads only that step


@dataclass(frozen=True)
class StepView:
    """What the replay's panes show at one step, read from the trace for that step alone.

    `events`: the last REPLAY_WINDOW events up to the step's end, in order (all of them in a trace that size or
    smaller), for every pane. `gate_events`: the gate decisions, operator decisions and gated calls' results
    before that window, for the gate pane only, so its rows and counts always cover the whole session so far.
    `ledger`: the rebuilt ledger at the step's end; `flash`: the paths the step added. `problems`: unreadable
    lines met while reading this view (each reported once)."""

    step: int
    events: tuple[Event, ...]
    gate_events: tuple[Event, ...]
    ledger: LedgerSnapshot
    flash: tuple[str, ...]
    problems: tuple[str, ...] = ()
    skipped: int = 0  # events before the window that the conversation does not show
    appended: bool = False  # `events` follow the step shown before: add them, clear nothing


class TraceTimeline:
    """A recorded session for the replay, read on demand through its `TraceIndex`: opening costs one pass over
    the file's bytes, a step costs the lines it needs (its window and the ledger's walk to it), never the whole
    trace, and memory stays bounded by the window, the event cache and a few ledger snapshots.

    The ledger is the one `apply_event` rebuilds (as `LedgerTimeline`), kept by a cursor that walks forward
    through the tool results; a step before the cursor restarts from the last snapshot at or before it (one
    `spacing` events, see MAX_CHECKPOINTS). Thread-safe: the console builds views in a worker thread."""

    def __init__(self, index: TraceIndex, path_map: PathMap) -> None:
        self.index = index
        first = index.read([0])[0] if len(index) else None
        self.started: SessionStarted | None = first if isinstance(first, SessionStarted) else None
        self.tracked = self.started is None or self.started.agent != "fc"
        self._lock = threading.Lock()
        self._ledger = Ledger(path_map)
        self._position = -1  # the ledger holds every event at or before this position
        self.spacing = max(CHECKPOINT_EVERY, -(-len(index) // MAX_CHECKPOINTS))  # events between snapshots
        self._checkpoints: dict[int, LedgerSnapshot] = {-1: self._ledger.snapshot()}
        self._cache: OrderedDict[int, Event | TraceProblem] = OrderedDict()
        self._reported: set[int] = {p.line for p in index.problems}
        self._new_problems: list[str] = []

    @classmethod
    def of_events(cls, events: Sequence[Event], path_map: PathMap) -> TraceTimeline:
        return cls(TraceIndex.of_events(events), path_map)

    # ----------------------------------------------------------------------------------- reading

    def _items(self, positions: Sequence[int]) -> list[Event | None]:
        """The events at `positions`, None for an unreadable line (noted once for the view's problems)."""
        missing = [p for p in positions if p not in self._cache]
        for position, item in zip(missing, self.index.read(missing), strict=True):
            self._cache[position] = item
        found: list[Event | None] = []
        for position in positions:
            item = self._cache[position]
            self._cache.move_to_end(position)
            if isinstance(item, TraceProblem):
                if item.line not in self._reported:
                    self._reported.add(item.line)
                    self._new_problems.append(f"line {item.line}: {item.message}")
                found.append(None)
            else:
                found.append(item)
        while len(self._cache) > CACHE_EVENTS:
            self._cache.popitem(last=False)
        return found

    def _read(self, positions: Sequence[int]) -> list[Event]:
        return [event for event in self._items(positions) if event is not None]

    def _span(self, step: int, after: int | None) -> tuple[int, int, bool]:
        """(first position to read, the step's last position, whether that appends to what `after` showed)."""
        cut = self.index.last_of_step(step)
        cut = len(self.index) - 1 if cut is None else cut
        shown = None if after is None else self.index.last_of_step(after)
        if shown is not None and shown < cut and cut - shown <= REPLAY_WINDOW:
            return shown + 1, cut, True
        return max(0, cut + 1 - REPLAY_WINDOW), cut, False

    def cost(self, step: int, after: int | None = None) -> int:
        """About how many events showing `step` (with `after` shown now) has to parse: the console shows a cheap
        step at once and builds an expensive one (a jump far into a big trace) in a worker."""
        start, cut, appended = self._span(step, after)
        walk_from = self._position + 1 if cut >= self._position else 0
        uncached = sum(1 for p in range(start, cut + 1) if p not in self._cache)
        gate = len(self.index.positions("gate_decision", 0, start)) if start and not appended else 0
        return uncached + len(self._ledger_positions(walk_from, cut + 1)) + gate

    def _ledger_positions(self, start: int, stop: int) -> list[int]:
        """Positions in [start, stop) of the events that can move the ledger (LEDGER_EVENT_TYPES), in order."""
        return sorted(p for kind in LEDGER_EVENT_TYPES for p in self.index.positions(kind, start, stop))

    # ----------------------------------------------------------------------------------- the ledger

    def _walk_to(self, position: int) -> LedgerSnapshot:
        """The rebuilt ledger after every event at or before `position`."""
        if position < self._position:
            start = max(p for p in self._checkpoints if p <= position)
            self._ledger.restore(self._checkpoints[start])
            self._position = start
        results = self._ledger_positions(self._position + 1, position + 1)
        for chunk in range(0, len(results), 500):
            batch = results[chunk:chunk + 500]
            for at, event in zip(batch, self._items(batch), strict=True):
                self._checkpoint_before(at)
                if event is not None:
                    apply_event(self._ledger, event)
                self._position = at
        self._checkpoint_before(position + 1)
        self._position = max(self._position, position)
        return self._ledger.snapshot()

    def _checkpoint_before(self, position: int) -> None:
        """Keep a snapshot at the `spacing` boundary the cursor passes on its way to `position` (the
        ledger holds exactly the events before `position` then, so the boundary passed has that state)."""
        boundary = (self._position // self.spacing + 1) * self.spacing - 1
        if boundary < position and boundary not in self._checkpoints:
            self._checkpoints[boundary] = self._ledger.snapshot()

    # ----------------------------------------------------------------------------------- views

    def steps(self) -> list[int]:
        return self.index.steps()

    def view(self, step: int, after: int | None = None) -> StepView:
        """The panes at the end of `step` (a step not present: at the end of the trace). With `after` (the step
        shown now) before `step` and close enough, the view only appends the events in between (`appended`):
        stepping forward through a long session costs each step's own events, not a window's."""
        with self._lock:
            self._new_problems = []
            start, cut, appended = self._span(step, after)
            first = self.index.first_of_step(step)
            before = self._walk_to((cut if first is None else first) - 1)
            ledger = self._walk_to(cut)
            events = self._read(range(start, cut + 1))
            gate_events = self._read(self._gate_positions(start)) if start and not appended else []
            flash = ledger.diff(before).added if self.tracked else ()
            return StepView(step, tuple(events), tuple(gate_events), ledger, flash, tuple(self._new_problems),
                            0 if appended else start, appended)

    def _gate_positions(self, stop: int) -> list[int]:
        """Positions before `stop` of gate decisions, operator decisions and the results of gated calls."""
        decisions = list(self.index.positions("gate_decision", 0, stop))
        gated = {self.index.call_ids.get(p) for p in decisions}
        linked = [p for kind in ("supervisor_decision", "tool_result") for p in self.index.positions(kind, 0, stop)
                  if self.index.call_ids.get(p) in gated]
        return sorted(decisions + linked)

    def gate_rows(self) -> list[GateRow]:
        """Every gate decision of the session with its operator decision and result (`gate_rows`), read now."""
        with self._lock:
            return gate_rows(self._read(self._gate_positions(len(self.index))))

    def of_type(self, kind: str) -> list[Event]:
        """Every event of one type (the audit's operator decisions, the ending): read from the file now."""
        with self._lock:
            positions = list(self.index.positions(kind))
            return [e for chunk in range(0, len(positions), 1000) for e in self._read(positions[chunk:chunk + 1000])]

    def escalated(self) -> bool:
        """Whether any gate decision was escalated to BLOCK after repeated REVISE (the ending's category): the
        index's candidates (lines that say so in their bytes), confirmed by reading them."""
        with self._lock:
            return any(isinstance(e, GateDecided) and e.escalated for e in self._read(self.index.escalated))
