"""Re-gating a recorded session ("what would the gate say now?") and exporting it as a check fixture.

`regate` answers the predicate workbench's question: with the predicates as they are *now* (edited,
added, disabled), which of the verdicts this session got would change? It never re-executes a tool: it
walks the trace, rebuilding the ledger exactly as `core.timeline` does (`apply_event`), and at each
recorded `GateDecided` asks a fresh `PolicyGate` about the same call against the ledger as it was at that
moment.

`export_trajectory` turns the session into `ledgeragent check` lines, so a debugging session becomes a
regression fixture: replaying the lines through `core.replay.Checker` on a fresh copy of the session's
starting database reproduces every exported expectation (tested on the shipped retail scenarios).

Pure core: the caller passes the `Domain` in; nothing here imports a domain package.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.domain import Domain
from core.events import Event, GateDecided, SessionStarted, SupervisorDecided, ToolResultEvent
from core.evidence import PrivateOverlay
from core.gate import GateDecision, PolicyGate, Predicate
from core.ledger import Ledger, LedgerEntry
from core.private_files import make_dirs, write_text
from core.timeline import apply_event, failed_ids, failed_reason


@dataclass(frozen=True)
class RegateRow:
    """One recorded gate decision next to what the current predicates say about the same call.

    `changed` is True when the verdict differs or any rule's status does (pass / violation / missing /
    error): a rule that went from a violation to crashing gives the same verdict and the same objecting
    rule, yet the gate now fails closed on a bug instead of judging, which is exactly what a re-gate after
    an edit must show. A rule that passed and is now disabled (or was not there) objects on neither side,
    so it is no change; a reworded reason alone is not one either (the diff shows decisions, not prose).
    """

    index: int  # position among the recorded gate decisions, 0-based
    seq: int
    step: int
    name: str
    arguments: dict[str, Any]
    old_verdict: str
    new_verdict: str
    old_failed: tuple[str, ...]
    new_failed: tuple[str, ...]
    old_reason: str
    new_reason: str  # `id: reason | ...` over the objecting predicates, as `ledgeragent check` prints it
    new_feedback: str  # exactly what the model would have been told
    changed: bool
    decision: GateDecision  # the full new decision (per-predicate results, evidence, escalation)
    old_statuses: tuple[tuple[str, str], ...] = ()  # (rule id, status) as recorded, in gate order
    new_statuses: tuple[tuple[str, str], ...] = ()  # (rule id, status) from the current rules

    @property
    def new_evidence(self) -> tuple[str, ...]:
        return self.decision.evidence

    @property
    def status_changes(self) -> tuple[tuple[str, str, str], ...]:
        """(rule id, old status, new status) for each rule whose judgement differs, in gate order.

        A rule that does not judge on one side (disabled, removed, added) counts as `pass` there when it
        passes on the other: only an objection appearing, disappearing or changing kind is a change."""
        return status_changes(self.old_statuses, self.new_statuses)


def status_changes(old: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]],
                   ) -> tuple[tuple[str, str, str], ...]:
    """Rules whose status differs between two decisions on one call, as (id, old, new).

    Statuses outside pass / violation / missing / error (a disabled rule) and a rule absent from one side
    read as `pass` there, the judgement they amount to: neither objects."""
    def judged(statuses: Sequence[tuple[str, str]]) -> dict[str, str]:
        return {rule: status for rule, status in statuses if status in _JUDGED}

    before, after = judged(old), judged(new)
    changes: list[tuple[str, str, str]] = []
    for rule in dict.fromkeys([*before, *after]):
        was, now = before.get(rule, "pass"), after.get(rule, "pass")
        if was != now:
            changes.append((rule, was, now))
    return tuple(changes)


_JUDGED = frozenset({"pass", "violation", "missing", "error"})


def _new_reason(decision: GateDecision) -> str:
    reason = " | ".join(f"{r.predicate_id}: {r.reason}" for r in decision.failed)
    if decision.escalated:
        reason += " (escalated to BLOCK after repeated REVISE)"
    return reason


def _session_domain(events: Iterable[Event]) -> str | None:
    for event in events:
        if isinstance(event, SessionStarted):
            return event.domain
    return None


def regate(events: Sequence[Event], domain: Domain, *, predicates: Sequence[Predicate] | None = None,
           disabled: Iterable[str] = (), max_revise_streak: int = 3) -> list[RegateRow]:
    """Re-judge every recorded gate decision with `predicates` (default: the domain's, as they are now).

    Anti-loop memory. `PolicyGate` remembers rejected calls (an identical call with the ledger unchanged
    is rejected again without re-running the rules) and counts REVISE streaks per rule (escalating to
    BLOCK). A fresh gate that is shown every recorded decision's call, in order, against a ledger whose
    versions match the session's (the rebuild reproduces them), builds up the same memory the live gate
    had, so with unchanged predicates every verdict, including `repeated` and `escalated` ones, comes out
    the same. When a verdict does change, the memory after it is what the *new* gate would have had for
    the same calls: e.g. a REVISE that now passes no longer counts toward a streak, so a later escalation
    may disappear. Edited calls were gated once per argument set; both decisions are recorded and both
    are re-judged, the edit's (the decision after an operator's `edit`) as live: outside the anti-loop memory.

    What this does not answer: the calls after a changed verdict are the ones the model made in reaction to
    the *old* verdict. Re-gating says whether the current rules would object to these exact calls, not how
    the conversation would have gone. Sessions run without a gate (fc, ledger-no-gate) recorded no
    decisions and give no rows; `SessionStarted.disabled_predicates` lists what that session had disabled,
    which the caller may pass as `disabled` to compare like with like.

    Raises ValueError for a trace of another domain, or for a `disabled` id no predicate has (a typo in the
    workbench must not silently compare against an unchanged gate).
    """
    recorded = _session_domain(events)
    if recorded is not None and recorded != domain.name:
        raise ValueError(f"this trace is from domain {recorded!r}, not {domain.name!r}")
    chosen = list(domain.predicates if predicates is None else predicates)
    off = set(disabled)
    unknown = sorted(off - {p.id for p in chosen})
    if unknown:
        raise ValueError(f"cannot disable unknown predicate(s) {', '.join(unknown)}; known: "
                         f"{', '.join(p.id for p in chosen)}")
    gate = PolicyGate(chosen, max_revise_streak=max_revise_streak, disabled=off, path_map=domain.path_map)
    ledger = Ledger(domain.path_map)
    rows: list[RegateRow] = []
    private: dict[str, dict[str, LedgerEntry]] = {}  # write call id -> records the gate read for its eyes only
    edited: set[str] = set()  # calls an operator edited: their next decision judges the edit, not a proposal
    for event in events:
        if isinstance(event, SupervisorDecided) and event.decision == "edit":
            edited.add(event.call.id)
        if isinstance(event, ToolResultEvent) and event.gate_only and event.for_call is not None:
            private.setdefault(event.for_call, {}).update(
                ledger.preview(event.call.to_call(), event.result, event.step, by=event.by))
        if not isinstance(event, GateDecided):
            apply_event(ledger, event)
            continue
        kept = private.pop(event.call.id, None)
        judged = PrivateOverlay(ledger, kept) if kept else ledger
        proposal = event.call.id not in edited  # an operator's edit leaves the anti-loop memory as it was, as live
        edited.discard(event.call.id)
        decision = gate.evaluate(event.call.to_call(), judged, domain.context(ledger), proposal=proposal)
        old_failed = failed_ids(event.results)
        new_failed = tuple(r.predicate_id for r in decision.failed)
        new_verdict = decision.verdict.value
        old_statuses = tuple((r.predicate_id, r.status) for r in event.results)
        new_statuses = tuple((r.predicate_id, r.status.value) for r in decision.results)
        rows.append(RegateRow(
            index=len(rows), seq=event.seq, step=event.step, name=event.call.name,
            arguments=dict(event.call.arguments), old_verdict=event.verdict, new_verdict=new_verdict,
            old_failed=old_failed, new_failed=new_failed, old_reason=failed_reason(event.results),
            new_reason=_new_reason(decision), new_feedback=decision.feedback,
            changed=(new_verdict != event.verdict or set(new_failed) != set(old_failed)
                     or bool(status_changes(old_statuses, new_statuses))),
            decision=decision, old_statuses=old_statuses, new_statuses=new_statuses))
    return rows


class WriteJudge:
    """Judges the writes of a growing trace as its events arrive (`feed`), so a view that follows a live session
    re-judges only what is new. The gate's memory builds up over the calls as it would live. The rules are the
    domain's less the ones the session had disabled (its `session_started` says which): the rules a gated
    session of the same spec ran with."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.gate = self._gate(())
        self.ledger = Ledger(domain.path_map)
        self.seen = 0
        self.rows: list[tuple[ToolResultEvent, GateDecision]] = []

    def _gate(self, disabled: Iterable[str]) -> PolicyGate:
        known = {p.id for p in self.domain.predicates}
        return PolicyGate(list(self.domain.predicates), path_map=self.domain.path_map,
                          disabled=frozenset(disabled) & known)

    def feed(self, events: Sequence[Event]) -> list[tuple[ToolResultEvent, GateDecision]]:
        """Judge the events past the ones already seen; returns every row so far."""
        for event in events[self.seen:]:
            if isinstance(event, SessionStarted):
                self.gate = self._gate(event.disabled_predicates)
            if isinstance(event, ToolResultEvent) and event.kind == "write" and event.call.requestor != "user":
                context = self.domain.context(self.ledger)
                self.rows.append((event, self.gate.evaluate(event.call.to_call(), self.ledger, context)))
            apply_event(self.ledger, event)
        self.seen = max(self.seen, len(events))
        return self.rows


def judge_writes(events: Sequence[Event], domain: Domain) -> list[tuple[ToolResultEvent, GateDecision]]:
    """What the domain's gate says about every write the session proposed, judged after the fact with the same
    rules against the ledger as it was at that moment: also for a session that ran without a gate (the
    function-calling baseline), whose writes no gate ever saw. Each write's `ToolResultEvent` (executed or not)
    with the decision; nothing is re-executed."""
    return WriteJudge(domain).feed(events)


# ---------------------------------------------------------------------------------------------------
# Export as a `ledgeragent check` trajectory.


@dataclass(frozen=True)
class OmittedCall:
    """A recorded call left out of the export, and why check could not express it."""

    seq: int
    step: int
    name: str
    reason: str


@dataclass(frozen=True)
class TrajectoryExport:
    """The session's calls as check lines, plus what was left out and what may not reproduce.

    `warnings` name lines after which check's run may part from the session (force-allowed calls);
    `disabled_predicates` are those the session ran with disabled: check the file with the same set
    (`Checker(disabled=...)`) or expect the verdicts those rules would have given.
    """

    lines: list[dict[str, Any]]
    omitted: tuple[OmittedCall, ...] = ()
    warnings: tuple[str, ...] = ()
    disabled_predicates: tuple[str, ...] = ()

    @property
    def omitted_count(self) -> int:
        return len(self.omitted)

    def to_jsonl(self) -> str:
        return to_jsonl(self.lines)


def _line(name: str, arguments: Mapping[str, Any], expect: str, note: str = "",
          gate: GateDecided | None = None) -> dict[str, Any]:
    """A check line; for a gated write also which rules objected and which of those crashed, so a fixture
    expecting REVISE from rule X fails when the REVISE comes from a crash or from another rule."""
    line: dict[str, Any] = {"name": name, "arguments": dict(arguments), "expect": expect}
    if gate is not None:
        line["expect_rules"] = list(failed_ids(gate.results))
        line["expect_crashed"] = [r.predicate_id for r in gate.results if r.status == "error"]
    if note:
        line["note"] = note
    return line


def export_trajectory(events: Sequence[Event], *, include_reads: bool = True) -> TrajectoryExport:
    """The session's calls, in order, as `{"name", "arguments", "expect"}` lines for `ledgeragent check`.

    Expectations are chosen so that check, run on a fresh copy of the session's starting database,
    reproduces them:
    - read and generic calls that ran: "ALLOW", or "ERROR" when the tool failed;
    - gated writes: the verdict the gate gave the arguments it saw last (for an operator-edited call these
      are the edited arguments, which are exported), or "ERROR" when the gate allowed it and the tool
      failed;
    - writes in a session without a gate (fc): "ALLOW" / "ERROR" by the tool's outcome. Check gates them,
      so the lines the gate would have objected to fail: that is the point of checking a baseline run.

    Overrides check cannot replay:
    - a FORCE-ALLOWED call ran in the session although the gate said REVISE/BLOCK. It is exported with the
      gate's verdict, because check follows the gate and will not run it; the session's database then
      holds a write the check run lacks, so LATER LINES MAY DIFFER (a warning names the line);
    - a VETOED call the gate allowed is left out (check would run it); a vetoed REVISE/BLOCK is kept with its
      verdict, since check will not run it either.
    Left out and counted in `omitted`: calls the executor refused as invalid (bad JSON, unknown tool, bad
    arguments: check cannot express them, and they never reached the gate), user-side tool calls, and the
    vetoed ALLOWs above. With `include_reads=False` read lines are dropped (not counted): handy for a
    compact list of writes, but the file then no longer reproduces verdicts that need the reads.

    Known limit: an edited call is one line, so the anti-loop memory check builds is missing the
    decisions on the pre-edit arguments; that matters only when the same rule REVISEs it again later.
    """
    lines: list[dict[str, Any]] = []
    omitted: list[OmittedCall] = []
    warnings: list[str] = []
    disabled: tuple[str, ...] = ()
    decisions: dict[str, list[GateDecided]] = {}
    overrides: dict[str, list[SupervisorDecided]] = {}
    for event in events:
        if isinstance(event, SessionStarted):
            disabled = tuple(event.disabled_predicates)
        elif isinstance(event, GateDecided):
            decisions.setdefault(event.call.id, []).append(event)
        elif isinstance(event, SupervisorDecided):
            overrides.setdefault(event.call.id, []).append(event)
        elif isinstance(event, ToolResultEvent):
            gated = decisions.pop(event.call.id, [])
            human = overrides.pop(event.call.id, [])
            exported = _export_call(event, gated, human)
            if isinstance(exported, str):
                omitted.append(OmittedCall(event.seq, event.step, event.call.name, exported))
            elif include_reads or event.kind != "read":
                line, warning = exported
                if warning:
                    warnings.append(f"line {len(lines) + 1} ({event.call.name}, seq {event.seq}): {warning}")
                lines.append(line)
    return TrajectoryExport(lines=lines, omitted=tuple(omitted), warnings=tuple(warnings),
                            disabled_predicates=disabled)


def _export_call(result: ToolResultEvent, gated: Sequence[GateDecided], human: Sequence[SupervisorDecided],
                 ) -> tuple[dict[str, Any], str] | str:
    """One call's line and warning, or why it is left out (a str)."""
    if result.call.requestor != "assistant":
        return "a user-side tool call; check replays the agent's calls only"
    if result.by == "gate":  # a plain read line: the file then reproduces the verdict in either evidence mode
        return _line(result.call.name, result.call.arguments, "ALLOW" if result.ok else "ERROR",
                     f"read by the gate for {result.for_call}"), ""
    if result.outcome == "invalid":
        return f"refused as invalid, never gated: {result.content.removeprefix('Error: ')}"
    if not gated:
        if not result.executed:
            return f"not executed ({result.outcome}) without a gate decision; check would run it"
        return _line(result.call.name, result.call.arguments, "ALLOW" if result.ok else "ERROR"), ""
    last = gated[-1]
    editors = sorted({o.who for o in human if o.decision == "edit"})
    notes = [f"arguments edited by {', '.join(editors)}; exported as gated last"] if editors else []
    warning = ""
    if last.verdict == "ALLOW":
        if result.outcome == "vetoed":
            return "vetoed by the operator although the gate allowed it; check would run it"
        if result.outcome == "undecided":
            return "no operator decided it in time although the gate allowed it; check would run it"
        expect = "ALLOW" if result.ok else "ERROR"
    else:
        expect = last.verdict
        forced = [o for o in human if o.decision == "force_allow"]
        if result.executed and forced:
            notes.append(f"force-allowed by {forced[-1].who} ({forced[-1].reason}): ran in the session "
                         f"({result.outcome}), check will not run it")
            if result.ok:
                warning = ("force-allowed in the session, where it ran; check will not run it, so later lines "
                           "may differ")
    return _line(last.call.name, last.call.arguments, expect, "; ".join(notes), last), warning


def to_jsonl(lines: Iterable[Mapping[str, Any]]) -> str:
    """One JSON object per line (UTF-8, key order kept: name, arguments, expect, note)."""
    return "".join(json.dumps(dict(line), ensure_ascii=False) + "\n" for line in lines)


def write_trajectory(path: Path, lines: Iterable[Mapping[str, Any]]) -> Path:
    """Write `lines` as a JSONL trajectory `ledgeragent check` reads; creates parent folders."""
    make_dirs(path.parent)
    write_text(path, to_jsonl(lines))  # a new file 0600: it holds the session's calls (core.private_files)
    return path
