"""Hostile numbers and garbage from the model never get past the gate.

Real parts: the telecom domain, its predicates and its SQLite backend on a file in tmp_path. The NaN refuel
is the case that was found: `amount <= 0` and `amount > cap` are both False for NaN, so
`telecom.refuel_within_cap` passed it and the gate said ALLOW.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.domain import Domain
from core.events import EventBus
from core.executor import CallExecutor
from core.gate import PolicyGate, Status, Verdict
from core.ledger import Ledger
from core.replay import Checker, TrajectoryCall
from core.tools import ToolCall, ToolKind
from domains.registry import DOMAINS, load_domain
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import open_backend

READS = [("get_customer_by_phone", {"phone_number": "555-210-3001"}),
         ("get_data_usage", {"customer_id": "C2001", "line_id": "L2002"}),
         ("get_details_by_id", {"id": "L2002"}), ("get_details_by_id", {"id": "P2001"})]
NON_FINITE = [float("nan"), float("inf"), float("-inf")]


@pytest.fixture
async def telecom(tmp_path: Path) -> AsyncIterator[tuple[Checker, SQLiteToolBackend]]:
    domain = load_domain("telecom")
    backend = await open_backend("telecom", tmp_path / "db.sqlite")
    checker = Checker(domain, backend)
    for index, (name, arguments) in enumerate(READS):
        result = await checker.check(TrajectoryCall(index, index + 1, name, arguments))
        assert result.verdict == "ALLOW", result
    try:
        yield checker, backend
    finally:
        await backend.close()


def refuel(amount: Any) -> ToolCall:
    return ToolCall("c9", "refuel_data", {"customer_id": "C2001", "line_id": "L2002", "gb_amount": amount})


async def test_the_gate_allows_a_refuel_within_the_cap(telecom: tuple[Checker, SQLiteToolBackend]) -> None:
    checker, _ = telecom
    decision = checker.gate.evaluate(refuel(1.0), checker.ledger, checker.domain.context(checker.ledger))
    assert decision.verdict is Verdict.ALLOW  # so the refusals below are about the number, not the setup


@pytest.mark.parametrize("amount", NON_FINITE, ids=repr)
async def test_the_gate_itself_fails_closed_on_a_non_finite_amount(
        telecom: tuple[Checker, SQLiteToolBackend], amount: float) -> None:
    checker, _ = telecom
    decision = checker.gate.evaluate(refuel(amount), checker.ledger, checker.domain.context(checker.ledger))
    assert decision.verdict is not Verdict.ALLOW
    cap = next(r for r in decision.results if r.predicate_id == "telecom.refuel_within_cap")
    assert cap.status is Status.ERROR and "not a finite number at gb_amount" in cap.reason


@pytest.mark.parametrize("amount", NON_FINITE, ids=repr)
async def test_a_non_finite_amount_is_refused_before_the_gate_and_changes_nothing(
        telecom: tuple[Checker, SQLiteToolBackend], amount: float) -> None:
    checker, backend = telecom
    before = await backend.state_hash()
    outcome = await checker.executor.execute(refuel(amount), 9)
    assert (outcome.outcome, outcome.executed) == ("invalid", False)
    assert "not a finite number at gb_amount" in outcome.content and outcome.decision is None
    assert await backend.state_hash() == before


@pytest.mark.parametrize("arguments", [
    {"customer_id": "C2001", "line_id": "L2002\udc80", "gb_amount": 1.0},
    {"customer_id": "C2001", "line_id": "L2002", "gb_amount": 1.0, "extra": [[[[[[[[]]]]]]]] * 1},
], ids=["lone-surrogate", "unexpected-nested"])
async def test_garbage_arguments_become_tool_errors_and_the_run_goes_on(
        telecom: tuple[Checker, SQLiteToolBackend], arguments: dict[str, Any]) -> None:
    checker, backend = telecom
    before = await backend.state_hash()
    outcome = await checker.executor.execute(ToolCall("c1", "refuel_data", arguments), 9)
    assert not outcome.executed and outcome.content.startswith("Error:")
    assert await backend.state_hash() == before
    after = await checker.executor.execute(refuel(1.0), 10)  # the session goes on
    assert after.executed and after.ok


async def test_deep_arguments_from_the_model_become_a_tool_error(
        telecom: tuple[Checker, SQLiteToolBackend]) -> None:
    """Before: RecursionError aborted the session."""
    checker, _ = telecom
    call = ToolCall.from_json_text("c1", "refuel_data", '{"gb_amount": ' + "[" * 100_000 + "]" * 100_000 + "}")
    outcome = await checker.executor.execute(call, 9)
    assert outcome.outcome == "invalid" and "nested deeper than" in outcome.content


async def test_backend_speaks_the_tools_words_not_sqlites(telecom: tuple[Checker, SQLiteToolBackend]) -> None:
    """Called directly (bypassing the executor), the backend refuses values it cannot store in its own words."""
    _, backend = telecom
    from core.tools import ToolError

    with pytest.raises(ToolError) as caught:
        await backend.call("refuel_data", {"customer_id": "C2001", "line_id": "L2002", "gb_amount": math.nan})
    assert caught.value.message == ("refuel_data could not be completed: a number is not finite (NaN or "
                                    "Infinity) and cannot be stored; nothing was changed")
    with pytest.raises(ToolError) as caught:
        await backend.call("get_details_by_id", {"id": "L2002\udc80"})
    assert "codec" not in caught.value.message and "surrogate" not in caught.value.message


def _numeric_parameters(schema: Any, prefix: str = "") -> Iterator[str]:
    for name, sub in schema.get("properties", {}).items():
        kind = sub.get("type")
        kinds = {kind} if isinstance(kind, str) else set(kind or ())
        if kinds & {"number", "integer"}:
            yield f"{prefix}{name}"


def _cases() -> Iterator[tuple[str, str, str]]:
    for domain_name in DOMAINS:
        domain = load_domain(domain_name)
        for pred in domain.predicates:
            for tool in sorted(pred.tools):
                spec = domain.tool(tool)
                if spec is None or spec.kind is not ToolKind.WRITE:
                    continue
                for parameter in _numeric_parameters(spec.parameters):
                    yield domain_name, pred.id, f"{tool}.{parameter}"


CASES = list(_cases())


def test_there_are_number_comparing_predicates_to_test() -> None:
    assert len(CASES) >= 4 and any(c[1] == "telecom.refuel_within_cap" for c in CASES)


def _filler(spec_schema: Any) -> dict[str, Any]:
    samples = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}
    out: dict[str, Any] = {}
    for name, sub in spec_schema.get("properties", {}).items():
        kind = sub.get("type", "string")
        out[name] = samples.get(kind if isinstance(kind, str) else kind[0], "x")
    return out


@pytest.mark.parametrize("domain_name, predicate_id, target", CASES)
@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_every_predicate_on_a_numeric_argument_fails_closed_on_non_finite(
        domain_name: str, predicate_id: str, target: str, value: float) -> None:
    """A NaN test for every predicate that guards a tool with a number argument: whatever the rule compares,
    it never sees the NaN (the guard is in the gate), and its result is REVISE, never a pass."""
    domain: Domain = load_domain(domain_name)
    tool, parameter = target.split(".", 1)
    spec = domain.tool(tool)
    assert spec is not None
    arguments = {**_filler(spec.parameters), parameter: value}
    pred = next(p for p in domain.predicates if p.id == predicate_id)
    gate = PolicyGate([pred], path_map=domain.path_map)
    ledger = Ledger(domain.path_map)
    decision = gate.evaluate(ToolCall("c1", tool, arguments), ledger, domain.context(ledger))
    (result,) = decision.results
    assert result.verdict is Verdict.REVISE and result.status is Status.ERROR
    assert decision.verdict is not Verdict.ALLOW


async def test_an_operator_edit_holding_nan_is_refused_and_recorded(tmp_path: Path) -> None:
    from core.supervisor import Decision, Resolution

    domain = load_domain("telecom")
    backend = await open_backend("telecom", tmp_path / "db.sqlite")
    try:
        class EditToNaN:
            async def review(self, call: ToolCall, decision: Any) -> Resolution:
                return Resolution(Decision.EDIT, who="op", reason="try", arguments={**call.arguments,
                                                                                    "gb_amount": math.nan})

        bus = EventBus()
        lines: list[str] = []
        bus.subscribe(lambda event: lines.append(event.model_dump_json()))
        ledger = Ledger(domain.path_map)
        executor = CallExecutor(domain, backend, bus, ledger=ledger,
                                gate=PolicyGate(domain.predicates, path_map=domain.path_map),
                                supervisor=EditToNaN())  # type: ignore[arg-type]
        before = await backend.state_hash()
        outcome = await executor.execute(refuel(1.0), 1)
        assert outcome.outcome == "invalid" and not outcome.executed and "finite" in outcome.content
        assert await backend.state_hash() == before
        assert all("NaN" not in line for line in lines)  # nothing non-JSON in the trace
    finally:
        await backend.close()


async def test_a_write_running_when_the_session_is_stopped_is_finished_and_recorded(
        telecom: tuple[Checker, SQLiteToolBackend]) -> None:
    """A stop (quit, a closed desk, a trial's timeout) that lands while an allowed write runs: the write's commit
    happens anyway, so it is let finish and its result is on record before the stop goes on; before, the trace
    ended between the gate's ALLOW and nothing, and nobody could tell whether the refuel was made."""
    checker, backend = telecom
    seen: list[Any] = []
    checker.bus.subscribe(seen.append)
    started, go_on = asyncio.Event(), asyncio.Event()
    call = backend.call

    async def held(name: str, arguments: Any) -> Any:
        if name == "refuel_data":
            started.set()
            await go_on.wait()  # the write is under way when the stop comes
        return await call(name, arguments)

    backend.call = held  # type: ignore[method-assign]
    before = await backend.state_hash()
    running = asyncio.create_task(checker.executor.execute(refuel(1.0), 9))
    await started.wait()
    running.cancel()
    await asyncio.sleep(0)  # the stop is delivered while the write is held
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await running
    results = [e for e in seen if e.type == "tool_result" and e.call.name == "refuel_data"]
    assert [(r.executed, r.ok, r.outcome) for r in results] == [(True, True, "ok")]
    assert await backend.state_hash() != before  # it did run: and the record says so
