"""No import circles among our modules, checked beside the import-hygiene test.

Every import counts except those under `if TYPE_CHECKING:`, deferred ones (inside a function) included: a
deferred import hides a circle from Python's loader but not from the reader, and the next refactor that
moves it to the top breaks start-up. The graph is read with `ast`, no module is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "domains", "mock_backends", "console")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def top_level_imports(path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for n in ast.walk(node)}
    for sub in ast.walk(tree):
        if id(sub) in skipped:
            continue
        if True:
            names: list[str] = []
            if isinstance(sub, ast.Import):
                names = [a.name for a in sub.names]
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                names = [sub.module] + [f"{sub.module}.{a.name}" for a in sub.names]
            for name in names:
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name:
                    found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    known = {module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        name = module_name(path)
        # A submodule naming its own package (`from pkg import sub`) is Python's package pattern, not a circle.
        graph[name] = {t for t in top_level_imports(path, known) if t != name and not name.startswith(t + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_no_import_circle() -> None:
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_checker_finds_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
