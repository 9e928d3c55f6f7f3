"""Tool contracts shared by every domain: specs, calls, the backend protocol and argument checking.

tau2-bench does not validate arguments before dispatch (a wrong type fails somewhere inside the tool).
We check them against the spec's JSON schema first, so the model gets one clear message naming the
argument instead of a stack-trace fragment, and a malformed call never reaches the database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

JSON = Any


class ToolKind(StrEnum):
    """READ returns observed state (absorbed by the ledger); WRITE changes the world (gated)."""

    READ = "read"
    WRITE = "write"
    GENERIC = "generic"


class Requestor(StrEnum):
    ASSISTANT = "assistant"
    USER = "user"


class ToolError(Exception):
    """A tool refused the call. The message goes to the model verbatim, as tau2-bench does."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]
    kind: ToolKind
    requestor: Requestor = Requestor.ASSISTANT

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True)
class ToolCall:
    """One proposed call. `parse_error` is set when the model's argument text was not a JSON object."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    requestor: Requestor = Requestor.ASSISTANT
    raw_arguments: str | None = None
    parse_error: str | None = None

    @classmethod
    def from_json_text(cls, call_id: str, name: str, text: str | None) -> ToolCall:
        """Build a call from the model's raw argument string, keeping the error if it does not parse."""
        raw = text if text is not None else ""
        if raw.strip() == "":
            return cls(id=call_id, name=name, arguments={}, raw_arguments=raw)
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            # json's messages may end in "at" ("Unterminated string starting at"): don't say "at at".
            where = "position" if exc.msg.endswith(" at") else "at position"
            return cls(id=call_id, name=name, arguments={}, raw_arguments=raw,
                       parse_error=f"arguments are not valid JSON ({exc.msg} {where} {exc.pos})")
        if not isinstance(value, dict):
            return cls(id=call_id, name=name, arguments={}, raw_arguments=raw,
                       parse_error=f"arguments must be a JSON object, got {type(value).__name__}")
        return cls(id=call_id, name=name, arguments=value, raw_arguments=raw)

    def arguments_json(self) -> str:
        """Canonical argument text: the same call always serialises the same way."""
        if self.parse_error is not None and self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)

    def signature(self) -> str:
        """Identity of the call's content (not its id): used to spot a rejected call proposed again."""
        return f"{self.name}:{self.arguments_json()}"

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json()},
        }


@runtime_checkable
class ToolBackend(Protocol):
    """Executes a domain's tools. Raises ToolError for every failure; a failed write changes nothing."""

    async def call(self, name: str, arguments: Mapping[str, Any]) -> JSON: ...


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: str | list[str]) -> bool:
    names = [expected] if isinstance(expected, str) else list(expected)
    for name in names:
        types = _JSON_TYPES.get(name)
        if types is None:
            return True
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, types):
            return True
    return False


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "number", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _check_value(value: Any, schema: Mapping[str, Any], path: str, errors: list[str]) -> None:
    expected = schema.get("type")
    if expected is not None and not _type_ok(value, expected):
        shown = expected if isinstance(expected, str) else " or ".join(expected)
        errors.append(f"argument '{path}' must be {shown}, got {_describe(value)} {json.dumps(value)[:60]}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"argument '{path}' must be one of {json.dumps(schema['enum'])}, got {json.dumps(value)}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _check_value(item, schema["items"], f"{path}[{index}]", errors)
    if isinstance(value, dict) and "properties" in schema:
        _check_object(value, schema, f"{path}.", errors)


def _check_object(value: Mapping[str, Any], schema: Mapping[str, Any], prefix: str, errors: list[str]) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            errors.append(f"missing required argument '{prefix}{name}'")
    if schema.get("additionalProperties", True) is False:
        for name in value:
            if name not in properties:
                errors.append(f"unexpected argument '{prefix}{name}'")
    for name, sub in properties.items():
        if name in value:
            _check_value(value[name], sub, f"{prefix}{name}", errors)


def validate_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
    """Return every way `arguments` disagrees with the spec's schema (empty list: valid).

    A deliberately small subset of JSON Schema (type, enum, required, properties, items,
    additionalProperties): exactly what tool schemas use, with messages written for a model to act on.
    """
    errors: list[str] = []
    _check_object(arguments, spec.parameters, "", errors)
    return errors


def string_arg(description: str) -> dict[str, Any]:
    """A string argument of a tool schema."""
    return {"type": "string", "description": description}


def closed_object(required: Mapping[str, Any], optional: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A tool's parameters: the required arguments first (in the tool's own order), then the optional ones,
    and nothing else accepted (`additionalProperties: false`), as the tau2 tools' Python signatures imply."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


def call_text(tool: str, **arguments: Any) -> str:
    """A call as feedback and suggestions write it: `get_order_details(order_id="#W1")`."""
    args = ", ".join(f"{name}={json.dumps(value)}" for name, value in arguments.items())
    return f"{tool}({args})"


def format_tool_result(value: JSON) -> str:
    """Serialise a tool return the way tau2-bench does: strings verbatim, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)
