"""Property test of the whole call path: random call sequences per domain never get a write
past the gate, never run other arguments than the judged ones, never change anything on a failed or refused
call, and never grow the ledger but from a successful read.

Real parts only: each domain's tools, predicates, path map and SQLite backend (one file per domain, restored
to its seed state before every example), the real `CallExecutor`, `PolicyGate` and `Ledger`. What is random:
tool names (known, unknown, with lone surrogates), arguments (ids from the seed data, mutated: wrong types,
missing and extra keys, huge, unicode, SQL-like, NaN/inf, deep nesting), the requestor, duplicate calls,
several calls per model message, the operator's decisions (approve, veto, edit with random arguments,
force-allow) and backend faults injected before a call.

Bounded: the `ci` profile runs ~30 s (`make test`); the `fuzz` profile (`make fuzz`) runs far
longer. The environment's sync hook is not exposed (it changes state by design, outside any call).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.events import EventBus, GateDecided, SupervisorDecided
from core.executor import CallExecutor
from core.gate import GateDecision, PolicyGate, Verdict
from core.ledger import Ledger
from core.supervisor import Decision, Resolution
from core.tools import Requestor, ToolCall, ToolError, ToolKind
from domains.registry import DOMAINS, load_domain
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import open_backend
from mock_backends.store import Snapshot

# The budget is the Hypothesis profile's (tests/conftest.py): a dozen examples per domain in `make test`, thousands
# in `make fuzz`.
pytestmark = pytest.mark.fuzz

LOOP = asyncio.new_event_loop()
HOSTILE_TEXT = ["", " ", "x" * 20_000, "'; DROP TABLE users; --", "\" OR 1=1 --", "%", "_", "\\", "\u212a",
                "İ", "\u202e", "😀", "\x00", "\udc80", "NaN", "null", "$.a"]
NUMBERS = [0, -1, 1, 2**63, -(2**63), 1e308, float("nan"), float("inf"), float("-inf"), 0.5, -0.0]


@dataclass
class World:
    domain_name: str
    backend: SQLiteToolBackend
    baseline: Snapshot
    pool: list[str]


_WORLDS: dict[str, World] = {}
_TMP: list[Path] = []


def _strings(value: Any, out: set[str], budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    if isinstance(value, str) and len(value) < 60:
        out.add(value)
        budget[0] -= 1
    elif isinstance(value, Mapping):
        for sub in value.values():
            _strings(sub, out, budget)
    elif isinstance(value, list):
        for sub in value[:5]:
            _strings(sub, out, budget)


async def _world(name: str, tmp: Path) -> World:
    world = _WORLDS.get(name)
    if world is not None:
        await world.backend.restore(world.baseline)
        world.baseline = await world.backend.snapshot()
        return world
    backend = await open_backend(name, tmp / f"{name}.sqlite")
    pool: set[str] = set()
    for docs in (await backend.export()).values():
        for key, doc in list(docs.items())[:25]:
            pool.add(key)
            _strings(doc, pool, [40])
    world = World(name, backend, await backend.snapshot(), sorted(pool))
    _WORLDS[name] = world
    return world


@pytest.fixture(scope="module", autouse=True)
def _close_worlds(tmp_path_factory: pytest.TempPathFactory) -> Any:
    _TMP.append(tmp_path_factory.mktemp("properties"))
    yield
    for world in _WORLDS.values():
        LOOP.run_until_complete(world.backend.close())
    _WORLDS.clear()


class Faulty:
    """The real backend behind an injectable fault; records exactly what reached it. No `sync` on purpose."""

    def __init__(self, backend: SQLiteToolBackend, faults: list[bool]) -> None:
        self.backend = backend
        self.faults = faults
        self.received: list[tuple[str, dict[str, Any]]] = []

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        self.received.append((name, json.loads(json.dumps(arguments, allow_nan=True))))
        if self.faults and self.faults.pop(0):
            raise ToolError("injected fault: the backend is unavailable")
        return await self.backend.call(name, arguments)


@dataclass
class Operator:
    """Replays drawn decisions: approve, veto, edit (with drawn arguments) or force-allow."""

    plan: list[tuple[str, dict[str, Any]]]
    given: list[Resolution] = field(default_factory=list)

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        kind, arguments = self.plan.pop(0) if self.plan else ("approve", {})
        if kind == "veto":
            resolution = Resolution(Decision.VETO, who="op", reason="no")
        elif kind == "edit":
            resolution = Resolution(Decision.EDIT, who="op", reason="edit", arguments=arguments)
        elif kind == "force" and decision is not None and decision.verdict is not Verdict.ALLOW:
            resolution = Resolution(Decision.FORCE_ALLOW, who="op", reason="forced")
        else:
            resolution = Resolution(Decision.APPROVE, who="op")
        self.given.append(resolution)
        return resolution


def _deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def _value(pool: list[str], schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema.get("type", "string")
    hostile: st.SearchStrategy[Any] = st.one_of(
        st.sampled_from(HOSTILE_TEXT), st.sampled_from(NUMBERS), st.none(), st.booleans(),
        st.recursive(st.integers(), lambda inner: st.lists(inner, max_size=2), max_leaves=4),
        st.just(_deep(100)),
        st.text(max_size=30))
    if "enum" in schema:
        typed: st.SearchStrategy[Any] = st.sampled_from(list(schema["enum"]))
    elif kind == "string":
        typed = st.sampled_from(pool) | st.text(max_size=12)
    elif kind in ("number", "integer"):
        typed = st.integers(-5, 500) | st.sampled_from(NUMBERS)
    elif kind == "array":
        typed = st.lists(_value(pool, schema.get("items", {"type": "string"})), max_size=3)
    elif kind == "boolean":
        typed = st.booleans()
    else:
        typed = st.fixed_dictionaries({})
    return st.one_of(typed, typed, typed, hostile)


@st.composite
def arguments_for(draw: st.DrawFn, pool: list[str], schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, sub in schema.get("properties", {}).items():
        if draw(st.integers(0, 9)) > 0:  # sometimes missing
            out[name] = draw(_value(pool, sub))
    if draw(st.integers(0, 9)) == 0:
        out[draw(st.sampled_from(["extra", "\udc80", "user_id ", "__proto__"]))] = draw(_value(pool, {}))
    return out


@st.composite
def scripts(draw: st.DrawFn, world: World) -> list[list[ToolCall]]:
    domain = load_domain(world.domain_name)
    tools = list(domain.tools)
    messages: list[list[ToolCall]] = []
    previous: ToolCall | None = None
    for m in range(draw(st.integers(1, 6))):
        calls: list[ToolCall] = []
        for c in range(draw(st.integers(1, 3))):
            if previous is not None and draw(st.integers(0, 5)) == 0:
                calls.append(ToolCall(f"c{m}-{c}", previous.name, previous.arguments, previous.requestor))
                continue
            choice = draw(st.integers(0, 12))
            if choice == 0:
                name, schema = draw(st.sampled_from(["no_such_tool", "drop\udc80", "", "calculate "])), {}
            else:
                spec = draw(st.sampled_from(tools))
                name, schema = spec.name, dict(spec.parameters)
            requestor = Requestor.USER if draw(st.integers(0, 15)) == 0 else Requestor.ASSISTANT
            if choice != 0 and domain.tool(name) is not None and domain.tool(name).requestor is Requestor.USER:
                requestor = Requestor.USER if draw(st.integers(0, 3)) else Requestor.ASSISTANT
            previous = ToolCall(f"c{m}-{c}", name, draw(arguments_for(world.pool, schema)), requestor)
            calls.append(previous)
        messages.append(calls)
    return messages


async def _check_sequence(world: World, messages: list[list[ToolCall]], faults: list[bool],
                          plan: list[tuple[str, dict[str, Any]]]) -> None:
    domain = load_domain(world.domain_name)
    backend = Faulty(world.backend, faults)
    bus = EventBus()
    ledger = Ledger(domain.path_map)
    operator = Operator(plan)
    executor = CallExecutor(domain, backend, bus, ledger=ledger,
                            gate=PolicyGate(domain.predicates, path_map=domain.path_map), supervisor=operator)
    step = 0
    for message in messages:
        for call in message:
            step += 1
            before_hash = await world.backend.state_hash()
            before_ledger = ledger.to_dict()
            seen = len(bus.history)
            received = len(backend.received)
            outcome = await executor.execute(call, step)
            after_hash = await world.backend.state_hash()
            events = bus.history[seen:]
            for event in events:
                event.model_dump_json().encode("utf-8")  # every event can be written to the trace
            spec = domain.tool(outcome.call.name)
            if after_hash != before_hash:
                assert outcome.executed and outcome.ok, outcome
                assert spec is not None and spec.kind is ToolKind.WRITE or outcome.call.requestor is Requestor.USER
            if not outcome.ok:
                assert after_hash == before_hash, f"a failed or refused call changed the state: {outcome}"
            if outcome.executed and spec is not None and spec.kind is ToolKind.WRITE \
                    and outcome.call.requestor is Requestor.ASSISTANT:
                judged = [e for e in events if isinstance(e, GateDecided)]
                assert judged, "a write ran without a gate decision"
                last = judged[-1]
                assert backend.received[received:] == [(outcome.call.name, dict(last.call.arguments))]
                forced = any(isinstance(e, SupervisorDecided) and e.decision == "force_allow" for e in events)
                assert last.verdict == "ALLOW" or forced, "a write ran without ALLOW or a recorded force-allow"
            elif not outcome.executed:
                assert backend.received[received:] == []
            if ledger.to_dict() != before_ledger:
                assert outcome.ok and (outcome.kind is ToolKind.READ), f"ledger grew from {outcome}"


@pytest.mark.parametrize("domain_name", DOMAINS)
def test_random_call_sequences_keep_the_invariants(domain_name: str) -> None:
    world = LOOP.run_until_complete(_world(domain_name, _TMP[0]))

    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        LOOP.run_until_complete(world.backend.restore(world.baseline))
        world.baseline = LOOP.run_until_complete(world.backend.snapshot())
        messages = data.draw(scripts(world))
        faults = data.draw(st.lists(st.integers(0, 7).map(lambda n: n == 0), max_size=20))
        spec_for_edit = {"type": "object", "properties": {}}
        plan = data.draw(st.lists(st.tuples(st.sampled_from(["approve", "veto", "edit", "force"]),
                                            arguments_for(world.pool, spec_for_edit)), max_size=10))
        for message in messages:
            for i, (kind, _) in enumerate(plan):
                if kind == "edit":
                    first = message[0]
                    spec = load_domain(domain_name).tool(first.name)
                    schema = dict(spec.parameters) if spec is not None else {}
                    plan[i] = ("edit", data.draw(arguments_for(world.pool, schema)))
        LOOP.run_until_complete(_check_sequence(world, messages, faults, plan))

    run()
