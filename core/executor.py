"""One proposed tool call, end to end: check it, gate it, let the supervisor see it, run it, absorb it.

The agent loop, `ledgeragent check` and re-gating all go through this one path, so a verdict shown in
the console is exactly the verdict the agent got.

Dual control (telecom): a call carries its requestor. The customer's own tools (their phone) run through
this same path with requestor "user": validated, recorded as events and absorbed like any call, but never
gated (the gate guards the agent's writes; a customer toggling their own phone needs no permission) and
never reviewed by the supervisor. A call whose requestor does not match its tool's is refused as unknown,
so the agent cannot reach a phone tool and the user proxy cannot reach an agent tool.

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
from core.gate import GateDecision, PolicyGate, Verdict
from core.ledger import Ledger
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
                 clock: Callable[[], str] = utc_now) -> None:
        self.domain = domain
        self.backend = backend
        self.bus = bus
        self.ledger = ledger
        self.gate = gate
        self.supervisor: Supervisor = supervisor or Autopilot()
        self.clock = clock

    async def execute(self, call: ToolCall, step: int) -> CallOutcome:
        call = call.hardened()  # NaN, a lone surrogate or deep nesting: refused below as unparseable
        spec = self.domain.tool(call.name)
        if call.parse_error is not None:
            return self._refuse(call, step, None, "invalid", f"Error: {call.parse_error}. The call was not executed;"
                                f" send the arguments as a JSON object.")
        if spec is None or spec.requestor != call.requestor:
            return self._refuse(call, step, None, "invalid", f"Error: Tool '{call.name}' not found.")
        problems = validate_arguments(spec, call.arguments)
        if problems:
            return self._refuse(call, step, spec.kind, "invalid",
                                f"Error: invalid arguments for {call.name}: " + "; ".join(problems))
        if spec.kind is not ToolKind.WRITE or call.requestor is Requestor.USER:
            return await self._run(call, spec.kind, step, None)
        return await self._gated_write(call, step)

    async def _gated_write(self, call: ToolCall, step: int) -> CallOutcome:
        for _ in range(MAX_EDITS):
            decision = self._judge(call, step)
            try:
                resolution = await self.supervisor.review(call, decision)
            except Undecided as nobody:  # asked, never answered: not run, and no decision on record
                return self._refuse(call, step, ToolKind.WRITE, "undecided", f"NOT EXECUTED: {nobody.message}",
                                    decision)
            unfit = None if resolution.arguments is None else value_problem(dict(resolution.arguments))
            if resolution.is_human:
                self.bus.emit(SupervisorDecided(
                    step=step, call=CallInfo.of(call),
                    gate_verdict=None if decision is None else decision.verdict.value,
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
                                    f"NOT EXECUTED: a human supervisor vetoed {call.name}: {text}", decision)
            allowed = decision is None or decision.verdict is Verdict.ALLOW
            if resolution.decision is Decision.ACCEPT_VERDICT and not allowed:
                assert decision is not None
                return self._refuse(call, step, ToolKind.WRITE, "rejected", decision.feedback, decision)
            if allowed or resolution.decision is Decision.FORCE_ALLOW:
                return await self._run(call, ToolKind.WRITE, step, decision)
            assert decision is not None
            return self._refuse(call, step, ToolKind.WRITE, "rejected", decision.feedback, decision)
        return self._refuse(call, step, ToolKind.WRITE, "vetoed",
                            f"NOT EXECUTED: {call.name} was edited {MAX_EDITS} times without a decision.")

    def _judge(self, call: ToolCall, step: int) -> GateDecision | None:
        if self.gate is None or self.ledger is None:
            return None
        decision = self.gate.evaluate(call, self.ledger, self.domain.context(self.ledger))
        self.bus.emit(GateDecided.of(decision, step))
        return decision

    async def _run(self, call: ToolCall, kind: ToolKind, step: int, decision: GateDecision | None) -> CallOutcome:
        try:
            if kind is ToolKind.WRITE:
                result = await self._finish_write(call)
            else:
                result = await self.backend.call(call.name, call.arguments)
        except ToolError as exc:
            return self._failed(call, kind, step, decision, exc)
        except _StoppedAfterWrite as stopped:  # the session was stopped while this write ran; it has finished
            if isinstance(stopped.result, ToolError):
                self._failed(call, kind, step, decision, stopped.result)
            else:
                self._succeeded(call, kind, step, decision, stopped.result)
            raise asyncio.CancelledError() from None
        outcome = self._succeeded(call, kind, step, decision, result)
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
                exc: ToolError) -> CallOutcome:
        content = f"Error: {exc.message}"
        self.bus.emit(ToolResultEvent(step=step, call=CallInfo.of(call), kind=kind.value, executed=True,
                                      ok=False, outcome="error", content=content))
        return CallOutcome(call, kind, "ERROR", True, False, "error", content, None, decision)

    def _succeeded(self, call: ToolCall, kind: ToolKind, step: int, decision: GateDecision | None,
                   result: Any) -> CallOutcome:
        content = format_tool_result(result)
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
                                               version=self.ledger.version))
        verdict = "ALLOW" if decision is None else decision.verdict.value
        return CallOutcome(call, kind, verdict, True, True, "ok", content, result, decision)

    def _refuse(self, call: ToolCall, step: int, kind: ToolKind | None, outcome: OutcomeKind, content: str,
                decision: GateDecision | None = None) -> CallOutcome:
        self.bus.emit(ToolResultEvent(step=step, call=CallInfo.of(call), kind="unknown" if kind is None
                                      else kind.value, executed=False, ok=False, outcome=outcome,
                                      content=content))
        verdict = "ERROR" if decision is None else decision.verdict.value
        return CallOutcome(call, kind, verdict, False, False, outcome, content, None, decision)


class _StoppedAfterWrite(Exception):
    """A write the session's stop waited for has finished: `result` (or the ToolError it raised) is recorded,
    then the stop goes on as a CancelledError."""

    def __init__(self, result: Any) -> None:
        super().__init__("stopped after a write")
        self.result = result
