"""`ledgeragent check`: replay a list of tool calls through a fresh ledger, gate and backend.

Reads are executed and absorbed, writes are gated and run when allowed — the same `CallExecutor` the
agent uses, so a fixture that passes here passes in a live session. Each line may carry an expectation.

Dual control: a line may carry `"requestor": "user"` for a user-side (phone) tool, e.g. the customer's
`make_payment` between the agent's `send_payment_request` and `resume_line`. It runs as the user proxy's
calls run in a session: ungated (its verdict is ALLOW when it ran, ERROR when it failed), its reads
absorbed under `device.*`. The backend's sync hook runs before the first line and after every executed
call, as in a session.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from core import strict_json
from core.domain import Domain
from core.events import AssistantTurnEvent, EventBus, ToolResultEvent
from core.evidence import EvidenceMode
from core.executor import CallExecutor, sync_environment
from core.gate import GateReadRecord, PolicyGate
from core.ledger import Ledger
from core.tools import Requestor, ToolBackend, ToolCall
from core.trace import TraceProblem, numbered_events

VERDICTS = ("ALLOW", "REVISE", "BLOCK", "ERROR")
TRIM_EVERY = 1000
REQUESTORS = tuple(r.value for r in Requestor)


@dataclass(frozen=True)
class TrajectoryCall:
    index: int
    line: int
    name: str
    arguments: dict[str, Any]
    expect: str | None = None
    requestor: str = "assistant"
    expect_rules: tuple[str, ...] | None = None  # ids of the rules that must object (None: not checked)
    expect_crashed: tuple[str, ...] | None = None  # ids of those that must have crashed (None: not checked)
    raw_arguments: str | None = None  # a recorded call whose arguments were not JSON: its text, and why
    parse_error: str | None = None
    call_id: str | None = None  # a session trace's call: the id the trace gave it (what its later events name)


@dataclass(frozen=True)
class TrajectoryProblem:
    line: int
    message: str


@dataclass(frozen=True)
class CheckResult:
    index: int
    line: int
    name: str
    kind: str
    verdict: str
    predicates: tuple[str, ...]
    reason: str
    executed: bool
    expect: str | None
    evidence: tuple[str, ...] = ()
    requestor: str = "assistant"
    crashed: tuple[str, ...] = ()  # objecting rules that raised (the gate failed closed on them)
    expect_rules: tuple[str, ...] | None = None
    expect_crashed: tuple[str, ...] | None = None
    refusal: str | None = None  # a REVISE's kind: "needs_read" or "breaks_rule" (core.gate.RefusalKind)
    gate_reads: tuple[str, ...] = ()  # the reads the gate made itself before the verdict (evidence assist)

    @property
    def met(self) -> bool | None:
        """The verdict, and (when the line says) the objecting rules and the crashed ones, all as expected."""
        if self.expect is None:
            return None
        if self.expect != self.verdict:
            return False
        if self.expect_rules is not None and sorted(self.expect_rules) != sorted(self.predicates):
            return False
        return self.expect_crashed is None or sorted(self.expect_crashed) == sorted(self.crashed)

    @property
    def expected(self) -> str:
        """The expectation in words, for the failure message."""
        text = str(self.expect)
        if self.expect_rules is not None:
            text += f" from [{', '.join(self.expect_rules)}]"
        if self.expect_crashed:
            text += f" (crashed: {', '.join(self.expect_crashed)})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "line": self.line, "name": self.name, "kind": self.kind,
                "verdict": self.verdict, "predicates": list(self.predicates), "reason": self.reason,
                "executed": self.executed, "expect": self.expect, "met": self.met, "evidence": list(self.evidence),
                "requestor": self.requestor, "crashed": list(self.crashed), "refusal": self.refusal,
                "gate_reads": list(self.gate_reads)}


@dataclass
class Trajectory:
    calls: list[TrajectoryCall] = field(default_factory=list)
    problems: list[TrajectoryProblem] = field(default_factory=list)


def parse_trajectory(text: str) -> Trajectory:
    """Parse JSONL lines `{"name", "arguments", "expect"?, "requestor"?, "note"?}`; a broken line becomes a
    problem, not an abort."""
    trajectory = Trajectory()
    for item in iter_trajectory(text.splitlines()):
        if isinstance(item, TrajectoryProblem):
            trajectory.problems.append(item)
        else:
            trajectory.calls.append(item)
    return trajectory


def iter_trajectory(lines: Iterable[str]) -> Iterator[TrajectoryCall | TrajectoryProblem]:
    """Each line's call, or the problem that makes it unusable, one at a time: a 50 MB file is checked in
    bounded memory. Lines are strict JSON (`core.strict_json`): NaN, Infinity, lone surrogates and nesting
    deeper than 64 levels are line problems, never values a predicate could see."""
    index = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("//"):
            continue
        problem, call = _parse_line(raw, number, index)
        if call is not None:
            index += 1
            yield call
        else:
            yield TrajectoryProblem(number, problem)


def iter_session_calls(lines: Iterable[str]) -> Iterator[TrajectoryCall | TrajectoryProblem]:
    """The calls a session's own trace (`core.trace.read_session_start` says whether a file is one) recorded,
    in the order they were made, each at the line that records it: the agent's tool calls as it proposed them
    (its `assistant_turn`s: before any operator edit, and also the ones the gate refused) and the customer's
    phone actions (tool results with requestor "user", which no assistant turn proposes). Unreadable lines
    are problems, as in `iter_trajectory`; one line at a time, so any size runs in bounded memory."""
    index = 0
    for number, item in numbered_events(lines):
        if isinstance(item, TraceProblem):
            yield TrajectoryProblem(number, item.message)
            continue
        if isinstance(item, AssistantTurnEvent):
            proposed = list(item.tool_calls)
        elif isinstance(item, ToolResultEvent) and item.call.requestor == Requestor.USER.value:
            proposed = [item.call]
        else:
            continue
        for call in proposed:
            if call.requestor not in REQUESTORS:
                yield TrajectoryProblem(number, f"call {call.id}: 'requestor' must be one of {', '.join(REQUESTORS)}, "
                                                f"got {call.requestor!r}")
                continue
            yield TrajectoryCall(index, number, call.name, dict(call.arguments), requestor=call.requestor,
                                 raw_arguments=call.raw_arguments, parse_error=call.parse_error, call_id=call.id)
            index += 1


def _parse_line(raw: str, number: int, index: int) -> tuple[str, TrajectoryCall | None]:
    try:
        item = strict_json.loads(raw)
    except strict_json.StrictJSONError as exc:
        return exc.message, None
    if not isinstance(item, dict):
        return "each line must be a JSON object", None
    name, arguments, expect = item.get("name"), item.get("arguments", {}), item.get("expect")
    requestor = item.get("requestor", "assistant")
    if not isinstance(name, str) or not name:
        return "missing string field 'name'", None
    if not isinstance(arguments, dict):
        return "'arguments' must be a JSON object", None
    if expect is not None and expect not in VERDICTS:
        return f"'expect' must be one of {', '.join(VERDICTS)}, got {expect!r}", None
    if requestor not in REQUESTORS:
        return f"'requestor' must be one of {', '.join(REQUESTORS)}, got {requestor!r}", None
    unknown = sorted(set(item) - {"name", "arguments", "expect", "note", "requestor", "expect_rules",
                                  "expect_crashed"})
    if unknown:
        return f"unknown field(s): {', '.join(unknown)}", None
    rule_lists: dict[str, tuple[str, ...] | None] = {}
    for key in ("expect_rules", "expect_crashed"):
        value = item.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            return f"'{key}' must be a list of rule ids", None
        rule_lists[key] = None if value is None else tuple(value)
    return "", TrajectoryCall(index, number, name, arguments, expect, requestor, rule_lists["expect_rules"],
                              rule_lists["expect_crashed"])


def _gate_read_text(read: GateReadRecord) -> str:
    """A read the gate made, as `check` prints it: the call, and how it went unless it was absorbed."""
    if read.outcome == "ok":
        return read.text
    return f"{read.text} (failed: {read.detail})" if read.outcome == "error" else f"{read.text} (gate only)"


class Checker:
    """Holds one ledger/gate/backend for a whole trajectory so later calls see earlier reads."""

    def __init__(self, domain: Domain, backend: ToolBackend, bus: EventBus | None = None,
                 disabled: frozenset[str] = frozenset(), evidence: EvidenceMode = EvidenceMode.ASK) -> None:
        self.domain = domain
        self.backend = backend
        self.bus = bus or EventBus(keep_history=False)  # a 600k-call file must not keep 600k events
        self.ledger = Ledger(domain.path_map)
        self.gate = PolicyGate(domain.predicates, path_map=domain.path_map, disabled=disabled)
        self.executor = CallExecutor(domain, backend, self.bus, ledger=self.ledger, gate=self.gate,
                                     evidence=evidence)
        self._synced = False
        self._since_trim = 0

    async def check(self, call: TrajectoryCall) -> CheckResult:
        if not self._synced:  # a session syncs once when it starts; so does a replay
            await sync_environment(self.backend, self.bus, 0)
            self._synced = True
        tool_call = ToolCall(f"call_{call.index}", call.name, call.arguments, requestor=Requestor(call.requestor),
                             raw_arguments=call.raw_arguments, parse_error=call.parse_error)
        outcome = await self.executor.execute(tool_call, call.index + 1)
        self._since_trim += 1
        if self._since_trim >= TRIM_EVERY:  # check never goes back in time: let the backend forget its undo log
            self._since_trim = 0
            discard = getattr(self.backend, "discard_history", None)
            if discard is not None:
                await discard()
        decision = outcome.decision
        failed = () if decision is None else tuple(r.predicate_id for r in decision.failed)
        if outcome.verdict == "ERROR":
            reason = outcome.content.removeprefix("Error: ")
        elif decision is not None and decision.failed:
            reason = " | ".join(f"{r.predicate_id}: {r.reason}" for r in decision.failed)
        else:
            reason = ""
        if decision is not None and decision.escalated:
            reason += " (escalated to BLOCK after repeated REVISE)"
        kind = outcome.kind.value if outcome.kind is not None else "unknown"
        evidence = () if decision is None else decision.evidence
        crashed = () if decision is None else tuple(r.predicate_id for r in decision.failed
                                                    if r.status.value == "error")
        refusal = None if decision is None or decision.refusal is None else decision.refusal.value
        gate_reads = () if decision is None else tuple(_gate_read_text(r) for r in decision.gate_reads)
        return CheckResult(call.index, call.line, call.name, kind, outcome.verdict, failed, reason,
                           outcome.executed, call.expect, evidence, call.requestor, crashed, call.expect_rules,
                           call.expect_crashed, refusal, gate_reads)

    async def run(self, calls: list[TrajectoryCall]) -> list[CheckResult]:
        return [await self.check(call) for call in calls]
