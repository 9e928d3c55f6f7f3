"""The probe behind tests/domains/test_write_effects.py: does a write change only what its declaration says?

A write's declaration (`WriteEffect`s in domains/<d>/paths.py) says which ledger paths, and which fields of
them, a successful call can change. The probe checks it against the real mock backend, in ledger terms:

1. run the write (and, for telecom, the sync that follows every call) on the domain's data and diff the
   database: which documents changed;
2. for every changed document, the reads that return it (each domain's `row_reads`: the path map says where
   each read lands), plus the reads a careful agent made before the write (`Case.context`) and the
   identification of the customer;
3. make those reads on the state before the write into a ledger, mark the write stale in it as the executor
   does, make the same reads on the state after, and compare each ledger path's value before and after: every
   field that changed must be covered by the entry's staleness (the whole record, or a declared field).

A case is probed twice: informed (every read made, so conditions like "paid by credit card" can rule things
out) and blind (the context reads left out, so a condition must fall back to "may have changed").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.domain import Domain
from core.ledger import Ledger, LedgerEntry
from core.tools import Requestor, ToolCall, ToolError
from mock_backends.base import SQLiteToolBackend

Data = dict[str, dict[str, Any]]  # the store's export: collection -> key -> document
Read = tuple[str, tuple[tuple[str, Any], ...], str]  # (tool, sorted arguments, requestor)


def read(tool: str, requestor: str = "assistant", /, **arguments: Any) -> Read:
    return (tool, tuple(sorted(arguments.items(), key=lambda kv: kv[0])), requestor)


def _call(read_: Read, call_id: str) -> ToolCall:
    tool, arguments, requestor = read_
    return ToolCall(call_id, tool, {k: v for k, v in arguments}, requestor=Requestor(requestor))


@dataclass(frozen=True)
class Case:
    """One write to probe: `call` by `customer`, after `setup` (run as part of the starting state) and with the
    `context` reads a careful agent makes first."""

    name: str
    tool: str
    arguments: Mapping[str, Any]
    customer: str
    context: tuple[Read, ...] = ()
    setup: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    requestor: str = "assistant"

    def call(self) -> ToolCall:
        return ToolCall("write_1", self.tool, dict(self.arguments), requestor=Requestor(self.requestor))


@dataclass(frozen=True)
class Probe:
    """A domain's part: its cases over some data, the reads that return a changed document, and how a customer
    is identified."""

    domain: Domain
    cases: Callable[[Data], list[Case]]
    row_reads: Callable[[str, str, Data, Data], list[Read]]
    identification: Callable[[str, Data], list[Read]]


@dataclass
class Finding:
    case: str
    mode: str
    problems: list[str] = field(default_factory=list)
    documents: int = 0  # documents the write changed in the database
    changes: int = 0  # ledger values the write changed (what the probe could check)


def changed_documents(before: Data, after: Data) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for collection in sorted(set(before) | set(after)):
        old, new = before.get(collection, {}), after.get(collection, {})
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                found.append((collection, key))
    return found


def changed_fields(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted fields where `new` differs from `old` ("" when the whole value differs: a list, a scalar)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            name = f"{prefix}.{key}" if prefix else str(key)
            if key not in old or key not in new:
                found.append(name)
            elif old[key] != new[key]:
                found += changed_fields(old[key], new[key], name)
        return found
    return [] if old == new else [prefix]


def covered(entry: LedgerEntry, name: str) -> bool:
    """Whether the entry's staleness covers a change of field `name` ("" = the whole value)."""
    stale = entry.stale
    if stale is None:
        return False
    if stale.fields is None:
        return True
    return bool(name) and any(name == f or name.startswith(f + ".") for f in stale.fields)


async def _try(backend: SQLiteToolBackend, read_: Read) -> tuple[bool, Any]:
    try:
        return True, await backend.call(read_[0], dict(read_[1]))
    except ToolError as exc:
        return False, exc.message


async def _run_write(backend: SQLiteToolBackend, call: ToolCall) -> Any:
    result = await backend.call(call.name, dict(call.arguments))
    sync: Callable[[], Awaitable[Any]] | None = getattr(backend, "sync", None)
    if sync is not None:
        await sync()
    return result


async def probe(backend: SQLiteToolBackend, probe_: Probe, case: Case) -> list[Finding]:
    """Run `case` from the backend's current state (restored at the end) and list what the declaration missed,
    informed and then blind: the write runs once and each read is made once on each side of it, shared by the
    two findings (reads change nothing, so the blind one is the informed one without the context reads)."""
    findings = [Finding(case.name, "informed"), Finding(case.name, "blind")]
    start = await backend.snapshot()
    try:
        for tool, arguments in case.setup:
            await _run_write(backend, ToolCall("setup", tool, dict(arguments)))
        base = await backend.snapshot()
        before = await backend.export()
        result = await _run_write(backend, case.call())
        after = await backend.export()
        changed = changed_documents(before, after)
        informed: list[Read] = list(dict.fromkeys([
            *probe_.identification(case.customer, before), *case.context,
            *(r for collection, key in changed for r in probe_.row_reads(collection, key, before, after)),
        ]))
        after_results = {read_: await _try(backend, read_) for read_ in informed}
        await backend.restore(base)
        before_results = {read_: await _try(backend, read_) for read_ in informed}
        for finding, reads in zip(findings, (informed, [r for r in informed if r not in case.context]),
                                  strict=True):
            finding.documents = len(changed)
            _judge(finding, probe_, case, result, reads, before_results, after_results)
    finally:
        await backend.restore(start)
    return findings


def _judge(finding: Finding, probe_: Probe, case: Case, result: Any, reads: Sequence[Read],
           before_results: Mapping[Read, tuple[bool, Any]], after_results: Mapping[Read, tuple[bool, Any]]) -> None:
    """The reads made before the write into a ledger, the write marked stale in it as the executor does, and
    each path's value compared with what the same read returns after the write."""
    ledger = Ledger(probe_.domain.path_map)
    for step, read_ in enumerate(reads, start=1):
        ok, value = before_results[read_]
        if ok:
            ledger.absorb(_call(read_, f"read_{step}"), value, step)
    write = case.call()
    ledger.mark_stale(write, len(reads) + 1, result=result)
    for index, read_ in enumerate(reads):
        (ok_before, old), (ok_after, new) = before_results[read_], after_results[read_]
        if not ok_before:
            continue
        call = _call(read_, f"probe_{index}")
        old_entries = ledger.preview(call, old, 0)
        new_entries = ledger.preview(call, new, 0) if ok_after else {}
        for path, old_entry in old_entries.items():
            entry = ledger.entry(path)
            if entry is None:
                continue
            # Several reads may land at one path (a calendar listed with and without a filter): whichever
            # value the ledger holds, the path's staleness must cover what each of them would change.
            new_entry = new_entries.get(path)
            names = [""] if new_entry is None else changed_fields(old_entry.value, new_entry.value)
            finding.changes += bool(names)
            missed = [n or "(the whole value)" for n in names if not covered(entry, n)]
            if missed:
                finding.problems.append(f"{path} ({read_[0]}): changed at {', '.join(missed)}, declared "
                                        f"{'fresh' if entry.stale is None else entry.stale.describe()}")


def first(items: Iterable[Any]) -> Any:
    return next(iter(items), None)


def tools_probed(cases: Sequence[Case]) -> set[str]:
    return {c.tool for c in cases}
