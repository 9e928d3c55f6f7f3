"""The predicate author's template works as docs/predicates.md says: pasted into a domain it is a rule.

A scratch copy of `domains/` gets the three templates of `docs/templates/` exactly as the page tells an author
to use them (the rule above `PREDICATES` and in it, the sentence and the house-rule row in policy.md, the
table-driven test under `tests/domains/<d>/`), then child processes that import the copy show that:
the pasted module is ruff- and mypy-clean; the template's test passes against it (and fails against the
domain without the rule, so it tests something); the registry loads the rule with its source and the
coverage report maps it to its row and its test; the workbench's reload picks it up; `ledgeragent
predicates` lists it as a house rule; `ledgeragent check` gives a call it guards the rule's verdict and reason.

Every step reads the templates as they are, so a template that goes stale (an API it uses changes, a
marker or a fenced block goes missing, its row and its id drift apart) fails here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.domain import NOTES_HEADING
from core.gate import HOUSE_RULE_PREFIX
from tests.support.scratch_domain import (
    POLICY_TEMPLATE,
    REPO,
    RULE_TEMPLATE,
    TEST_TEMPLATE,
    ScratchCheckout,
    make_scratch_checkout,
    paste_rule,
    policy_blocks,
    rule_block,
    rule_functions,
)

RULE = "retail.new_address_differs"
MIA_ADDRESS = {"address1": "12 Elm Street", "address2": "Apt 3", "city": "Springfield", "state": "IN",
               "country": "USA", "zip": "46281"}  # where the seed data's #W4821002 ships


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> ScratchCheckout:
    return make_scratch_checkout(tmp_path_factory.mktemp("scratch"))


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def test_the_template_names_one_rule_between_its_markers() -> None:
    block = rule_block(RULE_TEMPLATE.read_text(encoding="utf-8"))
    assert rule_functions(block) == ["new_address_differs"]
    assert f'id="{RULE}"' in block
    notes = policy_blocks(POLICY_TEMPLATE.read_text(encoding="utf-8"))
    assert set(notes) == {"policy", "notes"} and f"`{RULE}`" in notes["notes"]
    assert TEST_TEMPLATE.read_text(encoding="utf-8").count(f'"{RULE}"') >= 6  # a literal in every row and test


def _rule_names(module: str) -> list[str]:
    [value] = [n.value for n in ast.parse(module).body if isinstance(n, ast.AnnAssign | ast.Assign)
               and "PREDICATES" in ast.unparse(n.target if isinstance(n, ast.AnnAssign) else n.targets[0])]
    assert isinstance(value, ast.Tuple)
    return [ast.unparse(element) for element in value.elts]


def test_pasting_keeps_every_rule_and_adds_the_new_one_last() -> None:
    module = (REPO / "domains" / "retail" / "predicates.py").read_text(encoding="utf-8")
    pasted = paste_rule(module, "def new_rule() -> None:\n    pass\n", ["new_rule"])
    assert pasted.index("def new_rule()") < pasted.index("\nPREDICATES")
    assert _rule_names(pasted) == [*_rule_names(module), "new_rule"]


def test_the_pasted_module_is_ruff_and_mypy_clean(checkout: ScratchCheckout) -> None:
    """The block uses only names the domain's module has (ruff's undefined-name check would say otherwise),
    and its types hold under the project's strict mypy; the pasted rows fit the domain's test file."""
    ruff = [sys.executable, "-m", "ruff", "check", "--config", str(REPO / "pyproject.toml"),
            str(checkout.predicates_file), str(checkout.test_file), str(checkout.domain_tests)]
    ok(subprocess.run(ruff, cwd=checkout.root, capture_output=True, text=True, check=False))
    # MYPYPATH: `core` as source (the installed project has no py.typed); `domains` is the copy given here
    mypy = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(checkout.root / ".mypy"),
                           str(checkout.predicates_file.relative_to(checkout.root))], cwd=checkout.root,
                          env={**checkout.env(), "MYPYPATH": str(REPO)}, capture_output=True, text=True, check=False)
    assert "Success: no issues found" in ok(mypy)


def shipped_env(checkout: ScratchCheckout) -> dict[str, str]:
    """The child's environment without the copy on its import path: the project's own domains."""
    env = checkout.env()
    del env["PYTHONPATH"]
    return env


def pytest_in(checkout: ScratchCheckout, *tests: Path, shipped: bool = False) -> dict[str, list[str]]:
    """pytest on `tests` in a child, against the copy (or, `shipped`, against the project's own domains):
    the test ids by outcome ("PASSED", "FAILED", "ERROR", ...), read from its summary of every test."""
    argv = ["-m", "pytest", *map(str, tests), "-q", "-rA", "-p", "no:cacheprovider", "-c",
            str(checkout.root / "pytest.ini")]
    if shipped:
        result = subprocess.run([sys.executable, *argv], cwd=REPO, env=shipped_env(checkout), capture_output=True,
                                text=True, check=False)
    else:
        result = checkout.run(*argv)
    outcomes: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS") and "::" in rest:
            outcomes.setdefault(word, []).append(rest.split(" - ")[0])
    assert outcomes, f"no test ran\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return outcomes


def in_file(ids: list[str], path: Path) -> list[str]:
    return [test for test in ids if test.split("::")[0].endswith(path.name)]


def test_the_template_test_and_the_domain_tables_with_its_rows_pass(checkout: ScratchCheckout) -> None:
    """Against the copy: the template's own file passes, and so does the domain's whole predicate test file
    with the rows pasted into its tables (its meta-test included); the same domain file without the rows fails
    that meta-test alone, which is what makes an author add them. One child runs all three files."""
    unpasted = checkout.root / "tests" / "unpasted" / "test_retail_predicates_without_the_rows.py"
    unpasted.parent.mkdir(exist_ok=True)
    unpasted.write_text((REPO / "tests" / "domains" / "retail" / checkout.domain_tests.name).read_text(
        encoding="utf-8"), encoding="utf-8")
    outcomes = pytest_in(checkout, checkout.test_file, checkout.domain_tests, unpasted)
    assert set(outcomes) == {"PASSED", "FAILED"}, outcomes
    assert [test.split("::")[1] for test in outcomes["FAILED"]] == [
        "test_every_predicate_has_an_allowed_and_a_rejected_case"]
    assert in_file(outcomes["FAILED"], unpasted)
    template_tests = in_file(outcomes["PASSED"], checkout.test_file)
    assert any("test_rejected[" in test for test in template_tests) and len(template_tests) >= 8
    domain_tests = in_file(outcomes["PASSED"], checkout.domain_tests)
    assert "test_rejected[move an order to the address it already ships to]" in \
        [test.split("::")[1] for test in domain_tests]
    assert any("test_every_predicate_has_an_allowed_and_a_rejected_case" in test for test in domain_tests)


def test_the_template_test_fails_against_the_domain_without_the_rule(checkout: ScratchCheckout) -> None:
    outcomes = pytest_in(checkout, checkout.test_file, shipped=True)  # the shipped retail lacks the rule
    assert any("::test_rejected[" in test for test in outcomes.get("FAILED", [])), outcomes
    assert any("::test_the_rule_is_a_house_rule_that_never_blocks" in test for test in outcomes["FAILED"])


SCRIPT = """
import json, sys
from pathlib import Path
import domains
from console.runtime.coverage import coverage
from console.runtime.rules import reload_rules
from domains.registry import DOMAINS, load_domain
from core.gate import PolicyGate
from core.ledger import Ledger
from core.tools import ToolCall

domain = load_domain("retail")
[rule] = [p for p in domain.predicates if p.id == sys.argv[1]]
report = coverage(domain, tests_root=Path(sys.argv[3]))
ledger = Ledger(domain.path_map)
reads = [("find_user_id_by_email", {"email": "mia.garcia@example.com"}, "mia_garcia_4821"),
         ("get_order_details", {"order_id": "#W4821002"}, json.loads(sys.argv[2]))]
for step, (tool, arguments, result) in enumerate(reads, 1):
    ledger.absorb(ToolCall(id=f"c{step}", name=tool, arguments=arguments), result, step)
call = ToolCall(id="w", name="modify_pending_order_address",
                arguments={"order_id": "#W4821002", **json.loads(sys.argv[2])["address"]})
decision = PolicyGate(domain.predicates, path_map=domain.path_map).evaluate(call, ledger, domain.context(ledger))
print(json.dumps({
    "domains_file": domains.__file__, "listed": "retail" in DOMAINS, "location": rule.location,
    "source": rule.source, "policy": rule.policy, "model_policy": domain.policy, "notes": domain.policy_notes,
    "house": [[row.sentence, list(row.predicate_ids), [list(t) for t in row.tests]] for row in report.house_rules],
    "unmapped": list(report.unmapped), "problems": list(report.problems),
    "verdict": decision.verdict.value, "failed": [r.predicate_id for r in decision.failed],
    "reason": decision.failed[0].reason if decision.failed else "", "feedback": decision.feedback,
    "reloaded": [p.id for p in reload_rules("retail").predicates],
}))
"""


def order_record() -> dict[str, Any]:
    return {"order_id": "#W4821002", "user_id": "mia_garcia_4821", "address": dict(MIA_ADDRESS), "items": [],
            "status": "pending", "payment_history": []}


def test_the_registry_the_gate_coverage_and_reload_use_the_rule(checkout: ScratchCheckout) -> None:
    tests_root = checkout.root / "tests" / "domains"
    facts = json.loads(ok(checkout.run("-c", SCRIPT, RULE, json.dumps(order_record()), str(tests_root))))
    assert facts["domains_file"].startswith(str(checkout.root))  # the copy, not the project's domains
    assert facts["listed"] and facts["location"].startswith(str(checkout.predicates_file))
    assert facts["source"] == "house rule" and facts["policy"].startswith(HOUSE_RULE_PREFIX)
    assert "compare it with the address the order already ships to" in facts["model_policy"]
    assert NOTES_HEADING not in facts["model_policy"] and f"`{RULE}`" in facts["notes"]
    [row] = [row for row in facts["house"] if RULE in row[1]]
    assert row[0] == "A new shipping address differs from the one the order already ships to"
    [tests] = row[2]
    for found in ("REJECTED", "ALLOWED", "test_an_unread_order_asks_for_get_order_details"):
        assert f"{checkout.test_file.name}::{found}" in tests, tests
    assert f"{checkout.domain_tests.name}::REJECTED" in tests and f"{checkout.domain_tests.name}::ALLOWED" in tests
    assert facts["unmapped"] == [] and facts["problems"] == []
    assert (facts["verdict"], facts["failed"]) == ("REVISE", [RULE])
    assert facts["reason"].startswith("order #W4821002 already ships to 12 Elm Street, Apt 3, Springfield, IN, "
                                      "USA, 46281 (orders.#W4821002.address)")
    assert f"rule {RULE} ({HOUSE_RULE_PREFIX}" in facts["feedback"]
    assert facts["reloaded"][-1] == RULE  # the workbench's `r` reloads this module's PREDICATES


def test_ledgeragent_predicates_lists_it_with_its_source(checkout: ScratchCheckout) -> None:
    rows = [json.loads(line) for line in ok(checkout.ledgeragent("predicates", "--domain", "retail",
                                                                  "--json")).splitlines()]
    [row] = [r for r in rows if r["id"] == RULE]
    assert row["source"] == "house rule" and row["severity"] == "REVISE" and row["enabled"] is True
    assert row["tools"] == ["modify_pending_order_address"] and row["policy"].startswith(HOUSE_RULE_PREFIX)
    assert row["location"].startswith(str(checkout.predicates_file))
    report = json.loads(ok(checkout.ledgeragent("predicates", "--domain", "retail", "--coverage", "--json")))
    assert [r["predicates"][0]["id"] for r in report["house_rules"]] == [RULE]
    assert report["unmapped"] == [] and report["unknown"] == [] and report["problems"] == []


def trajectory(path: Path, address: dict[str, str], expect: str, rules: list[str]) -> Path:
    lines = [{"name": "find_user_id_by_email", "arguments": {"email": "mia.garcia@example.com"}},
             {"name": "get_order_details", "arguments": {"order_id": "#W4821002"}},
             {"name": "modify_pending_order_address", "arguments": {"order_id": "#W4821002", **address},
              "expect": expect, "expect_rules": rules}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def check(checkout: ScratchCheckout, path: Path, *, scratch: bool = True) -> dict[str, Any]:
    argv = ["check", str(path), "--domain", "retail", "--json", "--out", str(path.with_suffix(""))]
    if scratch:
        result = checkout.ledgeragent(*argv)
    else:  # the project as it is, without the copy
        result = subprocess.run([sys.executable, "-m", "console", *argv], cwd=REPO, capture_output=True, text=True,
                                env=shipped_env(checkout), check=False)
    lines = [json.loads(line) for line in ok(result).splitlines()]
    [write] = [line for line in lines if line["kind"] == "write"]
    assert write["met"] is True, write
    return write


def test_ledgeragent_check_gives_a_guarded_call_the_rule_verdict_and_reason(checkout: ScratchCheckout,
                                                                           tmp_path: Path) -> None:
    same = check(checkout, trajectory(tmp_path / "same.jsonl", MIA_ADDRESS, "REVISE", [RULE]))
    assert same["predicates"] == [RULE] and same["executed"] is False
    assert same["reason"].startswith(f"{RULE}: order #W4821002 already ships to 12 Elm Street, Apt 3")
    assert "orders.#W4821002" in same["evidence"]
    moved = check(checkout, trajectory(tmp_path / "moved.jsonl", {**MIA_ADDRESS, "address2": "Apt 4"}, "ALLOW", []))
    assert moved["executed"] is True
    # the shipped domain, without the rule, lets the same call through: the REVISE above is the rule's
    check(checkout, trajectory(tmp_path / "shipped.jsonl", MIA_ADDRESS, "ALLOW", []), scratch=False)
