"""One validator from a maintained library (jsonschema, not hand-written checks) and specs that cannot drift from
backends (a backend class whose tool methods differ from its specs in kind or parameters fails at creation)."""

from __future__ import annotations

from typing import Any

import pytest

from core.tools import SchemaError, ToolKind, ToolSpec, closed_object, string_arg, validate_arguments
from domains.registry import DOMAINS, load_domain
from mock_backends.base import SQLiteToolBackend, read_tool, write_tool
from mock_backends.registry import backend_class

SPEC = ToolSpec("book", "Book.", closed_object(
    {"user_id": string_arg("who"), "count": {"type": "integer"},
     "cabin": {"type": "string", "enum": ["economy", "business"]},
     "items": {"type": "array", "items": {"type": "object", "properties": {"price": {"type": "number"}},
                                          "required": ["price"], "additionalProperties": False}}},
    {"note": {"type": ["string", "null"]}}), ToolKind.WRITE)


def test_valid_arguments_pass() -> None:
    assert validate_arguments(SPEC, {"user_id": "u", "count": 2, "cabin": "economy",
                                     "items": [{"price": 1.5}], "note": None}) == []


def test_messages_name_the_argument_as_before() -> None:
    errors = validate_arguments(SPEC, {"count": True, "cabin": "first", "items": [{"price": "1"}, {}],
                                       "note": 3, "extra": 1})
    assert errors == [
        "missing required argument 'user_id'",
        "unexpected argument 'extra'",
        "argument 'cabin' must be one of [\"economy\", \"business\"], got \"first\"",
        "argument 'count' must be integer, got boolean true",
        "argument 'note' must be string or null, got integer 3",
        "missing required argument 'items[1].price'",
        "argument 'items[0].price' must be number, got string \"1\"",
    ]


def test_non_finite_and_unencodable_values_are_refused_before_the_schema() -> None:
    """jsonschema's "number" accepts NaN: the shared guard runs first."""
    base: dict[str, Any] = {"user_id": "u", "count": 1, "cabin": "economy", "items": []}
    assert validate_arguments(SPEC, {**base, "items": [{"price": float("nan")}]}) == [
        "invalid value: nan is not a finite number at items[0].price"]
    assert validate_arguments(SPEC, {**base, "user_id": "\udc80"})[0].startswith("invalid value: a lone surrogate")


@pytest.mark.parametrize("schema, fragment", [
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}, "'pattern'"),
    ({"type": "object", "requried": ["a"]}, "'requried'"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"format": "date"}}}}, "'format'"),
])
def test_a_schema_keyword_the_validator_does_not_explain_is_refused(schema: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment):
        ToolSpec("t", "T.", schema, ToolKind.READ)


def test_every_shipped_spec_uses_only_understood_keywords() -> None:
    for name in DOMAINS:
        assert load_domain(name).tools  # built without SchemaError


@pytest.mark.parametrize("name", DOMAINS)
def test_each_backend_declares_its_domains_specs(name: str) -> None:
    cls = backend_class(name)
    assert {spec.name for spec in cls.specs} == {spec.name for spec in load_domain(name).tools}
    assert sorted(spec.name for spec in cls.specs) == cls.tool_names()


GET = ToolSpec("get_thing", "Get.", closed_object({"thing_id": string_arg("id")}), ToolKind.READ)
PUT = ToolSpec("put_thing", "Put.", closed_object({"thing_id": string_arg("id")}, {"note": string_arg("n")}),
               ToolKind.WRITE)


def test_a_backend_matching_its_specs_is_created() -> None:
    class Good(SQLiteToolBackend):
        specs = (GET, PUT)

        @read_tool
        async def get_thing(self, thing_id: str) -> Any:
            return thing_id

        @write_tool
        async def put_thing(self, thing_id: str, note: str = "") -> Any:
            return thing_id

    assert Good.tool_names() == ["get_thing", "put_thing"]


@pytest.mark.parametrize("variant, fragment", [
    ("kind", "put_thing is a read method but a write spec"),
    ("params", "put_thing parameters differ"),
    ("required", "put_thing required parameters differ"),
    ("missing", "spec put_thing has no tool method"),
    ("extra", "tool method other has no spec"),
])
def test_a_backend_drifting_from_its_specs_fails_at_class_creation(variant: str, fragment: str) -> None:
    with pytest.raises(TypeError, match=fragment):
        if variant == "kind":
            class Kind(SQLiteToolBackend):
                specs = (PUT,)

                @read_tool
                async def put_thing(self, thing_id: str, note: str = "") -> Any: ...
        elif variant == "params":
            class Params(SQLiteToolBackend):
                specs = (PUT,)

                @write_tool
                async def put_thing(self, thing_id: str, memo: str = "") -> Any: ...
        elif variant == "required":
            class Required(SQLiteToolBackend):
                specs = (PUT,)

                @write_tool
                async def put_thing(self, thing_id: str, note: str) -> Any: ...
        elif variant == "missing":
            class Missing(SQLiteToolBackend):
                specs = (GET, PUT)

                @read_tool
                async def get_thing(self, thing_id: str) -> Any: ...
        else:
            class Extra(SQLiteToolBackend):
                specs = (GET,)

                @read_tool
                async def get_thing(self, thing_id: str) -> Any: ...

                @read_tool
                async def other(self) -> Any: ...
