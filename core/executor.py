"""One proposed tool call, end to end: check it, gate it, let the supervisor see it, run it, absorb it.

The agent loop, `ledgeragent check` and re-gating all go through this one path, so a verdict shown in
the console is exactly the verdict the agent got.

Dual control (telecom): a call carries its requestor. The customer's own tools (their phone) run through
this same path with requestor "user": validated, recorded as events and absorbed like any call, but never
gated (the gate guards the agent's writes; a customer toggling their own phone needs no permission) and
never reviewed by the supervisor. A call whose requestor does not match its tool's is refused as unknown,
so the agent cannot reach a phone tool and the user proxy cannot reach an agent tool.

Evidence assist (`EvidenceMode.ASSIST`, core.evidence): when the only objections to a write are missing or
stale evidence the domain declares the gate may read, the executor makes those reads itself before anyone
reviews the write, absorbs them (provenance: read by the gate; events `ToolResultEvent(by="gate")`), and
judges again; one `GateDecided` records the verdict the write got and the reads it took (`gate_reads`). The
write's result tells the model which reads the gate made, and the records reach it in the ledger block
like any read. A record that is not the customer's is judged but never absorbed (`gate_only`). A read that
fails is recorded as failed, named in the result, and the write stays REVISE.

After every executed call the backend's `sync()` hook runs, when it has one: tau2-bench's
`Environment.get_response` syncs after every tool call, which also covers its orchestrator's sync after
every step (between calls nothing else changes the state). What changed is recorded as one
`EnvironmentSynced` event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from core.domain import Domain
from core.events import (
    CallInfo,
    EnvironmentSynced,
    EventBus,
    GateDecided,
    LedgerStaled,
    LedgerUpdated,
    SupervisorDecided,
    ToolResultEvent,
)
from core.evidence import (
    MAX_GATE_READS,
    MAX_ROUNDS,
    MAX_SEARCH_READS,
    EvidenceMode,
    PlannedRead,
    PrivateOverlay,
)
from core.gate import GATE_READ_NOTES, GateDecision, GateReadRecord, PolicyGate, RefusalKind, Verdict
from core.ledger import READ_BY_GATE, Ledger, LedgerEntry
from core.strict_json import value_problem
from core.supervisor import Autopilot, Decision, Supervisor, Undecided
from core.tools import (
    Requestor,
    ToolBackend,
    ToolCall,
    ToolError,
    ToolKind,
    format_tool_result,
    validate_arguments,
)

OutcomeKind = Literal["ok", "error", "invalid", "rejected", "vetoed", "undecided"]
MAX_EDITS = 10
WRITE_FINISH_S = 10.0  # how long a stopped session waits for a write it had started (see _finish_write)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


async def sync_environment(backend: ToolBackend, bus: EventBus, step: int) -> tuple[str, ...]:
    """Run the backend's `sync()` hook if it has one; record what it changed. Returns the changes.

    A hook is any awaitable `sync()` returning a sequence of one-line change descriptions (empty when
    nothing changed). Only dual-control backends have one; for the others this does nothing.
    """
    hook = getattr(backend, "sync", None)
    if hook is None:
        return ()
    changes = tuple(str(change) for change in await hook())
    if changes:
        bus.emit(EnvironmentSynced(step=step, changes=list(changes)))
    return changes


@dataclass(frozen=True)
class CallOutcome:
    call: ToolCall  # the call that actually ran (after any operator edit)
    kind: ToolKind | None
    verdict: str  # ALLOW | REVISE | BLOCK | ERROR
    executed: bool
    ok: bool
    outcome: OutcomeKind
    content: str  # exactly what the model is given as the tool result
    result: Any = None
    decision: GateDecision | None = None


class CallExecutor:
    def __init__(self, domain: Domain, backend: ToolBackend, bus: EventBus, *, ledger: Ledger | None,
                 gate: PolicyGate | None, supervisor: Supervisor | None = None,
                 clock: Callable[[], str] = utc_now, evidence: EvidenceMode = EvidenceMode.ASK) -> None:
        self.domain = domain
        self.backend = backend
        self.bus = bus
        self.ledger = ledger
        self.gate = gate
        self.supervisor: Supervisor = supervisor or Autopilot()
        self.clock = clock
        self.evidence = evidence

    async def execute(self, call: ToolCall, step: int) -> CallOutcome:
        call = call.hardened()  # NaN, a lone surrogate or deep nesting: refused below as unparseable
        unfit = self._unfit(call)
        if unfit is not None:
            return self._refuse(call, step, unfit[0], "invalid", unfit[1])
        spec = self.domain.tool(call.name)
        assert spec is not None
        if spec.kind is not ToolKind.WRITE or call.requestor is Requestor.USER:
            return await self._run(call, spec.kind, step, None)
        return await self._gated_write(call, step)

    def _unfit(self, call: ToolCall) -> tuple[ToolKind | None, str] | None:
        """Why the call is refused before anything else happens (its kind when known, and what the model is
        told), or None."""
        spec = self.domain.tool(call.name)
        if call.parse_error is not None:
            return None, f"Error: {call.parse_error}. The call was not executed; send the arguments as a JSON object."
        if spec is None or spec.requestor != call.requestor:
            return None, f"Error: Tool '{call.name}' not found."
        problems = validate_arguments(spec, call.arguments)
        if problems:
            return spec.kind, f"Error: invalid arguments for {call.name}: " + "; ".join(problems)
        return None

    async def dry_run(self, call: ToolCall, step: int = 0) -> DryRun:
        """What sending `call` now would get, judged exactly as `execute` judges it, and nothing recorded.

        The same checks, the same evidence mode, the same verdict path (`_decide`: the gate, then the reads it
        makes itself in ASSIST, then the gate again). Those reads are made (reads change nothing), but into a
        copy of the ledger and onto a bus nobody records, and the gate's anti-loop memory is left as it was: the
        session's ledger, its trace and its later verdicts are what they would have been without the dry-run.
        The decision carries the reads the gate would make (`gate_reads`)."""
        call = call.hardened()
        unfit = self._unfit(call)
        if unfit is not None:
            return DryRun("invalid: " + unfit[1].removeprefix("Error: "), None)
        spec = self.domain.tool(call.name)
        assert spec is not None
        if spec.kind is not ToolKind.WRITE or call.requestor is Requestor.USER:
            return DryRun(f"{spec.kind.value}: not gated, runs immediately", None)
        if self.gate is None or self.ledger is None:
            return DryRun("write: no gate in this agent configuration (it would run)", None)
        scratch = Ledger(self.ledger.path_map)
        scratch.restore(self.ledger.snapshot())
        with self.gate.preview():
            decision = await self._decide(call, step, scratch, EventBus())
        return DryRun(decision.verdict.value, decision)

    async def _gated_write(self, call: ToolCall, step: int) -> CallOutcome:
        for attempt in range(MAX_EDITS):
            # the model's proposal first; after an operator's edit, the edited call (not the model's: it never
            # counts toward the gate's REVISE streaks)
            decision = await self._judge(call, step, proposal=attempt == 0)
            note = gate_read_note(decision)
            try:
                resolution = await self.supervisor.review(call, decision)
            except Undecided as nobody:  # asked, never answered: not run, and no decision on record
                return self._refuse(call, step, ToolKind.WRITE, "undecided", f"{note}NOT EXECUTED: {nobody.message}",
                                    decision)
            unfit = None if resolution.arguments is None else value_problem(dict(resolution.arguments))
            if resolution.is_human:
                self.bus.emit(SupervisorDecided(
                    step=step, call=CallInfo.of(call),
                    gate_verdict=None if decision is None else decision.verdict.value,
                    gate_refusal=None if decision is None or decision.refusal is None else decision.refusal.value,
                    decision=resolution.decision.value, who=resolution.who, when=self.clock(),
                    reason=resolution.reason, waited_s=resolution.waited_s,
                    edited_arguments=None if resolution.arguments is None or unfit is not None
                    else dict(resolution.arguments)))
            if resolution.decision is Decision.EDIT:
                assert resolution.arguments is not None
                if unfit is not None:
                    return self._refuse(call, step, ToolKind.WRITE, "invalid",
                                        f"Error: invalid arguments for {call.name}: invalid value: {unfit}")
                edited = replace(call, arguments=dict(resolution.arguments), raw_arguments=None, parse_error=None)
                spec = self.domain.tool(call.name)
                assert spec is not None
                problems = validate_arguments(spec, edited.arguments)
                if problems:
                    return self._refuse(edited, step, ToolKind.WRITE, "invalid",
                                        f"Error: invalid arguments for {call.name}: " + "; ".join(problems))
                call = edited
                continue
            if resolution.decision is Decision.VETO:
                text = resolution.reason or "no reason given"
                return self._refuse(call, step, ToolKind.WRITE, "vetoed",
                                    f"{note}NOT EXECUTED: a human supervisor vetoed {call.name}: {text}", decision)
            allowed = decision is None or decision.verdict is Verdict.ALLOW
            if resolution.decision is Decision.ACCEPT_VERDICT and not allowed:
                assert decision is not None
                return self._refuse(call, step, ToolKind.WRITE, "rejected", note + decision.feedback, decision)
            if allowed or resolution.decision is Decision.FORCE_ALLOW:
                return await self._run(call, ToolKind.WRITE, step, decision, note)
            assert decision is not None
            return self._refuse(call, step, ToolKind.WRITE, "rejected", note + decision.feedback, decision)
        return self._refuse(call, step, ToolKind.WRITE, "vetoed",
                            f"NOT EXECUTED: {call.name} was edited {MAX_EDITS} times without a decision.")

    async def _judge(self, call: ToolCall, step: int, proposal: bool = True) -> GateDecision | None:
        if self.gate is None or self.ledger is None:
            return None
        decision = await self._decide(call, step, self.ledger, self.bus, proposal=proposal)
        self.bus.emit(GateDecided.of(decision, step))
        return decision

    async def _decide(self, call: ToolCall, step: int, ledger: Ledger, bus: EventBus, *,
                      proposal: bool = True) -> GateDecision:
        """The verdict `call` gets: the gate's, and in ASSIST the gate's again after the reads it makes itself
        (absorbed into `ledger`, recorded on `bus`). The one path of a send and of a dry-run. `proposal` False: an
        operator's edit, which never counts toward the gate's REVISE streaks."""
        assert self.gate is not None
        decision = self.gate.evaluate(call, ledger, self.domain.context(ledger), proposal=proposal)
        if (self.evidence is EvidenceMode.ASSIST and decision.refusal is RefusalKind.NEEDS_READ
                and not decision.repeated):
            decision = await self._assist(call, step, decision, ledger, bus, proposal)
        return decision

    async def _assist(self, call: ToolCall, step: int, decision: GateDecision, ledger: Ledger,
                      bus: EventBus, proposal: bool = True) -> GateDecision:
        """Evidence assist: read what the rules lack (as declared by the domain), then judge again.

        Bounded: at most MAX_ROUNDS rounds with reads some rule needs in any case, MAX_GATE_READS of those in
        all, and for a rule that needs one answer among many records (MissingEvidence.one_at_a_time) one read
        per round up to its own budget. A round whose needed reads all failed, or that would read again what
        was read already, ends it. The gate's anti-loop memory keeps only the last judgement (one proposal is
        one decision for REVISE streaks and repeats)."""
        assert self.gate is not None
        ctx = self.domain.context(ledger)
        private: dict[str, LedgerEntry] = {}
        records: list[GateReadRecord] = []
        needed = rounds = 0
        searched: dict[str, int] = {}
        while True:
            planned = self.domain.evidence_reads.plan(decision, PrivateOverlay(ledger, private), ctx,
                                                      tried=[r.text for r in records],
                                                      budget=MAX_GATE_READS - needed, searched=searched)
            if not planned:
                break
            if any(read.search is None for read in planned):
                if rounds == MAX_ROUNDS:
                    break
                rounds += 1
            supplied = False
            # the round's reads run together (they are independent); what they returned is then taken in the
            # planned order, so the events, the ledger and the trace are the same whatever finished first
            fetched = await asyncio.gather(*(self._fetch(read) for read in planned))
            for read, got in zip(planned, fetched, strict=True):
                record = self._gate_read(read, got, call, step, len(records) + 1, private, ledger, bus)
                records.append(record)
                supplied |= record.outcome != "error"
                if read.search is None:
                    needed += 1
                else:
                    searched[read.search] = searched.get(read.search, 0) + 1
            if not supplied and all(read.search is None for read in planned):
                break
            self.gate.forget_last()
            decision = self.gate.evaluate(call, PrivateOverlay(ledger, private) if private else ledger, ctx,
                                          proposal=proposal)
            if decision.refusal is not RefusalKind.NEEDS_READ:
                break
        if not records:
            return decision
        spent = {r.predicate_id: _budget_spent(searched[r.predicate_id], r.one_at_a_time)
                 for r in decision.searches if searched.get(r.predicate_id, 0) >= min(r.one_at_a_time,
                                                                                       MAX_SEARCH_READS)}
        return replace(self.gate.noted(decision, spent), gate_reads=tuple(records))

    async def _fetch(self, read: PlannedRead) -> Any:
        """What the read returns, or why it could not be made (a ToolError, or the arguments' problems)."""
        spec = self.domain.tool(read.rule.tool)
        problems = ["no such read tool"] if spec is None or spec.kind is not ToolKind.READ else \
            validate_arguments(spec, read.arguments)
        if problems:
            return ToolError("invalid arguments: " + "; ".join(problems))
        try:
            return await self.backend.call(read.rule.tool, dict(read.arguments))
        except ToolError as exc:
            return exc

    def _gate_read(self, read: PlannedRead, result: Any, write: ToolCall, step: int, number: int,
                   private: dict[str, LedgerEntry], ledger: Ledger, bus: EventBus) -> GateReadRecord:
        """One read by the gate for `write`, once made: absorbed (or kept private: another customer's record)."""
        call = ToolCall(f"{write.id}~gate{number}", read.rule.tool, dict(read.arguments))
        info = CallInfo.of(call)
        if isinstance(result, ToolError):
            bus.emit(ToolResultEvent(step=step, call=info, kind=ToolKind.READ.value, executed=True, ok=False,
                                     outcome="error", content=f"Error: {result.message}", by=READ_BY_GATE,
                                     for_call=write.id))
            return GateReadRecord(info.id, read.text, "error", result.message)
        customer = self.domain.context(ledger).customer_id
        owner = None if read.rule.owner is None else read.rule.owner(result, ledger)
        if owner is not None and owner != customer:
            private.update(ledger.preview(call, result, step, by=READ_BY_GATE))
            bus.emit(ToolResultEvent(step=step, call=info, kind=ToolKind.READ.value, executed=True, ok=True,
                                     outcome="ok", content="", result=result, by=READ_BY_GATE,
                                     for_call=write.id, gate_only=True))
            return GateReadRecord(call.id, read.text, "gate_only",
                                  "not the customer's record: used by the gate, not shown to the model")
        bus.emit(ToolResultEvent(step=step, call=info, kind=ToolKind.READ.value, executed=True, ok=True,
                                 outcome="ok", content=format_tool_result(result), result=result,
                                 by=READ_BY_GATE, for_call=write.id))
        absorbed = ledger.absorb(call, result, step, by=READ_BY_GATE)
        if absorbed.touched:
            bus.emit(LedgerUpdated(step=step, call_id=call.id, tool=call.name, added=list(absorbed.added),
                                   changed=list(absorbed.changed), refreshed=list(absorbed.refreshed),
                                   version=ledger.version))
        return GateReadRecord(call.id, read.text, "ok", ", ".join(absorbed.touched))

    async def _run(self, call: ToolCall, kind: ToolKind, step: int, decision: GateDecision | None,
                   note: str = "") -> CallOutcome:
        try:
            if kind is ToolKind.WRITE:
                result = await self._finish_write(call)
            else:
                result = await self.backend.call(call.name, call.arguments)
        except ToolError as exc:
            return self._failed(call, kind, step, decision, exc, note)
        except _StoppedAfterWrite as stopped:  # the session was stopped while this write ran; it has finished
            if isinstance(stopped.result, ToolError):
                self._failed(call, kind, step, decision, stopped.result, note)
            else:
                self._succeeded(call, kind, step, decision, stopped.result, note)
            raise asyncio.CancelledError() from None
        outcome = self._succeeded(call, kind, step, decision, result, note)
        await sync_environment(self.backend, self.bus, step)
        return outcome

    async def _finish_write(self, call: ToolCall) -> Any:
        """Run a write to its end even if the session is stopped meanwhile (a quit, a closed desk).

        Once it has started, its commit is on the database's thread and happens anyway: its result is recorded
        before the stop goes on (`_StoppedAfterWrite`), instead of a trace that ends between the gate's ALLOW
        and nothing, leaving the operator to guess whether the write ran. A write still running
        WRITE_FINISH_S after the stop is left to the backend and the stop goes on, its outcome not on record."""
        running = asyncio.ensure_future(self.backend.call(call.name, call.arguments))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            try:
                result: Any = await asyncio.wait_for(asyncio.shield(running), WRITE_FINISH_S)
            except (TimeoutError, asyncio.CancelledError):
                raise asyncio.CancelledError() from None
            except ToolError as exc:
                result = exc
            raise _StoppedAfterWrite(result) from None

    def _failed(self, call: ToolCall, kind: ToolKind, step: int, decision: GateDecision | None,
                exc: ToolError, note: str = "") -> CallOutcome:
        content = f"{note}Error: {exc.message}"
        self.bus.emit(ToolResultEvent(step=step, call=CallInfo.of(call), kind=kind.value, executed=True,
                                      ok=False, outcome="error", content=content))
        return CallOutcome(call, kind, "ERROR", True, False, "error", content, None, decision)

    def _succeeded(self, call: ToolCall, kind: ToolKind, step: int, decision: GateDecision | None,
                   result: Any, note: str = "") -> CallOutcome:
        content = note + format_tool_result(result)
        self.bus.emit(ToolResultEvent(step=step, call=CallInfo.of(call), kind=kind.value, executed=True, ok=True,
                                      outcome="ok", content=content, result=result))
        if self.ledger is not None:
            if kind is ToolKind.READ:
                absorbed = self.ledger.absorb(call, result, step)
                if absorbed.touched:
                    self.bus.emit(LedgerUpdated(step=step, call_id=call.id, tool=call.name,
                                                added=list(absorbed.added), changed=list(absorbed.changed),
                                                refreshed=list(absorbed.refreshed), version=self.ledger.version))
            elif kind is ToolKind.WRITE:
                staled = self.ledger.mark_stale(call, step, result=result)
                if staled:
                    self.bus.emit(LedgerStaled(step=step, call_id=call.id, tool=call.name, paths=staled,
                                               version=self.ledger.version, fields=self._stale_fields(staled)))
        verdict = "ALLOW" if decision is None else decision.verdict.value
        return CallOutcome(call, kind, verdict, True, True, "ok", content, result, decision)

    def _stale_fields(self, paths: list[str]) -> dict[str, list[str]]:
        assert self.ledger is not None
        fields: dict[str, list[str]] = {}
        for path in paths:
            entry = self.ledger.entry(path)
            if entry is not None and entry.stale is not None and entry.stale.fields is not None:
                fields[path] = sorted(entry.stale.fields)
        return fields

    def _refuse(self, call: ToolCall, step: int, kind: ToolKind | None, outcome: OutcomeKind, content: str,
                decision: GateDecision | None = None) -> CallOutcome:
        self.bus.emit(ToolResultEvent(step=step, call=CallInfo.of(call), kind="unknown" if kind is None
                                      else kind.value, executed=False, ok=False, outcome=outcome,
                                      content=content))
        verdict = "ERROR" if decision is None else decision.verdict.value
        return CallOutcome(call, kind, verdict, False, False, outcome, content, None, decision)


def _budget_spent(made: int, budget: int) -> str:
    """What a refusal adds when the gate stopped reading for a rule that needed one answer among many."""
    return (f"the gate read {made} of them itself for this call, the most this rule lets it read for one write "
            f"({min(budget, MAX_SEARCH_READS)}), and none gave the answer; the rest are for the agent to read")


@dataclass(frozen=True)
class DryRun:
    """What a call would get if it were sent now (`CallExecutor.dry_run`): "invalid: …", a read's "not gated",
    or a write's verdict with its decision, whose `gate_reads` are the reads the gate would make for it."""

    summary: str
    decision: GateDecision | None = None

    @property
    def gate_reads(self) -> tuple[GateReadRecord, ...]:
        return () if self.decision is None else self.decision.gate_reads


class _StoppedAfterWrite(Exception):
    """A write the session's stop waited for has finished: `result` (or the ToolError it raised) is recorded,
    then the stop goes on as a CancelledError."""

    def __init__(self, result: Any) -> None:
        super().__init__("stopped after a write")
        self.result = result


def gate_read_note(decision: GateDecision | None) -> str:
    """The line that tells the model which reads the gate made itself before judging its write ("" if none).

    The records themselves reach the model in the ledger block, like any read; a record that is not the
    customer's is named as read but never shown."""
    if decision is None or not decision.gate_reads:
        return ""
    lines = []
    for read in decision.gate_reads:
        start = GATE_READ_NOTES.get(read.outcome, GATE_READ_NOTES["error"]) + read.text
        if read.outcome == "ok":
            lines.append(f"{start} itself (now in the ledger).")
        elif read.outcome == "gate_only":
            lines.append(f"{start} for its own check; it is not the customer's record and is not shown.")
        else:  # one line each, whatever the tool's message holds
            lines.append(f"{start} itself and it failed: {' '.join(read.detail.split())}")
    return "\n".join(lines) + "\n"
