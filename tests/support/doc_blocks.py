"""The docs' fenced blocks, and running the ones marked runnable, as docs/predicates.md states the convention.

A block whose info string is `sh test` is runnable: it runs in its own `bash -euo pipefail` from the
repository root, with the project's virtualenv `bin` first on `PATH` (where `ledgeragent` is). As a safety net
the runner also points `LEDGERAGENT_HOME` at a scratch folder, so a block that forgets to cannot write
sessions into the user's data dir. Markdown is parsed with markdown-it-py (the parser rich renders
Markdown with), so fences inside lists or quotes and longer fences are found the way a renderer finds them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
RUNNABLE_INFO = ("sh", "test")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    info: tuple[str, ...]
    code: str

    @property
    def runnable(self) -> bool:
        return self.info == RUNNABLE_INFO

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown file, in order."""
    tokens = MarkdownIt().parse(path.read_text(encoding="utf-8"))
    return [Block(path, token.map[0] + 1 if token.map else 0, tuple(token.info.split()), token.content)
            for token in tokens if token.type == "fence"]


def runnable_blocks(folder: Path = DOCS) -> list[Block]:
    """The `sh test` blocks of every Markdown file under `folder`."""
    return [block for path in sorted(folder.rglob("*.md")) for block in fenced_blocks(path) if block.runnable]


def run_block(block: Block, scratch: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["LEDGERAGENT_HOME"] = str(scratch / "ledgeragent-home")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
