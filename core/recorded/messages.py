"""Chat messages (OpenAI's and tau2-bench's) to one recorded conversation: calls paired with their results.

Both formats are a list of messages: `assistant` (and, in tau2, `user`) messages carry `tool_calls`, and each
result is a `tool` message naming its call's id (`tool_call_id` in OpenAI's format, `id` in tau2's, where a
`MultiToolMessage` also wraps several results in `tool_messages`). A call is either OpenAI's
`{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}` or tau2's
`{"id", "name", "arguments": {...}, "requestor"}`; the old `function_call` / `function` pair is read too.

Pairing. A result goes to the earliest call still waiting whose id it names. Real recordings reuse ids (a
model that numbers its calls `call_0` in every turn; tau2 ids may be empty), so the earliest waiting call is
the right one when ids repeat, and a result without an id goes to the earliest waiting call of all. A reused
id is still reported, as are a call that never got a result and a result that answers no call; the rest of
the conversation is read as usual.

Errors. tau2 marks a failed call with `"error": true`; a message without that flag counts as failed when its
text starts with "Error:", the text tau2 and tau-bench give every tool failure. A failed result is kept as
what the agent saw, but the audit never takes it as observed state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from core.recorded.model import (
    SKIPPED,
    Problem,
    RecordedCall,
    RecordedConversation,
    RecordedResult,
    RecordedTurn,
    Where,
    result_value,
)
from core.strict_json import value_problem
from core.tools import Requestor, ToolCall

ERROR_PREFIX = "Error:"
RESULT_ROLES = frozenset({"tool", "function"})


def message_text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of OpenAI's list-of-parts content joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return "\n".join(str(p) for p in parts) if parts else None
    return None


def _text_like(content: Any) -> bool:
    """Whether a message's content is what a chat message holds: text, OpenAI's list of parts, or nothing."""
    return content is None or isinstance(content, str | list)


def _kind(value: Any) -> str:
    return "a boolean" if isinstance(value, bool) else "a number" if isinstance(value, int | float) else \
        "an object" if isinstance(value, Mapping) else type(value).__name__


def parse_call(raw: Any, requestor: Requestor) -> ToolCall | str:
    """One recorded call as a `ToolCall`, or why it is not one. Arguments that are not (strict) JSON are kept
    on the call as its parse error: the audit reports them like every other call it cannot judge."""
    if not isinstance(raw, Mapping):
        return "a tool call must be a JSON object"
    function = raw.get("function")
    source: Mapping[str, Any] = function if isinstance(function, Mapping) else raw
    name, arguments = source.get("name"), source.get("arguments")
    if not isinstance(name, str) or not name:
        return "a tool call without a tool name"
    call_id = raw.get("id") if isinstance(raw.get("id"), str) else ""
    side = raw.get("requestor")
    who = Requestor(side) if side in ("user", "assistant") else requestor
    if isinstance(arguments, str):
        return replace(ToolCall.from_json_text(str(call_id), name, arguments), requestor=who)
    if arguments is None:
        return ToolCall(str(call_id), name, {}, requestor=who)
    if not isinstance(arguments, dict):
        return ToolCall(str(call_id), name, {}, requestor=who, raw_arguments=str(arguments)[:200],
                        parse_error=f"arguments must be a JSON object, got {type(arguments).__name__}")
    return ToolCall(str(call_id), name, arguments, requestor=who)


def parse_result(raw: Mapping[str, Any], where: Where) -> tuple[RecordedResult, str | None]:
    """A result message as what the agent saw, and the problem that makes it unusable (None: none)."""
    raw_content = raw.get("content")
    if not _text_like(raw_content):
        return (RecordedResult(where, "", None, "unreadable"),
                f"the recorded result is {_kind(raw_content)}, not text: nothing is taken from it")
    content = message_text(raw_content) or ""
    flag = raw.get("error")
    failed = flag if isinstance(flag, bool) else content.startswith(ERROR_PREFIX)
    if failed:
        return RecordedResult(where, content, None, "error"), None
    value, problem = result_value(content)
    if problem is None:
        problem = value_problem(value) if isinstance(value, str) else None  # a lone surrogate in plain text
    if problem is not None:
        return RecordedResult(where, content, None, "unreadable"), f"the recorded result is not strict JSON: {problem}"
    return RecordedResult(where, content, value), None


@dataclass
class _Draft:
    where: Where
    call: ToolCall
    recorded_id: str
    result: RecordedResult | None = None


@dataclass
class _TurnDraft:
    where: Where
    role: Literal["user", "assistant"]
    text: str | None
    calls: list[_Draft] = field(default_factory=list)


class ConversationReader:
    """Reads one conversation's messages in order (`add`), then gives it whole (`finish`)."""

    def __init__(self, label: str = "") -> None:
        self.conversation = RecordedConversation(label)
        self._turns: list[_TurnDraft] = []
        self._waiting: list[_Draft] = []
        self._first_at: dict[str, Where] = {}
        self._count = 0

    def problem(self, where: Where, message: str) -> None:
        self.conversation.problems.append(Problem(where, message))

    def add(self, where: Where, message: Any) -> None:
        if message is SKIPPED:  # unreadable, and reported where it was found
            return
        if not isinstance(message, Mapping):
            self.problem(where, f"a message must be a JSON object, got {type(message).__name__}")
            return
        role = message.get("role")
        if role == "system":
            return
        if role in RESULT_ROLES:
            nested = message.get("tool_messages")
            if isinstance(nested, list):  # tau2's MultiToolMessage
                for k, item in enumerate(nested):
                    self.add(where.child(f".tool_messages[{k}]"), item)
                return
            self._result(where, message)
            return
        if role not in ("user", "assistant"):
            self.problem(where, f"unknown message role {str(role)[:40]!r}")
            return
        content = message.get("content")
        if not _text_like(content):
            self.problem(where, f"the message's content is {_kind(content)}, not text (left out)")
        turn = _TurnDraft(where, role, message_text(content))
        self._turns.append(turn)
        raw_calls = message.get("tool_calls")
        if raw_calls is not None and not isinstance(raw_calls, list):
            self.problem(where, "'tool_calls' must be a list")
            raw_calls = None
        legacy = message.get("function_call")
        calls = list(raw_calls or []) + ([legacy] if isinstance(legacy, Mapping) else [])
        side = Requestor.USER if role == "user" else Requestor.ASSISTANT
        for j, raw in enumerate(calls):
            at = where.child(f".tool_calls[{j}]") if j < len(raw_calls or []) else where.child(".function_call")
            parsed = parse_call(raw, side)
            if isinstance(parsed, str):
                self.problem(at, parsed)
                continue
            self._call(turn, at, parsed)

    def _call(self, turn: _TurnDraft, where: Where, call: ToolCall) -> None:
        recorded = call.id
        self._count += 1
        unique = recorded
        if not recorded or recorded in self._first_at:
            if recorded:
                self.problem(where, f"call id {recorded!r} is used again (first at {self._first_at[recorded].short()});"
                             " its result is paired by position")
            unique = f"{recorded or 'call'}@{self._count}"
        if recorded:
            self._first_at.setdefault(recorded, where)
        draft = _Draft(where, replace(call, id=unique), recorded)
        turn.calls.append(draft)
        self._waiting.append(draft)

    def _result(self, where: Where, message: Mapping[str, Any]) -> None:
        named = message.get("tool_call_id", message.get("id"))
        named = named if isinstance(named, str) else ""
        match = next((d for d in self._waiting if d.recorded_id == named), None) if named else None
        if match is None and not named and self._waiting:
            match = self._waiting[0]
        if match is None:
            self.problem(where, f"a tool result for call id {named!r}, which no call waiting for a result has"
                         if named else "a tool result, but no call is waiting for one")
            return
        self._waiting.remove(match)
        result, problem = parse_result(message, where)
        if problem is not None:
            self.problem(where, f"{match.call.name}: {problem}")
        match.result = result

    def finish(self) -> RecordedConversation:
        for draft in self._waiting:
            self.problem(draft.where, f"{draft.call.name}: no result for this call in the recording (it is judged, "
                         "but nothing is taken from it)")
        self._waiting = []
        self.conversation.turns = [
            RecordedTurn(t.where, t.role, t.text, tuple(RecordedCall(d.where, d.call, d.result, d.recorded_id)
                                                        for d in t.calls)) for t in self._turns]
        self.conversation.problems.sort(key=lambda p: _order(p.where))
        return self.conversation


def _order(where: Where) -> tuple[int, ...]:
    """File order: the line, then every index of the JSON path as a number (`[10]` after `[9]`)."""
    return (where.line or 0, *(int(n) for n in re.findall(r"\[(\d+)\]", where.path)))


def read_messages(items: Iterable[tuple[Where, Any]], label: str = "") -> RecordedConversation:
    """One conversation from its messages, each with its position."""
    reader = ConversationReader(label)
    for where, message in items:
        reader.add(where, message)
    return reader.finish()
