"""House rules for the tests themselves, checked over the files rather than trusted to review.

- No test imports from a conftest: which `conftest` a bare `from conftest import ...` finds depends on
  sys.path order (there are several); helpers live in importable modules (tests/support/).
- No wall-clock measurement in tests: speed depends on the machine and on what else runs (an airline
  load-time assert failed at 3.66 s on a busy machine); figures live in benchmarks/, run by `make bench`.
  Deadlines that only bound a wait (polling a server until it answers) are not measurements and are allowed.
- No docstring, comment or document cites a path outside the repository (such as the sibling reference-data
  folder by a relative path); upstream files are cited by their upstream path, e.g. "tau2-bench
  src/tau2/domains/retail/tools.py", and tests/support/upstream.py is the one place that locates the data.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.repo_files import listed_files, numbered_lines
from tests.support.upstream import REPO

TESTS = REPO / "tests"
WALL_CLOCK = re.compile(r"\b(perf_counter(_ns)?|process_time(_ns)?|timeit)\b")
OUTSIDE = re.compile(r"\.\./shared\b")
# Files excused from the outside-path rule until their citations are fixed; remove a file once it is clean.
NOT_YET_CLEAN: set[str] = set()


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__snapshots__" not in p.parts)


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_no_test_imports_from_a_conftest() -> None:
    offenders = [f"{path.relative_to(REPO)}: {name}" for path in _test_files() for name in _imported_modules(path)
                 if name == "conftest" or name.endswith(".conftest")]
    assert offenders == []


def test_no_wall_clock_measurement_in_tests() -> None:
    offenders = [f"{path.relative_to(REPO)}:{number}: {line.strip()}" for path in _test_files()
                 if path != Path(__file__).resolve()
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if WALL_CLOCK.search(line)]
    assert offenders == [], "speed belongs in benchmarks/:\n" + "\n".join(offenders)


def _tracked_text_files() -> list[str]:
    suffixes = {".py", ".md", ".toml", ".tcss", ".sh", ".jinja", ".cfg", ".txt"}
    return [name for name in listed_files() if Path(name).suffix in suffixes or Path(name).name == "Makefile"]


def test_no_path_outside_the_repository_is_cited() -> None:
    offenders = []
    for name in _tracked_text_files():
        if name in NOT_YET_CLEAN or REPO / name == Path(__file__).resolve():
            continue
        for number, line in numbered_lines(name):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == [], "cite the upstream file instead:\n" + "\n".join(offenders)
