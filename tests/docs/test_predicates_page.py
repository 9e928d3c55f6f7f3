"""docs/predicates.md: it starts with a runnable example and that example runs; its links lead somewhere; and
the rule and the policy row it shows are the template's, so the page cannot drift from what is tested."""

from __future__ import annotations

import re
import subprocess

import pytest
from markdown_it import MarkdownIt

from tests.support.doc_blocks import DOCS, Block, fenced_blocks, run_block
from tests.support.scratch_domain import POLICY_TEMPLATE, RULE_TEMPLATE, policy_blocks, rule_block

PAGE = DOCS / "predicates.md"
RUNNABLE = [block for block in fenced_blocks(PAGE) if block.runnable]


def test_the_page_starts_with_a_runnable_example() -> None:
    first = fenced_blocks(PAGE)[0]
    assert first.runnable, f"{first.where} is fenced {' '.join(first.info)!r}, not 'sh test'"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each runnable block run once, by where it is."""
    return {block.where: run_block(block, tmp_path_factory.mktemp("block")) for block in RUNNABLE}


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_the_runnable_block_runs(block: Block, ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    result = ran[block.where]
    assert result.returncode == 0, f"{block.where} exited {result.returncode}\n{result.stdout[-3000:]}\n" \
                                   f"{result.stderr[-3000:]}"
    assert result.stderr == "", result.stderr


def test_the_first_example_shows_the_rule_refusing_then_allowing(
        ran: dict[str, subprocess.CompletedProcess[str]]) -> None:
    out = ran[RUNNABLE[0].where].stdout
    assert '"id": "retail.cancel_reason_valid"' in out and '"source": "policy"' in out
    assert "2 writes: ALLOW 1, REVISE 1, BLOCK 0" in out and "0 expectation(s) failed" in out


def _slug(title: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def test_every_relative_link_leads_to_a_file_or_heading() -> None:
    tokens = MarkdownIt().parse(PAGE.read_text(encoding="utf-8"))
    headings = {_slug(tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"}
    links = [child.attrGet("href") or "" for token in tokens if token.type == "inline"
             for child in token.children or [] if child.type == "link_open"]
    links += [child.attrGet("src") or "" for token in tokens if token.type == "inline"
              for child in token.children or [] if child.type == "image"]
    assert links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        target, _, anchor = link.partition("#")
        if target:
            assert (PAGE.parent / target).exists(), link
        else:
            assert anchor in headings, link


def test_the_page_shows_the_templates_rule_and_row() -> None:
    shown = [block.code for block in fenced_blocks(PAGE) if block.info[:1] in (("python",), ("markdown",))]
    rule = rule_block(RULE_TEMPLATE.read_text(encoding="utf-8"))
    row = policy_blocks(POLICY_TEMPLATE.read_text(encoding="utf-8"))["notes"]
    assert any(code.strip() in rule and "@predicate(" in code for code in shown)
    assert row in shown
