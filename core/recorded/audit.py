"""Judge every write of a recorded conversation in the context it really had, then let it take effect as recorded.

Plain `check` replays calls through the gate as a live session would: a refused write is dropped, so from the
first refusal on, every later call is judged in a world the agent never saw. Here the recording decides what
happened and the gate only says what it *would* have said:

- every read the recording answered is absorbed with the result the agent saw (a failed one is not: a failure
  observes nothing);
- every write is judged against that ledger, and then, whatever the verdict, takes the effect the recording
  gives it: if it ran there, its paths go stale and its return joins the effects, exactly as a write the gate
  allows (`Ledger.mark_stale(call, step, result=...)`, so declared write effects apply here unchanged); if it
  failed or did not run there, nothing changes.

All of it goes through `core.executor.CallExecutor`, the one path of the agent loop, `check` and re-gating: the
gated executor judges each write (a framework that reads missing evidence itself does so there, from the
database when the audit has one), an ungated one applies a refused write the recording ran. Their backend is
`RecordedBackend`: it answers each recorded call with the recorded result and, with a database, runs the same
call there too and says how the two results differ; any other call (a read the gate makes for itself) goes to
the database, or fails when there is none.

Each write is judged as a first proposal (the gate's anti-loop memory is reset before it): the recorded agent
never got this gate's refusals, so a repeat or a streak of them says nothing about it.

Calls of tools the domain does not have. A tool the recorded agent had that only thinks or computes and
touches no data (`INTERNAL_TOOLS`: tau-bench's and tau-Trait's `think`, which returns "" and "will not obtain
new information or change the database", and `calculate`, which evaluates an arithmetic expression; see
tau_bench/envs/airline/tools/think.py and calculate.py) is passed over in silence: nothing to judge, nothing
to take. Any other unknown tool could be a write, so it is a problem, said once per tool name for the whole
recording (not once per call), and its calls are not judged. A domain's own tool of the same name is always
judged as the domain declares it.

Writes that could not be judged. Without a database the gate has only the recorded reads: a write whose only
objections are missing evidence that the gate would read itself from a database (its evidence reads can name
every read, for an identified customer, within the budget) is NOT JUDGED (`NOT_JUDGED`, with the reads it
needed), never a refusal: passing `--db` judges it. A write that breaks a rule on the recorded evidence is
still a refusal, with or without a database, and a missing read the gate could not make even with a database
stays "needs a read" (the agent had to make it). An agent's write whose call could not be judged at all
(invalid arguments) is not judged either, with the reason.

The audit also gives each conversation as events (`ConversationAudit.events`), for the console's replay: the
gate decisions there are hypothetical, the outcomes are the recording's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from core.conversation_rules import customer_said
from core.domain import Domain
from core.events import (
    AssistantTurnEvent,
    CallInfo,
    Event,
    EventBus,
    LedgerStaled,
    MessageSent,
    SessionEnded,
    SessionStarted,
    ToolResultEvent,
)
from core.evidence import EvidenceMode
from core.executor import CallExecutor, sync_environment
from core.gate import GateDecision, PolicyGate, RefusalKind, Verdict
from core.hearing import hear
from core.ledger import Ledger
from core.recorded.compare import ERROR_PREFIX, result_difference
from core.recorded.model import (
    INTERNAL_TOOLS,
    Problem,
    RecordedCall,
    RecordedConversation,
    RecordedResult,
    Recording,
    Where,
)
from core.strict_json import printable
from core.tools import Requestor, ToolBackend, ToolCall, ToolError, ToolKind

NOT_JUDGED = "not judged"
CATEGORIES = ("ALLOW", "needs a read", "breaks a rule", "BLOCK", NOT_JUDGED)
NEEDS_DATABASE = "needs a database read (pass --db)"
AGENT_LABEL = "as-recorded"
HYPOTHETICAL = "what the gate would have said"
NO_DATABASE = ("no database to read from: the audit has only the recorded results (pass --db to let the gate "
               "read)")


@runtime_checkable
class Restorable(Protocol):
    """A database that can go back (every `SQLiteToolBackend`): a fresh one per conversation, and a write the
    recording says failed is rolled back after the database ran it."""

    async def snapshot(self) -> Any: ...

    async def restore(self, snapshot: Any) -> None: ...


class RecordedBackend:
    """The recording's results as a `ToolBackend`; the database, when there is one, run beside them.

    `expect(recorded)` names the call about to be executed. Its first matching `call` is answered from the
    recording (or, for check trajectory lines, which record no results, from the database); every other call
    is a read the gate makes itself and goes to the database."""

    sync: Callable[[], Awaitable[Sequence[str]]]  # only when the database has one (dual control)

    def __init__(self, database: ToolBackend | None, *, results_recorded: bool = True,
                 canonical: Callable[[ToolCall, Any], tuple[Any, tuple[str, ...]]] | None = None) -> None:
        """`canonical`: the domain's `PathMap.canonical`, so a recorded result of another release of the tool
        (tau-bench's profile without its user_id) is compared with the database's in the shape the ledger
        holds both in, and only what they say differently is reported."""
        self.database = database
        self.results_recorded = results_recorded
        self.canonical = canonical
        self._current: RecordedCall | None = None
        self._write = False
        self._served = False
        self.difference: str | None = None
        hook = getattr(database, "sync", None)
        if hook is not None:
            self.sync = hook

    def expect(self, recorded: RecordedCall, *, write: bool) -> None:
        self._current, self._write, self._served, self.difference = recorded, write, False, None

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        current = self._current
        if (current is None or self._served or name != current.call.name
                or dict(arguments) != dict(current.call.arguments)):
            if self.database is None:
                raise ToolError(NO_DATABASE)
            return await self.database.call(name, arguments)
        self._served = True
        if not self.results_recorded:
            if self.database is None:
                raise ToolError(NO_DATABASE)
            return await self.database.call(name, arguments)
        result = current.result
        if result is None:
            raise ToolError("the recording holds no result for this call")
        if not result.ran:
            raise ToolError(f"not executed in the recording ({result.outcome})")
        if self.database is not None and result.outcome != "unreadable":
            self.difference = await self._beside(self.database, name, arguments, result)
        elif self.database is not None:
            await self._run_quietly(self.database, name, arguments)
        if result.outcome == "unreadable":
            raise ToolError("the recorded result is not strict JSON; nothing is taken from it")
        if result.outcome == "error":
            raise ToolError(result.content.removeprefix(ERROR_PREFIX).strip())
        return result.value

    async def _beside(self, database: ToolBackend, name: str, arguments: Mapping[str, Any],
                      recorded: RecordedResult) -> str | None:
        """Run the call on the database too; how its result differs from the recorded one (None: it does not).
        A write the recording says failed is rolled back when it succeeds here, so the database stays where the
        recording is."""
        undo = await database.snapshot() if (self._write and recorded.outcome == "error"
                                            and isinstance(database, Restorable)) else None
        try:
            value = await database.call(name, arguments)
        except ToolError as exc:
            return result_difference(recorded, exc.message, failed=True)
        if undo is not None and isinstance(database, Restorable):
            await database.restore(undo)
        if self.canonical is not None and recorded.outcome == "ok" and not self._write:
            shaped, done = self.canonical(ToolCall("", name, dict(arguments)), recorded.value)
            if done:
                recorded = replace(recorded, value=shaped)
        return result_difference(recorded, value, failed=False, undone=undo is not None)

    @staticmethod
    async def _run_quietly(database: ToolBackend, name: str, arguments: Mapping[str, Any]) -> None:
        try:
            await database.call(name, arguments)
        except ToolError:
            pass


@dataclass(frozen=True)
class AuditedCall:
    """One recorded call: what the recording says of it, what the gate would have said (writes), and how the
    database's result differs (with a database)."""

    conversation: str
    where: Where
    index: int  # among the conversation's calls, from 0
    call: ToolCall
    kind: str  # read | write | generic | unknown | internal (a tool that touches no data, see INTERNAL_TOOLS)
    recorded: str  # ok | error | not run | no result | unreadable | database (check lines: the database's result)
    taken: bool  # its result was taken as the recording has it: a read absorbed, a write's effect applied
    decision: GateDecision | None = None  # the gate's verdict on an agent's write
    staled: tuple[str, ...] = ()
    difference: str | None = None
    problem: str | None = None  # why it could not be judged or taken (unknown tool, arguments, ...)
    needs_database: tuple[str, ...] = ()  # the reads a database would have given the gate (then: not judged)

    @property
    def agent_write(self) -> bool:
        """A write the agent made: the calls the gate judges (the customer's own actions never are)."""
        return self.kind == "write" and self.call.requestor is Requestor.ASSISTANT

    @property
    def category(self) -> str | None:
        """ALLOW, needs a read, breaks a rule, BLOCK, or not judged (an agent's write the audit could not judge,
        see `not_judged`); None for any other call."""
        decision = self.decision
        if self.needs_database or (decision is None and self.agent_write):
            return NOT_JUDGED
        if decision is None:
            return None
        if decision.verdict is Verdict.REVISE and decision.refusal is not None:
            return decision.refusal.label
        return decision.verdict.value

    @property
    def not_judged(self) -> str | None:
        """Why an agent's write was not judged (None: it was): the reads a database would have supplied, or the
        problem that kept the call from the gate."""
        if self.needs_database:
            return f"{NEEDS_DATABASE}: {', '.join(self.needs_database)}"
        if self.decision is None and self.agent_write:
            return self.problem or "not judged"
        return None

    @property
    def reason(self) -> str:
        if self.decision is None:
            return self.problem or ""
        return " | ".join(f"{r.predicate_id}: {r.reason}" for r in self.decision.failed)

    def to_json(self, source: str) -> dict[str, Any]:
        decision = self.decision
        refusal = None if decision is None or decision.refusal is None else decision.refusal.value
        return {
            "conversation": self.conversation, "where": self.where.at(source), "index": self.index,
            "name": self.call.name, "arguments": dict(self.call.arguments), "kind": self.kind,
            "verdict": None if decision is None else decision.verdict.value, "refusal": refusal,
            "category": self.category, "not_judged": self.not_judged,
            "predicates": [] if decision is None else [r.predicate_id for r in decision.failed],
            "crashed": [] if decision is None else [r.predicate_id for r in decision.failed
                                                     if r.status.value == "error"],
            "reason": self.reason, "evidence": [] if decision is None else list(decision.evidence),
            # what the customer said, as the confirmation rule quoted it when it passed (their yes, their reason)
            "customer": "" if decision is None else customer_said(decision.results),
            "recorded": self.recorded, "taken": self.taken, "staled": list(self.staled),
            "difference": self.difference, "problem": self.problem,
        }


@dataclass
class ConversationAudit:
    label: str
    calls: list[AuditedCall] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def writes(self) -> list[AuditedCall]:
        """The agent's writes, judged or not."""
        return [c for c in self.calls if c.decision is not None or c.agent_write]

    def counts(self) -> dict[str, int]:
        """The agent's writes per category (ALLOW, needs a read, breaks a rule, BLOCK, not judged)."""
        counts = dict.fromkeys(CATEGORIES, 0)
        for write in self.writes:
            if write.category is not None:
                counts[write.category] += 1
        return counts

    @property
    def differences(self) -> list[AuditedCall]:
        return [c for c in self.calls if c.difference is not None]


def _recorded_word(recorded: RecordedCall, results_recorded: bool) -> str:
    if not results_recorded:
        return "database"
    result = recorded.result
    if result is None:
        return "no result"
    if not result.ran:
        return "not run"
    return result.outcome


class RecordedAudit:
    """Audits recordings of one domain, with or without a database to re-execute them on (see the module doc).

    With a database that can go back (`Restorable`), each conversation starts from the database as it was
    given; check trajectory lines, which record no results, need a database."""

    def __init__(self, domain: Domain, database: ToolBackend | None = None, *,
                 disabled: frozenset[str] = frozenset(), evidence: EvidenceMode = EvidenceMode.ASK) -> None:
        """`evidence` ASSIST lets the gate read what a write lacks from `database` (a read the recording does
        not hold); without a database there is nothing to read from, so only ASK makes sense there."""
        if evidence is EvidenceMode.ASSIST and database is None:
            raise ValueError("evidence assist reads from a database: give one, or judge in ask mode")
        self.domain = domain
        self.database = database
        self.disabled = disabled
        self.evidence = evidence
        self._base: Any = None
        self.unknown: dict[str, int] = {}  # tools the domain does not have: calls seen, in this recording

    async def run(self, recording: Recording) -> AsyncIterator[ConversationAudit]:
        """Each conversation's audit, one at a time, in file order."""
        self.unknown = {}
        if not recording.results_recorded and self.database is None:
            raise ValueError("check trajectory lines record no results: auditing them needs a database")
        if len(recording.conversations) > 1 and self.database is not None \
                and not isinstance(self.database, Restorable):
            raise ValueError("several conversations need a database that can be restored between them")
        for conversation in recording.conversations:
            yield await self.conversation(conversation, recording)

    async def _fresh_database(self) -> None:
        if isinstance(self.database, Restorable):
            if self._base is None:
                self._base = await self.database.snapshot()
            else:
                await self.database.restore(self._base)

    async def conversation(self, conversation: RecordedConversation, recording: Recording) -> ConversationAudit:
        await self._fresh_database()
        return await _ConversationRun(self, conversation, recording).run()


class _ConversationRun:
    """One conversation's ledger, gate, executors and events."""

    def __init__(self, audit: RecordedAudit, conversation: RecordedConversation, recording: Recording) -> None:
        domain = audit.domain
        self.audit = audit
        self.domain = domain
        self.conversation = conversation
        self.recording = recording
        self.ledger = Ledger(domain.path_map)
        self.gate = PolicyGate(domain.predicates, path_map=domain.path_map, disabled=audit.disabled)
        self.bus = EventBus(keep_history=False)
        self.buffer: list[Any] = []
        self.bus.subscribe(self.buffer.append)
        self.backend = RecordedBackend(audit.database, results_recorded=recording.results_recorded,
                                       canonical=domain.path_map.canonical)
        self.judged = CallExecutor(domain, self.backend, self.bus, ledger=self.ledger, gate=self.gate,
                                   evidence=audit.evidence)
        self.as_recorded = CallExecutor(domain, self.backend, self.bus, ledger=self.ledger, gate=None)
        self.result = ConversationAudit(conversation.label, problems=list(conversation.problems))
        self.events: list[Any] = []

    def _flush(self) -> None:
        self.events.extend(self.buffer)
        self.buffer.clear()

    async def run(self) -> ConversationAudit:
        domain, conversation = self.domain, self.conversation
        self.bus.emit(SessionStarted(
            domain=domain.name, agent=AGENT_LABEL, model=self.recording.model or "recorded", user="recorded",
            scenario=conversation.label or None,
            reference_time=None if domain.reference_time is None else domain.reference_time.isoformat(),
            predicates=[p.id for p in domain.predicates], disabled_predicates=sorted(self.gate.disabled)))
        await sync_environment(self.backend, self.bus, 0)
        self._flush()
        step = 0
        for turn in conversation.turns:
            if turn.role == "assistant":
                step += 1
                self.bus.emit(AssistantTurnEvent(step=step, text=turn.text,
                                                 tool_calls=[CallInfo.of(c.call) for c in turn.calls]))
                hear(self.ledger, self.bus, "assistant", turn.text, step)
            elif turn.text is not None:
                self.bus.emit(MessageSent(step=step, role="user", text=turn.text))
                # what the customer had said by then is evidence for the writes after it (core.conversation)
                hear(self.ledger, self.bus, "user", turn.text, step)
            self._flush()
            for recorded in turn.calls:
                await self._call(recorded, step)
        self.bus.emit(SessionEnded(step=step, reason=conversation.termination or "end_of_recording", steps=step))
        self._flush()
        self.result.events = [e.model_copy(update={"seq": n}) for n, e in enumerate(self.events, start=1)]
        return self.result

    async def _call(self, recorded: RecordedCall, step: int) -> None:
        domain, call = self.domain, recorded.call
        spec = domain.tool(call.name)
        if spec is None and call.name in INTERNAL_TOOLS:
            self._internal(recorded, step)
            return
        write = spec is not None and spec.kind is ToolKind.WRITE and call.requestor is Requestor.ASSISTANT
        self.backend.expect(recorded, write=write)
        if write:
            self.gate.reset()
        outcome = await self.judged.execute(call, step)
        decision = outcome.decision if write else None
        needs_database = self._needs_database(decision)
        ran_in_recording = not self.recording.results_recorded or (
            recorded.result is not None and recorded.result.ran)
        taken = outcome.ok
        applied_anyway = outcome.outcome == "rejected" and ran_in_recording
        if applied_anyway:
            taken = (await self.as_recorded.execute(call, step)).ok
        problem = None
        if outcome.outcome == "invalid":
            problem = outcome.content.removeprefix("Error: ").split(". The call was not executed")[0]
            if spec is None:
                problem = self._unknown(recorded)
            else:
                self.result.problems.append(Problem(recorded.where, f"{call.name}: {problem} (not judged)"))
        self.result.calls.append(AuditedCall(
            conversation=self.conversation.label, where=recorded.where, index=len(self.result.calls),
            call=call.hardened(),  # as the trace records it: a NaN or a lone surrogate is never shown as a value
            kind="unknown" if spec is None else spec.kind.value,
            recorded=_recorded_word(recorded, self.recording.results_recorded), taken=taken,
            decision=decision, staled=self._staled(call),
            difference=self.backend.difference, problem=problem, needs_database=needs_database))
        self._keep_events(recorded, applied_anyway)

    def _needs_database(self, decision: GateDecision | None) -> tuple[str, ...]:
        """The reads a database would have given the gate for a write whose only objections are missing
        evidence, when the audit has none (); () when it has one, or the gate could not make them anyway. Asked
        before the write takes its recorded effect: the ledger is the one the gate judged on."""
        if self.audit.database is not None or decision is None or decision.refusal is not RefusalKind.NEEDS_READ:
            return ()
        planned = self.domain.evidence_reads.plan(decision, self.ledger, self.domain.context(self.ledger))
        return tuple(read.text for read in planned)

    def _unknown(self, recorded: RecordedCall) -> str:
        """A call of a tool the domain does not have: a problem the first time the recording calls it."""
        name = recorded.call.name
        seen = self.audit.unknown.get(name, 0)
        self.audit.unknown[name] = seen + 1
        problem = f"the {self.domain.name} domain has no such tool, so its calls are not judged (it may be a write)"
        if not seen:
            self.result.problems.append(Problem(recorded.where, f"{printable(name[:80])}: {problem[:-1]}; said once "
                                                "for the file)"))
        return problem

    def _internal(self, recorded: RecordedCall, step: int) -> None:
        """A tool that touches no data (INTERNAL_TOOLS): shown as the recording has it, judged and taken never."""
        result = recorded.result
        content = "" if result is None else result.content
        self.bus.emit(ToolResultEvent(step=step, call=CallInfo.of(recorded.call), kind="generic",
                                      executed=result is not None, ok=result is not None and result.outcome == "ok",
                                      outcome="error" if result is not None and result.outcome == "error" else "ok",
                                      content=content))
        self._flush()
        self.result.calls.append(AuditedCall(
            conversation=self.conversation.label, where=recorded.where, index=len(self.result.calls),
            call=recorded.call.hardened(), kind="internal",
            recorded=_recorded_word(recorded, self.recording.results_recorded), taken=False))

    def _staled(self, call: ToolCall) -> tuple[str, ...]:
        call_id = CallInfo.of(call).id
        return tuple(p for e in self.buffer if isinstance(e, LedgerStaled) and e.call_id == call_id for p in e.paths)

    def _keep_events(self, recorded: RecordedCall, applied_anyway: bool) -> None:
        """The executors' events for this call, with the outcome the recording gives it: the gate's "not executed"
        is dropped when the recording ran the write anyway, and the result shown is the recorded one."""
        call_id = CallInfo.of(recorded.call).id
        kept: list[Any] = []
        for event in self.buffer:
            if isinstance(event, ToolResultEvent) and event.call.id == call_id:
                if event.outcome == "rejected" and applied_anyway:
                    continue
                shown = self._as_recorded(event, recorded)
                if shown is None:
                    continue
                event = shown
            kept.append(event)
        self.buffer[:] = kept
        self._flush()

    def _as_recorded(self, event: ToolResultEvent, recorded: RecordedCall) -> ToolResultEvent | None:
        """The call's outcome as the recording has it (None: the recording says nothing of it). Invalid calls
        keep the executor's reason: the recording's own words would not say why the audit could not judge."""
        result = recorded.result
        if not self.recording.results_recorded or event.outcome == "invalid":
            return event
        if result is None:
            return None
        if not result.ran:
            return event.model_copy(update={"executed": False, "ok": False, "outcome": result.outcome,
                                            "content": result.content, "result": None})
        if result.outcome == "unreadable":
            return event
        return event.model_copy(update={"content": result.content})
