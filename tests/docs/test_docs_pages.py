"""Every page a reader follows (README.md and docs/*.md) starts with an example that runs, and its links lead
somewhere.

Each page's first fenced block must be marked runnable (`sh test`); every runnable block of every page is run
as a reader would paste it (tests/support/doc_blocks.py: its own bash, the repository root, the virtualenv on
`PATH`, a scratch `LEDGERAGENT_HOME`, no network, a timeout) and must exit 0, write nothing on stderr (a
progress bar's closing newline aside) and show every `expect="..."` text in its output; a block marked
`needs=recordings` runs on the development recordings, decompressed for it, and is skipped where they are
absent. Relative links and images must name a file that exists and, with a `#fragment`, a heading of that page.
The README must link every docs page, and the command-line page must name every sub-command the parser has.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from console.cli.main import build_parser
from domains.registry import DOMAINS, load_domain
from tests.support.doc_blocks import (
    DOCS,
    README,
    REPO,
    Block,
    doc_pages,
    fenced_blocks,
    run_block,
    runnable_blocks,
    unmet_need,
)

PAGES = doc_pages()
RUNNABLE = runnable_blocks(PAGES)


def _name(page: Path) -> str:
    return str(page.relative_to(REPO))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_page_starts_with_a_runnable_example(page: Path) -> None:
    blocks = fenced_blocks(page)
    assert blocks, f"{_name(page)} has no fenced example"
    first = blocks[0]
    assert first.runnable, f"{first.where}: the first example is fenced {' '.join(first.info)!r}, not 'sh test'"


@pytest.mark.parametrize("block", [pytest.param(block, id=block.where, marks=[pytest.mark.shared] * bool(block.needs))
                                   for block in RUNNABLE])
def test_the_runnable_block_runs(block: Block, tmp_path: Path) -> None:
    unmet = unmet_need(block)  # `needs=recordings`: the development set, absent in CI
    if unmet is not None:
        pytest.skip(unmet)
    result = run_block(block, tmp_path)
    assert result.returncode == 0, f"{block.where} exited {result.returncode}\n{result.stdout[-3000:]}\n" \
                                   f"{result.stderr[-3000:]}"
    assert result.stderr.strip() == "", f"{block.where} wrote to stderr:\n{result.stderr[-3000:]}"
    missing = [text for text in block.expects if text not in result.stdout]
    assert not missing, f"{block.where}: {missing} not in its output:\n{result.stdout[-3000:]}"


def _slug(title: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _tokens(page: Path) -> list[Token]:
    return MarkdownIt().parse(page.read_text(encoding="utf-8"))


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page, a repeated heading numbered as GitHub numbers it (`-1`, `-2`)."""
    tokens = _tokens(page)
    seen: dict[str, int] = {}
    found: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        slug = _slug(tokens[i + 1].content)
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def links(page: Path) -> list[str]:
    """Every link target and image source of a page."""
    children = [child for token in _tokens(page) if token.type == "inline" for child in token.children or []]
    return [child.attrGet("href") or "" for child in children if child.type == "link_open"] + \
           [child.attrGet("src") or "" for child in children if child.type == "image"]


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_leads_to_a_file_or_heading(page: Path) -> None:
    broken = []
    for link in links(page):
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in anchors(path)):
            broken.append(link)
    assert not broken, f"{_name(page)}: {broken}"


def test_the_readme_links_every_docs_page() -> None:
    linked = {(README.parent / link.partition("#")[0]).resolve() for link in links(README)}
    assert not [_name(page) for page in sorted(DOCS.glob("*.md")) if page.resolve() not in linked]


def test_the_command_line_page_names_every_sub_command() -> None:
    actions = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    commands = sorted(name for action in actions for name in action.choices)
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert commands and not [name for name in commands if f"ledgeragent {name}" not in text]


def test_the_domain_table_counts_each_domains_predicates() -> None:
    """docs/domains.md's table (predicates, of which house rules) is what each domain loads, so a new rule that
    the predicate author's checklist asks to count there cannot be forgotten."""
    rows = re.findall(r"^\| (\w+) \| [^|]+ \| (\d+) \((\d+)\) \|", (DOCS / "domains.md").read_text(encoding="utf-8"),
                      re.MULTILINE)
    shown = {name: (int(total), int(house)) for name, total, house in rows}
    loaded = {name: (len(domain.predicates), sum(1 for rule in domain.predicates if rule.house_rule))
              for name in DOMAINS for domain in [load_domain(name)]}
    assert shown == loaded
