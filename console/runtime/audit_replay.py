"""The console command that opens an audited write: `ledgeragent console --recorded FILE [--db DB] --at C:I`.

`C` is the conversation's index among the file's conversations and `I` the write's index among that
conversation's calls, both from 0, as `core.recorded.report` counts them; the report prints the command
beside every finding, and the console opens the conversation's replay on that write. The database is the one
the audit read from (the verdicts shown are then the report's), or none when the audit had none.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

_AT = re.compile(r"(\d{1,9}):(\d{1,9})")


@dataclass(frozen=True)
class At:
    """A write of a recording: conversation `conversation`, call `call` (indexes from 0)."""

    conversation: int
    call: int

    def __str__(self) -> str:
        return f"{self.conversation}:{self.call}"


def parse_at(text: str) -> At:
    """`--at C:I`; ValueError with the expected shape otherwise."""
    match = _AT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--at takes CONVERSATION:CALL, two whole numbers from 0 (e.g. 3:12), not {text!r}")
    return At(int(match.group(1)), int(match.group(2)))


def replay_command(recording: str, database: str | None, at: At) -> str:
    """The command line, every path absolute and shell-quoted (a report is read from anywhere)."""
    parts = ["ledgeragent", "console", "--recorded", str(Path(recording).absolute())]
    if database is not None:
        parts += ["--db", str(Path(database).absolute())]
    parts += ["--at", str(at)]
    return shlex.join(parts)
