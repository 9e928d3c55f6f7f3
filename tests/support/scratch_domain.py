"""A scratch copy of the `domains` package with the predicate template pasted in, run in child processes.

Why a copy and child processes: a rule author edits `domains/<d>/predicates.py` and `policy.md` and adds a
test; the registry discovers domains by listing its own folder, and the command line, the gate and the
workbench import `domains.<d>`. A copy of the whole package in a scratch folder, put first on the child's
`PYTHONPATH`, is that edited checkout: the child imports the copy (its registry lists the copy's folder),
while `core`, `console` and `mock_backends` come from the project as installed. Nothing in the repository or
in this test process is changed, so tests running beside it see the real domains.

The template files are `docs/templates/`: `predicate_rule.py` (the rule, between two marker lines),
`test_predicate_rule.py` (its table-driven test: as a file of its own, and its rows pasted into the domain's
tables) and `policy_rows.md` (its lines in policy.md, two fenced
blocks: ```` ```markdown policy ```` and ```` ```markdown notes ````).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from core.domain import NOTES_HEADING

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "docs" / "templates"
RULE_TEMPLATE = TEMPLATES / "predicate_rule.py"
TEST_TEMPLATE = TEMPLATES / "test_predicate_rule.py"
POLICY_TEMPLATE = TEMPLATES / "policy_rows.md"
RULE_START = "# --- rule: copy from here ---"
RULE_END = "# --- rule: to here ---"
HOUSE_RULES_LINE = "House rules"


def rule_block(template: str) -> str:
    """The lines between the template's two markers: what an author pastes into predicates.py."""
    head, start, rest = template.partition(RULE_START)
    block, end, _tail = rest.partition(RULE_END)
    if not start or not end:
        raise ValueError(f"the rule template lacks its markers {RULE_START!r} ... {RULE_END!r}")
    return block.strip("\n") + "\n"


def rule_functions(block: str) -> list[str]:
    """The names of the predicates the block defines (functions decorated with `@predicate(...)`)."""
    names = []
    for node in ast.parse(block).body:
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "predicate"
                for d in node.decorator_list):
            names.append(node.name)
    return names


def _assignment(tree: ast.Module, name: str) -> ast.Assign | ast.AnnAssign:
    found = [n for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
             and any(isinstance(t, ast.Name) and t.id == name
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    if len(found) != 1:
        raise ValueError(f"expected one top-level assignment to {name}, found {len(found)}")
    return found[0]


def _append(module: str, name: str, items: list[str]) -> str:
    """`module` with `items` (source text) added at the end of the tuple or list literal assigned to `name`:
    one per line when the literal has one element per line, else on the last element's line."""
    value = _assignment(ast.parse(module), name).value
    if not isinstance(value, ast.Tuple | ast.List) or not value.elts:
        raise ValueError(f"{name} is not a non-empty tuple or list literal")
    lines = module.splitlines(keepends=True)
    last, closing = value.elts[-1], value.end_lineno
    assert last.end_lineno is not None and last.end_col_offset is not None and closing is not None
    row, cut = last.end_lineno - 1, last.end_col_offset
    if last.end_lineno < closing:  # the closing bracket on a line of its own: the items go on lines before it
        first = lines[value.elts[-1].lineno - 1]
        indent = first[:len(first) - len(first.lstrip())]
        if not lines[row][cut:].lstrip().startswith(","):
            lines[row] = lines[row][:cut] + "," + lines[row][cut:]
        lines[row + 1:row + 1] = [f"{indent}{item.strip()},\n" for item in items]
    else:
        lines[row] = lines[row][:cut] + "".join(f", {item.strip()}" for item in items) + lines[row][cut:]
    return "".join(lines)


def _insert_before(module: str, name: str, text: str) -> str:
    """`text` on the lines above the top-level assignment to `name`, two blank lines after it."""
    start = _assignment(ast.parse(module), name).lineno - 1
    lines = module.splitlines(keepends=True)
    return "".join(lines[:start]) + text.strip("\n") + "\n\n\n" + "".join(lines[start:])


def paste_rule(module: str, block: str, names: list[str]) -> str:
    """`module` (a domain's predicates.py) with `block` above its `PREDICATES` tuple and `names` appended to
    that tuple, as docs/predicates.md tells an author to do."""
    return _insert_before(_append(module, "PREDICATES", names), "PREDICATES", block)


def paste_rows(domain_tests: str, template: str) -> str:
    """`domain_tests` (a domain's test_<d>_predicates.py) with the template test's helpers (the functions
    above its `Rejected` class) above REJECTED, and its REJECTED and ALLOWED rows appended to the domain's."""
    tree = ast.parse(template)
    [table] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Rejected"]
    helpers = [ast.get_source_segment(template, n) or "" for n in tree.body
               if isinstance(n, ast.FunctionDef) and n.lineno < table.lineno]
    out = domain_tests
    for name in ("REJECTED", "ALLOWED"):
        value = _assignment(tree, name).value
        assert isinstance(value, ast.List)
        out = _append(out, name, [ast.get_source_segment(template, row, padded=True) or "" for row in value.elts])
    return _insert_before(out, "REJECTED", "\n\n\n".join(helpers)) if helpers else out


def policy_blocks(template: str) -> dict[str, str]:
    """The template's fenced blocks by the word after `markdown` in their info string ("policy", "notes")."""
    blocks: dict[str, str] = {}
    for token in MarkdownIt().parse(template):
        words = token.info.split()
        if token.type == "fence" and len(words) == 2 and words[0] == "markdown":
            blocks[words[1]] = token.content
    return blocks


def paste_policy(policy_md: str, sentence: str, house_rows: str) -> str:
    """`sentence` at the end of the policy the model reads; `house_rows` after the notes' "House rules"
    paragraph (the coverage report reads tables after that line as house rules)."""
    model, heading, notes = policy_md.partition(NOTES_HEADING)
    if not heading:
        raise ValueError(f"policy.md has no {NOTES_HEADING!r}")
    lines = notes.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(HOUSE_RULES_LINE)]
    if not starts:
        raise ValueError(f"the notes have no line starting {HOUSE_RULES_LINE!r}")
    at = starts[0]
    end = next((i for i in range(at, len(lines)) if not lines[i].strip()), len(lines))
    notes = "".join(lines[:end]) + "\n" + house_rows + "".join(lines[end:])
    return model.rstrip() + "\n\n" + sentence.strip() + "\n\n" + heading + notes


@dataclass(frozen=True)
class ScratchCheckout:
    """`root` holds `domains/` (the copy, with the rule) and `tests/domains/<domain>/`: the template test as
    the rule's own file, and the domain's predicate tests with the template's rows in their tables."""

    root: Path
    domain: str
    rule_names: tuple[str, ...]
    home: Path

    @property
    def predicates_file(self) -> Path:
        return self.root / "domains" / self.domain / "predicates.py"

    @property
    def test_file(self) -> Path:
        """Where docs/predicates.md tells an author to put the rule's test: test_<domain>_<rule>.py."""
        return self.root / "tests" / "domains" / self.domain / f"test_{self.domain}_{self.rule_names[0]}.py"

    @property
    def domain_tests(self) -> Path:
        """The domain's own predicate tests, with the template's rows pasted into their tables."""
        return self.root / "tests" / "domains" / self.domain / f"test_{self.domain}_predicates.py"

    def env(self) -> dict[str, str]:
        """The child's environment: the copy first on the import path, a private data dir, wide tables."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root), *filter(None, [env.get("PYTHONPATH")])])
        env["LEDGERAGENT_HOME"] = str(self.home)
        env["COLUMNS"] = "400"
        return env

    def run(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`python argv...` in the scratch checkout (its folder is the working directory)."""
        return subprocess.run([sys.executable, *argv], cwd=self.root, env=self.env(), capture_output=True,
                              text=True, timeout=timeout, check=False)

    def ledgeragent(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "console", *argv)


def make_scratch_checkout(where: Path, domain: str = "retail") -> ScratchCheckout:
    """Copy `domains/` under `where`, paste the three templates into `domain`, and copy the rule's test."""
    root = where / "checkout"
    shutil.copytree(REPO / "domains", root / "domains", ignore=shutil.ignore_patterns("__pycache__"))
    block = rule_block(RULE_TEMPLATE.read_text(encoding="utf-8"))
    names = rule_functions(block)
    if not names:
        raise ValueError(f"{RULE_TEMPLATE} defines no @predicate function between its markers")
    predicates = root / "domains" / domain / "predicates.py"
    predicates.write_text(paste_rule(predicates.read_text(encoding="utf-8"), block, names), encoding="utf-8")
    blocks = policy_blocks(POLICY_TEMPLATE.read_text(encoding="utf-8"))
    policy = root / "domains" / domain / "policy.md"
    policy.write_text(paste_policy(policy.read_text(encoding="utf-8"), blocks["policy"], blocks["notes"]),
                      encoding="utf-8")
    # an empty pytest config: the child's rootdir is the checkout, whatever config files lie above it
    (root / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n", encoding="utf-8")
    checkout = ScratchCheckout(root, domain, tuple(names), where / "home")
    checkout.test_file.parent.mkdir(parents=True)
    shutil.copy(TEST_TEMPLATE, checkout.test_file)
    shipped_tests = REPO / "tests" / "domains" / domain / checkout.domain_tests.name
    checkout.domain_tests.write_text(paste_rows(shipped_tests.read_text(encoding="utf-8"),
                                                TEST_TEMPLATE.read_text(encoding="utf-8")), encoding="utf-8")
    return checkout
