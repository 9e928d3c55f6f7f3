"""Policy coverage: each policy sentence, the predicates that encode it, and the tests that exercise them.

Why a report: a gate is only as good as its map from policy to code. The map lives in the operator's part of
each domain's policy.md ("What the gate checks and what it cannot"): a table of policy sentences and their
predicate ids, a table of house rules, and a list of what no predicate can check. This module reads that
section, checks it against the domain's predicates (an id in the table the domain lacks, or a predicate
the table forgets, is reported, not hidden), and finds each predicate's tests by looking for its id in the
test sources under `tests/domains/<domain>/` (when the tests are present; an installed console has none).

Used by `ledgeragent predicates --domain D --coverage` and the console's predicate workbench.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from core.domain import Domain
from core.gate import Predicate

TESTS_ROOT = Path(__file__).resolve().parents[2] / "tests" / "domains"
_ROW = re.compile(r"^\|(?P<cells>.+)\|\s*$")
_ID = re.compile(r"`([a-z_]+\.[a-z0-9_]+)`")
_UNCHECKED_MARK = "Not checked by the gate"
_HOUSE_MARK = "House rules"


@dataclass(frozen=True)
class Covered:
    """One policy sentence (or house rule) and the predicates that encode it, with their tests."""

    sentence: str
    predicate_ids: tuple[str, ...]
    severities: tuple[str, ...]
    tests: tuple[tuple[str, ...], ...]  # per predicate: "file::test" names


@dataclass(frozen=True)
class CoverageReport:
    domain: str
    policy: tuple[Covered, ...]
    house_rules: tuple[Covered, ...]
    unchecked: tuple[str, ...]
    unmapped: tuple[str, ...] = ()  # predicates of the domain no row names
    unknown: tuple[str, ...] = ()  # ids a row names that the domain has no predicate for
    tests_found: bool = True
    problems: tuple[str, ...] = field(default=())

    @property
    def rows(self) -> tuple[Covered, ...]:
        return self.policy + self.house_rules

    def tests_of(self, predicate_id: str) -> tuple[str, ...]:
        for row in self.rows:
            if predicate_id in row.predicate_ids:
                return row.tests[row.predicate_ids.index(predicate_id)]
        return ()

    def to_json(self) -> dict[str, object]:
        def rows(items: tuple[Covered, ...]) -> list[dict[str, object]]:
            return [{"sentence": r.sentence, "predicates": [
                {"id": pid, "severity": sev, "tests": list(tests)}
                for pid, sev, tests in zip(r.predicate_ids, r.severities, r.tests, strict=True)]} for r in items]

        return {"domain": self.domain, "policy": rows(self.policy), "house_rules": rows(self.house_rules),
                "unchecked": list(self.unchecked), "unmapped": list(self.unmapped), "unknown": list(self.unknown),
                "tests_found": self.tests_found, "problems": list(self.problems)}


def _cells(line: str) -> list[str] | None:
    match = _ROW.match(line.strip())
    if match is None:
        return None
    cells = [c.strip() for c in match.group("cells").split("|")]
    if all(set(c) <= set("-: ") for c in cells):
        return None  # the header separator
    return cells


def _parse_notes(notes: str) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]], list[str]]:
    """(policy rows, house-rule rows, unchecked sentences) of a policy.md's notes section.

    Tables before a line naming "House rules" map policy sentences; tables after it, house rules; the
    bullets after "Not checked by the gate" are what no predicate can see."""
    policy: list[tuple[str, list[str]]] = []
    house: list[tuple[str, list[str]]] = []
    unchecked: list[str] = []
    section = "policy"
    for line in notes.splitlines():
        stripped = line.strip()
        cells = _cells(line)
        if cells is not None:
            ids = _ID.findall(" ".join(cells[1:]))
            if ids and section in ("policy", "house"):
                (house if section == "house" else policy).append((cells[0], ids))
            continue
        if section == "unchecked" and stripped.startswith("- "):
            unchecked.append(stripped[2:])
        elif section == "unchecked" and unchecked and line.startswith("  ") and stripped:
            unchecked[-1] += " " + stripped
        elif stripped and not stripped.startswith("|"):
            if _HOUSE_MARK in stripped:
                section = "house"
            elif _UNCHECKED_MARK in stripped:
                section = "unchecked"
            elif section == "unchecked" and unchecked:
                section = "after"
    return policy, house, unchecked


def _test_index(folder: Path) -> dict[str, list[str]]:
    """Every string literal's text -> the tests ("file::function" or "file::TABLE") whose source holds it."""
    index: dict[str, list[str]] = {}
    for path in sorted(folder.glob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                owner = node.name
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                owner = target.id if isinstance(target, ast.Name) else "module"
            else:
                continue
            name = f"{path.name}::{owner}"
            for inner in ast.walk(node):
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    for pid in _ID.findall(f"`{inner.value}`") or [inner.value]:
                        names = index.setdefault(pid, [])
                        if name not in names:
                            names.append(name)
    return index


def _row(sentence: str, ids: list[str], by_id: dict[str, Predicate], index: dict[str, list[str]]) -> Covered:
    return Covered(sentence, tuple(ids),
                   tuple(by_id[i].severity.value if i in by_id else "?" for i in ids),
                   tuple(tuple(index.get(i, ())) for i in ids))


def coverage(domain: Domain, tests_root: Path | None = TESTS_ROOT) -> CoverageReport:
    """The coverage report of `domain` (tests looked up under `tests_root/<domain>`, if it exists)."""
    policy_rows, house_rows, unchecked = _parse_notes(domain.policy_notes)
    by_id = {p.id: p for p in domain.predicates}
    folder = tests_root / domain.name if tests_root is not None else None
    found = folder is not None and folder.is_dir()
    index = _test_index(folder) if found and folder is not None else {}
    named = {i for _, ids in policy_rows + house_rows for i in ids}
    problems: list[str] = []
    for _sentence, ids in house_rows:
        problems += [f"{i} is listed as a house rule but not declared house_rule=True" for i in ids
                     if i in by_id and not by_id[i].house_rule]
    for _sentence, ids in policy_rows:
        problems += [f"{i} is declared a house rule but listed under a policy sentence" for i in ids
                     if i in by_id and by_id[i].house_rule]
    return CoverageReport(
        domain=domain.name,
        policy=tuple(_row(s, ids, by_id, index) for s, ids in policy_rows),
        house_rules=tuple(_row(s, ids, by_id, index) for s, ids in house_rows),
        unchecked=tuple(unchecked),
        unmapped=tuple(p.id for p in domain.predicates if p.id not in named),
        unknown=tuple(sorted(named - set(by_id))),
        tests_found=found,
        problems=tuple(problems),
    )


def print_report(report: CoverageReport, *, as_json: bool = False) -> None:
    """The report as a terminal table (or one JSON object), for `ledgeragent predicates --coverage`."""
    import json

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return
    console = Console(highlight=False)

    def table(title: str, rows: tuple[Covered, ...]) -> Table:
        out = Table(title=title, show_lines=True)
        for name in ("sentence", "predicate", "on failure", "tests"):
            out.add_column(name, overflow="fold")
        for row in rows:
            for index, (pid, severity, tests) in enumerate(zip(row.predicate_ids, row.severities, row.tests,
                                                                strict=True)):
                shown = "\n".join(escape(t) for t in tests) if tests else (
                    "[bold red]none found[/]" if report.tests_found else "(tests not installed)")
                out.add_row(escape(row.sentence) if index == 0 else "", pid, severity, shown)
        return out

    console.print(table(f"{report.domain}: policy sentences -> predicates -> tests", report.policy))
    console.print(table(f"{report.domain}: house rules (labelled, REVISE at most, switchable off)",
                        report.house_rules) if report.house_rules else f"{report.domain}: no house rules")
    console.print("[bold]Not checkable by any predicate[/] (the records do not show it):")
    for sentence in report.unchecked:
        console.print(f"  - {escape(sentence)}")
    for label, items in (("predicates no sentence names", report.unmapped),
                         ("ids named that no predicate has", report.unknown), ("problems", report.problems)):
        if items:
            console.print(f"[bold red]{label}:[/] {escape(', '.join(items))}")
