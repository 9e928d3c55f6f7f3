"""Strict JSON and the shared numeric guard: hostile text never becomes a value a
predicate, the trace writer or SQLite sees; it becomes a clear error for the model, the operator or `check`."""

from __future__ import annotations

import json
import math

import pytest

from core.events import CallInfo, EventBus, MessageSent, ToolResultEvent
from core.llm.base import AssistantTurn
from core.strict_json import MAX_DEPTH, StrictJSONError, loads, safe_dumps, value_problem
from core.tools import ToolCall

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text, fragment", [
    ('{"amount": NaN}', "NaN is not a JSON number"),
    ('{"amount": Infinity}', "Infinity is not a JSON number"),
    ('{"amount": -Infinity}', "-Infinity is not a JSON number"),
    ('{"amount": 1e999}', "out of range"),
    ('{"note": "\\ud800"}', "lone surrogate \\ud800"),
    ('{"\\udc80": 1}', "lone surrogate \\udc80 is not valid text in a key"),
    (DEEP, f"nested deeper than {MAX_DEPTH} levels"),
    ('{"a": 1', "not valid JSON"),
])
def test_loads_refuses_what_python_json_accepts_or_crashes_on(text: str, fragment: str) -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads(text)
    assert fragment in caught.value.message
    assert "\n" not in caught.value.message


def test_python_json_would_have_accepted_them() -> None:
    """The reason for the module: the standard parser gives NaN/inf and keeps lone surrogates."""
    assert math.isnan(json.loads('{"a": NaN}')["a"]) and json.loads("1e999") == math.inf
    with pytest.raises(RecursionError):
        json.loads(DEEP)


def test_loads_accepts_ordinary_json_and_bytes() -> None:
    assert loads('{"a": [1, 2.5, "é", null, true]}') == {"a": [1, 2.5, "é", None, True]}
    assert loads(b'{"a": 1}') == {"a": 1}
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(StrictJSONError, match="not UTF-8 text"):
        loads(b'{"a": "caf\xe9"}')


def test_value_problem_names_the_path_and_survives_any_depth() -> None:
    assert value_problem({"items": [{"price": float("nan")}]}) == "nan is not a finite number at items[0].price"
    assert value_problem({"a": float("-inf")}, root="args") == "-inf is not a finite number at args.a"
    deep: list[object] = []
    cursor = deep
    for _ in range(100_000):
        nxt: list[object] = []
        cursor.append(nxt)
        cursor = nxt
    problem = value_problem(deep)
    assert problem is not None and problem.startswith(f"nested deeper than {MAX_DEPTH} levels")
    assert value_problem({"ok": [1, "two", 3.0, None, False]}) is None
    assert value_problem({"x": object()}) is not None


def test_model_arguments_with_nan_become_an_unparseable_call() -> None:
    call = ToolCall.from_json_text("c1", "refuel_data", '{"gb_amount": NaN}')
    assert call.arguments == {} and call.parse_error is not None and "NaN" in call.parse_error
    assert call.raw_arguments == '{"gb_amount": NaN}'


def test_a_call_built_with_nan_is_recorded_as_asked_not_as_null() -> None:
    """Before: pydantic wrote NaN as null, so the trace showed a call that never was."""
    info = CallInfo.of(ToolCall("c1", "refuel_data", {"gb_amount": float("nan")}))
    dumped = json.loads(info.model_dump_json())
    assert dumped["arguments"] == {} and dumped["raw_arguments"] == '{"gb_amount": NaN}'
    assert "not a finite number at gb_amount" in dumped["parse_error"]


def test_lone_surrogates_from_the_model_do_not_abort_the_trace() -> None:
    """Before: PydanticSerializationError from the trace writer ended the session."""
    turn = AssistantTurn(text="bad \udc80 text", tool_calls=(
        ToolCall.from_json_text("c\ud800", "tool\udc80", '{"note": "\\ud800"}'),))
    assert turn.text == "bad \\udc80 text"
    (call,) = turn.tool_calls
    assert call.name == "tool\\udc80" and call.parse_error is not None
    bus = EventBus()
    lines: list[str] = []
    bus.subscribe(lambda event: lines.append(event.model_dump_json()))
    bus.emit(MessageSent(role="assistant", text="a\udc80b"))
    bus.emit(ToolResultEvent(call=CallInfo.of(ToolCall("c2", "x\udc80", {"note": "\udc80"})), kind="unknown",
                             executed=False, ok=False, outcome="invalid", content="Error: \udc80"))
    assert all(line.encode("utf-8") for line in lines)
    assert json.loads(lines[0])["text"] == "a\\udc80b"


def test_safe_dumps_never_raises() -> None:
    assert safe_dumps({"a": float("nan"), "b": "\udc80"}) == '{"a": NaN, "b": "\\udc80"}'
    deep: list[object] = []
    cursor = deep
    for _ in range(100_000):
        nxt: list[object] = []
        cursor.append(nxt)
        cursor = nxt
    assert "nested too deep" in safe_dumps(deep)
