"""`ledgeragent check`'s reading and reporting, streamed: a 600k-call trajectory in bounded memory.

The file is read line by line (`core.replay.iter_trajectory`), each call checked and reported as it comes,
nothing kept but counters and a bounded list of failed expectations. The table is printed in chunks (same
columns, header once), and in table mode a progress line goes to stderr every `PROGRESS_EVERY` calls.
Before anything runs the file is checked to be UTF-8 text (a binary or latin-1 file is one error line).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.cli.errors import CliError, print_error
from console.runtime.facts import verdict_words
from console.runtime.textview import VERDICT_STYLE, shown
from core.replay import Checker, CheckResult, TrajectoryCall, TrajectoryProblem, iter_trajectory
from core.strict_json import inert_json

CHUNK = 1 << 20
TABLE_CHUNK = 500  # rows per printed table: small files look exactly as one table
PROGRESS_EVERY = 50_000
MAX_FAILURES_SHOWN = 200


def check_text_file(path: Path) -> None:
    """Refuse a file that is not UTF-8 text, naming the first bad byte; reads in chunks (bounded memory)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                if b"\x00" in chunk:
                    raise CliError(f"{path} is a binary file (NUL byte at offset {offset + chunk.index(0)}), "
                                   "not JSON lines")
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    raise CliError(f"{path} is not UTF-8 text (byte 0x{chunk[exc.start]:02x} at offset "
                                   f"{offset + exc.start}); save it as UTF-8") from None
                offset += len(chunk)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise CliError(f"{path} is not UTF-8 text (it ends inside a character)") from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc


@dataclass
class CheckReport:
    calls: int = 0
    writes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICT_STYLE, 0))
    failed: int = 0
    broken: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed or self.broken else 0

    def add(self, result: CheckResult, path: Path) -> None:
        self.calls += 1
        if result.kind == "write" and result.verdict in self.writes:
            self.writes[result.verdict] += 1
        if result.met is False:
            self.failed += 1
            if len(self.failures) < MAX_FAILURES_SHOWN:
                self.failures.append(f"{path}:{result.line}: {result.name} expected {result.expected}, got "
                                     f"{got(result)} {result.reason}")


def got(result: CheckResult) -> str:
    """What the gate gave, in the words of `CheckResult.expected`: the verdict, the rules that objected and
    those of them that crashed, so a REVISE from a crash never reads like the REVISE that was expected."""
    text = result.verdict
    if result.predicates:
        text += f" from [{', '.join(result.predicates)}]"
    if result.crashed:
        text += f" (crashed: {', '.join(result.crashed)})"
    return text


def _table() -> Table:
    return Table("#", "line", "tool", "kind", "verdict", "rules", "reason", "expect", box=None)


def _row(table: Table, result: CheckResult) -> None:
    met = "" if result.met is None else ("[green]✓[/]" if result.met else f"[red]✗ {result.expect}[/]")
    style = VERDICT_STYLE.get(result.verdict, "")
    table.add_row(str(result.index), str(result.line), escape(result.name), result.kind,
                  f"[{style}]{verdict_words(result.verdict, result.refusal)}[/]", escape(", ".join(result.predicates)),
                  escape(result.reason[:300]), met)


CallReader = Callable[[Iterable[str]], Iterator[TrajectoryCall | TrajectoryProblem]]


async def run_check(path: Path, checker: Checker, *, json_lines: bool, show_all: bool,
                    calls: CallReader = iter_trajectory) -> CheckReport:
    """Check every call of `path` through `checker`, reporting as it goes; returns the totals. `calls` reads
    them: a trajectory's lines (the default), or the calls a session trace recorded (`iter_session_calls`)."""
    report = CheckReport()
    out = Console(highlight=False)
    progress = Console(stderr=True, highlight=False)
    size = max(path.stat().st_size, 1)
    table = _table()
    with path.open("rb") as handle:  # binary, so the position is known for the progress line
        for item in calls(line.decode("utf-8") for line in handle):
            if isinstance(item, TrajectoryProblem):
                report.broken += 1
                print_error(f"{path}:{item.line}: {item.message} (line skipped)")
                continue
            result = await checker.check(item)
            report.add(result, path)
            if json_lines:  # the same JSON, with what a terminal would act on written as \u escapes
                print(inert_json(json.dumps(result.to_json(), ensure_ascii=False)), flush=True)
                continue
            result = shown(result)  # printed: its text (the line's tool name, a rule's reason) inert
            if result.kind == "write" or result.verdict != "ALLOW" or show_all:
                _row(table, result)
                if table.row_count >= TABLE_CHUNK:
                    out.print(table)
                    table = _table()
                    table.show_header = False
            if report.calls % PROGRESS_EVERY == 0:
                done = min(100, round(100 * handle.tell() / size))
                progress.print(f"[dim]… {report.calls:,} calls checked ({done}% of {path.name})[/]")
    if not json_lines:
        if table.row_count or table.show_header:
            out.print(table)
        out.print(f"{report.calls} calls, {sum(report.writes.values())} writes: "
                  + ", ".join(f"{v} {n}" for v, n in report.writes.items())
                  + f"; {report.failed} expectation(s) failed, {report.broken} broken line(s)")
    for failure in report.failures:
        print_error(failure)
    if report.failed > len(report.failures):
        print_error(f"… and {report.failed - len(report.failures)} more failed expectation(s)")
    return report
