"""Every observable thing a session does, as pydantic models with a `type` discriminator.

Events are the single source of truth for the trace file, the console panes and the evaluation
collector. They carry no wall-clock time except where a human acted (overrides must say when), so the
same scripted scenario produces a byte-identical trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from core.gate import GateDecision
from core.strict_json import printable
from core.tools import ToolCall


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    seq: int = 0
    step: int = 0

    @model_validator(mode="before")
    @classmethod
    def _printable_text(cls, data: Any) -> Any:
        """Text fields as UTF-8-encodable text: a lone surrogate from a model or user simulator is kept
        escaped (`\\udc80`) instead of making the trace writer raise and abort the session."""
        if isinstance(data, dict):
            return {key: printable(value) if isinstance(value, str) else value for key, value in data.items()}
        return data


class CallInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None
    parse_error: str | None = None
    requestor: str = "assistant"

    @classmethod
    def of(cls, call: ToolCall) -> CallInfo:
        call = call.hardened()  # exactly what was asked, as text JSON can hold (no NaN written as null)
        return cls(id=call.id, name=call.name, arguments=dict(call.arguments),
                   raw_arguments=call.raw_arguments if call.parse_error else None,
                   parse_error=call.parse_error, requestor=str(call.requestor))

    def to_call(self) -> ToolCall:
        from core.tools import Requestor

        return ToolCall(id=self.id, name=self.name, arguments=self.arguments, requestor=Requestor(self.requestor),
                        raw_arguments=self.raw_arguments, parse_error=self.parse_error)


class SessionStarted(_Event):
    type: Literal["session_started"] = "session_started"
    domain: str
    agent: str  # "ledger" | "fc" | "ledger-no-gate"
    model: str
    user: str
    scenario: str | None = None
    reference_time: str | None = None
    predicates: list[str] = []
    disabled_predicates: list[str] = []
    rules_version: str | None = None  # hash of the predicates' source when the console reloaded them
    evidence: str = "ask"  # who makes the reads a write lacks: "ask" (the model, told to) or "assist" (the gate)


class MessageSent(_Event):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant"]
    text: str


class AssistantTurnEvent(_Event):
    type: Literal["assistant_turn"] = "assistant_turn"
    text: str | None
    tool_calls: list[CallInfo]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    ledger_tokens: int = 0  # estimated size of the rendered ledger block in this prompt


class PredicateResultInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    predicate_id: str
    status: str
    verdict: str
    reason: str
    evidence: list[str]
    policy: str
    missing: list[str] = []  # status "missing": the absent or stale paths (what a read would supply)


class GateReadInfo(BaseModel):
    """One read the gate made itself before this verdict (evidence assist), as the verdict names it.

    `outcome`: "ok" (absorbed into the ledger, shown to the model like any read), "gate_only" (another
    customer's record: evidence for this verdict only, never shown to the model) or "error" (the read
    failed; `detail` says how, and the write stays REVISE)."""

    model_config = ConfigDict(frozen=True)
    call_id: str
    text: str  # the read as feedback writes a call: get_order_details(order_id="#W1")
    outcome: Literal["ok", "gate_only", "error"]
    detail: str = ""


class GateDecided(_Event):
    type: Literal["gate_decision"] = "gate_decision"
    call: CallInfo
    verdict: Literal["ALLOW", "REVISE", "BLOCK"]
    results: list[PredicateResultInfo]
    feedback: str
    escalated: bool = False
    repeated: bool = False
    ledger_version: int = 0
    # A REVISE's kind (core.gate.RefusalKind): "needs_read" (only missing or stale evidence) or "breaks_rule";
    # None for ALLOW and BLOCK. Recorded, so every screen words the kind from the event, never re-derives it.
    refusal: Literal["needs_read", "breaks_rule"] | None = None
    gate_reads: list[GateReadInfo] = []  # the reads the gate made itself for this verdict, in order

    @classmethod
    def of(cls, decision: GateDecision, step: int) -> GateDecided:
        refusal = decision.refusal
        return cls(
            step=step,
            call=CallInfo.of(decision.call),
            verdict=decision.verdict.value,
            results=[
                PredicateResultInfo(predicate_id=r.predicate_id, status=r.status.value, verdict=r.verdict.value,
                                    reason=r.reason, evidence=list(r.evidence), policy=r.policy,
                                    missing=list(r.missing))
                for r in decision.results
            ],
            feedback=decision.feedback,
            escalated=decision.escalated,
            repeated=decision.repeated,
            ledger_version=decision.ledger_version,
            refusal=None if refusal is None else refusal.value,
            gate_reads=[GateReadInfo.model_validate({"call_id": r.call_id, "text": r.text, "outcome": r.outcome,
                                                     "detail": r.detail}) for r in decision.gate_reads],
        )


class SupervisorDecided(_Event):
    """A human (or an operator-configured policy) resolved a proposed write. Who, when, what, why."""

    type: Literal["supervisor_decision"] = "supervisor_decision"
    call: CallInfo
    gate_verdict: str | None
    decision: Literal["approve", "accept_verdict", "veto", "edit", "force_allow"]
    who: str
    when: str
    reason: str = ""
    edited_arguments: dict[str, Any] | None = None
    waited_s: float | None = None  # how long the call waited for this human (None: not measured)
    gate_refusal: Literal["needs_read", "breaks_rule"] | None = None  # the kind of the REVISE decided on


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    call: CallInfo
    kind: str  # read | write | generic | unknown
    executed: bool
    ok: bool
    outcome: Literal["ok", "error", "invalid", "rejected", "vetoed", "undecided"]
    content: str  # exactly what the model was given
    result: Any = None
    # A read the gate made itself (evidence assist): by "gate", for the write `for_call`. `gate_only`: another
    # customer's record, evidence for that one verdict, never absorbed into the ledger nor shown to the model.
    by: Literal["", "gate"] = ""
    for_call: str | None = None
    gate_only: bool = False


class LedgerUpdated(_Event):
    type: Literal["ledger_updated"] = "ledger_updated"
    call_id: str
    tool: str
    added: list[str]
    changed: list[str]
    refreshed: list[str]
    version: int


class LedgerStaled(_Event):
    type: Literal["ledger_staled"] = "ledger_staled"
    call_id: str
    tool: str
    paths: list[str]
    version: int
    fields: dict[str, list[str]] = {}  # a partly stale path -> the fields the write can have changed


class EnvironmentSynced(_Event):
    """The backend's after-call sync hook changed something (dual control: telecom's line <-> phone sync).

    Nobody called a tool for these changes, so without this event a trace would show a bill turning Paid
    or a phone losing service with no cause. `changes` are the backend's own one-line descriptions, in
    the order it applied them. Emitted only when something changed, so single-control domains (no hook)
    and quiet syncs leave traces exactly as before.
    """

    type: Literal["environment_synced"] = "environment_synced"
    changes: list[str]


class ModelRetry(_Event):
    """`message` is one line for the screen; `detail` is what the server sent, whole (shown on demand)."""

    type: Literal["model_retry"] = "model_retry"
    attempt: int
    kind: str
    message: str
    delay: float
    detail: str = ""


class ModelFailed(_Event):
    """`message` is one line for the screen; `detail` is what the server sent, whole (shown on demand)."""

    type: Literal["model_error"] = "model_error"
    kind: str
    message: str
    attempts: int = 1
    detail: str = ""


class SessionEnded(_Event):
    type: Literal["session_ended"] = "session_ended"
    reason: str
    steps: int
    db_hash: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    detail: str = ""


Event = Annotated[
    SessionStarted | MessageSent | AssistantTurnEvent | GateDecided | SupervisorDecided | ToolResultEvent
    | LedgerUpdated | LedgerStaled | EnvironmentSynced | ModelRetry | ModelFailed | SessionEnded,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
# Every event's `type`, in the union's order (the trace index numbers the types by it).
EVENT_TYPES: tuple[str, ...] = tuple(
    str(get_args(model.model_fields["type"].annotation)[0]) for model in get_args(get_args(Event)[0]))

Subscriber = Callable[[Any], None]


class EventBus:
    """Numbers events and hands each to every subscriber, in order, synchronously.

    Synchronous on purpose: the trace writer must have the event on disk before the session moves on,
    and the console subscriber only posts a message (thread-safe, non-blocking).
    """

    def __init__(self, *, keep_history: bool = True) -> None:
        self._subscribers: list[Subscriber] = []
        self._seq = 0
        self._keep = keep_history  # False for long runs (check): memory stays flat, subscribers still see all
        self.history: list[Any] = []

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.remove(subscriber)

    def emit(self, event: _Event) -> Any:
        self._seq += 1
        numbered = event.model_copy(update={"seq": self._seq})
        if self._keep:
            self.history.append(numbered)
        for subscriber in list(self._subscribers):
            subscriber(numbered)
        return numbered
