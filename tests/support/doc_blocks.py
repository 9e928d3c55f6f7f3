"""The docs' fenced blocks, and running the ones marked runnable, as docs/predicates.md states the convention.

A block whose info string starts `sh test` is runnable: it runs in its own `bash -euo pipefail` from the
repository root, with the project's virtualenv `bin` first on `PATH` (where `ledgeragent` is). Each
`expect="TEXT"` after the marker names text the block's standard output must contain, so a page can say what
its example shows and a test holds it to that. As a safety net the runner points `LEDGERAGENT_HOME` at a
scratch folder, so a block that forgets to cannot write sessions into the user's data dir, and forbids pip
its index, so a block that runs `make` on a stale virtualenv fails instead of reaching the network.

`needs=recordings` declares that a block runs on the development set of real model recordings (kept outside the
repository, tests/support/upstream.py's RECORDINGS): the runner decompresses every recording into the block's
scratch folder and gives the block `$RECORDINGS` (that folder, its `*.json`) and `$SHARED` (the folder holding
the tau2 and tau-Trait databases); where the set is absent (CI) the block is skipped, with the reason. Markdown
is parsed with markdown-it-py (the parser rich renders Markdown with), so fences inside lists or quotes and
longer fences are found the way a renderer finds them.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
RUNNABLE_INFO = ("sh", "test")
EXPECT = "expect="
NEEDS = "needs="
RECORDINGS_NEED = "recordings"
TIMEOUT_S = 120.0  # a block that hangs (a server never stopped) fails instead of stalling the suite


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    info: tuple[str, ...]
    code: str

    @property
    def runnable(self) -> bool:
        return self.info[:2] == RUNNABLE_INFO

    @property
    def expects(self) -> tuple[str, ...]:
        """The texts a runnable block's output must contain, from its `expect="..."` attributes."""
        return tuple(word.removeprefix(EXPECT) for word in self.info[2:] if word.startswith(EXPECT))

    @property
    def needs(self) -> tuple[str, ...]:
        """What a runnable block needs beyond the repository, from its `needs=...` attributes (`recordings`)."""
        return tuple(word.removeprefix(NEEDS) for word in self.info[2:] if word.startswith(NEEDS))

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _info(text: str) -> tuple[str, ...]:
    """The info string's words, quotes honoured (`expect="gate REVISE"` is one word); unbalanced ones split."""
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown file, in order."""
    tokens = MarkdownIt().parse(path.read_text(encoding="utf-8"))
    return [Block(path, token.map[0] + 1 if token.map else 0, _info(token.info), token.content)
            for token in tokens if token.type == "fence"]


def doc_pages() -> list[Path]:
    """The pages a reader follows: README.md and every page of docs/ (the templates folder is not a page)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def runnable_blocks(pages: list[Path] | None = None) -> list[Block]:
    """The `sh test` blocks of the given pages (default: every page)."""
    return [block for path in (doc_pages() if pages is None else pages) for block in fenced_blocks(path)
            if block.runnable]


def unmet_need(block: Block) -> str | None:
    """Why the block cannot run here (a need that is absent or unknown), None when it can."""
    from tests.support.upstream import RECORDINGS, recording_names

    for need in block.needs:
        if need != RECORDINGS_NEED:
            return f"{block.where}: unknown need {need!r} (known: {RECORDINGS_NEED})"
        if not recording_names():
            return f"{block.where} runs on the development recordings, not found at {RECORDINGS}"
    return None


def _recordings(scratch: Path) -> Path:
    """The development set decompressed into `scratch/recordings` (one `*.json` per recording)."""
    from tests.support.upstream import decompressed_recording, recording_names

    folder = scratch / "recordings"
    folder.mkdir(exist_ok=True)
    for name in recording_names():
        decompressed_recording(name, folder)
    return folder


def run_block(block: Block, scratch: Path, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run a runnable block (see the module docstring); a block with needs must be checked with `unmet_need`
    first."""
    env = dict(os.environ)
    if RECORDINGS_NEED in block.needs:
        from tests.support.upstream import REFERENCE

        env["RECORDINGS"] = str(_recordings(scratch))
        env["SHARED"] = str(REFERENCE)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["LEDGERAGENT_HOME"] = str(scratch / "ledgeragent-home")
    env["PIP_NO_INDEX"] = "1"
    env.pop("COLUMNS", None)  # the block's own COLUMNS= or the runner's default width, never the caller's terminal
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
