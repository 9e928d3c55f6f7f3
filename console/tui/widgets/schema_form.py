"""A form built from a tool's JSON schema: one field per argument, typed, with the schema's own checks.

Strings, numbers and integers are inputs; booleans are switches; enums are selects; arrays take a JSON
array or a comma-separated list; objects take JSON. `values()` returns the arguments or the problems, so
the caller can show them without guessing what the model would have sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Switch

from core.tools import ToolSpec, validate_arguments


class SchemaForm(Vertical):
    DEFAULT_CSS = """
    SchemaForm { height: auto; }
    SchemaForm Label { margin-top: 1; color: $text-muted; }
    SchemaForm Input, SchemaForm Select { width: 100%; }
    """

    def __init__(self, spec: ToolSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.properties: Mapping[str, Any] = spec.parameters.get("properties", {})
        self.required = set(spec.parameters.get("required", []))

    def compose(self) -> ComposeResult:
        for name, schema in self.properties.items():
            kind = schema.get("type", "string")
            if kind == "array":
                kind = f"array of {schema.get('items', {}).get('type', 'any')}"
            mark = "*" if name in self.required else ""
            hint = f" — {schema['description']}" if schema.get("description") else ""
            yield Label(f"{name}{mark} ({kind}){hint}")
            yield self._field(name, schema)

    def _field(self, name: str, schema: Mapping[str, Any]) -> Widget:
        field_id = f"arg-{name}"
        if "enum" in schema:
            return Select([(str(v), v) for v in schema["enum"]], id=field_id, allow_blank=name not in self.required)
        if schema.get("type") == "boolean":
            return Switch(id=field_id)
        placeholder = {"array": 'JSON array, or comma-separated: a, b', "object": "JSON object"}.get(
            str(schema.get("type")), "")
        return Input(id=field_id, placeholder=placeholder)

    def set_values(self, arguments: Mapping[str, Any]) -> None:
        for name, value in arguments.items():
            if name not in self.properties:
                continue
            widget = self.query_one(f"#arg-{name}")
            if isinstance(widget, Switch):
                widget.value = bool(value)
            elif isinstance(widget, Select):
                widget.value = value
            elif isinstance(widget, Input):
                widget.value = value if isinstance(value, str) else json.dumps(value)

    def values(self) -> tuple[dict[str, Any], list[str]]:
        arguments: dict[str, Any] = {}
        problems: list[str] = []
        for name, schema in self.properties.items():
            widget = self.query_one(f"#arg-{name}")
            kind = schema.get("type")
            if isinstance(widget, Switch):
                arguments[name] = widget.value
                continue
            if isinstance(widget, Select):
                if widget.value is not Select.BLANK:
                    arguments[name] = widget.value
                continue
            assert isinstance(widget, Input)
            raw = widget.value
            if raw == "" and name not in self.required:
                continue
            try:
                arguments[name] = _parse(raw, kind, schema)
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
        problems += validate_arguments(self.spec, arguments)
        return arguments, problems


def _parse(raw: str, kind: Any, schema: Mapping[str, Any]) -> Any:
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not an integer") from None
    if kind == "number":
        try:
            return float(raw) if any(c in raw for c in ".eE") else int(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not a number") from None
    if kind == "array":
        text = raw.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON array ({exc.msg})") from None
            return value
        items = [part.strip() for part in text.split(",") if part.strip()]
        if schema.get("items", {}).get("type") in ("integer", "number"):
            return [_parse(i, schema["items"]["type"], schema["items"]) for i in items]
        return items
    if kind == "object":
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object ({exc.msg})") from None
    return raw
