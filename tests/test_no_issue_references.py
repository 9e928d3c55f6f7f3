"""No file of the project cites the number of an issue, a work session or a round of work it came from.

Such a number means nothing to a reader of the code: a comment, docstring, test name or document says the reason
itself, in the code's own terms. What is caught (case-insensitive):

- an issue or pull request by number: "issue 12", "issue #12", "Issue 13 class 5", "issues 3 and 4",
  "(issue 16.5)", "PR #94", "pull request #4";
- a bare tracker number where only a tracker number fits: in parentheses, "(#12)", or dotted, "#16.2";
- an item of an issue: "item 4 of the issue";
- a work session by number: "at the end of session 4", "in session 4", "(session 7)", "session 3's run";
- a round of work: "this round of work", "round 3".

Product text stays free: "session_started", "the session 3 events", "trial #1", "order #W4821001", "step 7",
"REVISE 1", "rule 3", CSS colours (#1e1e2e, #555555), HTML entities (&#160;), "a round trip", "3 rounds".

Upstream trackers are references a reader can follow, so they are allowed when the project is named right
before the number ("tau2 issue #153", "tau2-bench's PR #94", "tau-bench (Yao et al., 2024) issue #3",
"Textualize/textual issue #1234", or an f-string constant naming it, "{TAU_BENCH} issue #3"), or when the number
is part of a URL. A number whose project is named only earlier in the sentence is caught: name the project right
before it.

Scanned: every file git lists (tracked, or new and not ignored), README.md and docs/ included. Not scanned:
pictures (.svg snapshots and screenshots, .png), the recorded fixtures under tests/**/data/ (.json: what tau2 or
a run wrote, compared byte for byte; their generators are scanned) and this file, whose tables hold the strings
that must be caught.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest

from tests.support.repo_files import listed_files, numbered_lines

# Projects whose trackers the code may cite; the name must come right before the reference.
UPSTREAM = ("tau2", "tau2-bench", "tau-bench", "tau3-bench", "tau-trait", "textual", "textual-serve", "rich",
            "mcp", "python-sdk", "llama.cpp", "llama-cpp-python", "llama-server", "vllm", "openai",
            "openai-python", "aiohttp", "pydantic", "pytest", "pytest-xdist", "hypothesis", "syrupy",
            "jsonschema", "chromium", "sqlite", "python", "cpython")
_NAMES = "|".join(re.escape(name) for name in sorted(UPSTREAM, key=len, reverse=True))
# What may stand right before an allowed reference: a project name, an owner/repo, or an f-string constant,
# optionally possessive or followed by a citation in parentheses ("tau-bench (Yao et al., 2024)"), then only
# spaces, an opening parenthesis or a colon.
UPSTREAM_BEFORE = re.compile(rf"(?:(?<![\w.-])(?:{_NAMES})|[\w.-]+/[\w.-]+|\{{[A-Z][A-Z0-9_]*\}})"
                             r"(?:'s|\s*\([^()]*\))?[\s(:]*$", re.IGNORECASE)
URL = re.compile(r"\bhttps?://\S+")

_NUMBER = r"#?\d+(?:\.\d+)*"
_NOT_A_COLOUR = r"(?!(?:[0-9a-f]{3}|[0-9a-f]{4}|[0-9a-f]{6}|[0-9a-f]{8})\b)"  # CSS #rgb, #rgba, #rrggbb, #rrggbbaa
PATTERNS: tuple[tuple[str, str], ...] = (
    ("an issue or pull request by number", rf"\b(?:issues?|pull\s+requests?|PRs?)\s*{_NUMBER}\b"),
    ("a tracker number in parentheses", rf"\(\s*#{_NOT_A_COLOUR}\d+\b"),
    ("a dotted tracker number", r"(?<![\w&#])#\d+\.\d+"),
    ("an item of an issue", r"\bitems?\s+\d+(?:\s*(?:,|and|or)\s*\d+)*\s+of\s+(?:the\s+|an\s+)?issues?\b"),
    ("a work session by number", r"\b(?:in|of|from|since|during|after|before|until)\s+sessions?\s+\d+\b"
                                  r"|\bsessions?\s+\d+'s\b|\(\s*sessions?\s+\d+\s*\)"),
    ("a round of work", r"\brounds?\s+of\s+work\b|\bround\s+\d+\b"),
)
REFERENCES = tuple((what, re.compile(pattern, re.IGNORECASE)) for what, pattern in PATTERNS)

# Pictures and recorded fixtures, never written by hand (see the module docstring).
PICTURES = {".svg", ".png", ".jpg", ".jpeg", ".gif", ".ico"}


def references(line: str) -> list[str]:
    """What in `line` cites an issue, a work session or a round of work ("what: text"), upstream trackers aside."""
    urls = [match.span() for match in URL.finditer(line)]
    found = []
    for what, pattern in REFERENCES:
        for match in pattern.finditer(line):
            if any(start <= match.start() < end for start, end in urls):
                continue
            if UPSTREAM_BEFORE.search(line[:match.start()]):
                continue
            found.append(f"{what}: {match.group(0)!r}")
    return found


def scanned(name: str) -> bool:
    path = PurePosixPath(name)
    if path.suffix.lower() in PICTURES or name == "tests/test_no_issue_references.py":
        return False
    return not (path.suffix == ".json" and path.parts[0] == "tests" and "data" in path.parts[1:-1])


CAUGHT = [
    "Console figures (issue 5): cold start",
    "House rules and @for_customer (issue 13 class 4, issue 16 item 7).",
    "Issue 13 class 5, for every domain's predicates",
    '"""Issue #10.9: an exported fixture records',
    "issues 3 and 4",
    "resolved from the App's theme (issue 16.5).",
    "No import circles among our modules (issue #16.2)",
    "import circle, issue 16.2) and both",
    "Issue #10 (operator truth) and #16.1 (one main screen)",
    "see #16.2/16.3",
    "fixed in (#12)",
    "what item 4 of the issue asked",
    "items 2 and 3 of issue 11",
    "# -- issue 17: what real servers need",
    "one run on main at the end of session 4",
    "the other rows are session 3's idle run",
    "measured by a helper (session 7)",
    "measured in session 4",
    "which round of work measured what",
    "the figure from round 3",
    "tau2's known loophole (its PR #94, not merged)",
    "a cancellation the policy forbids, its issue #84",
    "this fixes PR #12",
    "issue#12",
]

PASSED = [
    "tau2 neither releases the seats (tau2 issue #153) nor credits gift cards",
    "tau2-bench issue #316 (retail task 10: refunds to the other order's payment method)",
    'f"{TAU_BENCH} pull request #32: a gold member\'s bags annotated as non-free"',
    "the failure tau2 issue #472 describes",
    "tau2's known loophole (tau2 PR #94, not merged)",
    "tau2-bench's PR #94",
    "tau-bench (Yao et al., 2024) pull request #32: a gold member's bags annotated as non-free",
    "Textualize/textual issue #1234",
    "textual#1234 and textual-serve issue 12",
    "(llama.cpp issue #9000)",
    "see https://github.com/sierra-research/tau2-bench/issues/153#issuecomment-1 and https://x.org/a#16.2",
    "Order #W4821001 was delivered",
    "session_started",
    "the session 3 events",
    "session 3 of 50 waits on the inbox",
    "step 7",
    "REVISE 1",
    "rule 3",
    "color: #1e1e2e; border: 1px solid #888",
    'Color.parse("#555555")',
    "the border colour (#555555) and the panel's (#1e1e2e)",
    "LedgerAgent&#160;Console&#160;#1",
    "only trial #1 is missing",
    "mixed.json: task #0 (id 'broken'): user_scenario",
    "retail r06 llm_agent #1",
    "item 11 of the order",
    "the gold 128GB tablet (item 2000000011)",
    "Hand the conversation to a human agent, with a summary of the customer's issue.",
    "at most 6 reads in 3 rounds per write; a round trip; round(3.14159, 2)",
    "Figures 5-7: the evaluation harness",
    "this session's ledger",
    "an issue date, newest first",
]


@pytest.mark.parametrize("line", CAUGHT)
def test_a_reference_to_our_own_work_is_caught(line: str) -> None:
    assert references(line), line


@pytest.mark.parametrize("line", PASSED)
def test_product_text_and_upstream_trackers_pass(line: str) -> None:
    assert references(line) == []


def test_pictures_and_recorded_fixtures_are_not_scanned_but_their_generators_are() -> None:
    assert not scanned("tests/console/__snapshots__/retail_80x24.svg")
    assert not scanned("docs/screenshots/compare-160x45.svg")
    assert not scanned("tests/evaluation/data/tau2_native_retail.json")
    assert scanned("tests/evaluation/data/make_tau2_native.py")
    assert scanned("domains/retail/tasks/tasks.json") and scanned("README.md") and scanned("docs/browser.md")
    assert scanned("Makefile") and scanned(".ci/run") and scanned("console/tui/console.tcss")


def test_no_file_cites_an_issue_a_work_session_or_a_round_of_work() -> None:
    offenders = [f"{name}:{number}: {found}" for name in listed_files() if scanned(name)
                 for number, line in numbered_lines(name) for found in references(line)]
    assert offenders == [], "say the reason itself, in the code's own terms:\n" + "\n".join(offenders)
