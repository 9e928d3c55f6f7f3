"""`SQLiteToolBackend`: the `core.tools.ToolBackend` every domain's mock backend builds on.

It owns the two guarantees the core relies on and that tau2-bench only half provides:
- every failure surfaces as `ToolError` (tau2 turns any exception into "Error: <text>"; we keep the
  text but give the core one exception type), including bad argument names, which tau2 lets crash
  as a TypeError;
- a write tool runs in one store transaction, so a write that raises halfway changes nothing
  (tau2 mutates its in-memory models as it goes and can leave a half-applied write behind).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from core.disk_full import DiskFull
from core.tools import ToolBackend, ToolError, ToolKind, ToolSpec
from mock_backends.store import JSON, Collection, DocumentStore, NonFiniteNumber, Snapshot, Transaction

ToolMethod = Callable[..., Awaitable[JSON]]
F = TypeVar("F", bound=ToolMethod)
B = TypeVar("B", bound="SQLiteToolBackend")

_KIND_ATTR = "__mock_tool_kind__"
_CURRENT_TX: ContextVar[Transaction | None] = ContextVar("mock_backend_tx", default=None)


def tool(kind: ToolKind) -> Callable[[F], F]:
    """Mark an async method as a tool of the given kind; its name is the tool name."""

    def mark(fn: F) -> F:
        is_async = inspect.iscoroutinefunction(fn)  # a bare `if` would narrow away F
        if not is_async:
            raise TypeError(f"tool {fn.__name__} must be an async method")
        setattr(fn, _KIND_ATTR, kind)
        return fn

    return mark


read_tool = tool(ToolKind.READ)
write_tool = tool(ToolKind.WRITE)
generic_tool = tool(ToolKind.GENERIC)


@dataclass(frozen=True)
class ToolEntry:
    name: str
    kind: ToolKind
    parameters: tuple[str, ...]
    required: frozenset[str]


def _entry(name: str, fn: ToolMethod, kind: ToolKind) -> ToolEntry:
    params = list(inspect.signature(fn).parameters.values())[1:]  # drop self
    for param in params:
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(f"tool {name}: parameter {param.name} must be a plain keyword parameter")
    return ToolEntry(
        name=name,
        kind=kind,
        parameters=tuple(p.name for p in params),
        required=frozenset(p.name for p in params if p.default is inspect.Parameter.empty),
    )


def spec_mismatches(specs: Iterable[ToolSpec], tools: Mapping[str, ToolEntry]) -> list[str]:
    """Every way the specs and the tool methods disagree (empty: they match)."""
    problems: list[str] = []
    named = {spec.name: spec for spec in specs}
    for name, spec in named.items():
        entry = tools.get(name)
        if entry is None:
            problems.append(f"spec {name} has no tool method")
            continue
        if entry.kind is not spec.kind:
            problems.append(f"{name} is a {entry.kind.value} method but a {spec.kind.value} spec")
        properties = set(spec.parameters.get("properties", {}))
        if properties != set(entry.parameters):
            problems.append(f"{name} parameters differ: spec {sorted(properties)}, method {sorted(entry.parameters)}")
        required = set(spec.parameters.get("required", []))
        if required != entry.required:
            problems.append(f"{name} required parameters differ: spec {sorted(required)}, "
                            f"method {sorted(entry.required)}")
    problems += [f"tool method {name} has no spec" for name in tools if name not in named]
    return problems


def _message(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__


class SQLiteToolBackend:
    """Dispatches tool calls by name to decorated async methods over a `DocumentStore`."""

    collections: ClassVar[tuple[Collection, ...]] = ()
    # The domain's hand-written tool specs (the layer contract and the prompt bytes). A subclass that sets
    # them is checked when the class is created: every spec has a tool method of the same kind, parameters
    # and required set, and every tool method has a spec, so specs and backend cannot drift apart.
    specs: ClassVar[tuple[ToolSpec, ...]] = ()
    _tools: ClassVar[dict[str, ToolEntry]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools: dict[str, ToolEntry] = {}
        for klass in reversed(cls.__mro__):
            for name, attr in vars(klass).items():
                kind = getattr(attr, _KIND_ATTR, None)
                if isinstance(kind, ToolKind):
                    tools[name] = _entry(name, attr, kind)
        cls._tools = tools
        if "specs" in vars(cls):
            problems = spec_mismatches(cls.specs, tools)
            if problems:
                raise TypeError(f"{cls.__name__}: tool specs and tool methods disagree: " + "; ".join(problems))

    def __init__(self, store: DocumentStore) -> None:
        self.store = store

    # ----------------------------------------------------------------------------------- factories

    @classmethod
    def normalise(cls, data: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
        """Domain hook: turn raw data (e.g. a tau2 db.json) into the documents to store."""
        return {name: dict(docs) for name, docs in data.items()}

    @classmethod
    def read_source(cls, path: Path) -> Any:
        """Domain hook: parse a database file in the domain's native format (tau2: JSON; telecom: TOML)."""
        return json.loads(path.read_text(encoding="utf-8"))

    @classmethod
    async def create(cls: type[B], path: Path | str, data: Mapping[str, Any]) -> B:
        """A fresh database at `path` (an existing file there is replaced) holding `data`."""
        if str(path) != ":memory:":
            for suffix in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(f"{path}{suffix}")
        store = await DocumentStore.open(path, cls.collections)
        try:
            await store.load(cls.normalise(data))
        except BaseException:
            await store.close()
            raise
        return cls(store)

    @classmethod
    async def attach(cls: type[B], path: Path | str) -> B:
        """Open an existing database file, e.g. a session copy made with `store.backup_to`. Its integrity
        and schema are checked first: a damaged or foreign file raises `StoreError`, nothing is written."""
        return cls(await DocumentStore.open(path, cls.collections, existing=True))

    # ----------------------------------------------------------------------------------- dispatch

    @classmethod
    def tool_names(cls, kind: ToolKind | None = None) -> list[str]:
        return sorted(name for name, entry in cls._tools.items() if kind is None or entry.kind is kind)

    @classmethod
    def tool_kind(cls, name: str) -> ToolKind | None:
        entry = cls._tools.get(name)
        return None if entry is None else entry.kind

    @property
    def tx(self) -> Transaction:
        """The running write tool's transaction. Only write tools may change the store."""
        tx = _CURRENT_TX.get()
        if tx is None:
            raise RuntimeError("no write transaction: only write tools may change the database")
        return tx

    def _check_arguments(self, entry: ToolEntry, arguments: Mapping[str, Any]) -> None:
        problems = [f"unexpected argument '{name}'" for name in arguments if name not in entry.parameters]
        problems += [f"missing required argument '{name}'" for name in entry.parameters
                     if name in entry.required and name not in arguments]
        if problems:
            raise ToolError(f"{entry.name}: " + "; ".join(problems))

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[Transaction]:
        """One store transaction that `self.tx` sees, as a write tool runs in.

        For environment code that is not a tool call (telecom's line <-> phone sync, a task's setup
        functions): it gets the same all-or-nothing guarantee, so a hook that fails changes nothing.
        """
        async with self.store.transaction() as tx:
            token = _CURRENT_TX.set(tx)
            try:
                yield tx
            finally:
                _CURRENT_TX.reset(token)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> JSON:
        entry = self._tools.get(name)
        if entry is None:
            raise ToolError(f"Tool '{name}' not found.")
        self._check_arguments(entry, arguments)
        method: ToolMethod = getattr(self, name)
        kwargs = dict(arguments)
        try:
            if entry.kind is not ToolKind.WRITE:
                return await method(**kwargs)
            async with self.writing():
                return await method(**kwargs)
        except (ToolError, DiskFull):  # a full disk is no tool error: the session cannot record what follows
            raise
        except NonFiniteNumber as exc:
            raise ToolError(f"{name} could not be completed: {exc}; nothing was changed") from exc
        except (sqlite3.Error, UnicodeError, RecursionError) as exc:
            # The storage layer's words ("malformed JSON", a codec error) mean nothing to the model or the
            # operator: say what happened in the tool's terms. A write changed nothing (its transaction
            # rolled back). The domain's own checks run first, so their messages win where they exist.
            raise ToolError(f"{name} could not be completed: the request holds data the database cannot "
                            f"store; nothing was changed") from exc
        except Exception as exc:
            raise ToolError(_message(exc)) from exc

    # ----------------------------------------------------------------------------------- passthroughs

    async def state_hash(self) -> str:
        return await self.store.state_hash()

    async def export(self) -> dict[str, dict[str, JSON]]:
        return await self.store.export()

    async def snapshot(self) -> Snapshot:
        return await self.store.snapshot()

    async def restore(self, snapshot: Snapshot) -> None:
        await self.store.restore(snapshot)

    async def discard_history(self) -> None:
        """Forget the undo log (and every snapshot): for long runs that never go back, such as `check`."""
        await self.store.discard_history()

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self: B) -> B:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()


def _conforms(backend: SQLiteToolBackend) -> ToolBackend:
    return backend  # mypy proves here that the base class satisfies the core protocol
