"""The gold-replay harness: upstream tasks replayed through `ledgeragent check` over a REAL backend.

tests/domains/*/test_*_gold_replay.py keep what is theirs (the task tables, built by the trajectory modules
beside this one, the expected refusals and the violating variants); the scaffolding they all need lives here,
taking those tables as arguments:

- `template_fixture` / `fresh_fixture`: the backend is built once per module from the upstream data and every
  test starts from the snapshot taken right after loading (an undo-log restore, proportional to the changes,
  not to the thousands of records), which is what keeps hundreds of replays affordable; `replay_group` keeps
  the module on one xdist worker, so that is once per run;
- `Lines`: the line builders of the variants (`read`, `bad`, `prefix`, `gold`, `gold_with`, `without_reads`)
  over one domain's tasks and trajectory builder;
- `calls`, `check`, `show`, `apply_gold_writes`, `assert_rejected`: lines parsed exactly as `check` parses a
  file, failures described by line and note, a violation checked to be refused without changing anything;
- `cli_check`: the real CLI (`ledgeragent check --json`) with the assertions every domain's CLI test shares.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import pytest
import pytest_asyncio

from console.cli.main import main as cli_main
from core.domain import Domain
from core.evidence import EvidenceMode
from core.replay import Checker, CheckResult, TrajectoryCall, parse_trajectory
from core.tools import ToolError
from mock_backends.base import SQLiteToolBackend
from mock_backends.store import Snapshot

Line = dict[str, Any]
Task = dict[str, Any]
Action = dict[str, Any]
Row = dict[str, Any]
B = TypeVar("B", bound=SQLiteToolBackend)

GOLD_NOTE = "gold "
READ_NOTE = "careful read before "
JSON_KEYS = frozenset({"index", "name", "kind", "verdict", "predicates", "reason", "executed"})

# The async tests share the module's backend, so they share its event loop too.
module_loop = pytest.mark.asyncio(loop_scope="module")


def replay_group(name: str) -> pytest.MarkDecorator:
    """Keep a module's tests on one pytest-xdist worker (`make unit` runs `--dist loadgroup`): its backend is
    built once from the upstream data (seconds for thousands of records) instead of once per worker."""
    return pytest.mark.xdist_group(name)


@dataclass
class Template(Generic[B]):
    """The module's backend and the state it had right after loading the upstream data."""

    backend: B
    base: Snapshot
    base_hash: str


def template_fixture(name: str, create: Callable[[Path], Awaitable[B]]) -> Any:
    """A module-scoped fixture `template`: `create(path)` builds the backend once, in a temporary folder."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module")
    async def template(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Template[B]]:
        backend = await create(tmp_path_factory.mktemp(name) / "template.sqlite")
        try:
            yield Template(backend, await backend.snapshot(), await backend.state_hash())
        finally:
            await backend.close()

    return template


def fresh_fixture() -> Any:
    """A fixture `fresh`: the module's backend, back at the freshly loaded upstream data."""

    @pytest_asyncio.fixture(loop_scope="module")
    async def fresh(template: Template[Any]) -> Template[Any]:
        await template.backend.restore(template.base)
        return template

    return fresh


def calls(lines: Sequence[Line]) -> list[TrajectoryCall]:
    """The lines as `ledgeragent check` reads them from a file (one JSON object each); none may be malformed."""
    trajectory = parse_trajectory("\n".join(json.dumps(line) for line in lines))
    assert not trajectory.problems, trajectory.problems
    return trajectory.calls


async def check(domain: Domain, backend: SQLiteToolBackend, lines: Sequence[Line]) -> list[CheckResult]:
    return await Checker(domain, backend).run(calls(lines))


def show(results: Sequence[CheckResult], lines: Sequence[Line], *, unmet: bool = False) -> str:
    """The failed lines (also those without an expectation when `unmet`), with their notes: the message of an
    assertion over a whole trajectory."""
    return "\n".join(f"{r.index} {lines[r.index].get('note', '')} {r.name} {r.verdict} {r.predicates} "
                     f"{r.reason[:400]}" for r in results if (r.met is not True if unmet else r.met is False))


async def apply_gold_writes(backend: SQLiteToolBackend, writes: Sequence[Action],
                            refusals: Mapping[str, str] | None = None) -> None:
    """The gold writes sent straight to the backend, no gate: what the upstream evaluator builds as the gold
    environment. `refusals` maps the action ids the tool itself refuses to its error message; any other
    failure fails the test."""
    expected = dict(refusals or {})
    for action in writes:
        try:
            await backend.call(action["name"], action["arguments"])
        except ToolError as exc:
            assert action["action_id"] in expected, f"{action['action_id']}: {exc.message}"
            assert exc.message == expected[action["action_id"]]
        else:
            assert action["action_id"] not in expected


@dataclass(frozen=True)
class Lines:
    """The line builders of one domain's violating variants, over its task table.

    `trajectory(task)` is the careful trajectory of a task, `actions(task)` its gold actions. `read_note` is the
    note of the extra reads a variant adds; `requestor`, when set, is written on every line (dual control);
    `prefix_keeps_reads` is whether `prefix` keeps the careful reads made for the write it stops before.
    """

    tasks: Mapping[str, Task]
    trajectory: Callable[[Task], list[Line]]
    actions: Callable[[Task], list[Action]]
    read_note: str = "variant read"
    requestor: str | None = None
    prefix_keeps_reads: bool = True

    def _line(self, name: str, arguments: Mapping[str, Any], requestor: str | None, expect: str, note: str) -> Line:
        line: Line = {"name": name, "arguments": dict(arguments)}
        if requestor is not None:
            line["requestor"] = requestor
        line["expect"] = expect
        line["note"] = note
        return line

    def read(self, name: str, requestor: str | None = None, /, **arguments: Any) -> Line:
        """A read the variant adds, expected to pass (on the customer's side when `requestor` is "user")."""
        return self._line(name, arguments, requestor or self.requestor, "ALLOW", self.read_note)

    def bad(self, name: str, verdict: str, /, **arguments: Any) -> Line:
        """The violating call, with the verdict it must get."""
        return self._line(name, arguments, self.requestor, verdict, "violation")

    def prefix(self, task_id: str, action_id: str) -> list[Line]:
        """A task's careful trajectory up to, not including, gold action `action_id`."""
        lines = self.trajectory(self.tasks[task_id])
        index = next(i for i, line in enumerate(lines) if line["note"] == GOLD_NOTE + action_id)
        if self.prefix_keeps_reads:
            return lines[:index]
        return [line for line in lines[:index] if not line["note"].startswith(f"{READ_NOTE}{action_id}")]

    def gold(self, task_id: str, action_id: str) -> Action:
        return next(a for a in self.actions(self.tasks[task_id]) if a["action_id"] == action_id)

    def gold_with(self, task_id: str, action_id: str, verdict: str, **changes: Any) -> list[Line]:
        """Task `task_id` up to gold write `action_id`, which is then sent with some arguments changed."""
        action = self.gold(task_id, action_id)
        return [*self.prefix(task_id, action_id), self.bad(action["name"], verdict, **{**action["arguments"],
                                                                                        **changes})]

    @staticmethod
    def without_reads(lines: Sequence[Line], before: str, names: tuple[str, ...]) -> list[Line]:
        """Drop the careful reads of the given tools that were made for gold write `before`."""
        return [line for line in lines if not (line["note"] == READ_NOTE + before and line["name"] in names)]


Unchanged = Literal["state_hash", "undo_log"]


async def _fingerprint(backend: SQLiteToolBackend, how: Unchanged) -> object:
    """What proves nothing was written: the hash of every document, or the head of the store's undo log (every
    row change lands in it; exact, and ~1000x cheaper on thousands of documents)."""
    return await backend.state_hash() if how == "state_hash" else await backend.snapshot()


async def assert_rejected(domain: Domain, backend: SQLiteToolBackend, lines: Sequence[Line], verdict: str,
                          predicate: str, why: str, *, only: bool = True, setup_met: bool | None = None,
                          unchanged: Unchanged = "state_hash") -> None:
    """Every line but the last is checked first and must meet its expectation (`setup_met=True`: must have one
    and meet it); the last, a write, must get `verdict` from `predicate` (alone when `only`), not run, and leave
    the database as it was."""
    checker = Checker(domain, backend)
    *setup, violation = calls(lines)
    for call in setup:
        result = await checker.check(call)
        assert (result.met is True) if setup_met else (result.met is not False), (why, result)
    before = await _fingerprint(backend, unchanged)
    result = await checker.check(violation)
    assert result.kind == "write"
    assert result.verdict == verdict, (why, result.reason)
    assert predicate in result.predicates, (why, result.predicates, result.reason)
    if only:
        assert result.predicates == (predicate,), (why, result.reason)
    assert not result.executed
    assert await _fingerprint(backend, unchanged) == before


async def assisted_outcome(domain: Domain, backend: SQLiteToolBackend, lines: Sequence[Line]) -> CheckResult:
    """The last line's result when the gate reads what it lacks itself (`--evidence assist`): every line before it
    is checked first, the database must be what it was when the last one is refused."""
    checker = Checker(domain, backend, evidence=EvidenceMode.ASSIST)
    *setup, last = calls(lines)
    for call in setup:
        await checker.check(call)
    before = await backend.state_hash()
    result = await checker.check(last)
    if not result.executed:
        assert await backend.state_hash() == before
    return result


async def assert_refused_when_assisted(domain: Domain, backend: SQLiteToolBackend, lines: Sequence[Line], verdict: str,
                                       predicate: str, why: str, *, legal_once_read: bool = False) -> None:
    """A violating variant is refused with evidence assist too, by `predicate` (maybe with others); a variant whose
    only fault is a read the agent skipped (`legal_once_read`) runs once the gate has made that read."""
    result = await assisted_outcome(domain, backend, lines)
    if legal_once_read:
        assert (result.verdict, result.executed) == ("ALLOW", True), (why, result.reason)
        assert result.gate_reads, "legal once read: the gate made the read the agent skipped"
        return
    assert result.kind == "write" and not result.executed, (why, result)
    assert result.verdict == verdict and predicate in result.predicates, (why, result.verdict, result.predicates,
                                                                          result.reason)


def write_jsonl(lines: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """One JSON object per line, as `ledgeragent check` reads it."""
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def cli_check(argv: Sequence[str], lines: Sequence[Line], path: Path, violation_expect: str, exit_code: int,
              capsys: pytest.CaptureFixture[str], keys: frozenset[str] = JSON_KEYS) -> tuple[list[Row], Row]:
    """`ledgeragent check PATH ... --json` in-process on a trajectory whose last line is a violation the gate
    BLOCKs and that expects `violation_expect`: the exit code, one JSON row per line with at least `keys`, every
    other line met, the violation met exactly when it expected BLOCK, and stderr naming it when it is not.
    Returns the other rows and the violation's row, for the domain's own assertions."""
    code = cli_main(["check", str(path), *argv])
    captured = capsys.readouterr()
    assert code == exit_code, captured.err
    rows = [json.loads(row) for row in captured.out.splitlines()]
    assert [row["index"] for row in rows] == list(range(len(lines)))
    assert all(keys <= set(row) for row in rows)
    *replayed, last = rows
    assert all(row["met"] is True for row in replayed)
    assert last["met"] is (violation_expect == "BLOCK")
    if exit_code:
        assert f"{path}:{len(lines)}: {lines[-1]['name']} expected ALLOW, got BLOCK" in captured.err
    else:
        assert captured.err == ""
    return replayed, last
