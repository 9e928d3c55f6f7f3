"""docs/predicates.md: the rule and the policy row it shows are the template's, so the page cannot drift from
what is tested. That the page starts with a runnable example, that the example runs and shows the rule
refusing then allowing (its `expect=` texts), and that its links lead somewhere is held by
tests/docs/test_docs_pages.py, as for every page."""

from __future__ import annotations

from tests.support.doc_blocks import DOCS, fenced_blocks
from tests.support.scratch_domain import POLICY_TEMPLATE, RULE_TEMPLATE, policy_blocks, rule_block

PAGE = DOCS / "predicates.md"


def test_the_first_example_shows_the_rule_refusing_then_allowing() -> None:
    first = fenced_blocks(PAGE)[0]
    assert first.runnable and "retail.cancel_reason_valid" in first.code
    assert set(first.expects) >= {'"id": "retail.cancel_reason_valid"', '"source": "policy"',
                                  "2 writes: ALLOW 1, REVISE 1, BLOCK 0", "0 expectation(s) failed"}


def test_the_page_shows_the_templates_rule_and_row() -> None:
    shown = [block.code for block in fenced_blocks(PAGE) if block.info[:1] in (("python",), ("markdown",))]
    rule = rule_block(RULE_TEMPLATE.read_text(encoding="utf-8"))
    row = policy_blocks(POLICY_TEMPLATE.read_text(encoding="utf-8"))["notes"]
    assert any(code.strip() in rule and "@predicate(" in code for code in shown)
    assert row in shown
