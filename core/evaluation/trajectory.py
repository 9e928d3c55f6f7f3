"""A trial's conversation as tau2-bench messages, and back: what tau2's NL judge reads and what its viewer shows.

Why one module for both directions: the judge prompt, the tau2 export and the tau2 import must agree on
what "the conversation" is, or our grade of a run and tau2's grade of the exported run drift apart.

Events -> messages (`tau2_messages`). The order is the session's: the greeting, each customer message, each
model call of the agent (its text and the tool calls that RAN), one `tool` message per call that ran, and the
customer's own phone actions (dual control) as a `user` message with tool calls followed by their results.
A call the gate or the operator stopped, or that was invalid, did not run: it is left out of `tool_calls`
(tau2 replays every mutating call of a trajectory to grade the database, and replaying a refused write
would fake a state change) and kept under the message's `raw_data["ledgeragent_not_executed"]`, so nothing
the agent proposed is lost. A read the gate made itself before judging a write (evidence assist) is not the
agent's call either: tau2's messages have no requestor for it (a tool call is the user's or the assistant's),
and its action checks would credit the agent with a read it never made. It is kept, with its result, under
`raw_data["ledgeragent_gate_reads"]` of the assistant message that proposed the write; the write's tool
message keeps the note the agent was given about it. Operator edits: the call as it ran (edited arguments) is
the one exported.

Messages -> events (`events_from_messages`), for a tau2 results file made by tau2 itself: every assistant
message becomes a model call, every tool call in the file ran (tau2 has no gate), the kind of each tool comes
from `kind_of` (the domain's, when the caller knows the domain; "unknown" otherwise). A file we exported and
that lost its trial records (rebuilt through tau2's own models) gives back, from the raw data above, the calls
that did not run (after the turn's calls that ran, the order between the two not being recorded) and the
gate's own reads (each before the result of the write it was made for). Calls and results are read
as `check --as-recorded` reads them (`core.recorded.messages`): arguments given as JSON text are parsed (strictly;
arguments that are not a JSON object stay on the call as its parse error), a result is failed by tau2's `error`
flag or its "Error:" text, and a result that is not strict JSON (a NaN) is kept as the text it was, never as a
number no comparison can order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from core.events import (
    AssistantTurnEvent,
    CallInfo,
    MessageSent,
    SessionEnded,
    SessionStarted,
    ToolResultEvent,
)
from core.recorded.messages import message_text, parse_call, parse_result
from core.recorded.model import NOT_RUN, Where
from core.tools import Requestor

Tau2Message = dict[str, Any]
NOT_EXECUTED = "ledgeragent_not_executed"
GATE_READS = "ledgeragent_gate_reads"


def _call(call: CallInfo, requestor: str) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": dict(call.arguments), "requestor": requestor}


def _tool_message(result: ToolResultEvent, requestor: str) -> Tau2Message:
    return {"role": "tool", "id": result.call.id, "content": result.content, "requestor": requestor,
            "error": not result.ok}


Stamp = Callable[[Any], str | None]  # an event -> the wall-clock time it happened (ISO 8601), None: not known


def _gate_read(result: ToolResultEvent) -> dict[str, Any]:
    return {"id": result.call.id, "name": result.call.name, "arguments": dict(result.call.arguments), "by": "gate",
            "for_call": result.for_call, "gate_only": result.gate_only, "ok": result.ok, "outcome": result.outcome,
            "content": result.content, "result": result.result}


def _assistant(turn: AssistantTurnEvent, results: Sequence[ToolResultEvent],
               cost: Callable[[int, int], float | None] | None) -> list[tuple[Tau2Message, Any]]:
    own = [r for r in results if r.by != "gate"]
    ran = [r for r in own if r.executed]
    stopped = [r for r in own if not r.executed]
    message: Tau2Message = {"role": "assistant", "content": turn.text,
                            "tool_calls": [_call(r.call, "assistant") for r in ran] or None,
                            "usage": {"prompt_tokens": turn.prompt_tokens,
                                      "completion_tokens": turn.completion_tokens},
                            "cost": cost(turn.prompt_tokens, turn.completion_tokens) if cost else None}
    answered = {r.call.id for r in own}
    missing = [c for c in turn.tool_calls if c.id not in answered]  # the trial ended before they were handled
    raw: dict[str, Any] = {}
    if stopped or missing:
        raw[NOT_EXECUTED] = [
            *({**_call(r.call, "assistant"), "outcome": r.outcome, "content": r.content} for r in stopped),
            *({**_call(c, "assistant"), "outcome": "not_handled", "content": ""} for c in missing)]
    gate = [_gate_read(r) for r in results if r.by == "gate"]
    if gate:
        raw[GATE_READS] = gate
    if raw:
        message["raw_data"] = raw
    return [(message, turn), *((_tool_message(r, "assistant"), r) for r in ran)]


def tau2_messages(events: Iterable[Any], cost: Callable[[int, int], float | None] | None = None,
                  stamp: Stamp | None = None) -> list[Tau2Message]:
    """The trial's messages in tau2-bench's half-duplex format (see the module docstring). `cost` prices one
    agent model call from its prompt and completion tokens (None: unknown); `stamp` gives each message the
    time of the event it comes from (the trace itself holds no wall clock; a run keeps one beside it)."""
    messages: list[tuple[Tau2Message, Any]] = []
    turn: AssistantTurnEvent | None = None
    results: list[ToolResultEvent] = []

    def flush() -> None:
        nonlocal turn, results
        if turn is not None:
            messages.extend(_assistant(turn, results, cost))
        turn, results = None, []

    for event in events:
        if isinstance(event, ToolResultEvent) and event.call.requestor != "user" and turn is not None:
            results.append(event)
            continue
        if not isinstance(event, AssistantTurnEvent | MessageSent | ToolResultEvent):
            continue  # gate decisions, ledger updates, ...: not messages
        flush()
        if isinstance(event, AssistantTurnEvent):
            turn = event
        elif isinstance(event, ToolResultEvent) and event.call.requestor == "user" and event.executed:
            messages.append(({"role": "user", "content": None, "tool_calls": [_call(event.call, "user")]}, event))
            messages.append((_tool_message(event, "user"), event))
        elif isinstance(event, MessageSent):
            messages.append(({"role": event.role, "content": event.text}, event))
    flush()
    out: list[Tau2Message] = []
    for index, (message, origin) in enumerate(messages):
        message["turn_idx"] = index
        message["timestamp"] = stamp(origin) if stamp is not None else None
        out.append(message)
    return out


def judge_transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """Exactly the text tau2's NL-assertions evaluator builds: one `role: content` line per message, every
    message of the trajectory (a tool-call message with no text reads `assistant: None`, as in tau2)."""
    return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages)


# -- the other way: tau2 messages -> our events -----------------------------------------------------


def _result_event(step: int, info: CallInfo, kind: str, reply: Mapping[str, Any]) -> ToolResultEvent:
    result, _problem = parse_result(reply, Where())
    ok = result.outcome != "error"
    value = result.value if result.outcome == "ok" else result.content if ok else None
    return ToolResultEvent(step=step, call=info, kind=kind, executed=True, ok=ok, outcome="ok" if ok else "error",
                           content=result.content, result=value)


def _calls(message: Mapping[str, Any], requestor: Requestor) -> list[CallInfo]:
    """The message's tool calls that name a tool (`core.recorded.messages.parse_call`), as the trace keeps them."""
    raw = message.get("tool_calls")
    parsed = [parse_call(c, requestor) for c in raw] if isinstance(raw, list) else []
    return [CallInfo.of(call) for call in parsed if not isinstance(call, str)]


def _kept(message: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    raw = message.get("raw_data")
    entries = raw.get(key) if isinstance(raw, Mapping) else None
    return [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []


def _not_run(step: int, message: Mapping[str, Any],
             kinds: Callable[[str], str]) -> list[tuple[CallInfo, ToolResultEvent | None]]:
    """The turn's calls that did not run, as our export kept them (`NOT_EXECUTED`), each with its result event
    (None for a call the trial ended before handling). An entry that does not read as one is left out."""
    found: list[tuple[CallInfo, ToolResultEvent | None]] = []
    for entry in _kept(message, NOT_EXECUTED):
        call = parse_call(entry, Requestor.ASSISTANT)
        outcome, content = entry.get("outcome"), entry.get("content")
        if isinstance(call, str) or not isinstance(content, str):
            continue
        info = CallInfo.of(call)
        if outcome == "not_handled":
            found.append((info, None))
        elif outcome in NOT_RUN:
            found.append((info, ToolResultEvent(step=step, call=info, kind=kinds(info.name), executed=False, ok=False,
                                                outcome=outcome, content=content)))
    return found


def _gate_reads(step: int, message: Mapping[str, Any]) -> list[ToolResultEvent]:
    """The reads the gate made itself for the turn's writes, as our export kept them (`GATE_READS`): reads, since
    the gate makes no other call."""
    found: list[ToolResultEvent] = []
    for entry in _kept(message, GATE_READS):
        call = parse_call(entry, Requestor.ASSISTANT)
        if isinstance(call, str):
            continue
        try:
            found.append(ToolResultEvent.model_validate({
                "step": step, "call": CallInfo.of(call), "kind": "read", "executed": True,
                "ok": entry.get("ok"), "outcome": entry.get("outcome"), "content": entry.get("content"),
                "result": entry.get("result"), "by": "gate", "for_call": entry.get("for_call"),
                "gate_only": entry.get("gate_only", False)}, strict=True))
        except ValidationError:
            continue
    return found


def _flatten(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    flat: list[Mapping[str, Any]] = []
    for message in messages:
        if message.get("role") == "tool" and isinstance(message.get("tool_messages"), list):
            flat.extend(m for m in message["tool_messages"] if isinstance(m, Mapping))
        else:
            flat.append(message)
    return flat


def events_from_messages(messages: Sequence[Mapping[str, Any]], *, domain: str, agent: str, model: str, user: str,
                         termination: str, kind_of: Callable[[str], str] | None = None) -> list[Any]:
    """Typed events for a tau2 trajectory, so a tau2 run can be replayed, viewed and re-graded like ours."""
    kinds = kind_of or (lambda _name: "unknown")
    events: list[Any] = [SessionStarted(domain=domain, agent=agent, model=model, user=user, scenario=None)]
    flat = _flatten(messages)
    step = 0
    index = 0
    while index < len(flat):
        message = flat[index]
        index += 1
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue  # system messages, stray tool messages
        calls = _calls(message, Requestor.USER if role == "user" else Requestor.ASSISTANT)
        text = message_text(message.get("content"))
        not_run: list[tuple[CallInfo, ToolResultEvent | None]] = []
        gate_reads: list[ToolResultEvent] = []
        if role == "assistant":
            step += 1
            not_run, gate_reads = _not_run(step, message, kinds), _gate_reads(step, message)
            raw_usage = message.get("usage")
            usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
            events.append(AssistantTurnEvent(step=step, text=text, tool_calls=[*calls, *(c for c, _ in not_run)],
                                             prompt_tokens=token_count(usage.get("prompt_tokens")),
                                             completion_tokens=token_count(usage.get("completion_tokens"))))
        elif not calls:
            events.append(MessageSent(step=step, role="user", text=text or ""))
            continue
        for info in calls:
            reply = flat[index] if index < len(flat) and flat[index].get("role") == "tool" else None
            if reply is None:
                continue
            index += 1
            events.extend(r for r in gate_reads if r.for_call == info.id)
            events.append(_result_event(step, info, kinds(info.name), reply))
        for info, stopped in not_run:
            events.extend(r for r in gate_reads if r.for_call == info.id)
            events.extend([stopped] if stopped is not None else [])
        answered = {info.id for info in calls} | {info.id for info, _ in not_run}
        events.extend(r for r in gate_reads if r.for_call not in answered)
    events.append(SessionEnded(step=step, reason=termination, steps=step))
    return [event.model_copy(update={"seq": n}) for n, event in enumerate(events, start=1)]


def token_count(value: Any) -> int:
    """A token count as recorded: a non-negative integer, else 0 (a count is never guessed from a bad value)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
