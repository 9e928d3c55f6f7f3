"""Tool contracts shared by every domain: specs, calls, the backend protocol and argument checking.

tau2-bench does not validate arguments before dispatch (a wrong type fails somewhere inside the tool).
We check them against the spec's JSON schema first, so the model gets one clear message naming the
argument instead of a stack-trace fragment, and a malformed call never reaches the database.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from json.encoder import encode_basestring_ascii as _quote
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from core.strict_json import StrictJSONError, printable, safe_dumps, value_problem
from core.strict_json import loads as strict_loads

if TYPE_CHECKING:  # jsonschema is imported by the first validation: it is not needed to draw the console
    from jsonschema import Draft202012Validator, ValidationError

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

    def __post_init__(self) -> None:
        problems = _schema_problems(self.parameters, self.name)
        if problems:
            raise SchemaError("; ".join(problems))

    @property
    def schema_json(self) -> str:
        """The parameter schema as canonical text: the key the compiled validator is cached under."""
        return json.dumps(self.parameters, sort_keys=True)

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
            value = strict_loads(raw)
        except StrictJSONError as exc:
            return cls(id=call_id, name=name, arguments={}, raw_arguments=printable(raw),
                       parse_error=f"arguments are {exc.message}" if exc.message.startswith("not valid JSON")
                       else f"arguments are not valid JSON: {exc.message}")
        if not isinstance(value, dict):
            return cls(id=call_id, name=name, arguments={}, raw_arguments=raw,
                       parse_error=f"arguments must be a JSON object, got {type(value).__name__}")
        return cls(id=call_id, name=name, arguments=value, raw_arguments=raw)

    def hardened(self) -> ToolCall:
        """This call, or, when its name or arguments hold something no JSON document may hold (NaN, a lone
        surrogate, nesting too deep), the same call refused as unparseable: arguments empty, the offending
        input kept as escaped text in `raw_arguments` and the reason in `parse_error`. So the trace records
        exactly what was asked (not NaN silently written as null), and no predicate ever sees it."""
        name, call_id = printable(self.name), printable(self.id)
        if self.parse_error is not None:
            raw = None if self.raw_arguments is None else printable(self.raw_arguments)
            if name == self.name and call_id == self.id and raw == self.raw_arguments:
                return self
            return replace(self, id=call_id, name=name, raw_arguments=raw)
        problem = value_problem(self.arguments)
        if problem is None:
            return self if name == self.name and call_id == self.id else replace(self, id=call_id, name=name)
        return replace(self, id=call_id, name=name, arguments={}, raw_arguments=safe_dumps(dict(self.arguments)),
                       parse_error=f"arguments are not valid JSON: {problem}")

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


# The keywords the tool schemas may use. A spec with any other keyword is refused when it is built: the
# validator would enforce it but the messages below would not explain it, and a keyword nobody meant to
# enforce (a typo such as `"requried"`) must not pass silently.
SCHEMA_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum",
                             "description", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                             "minItems", "maxItems", "minLength", "maxLength"})
_SUBSCHEMA_KEYS = ("items", "additionalProperties")


class SchemaError(ValueError):
    """A tool spec whose parameter schema the validator cannot enforce as written."""


def _schema_problems(schema: Any, where: str) -> list[str]:
    if not isinstance(schema, Mapping):
        return [f"{where}: a schema must be an object, got {type(schema).__name__}"]
    problems = [f"{where}: unsupported schema keyword {key!r}" for key in schema if key not in SCHEMA_KEYWORDS]
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        problems.append(f"{where}: 'properties' must be an object")
    else:
        for name, sub in properties.items():
            problems += _schema_problems(sub, f"{where}.{name}")
    for key in _SUBSCHEMA_KEYS:
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            problems += _schema_problems(sub, f"{where}[{key}]")
    return problems


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "number", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _path(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:60]


def _messages(error: ValidationError) -> list[str]:
    """Today's messages, written for a model to act on, for each jsonschema error."""
    path = _path(error.absolute_path)
    prefix = f"{path}." if path else ""
    instance: Any = error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    if error.validator == "required":
        return [f"missing required argument '{prefix}{name}'" for name in expected
                if isinstance(instance, dict) and name not in instance]
    if error.validator == "additionalProperties":
        known = schema.get("properties", {})
        return [f"unexpected argument '{prefix}{name}'" for name in instance if name not in known]
    if error.validator == "type":
        shown = expected if isinstance(expected, str) else " or ".join(expected)
        return [f"argument '{path}' must be {shown}, got {_describe(instance)} {_shown(instance)}"]
    if error.validator == "enum":
        return [f"argument '{path}' must be one of {_shown(expected)}, got {_shown(instance)}"]
    return [f"argument '{path}': {error.message}"]


def _order(error: ValidationError) -> tuple[int, tuple[str, ...], int]:
    # Per object: missing arguments first, then unexpected ones, then each argument's own problems.
    rank = {"required": 0, "additionalProperties": 1}.get(str(error.validator), 2)
    return (len(error.absolute_path), tuple(str(p) for p in error.absolute_path), rank)


def validate_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
    """Return every way `arguments` disagrees with the spec's schema (empty list: valid).

    The schema is enforced by `jsonschema` (Draft 2020-12); the messages name the argument so a model can
    act on them. Values no JSON document may hold (NaN, Infinity, a lone surrogate, nesting deeper than
    `core.strict_json.MAX_DEPTH`) are refused first: the schema's "number" would accept NaN, and the model,
    `check`, the edit modal and the agent-seat form all come through here.
    """
    problem = value_problem(dict(arguments))
    if problem is not None:
        return [f"invalid value: {problem}"]
    validator = _validator(spec.schema_json)
    errors: list[str] = []
    for error in sorted(validator.iter_errors(dict(arguments)), key=_order):
        for message in _messages(error):
            if message not in errors:
                errors.append(message)
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
    """A call as feedback and suggestions write it: `get_order_details(order_id="#W1")`.

    Rules build one per record they read (the hint for a missing one), so a text argument, the usual
    case, is quoted by the encoder `json.dumps` itself calls for a string, without its per-call set-up."""
    args = ", ".join(f"{name}={_quote(value) if isinstance(value, str) else json.dumps(value)}"
                     for name, value in arguments.items())
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
