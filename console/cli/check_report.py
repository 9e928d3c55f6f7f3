"""`ledgeragent check`'s reading and reporting, streamed: a 600k-call trajectory in bounded memory.

The file is read line by line (`core.replay.iter_trajectory`), each call checked and reported as it comes,
nothing kept but counters and a bounded list of failed expectations. The report is printed in chunks, and in
table mode a progress line goes to stderr every `PROGRESS_EVERY` calls. Before anything runs the file is
checked to be UTF-8 text (a binary or latin-1 file is one error line).

Nothing is cut. On a terminal wide enough that no column must split a word, a chunk is a table (same columns,
header once) whose cells wrap at word boundaries; on a narrower one it is one block per call: the call on its
first line, then each objecting rule's reason, indented, wrapped at words. Piped or redirected (no terminal)
the blocks have no width limit at all: each fact is one line, as long as it is. A session trace's call that its
operator decided also says what they decided, who, when and why, from the trace's own events
(console/cli/session_decisions.py).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from console.cli.errors import CliError, print_error
from console.cli.session_decisions import SessionDecision, session_decisions, session_words
from console.runtime.facts import verdict_words
from console.runtime.textview import VERDICT_STYLE, shown
from core.replay import Checker, CheckResult, TrajectoryCall, TrajectoryProblem, iter_session_calls, iter_trajectory
from core.strict_json import inert_json

CHUNK = 1 << 20
TABLE_CHUNK = 500  # rows per printed table: small files look exactly as one table
PROGRESS_EVERY = 50_000
MAX_FAILURES_SHOWN = 200
UNLIMITED = 1 << 20  # columns of piped output: no terminal, no width limit
INDENT = 4
COLUMNS = ("#", "line", "tool", "kind", "verdict", "rules", "reason", "expect")


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


def report_console() -> Console:
    """`check`'s stdout: on a terminal, lines wrap at its width at word boundaries; piped or redirected, nothing
    is wrapped or cut (no width limit)."""
    if Console().is_terminal:
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=UNLIMITED)


def print_detail(out: Console, text: Text, indent: int = INDENT) -> None:
    """A line under a call, indented; on a terminal its continuation lines keep the indent."""
    if out.soft_wrap:
        out.print(Text(" " * indent).append_text(text))
    else:
        out.print(Padding(text, (0, 0, 0, indent), expand=False))


def reasons(result: CheckResult) -> list[str]:
    """Each objecting rule's "id: reason" on its own (the result joins them with " | "), else the whole reason
    (a tool's error, an escalation note)."""
    parts: list[str] = []
    for part in result.reason.split(" | ") if result.reason else []:
        if parts and not any(part.startswith(f"{rule}: ") for rule in result.predicates):
            parts[-1] += " | " + part  # a reason that itself holds " | "
        else:
            parts.append(part)
    return parts


def _verdict(result: CheckResult) -> Text:
    return Text(verdict_words(result.verdict, result.refusal), VERDICT_STYLE.get(result.verdict, ""))


def _met(result: CheckResult, *, words: bool) -> Text:
    if result.met is None:
        return Text("")
    if result.met:
        return Text("✓ as expected" if words else "✓", "green")
    return Text(f"✗ expected {result.expected}" if words else f"✗ {result.expect}", "red")


def _table(header: bool) -> Table:
    table = Table(box=None, show_header=header)
    for name in COLUMNS:
        table.add_column(name, overflow="fold")  # wrapped at words; a word is split only when it must be
    return table


def _row(table: Table, result: CheckResult, session: SessionDecision | None) -> None:
    reason = Text("\n".join(reasons(result)))
    if session is not None:
        reason.append(("\n" if reason else "") + f"in the session: {session_words(session)}", "cyan")
    table.add_row(Text(str(result.index)), Text(str(result.line)), Text(result.name), Text(result.kind),
                  _verdict(result), Text("\n".join(result.predicates)), reason, _met(result, words=False))


def print_block(out: Console, result: CheckResult, session: SessionDecision | None) -> None:
    """One call: where, what, the verdict and the expectation; then each reason, the gate's own reads and what
    the session's operator decided, one indented line each."""
    head = Text.assemble(f"line {result.line}  #{result.index}  ", (result.name, "bold"), f"  {result.kind}  ",
                         _verdict(result))
    met = _met(result, words=True)
    if met:
        head.append("  ").append_text(met)
    out.print(head)
    for reason in reasons(result):
        print_detail(out, Text(reason))
    for read in result.gate_reads:
        print_detail(out, Text(f"the gate read {read} itself", "dim"))
    if session is not None:
        print_detail(out, Text(f"in the session: {session_words(session)}", "cyan"))


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)


def fit_columns(out: Console, table: Table) -> bool:
    """Give each column of `table` a width at which no word of it is split, the whole table within the terminal
    (each column at least as wide as its longest word, the room left shared out up to each one's widest line);
    False when the terminal is too narrow for that, or is no terminal (then nothing is wrapped at all)."""
    if out.soft_wrap:
        return False
    spans: list[tuple[int, int]] = []  # per column: its longest word, its widest line
    for column in table.columns:
        cells = [_plain(c) for c in ([column.header] if table.show_header else []) + list(column._cells)]
        spans.append((max((cell_len(w) for c in cells for w in c.split()), default=1),
                      max((cell_len(line) for c in cells for line in c.splitlines()), default=1)))
    padding = table.padding[1] + table.padding[3]
    widths = [low for low, _high in spans]
    spare = out.width - sum(widths) - padding * len(widths)
    if spare < 0:
        return False
    while spare > 0:
        growing = [i for i, (_low, high) in enumerate(spans) if widths[i] < high]
        if not growing:
            break
        for i in growing[:spare]:
            widths[i] += 1
        spare -= min(spare, len(growing))
    for column, width in zip(table.columns, widths, strict=True):
        column.width = max(width, 1)
    return True


class ChunkPrinter:
    """Prints the reported calls a chunk at a time: a table when the terminal fits it without splitting a word
    (header on the first table only), else blocks (see the module docstring)."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.rows: list[tuple[CheckResult, SessionDecision | None]] = []
        self.header = True  # the next table printed is the first: it has the header

    def add(self, result: CheckResult, session: SessionDecision | None) -> None:
        self.rows.append((result, session))
        if len(self.rows) >= TABLE_CHUNK:
            self.flush()

    def flush(self, *, last: bool = False) -> None:
        rows, self.rows = self.rows, []
        if not rows and not (last and self.header):
            return
        table = _table(self.header)
        for result, session in rows:
            _row(table, result, session)
        if fit_columns(self.out, table):
            self.out.print(table)
            self.header = False
            return
        for result, session in rows:
            print_block(self.out, result, session)


def _decided_calls(path: Path, calls: CallReader) -> dict[tuple[int, str], SessionDecision]:
    """A session trace's operator decisions by (the line of the turn that proposed the call, its id)."""
    if calls is not iter_session_calls:
        return {}
    with path.open("rb") as handle:
        return {(d.proposed_at, d.call_id): d for d in session_decisions(line.decode("utf-8") for line in handle)}


CallReader = Callable[[Iterable[str]], Iterator[TrajectoryCall | TrajectoryProblem]]


async def run_check(path: Path, checker: Checker, *, json_lines: bool, show_all: bool,
                    calls: CallReader = iter_trajectory) -> CheckReport:
    """Check every call of `path` through `checker`, reporting as it goes; returns the totals. `calls` reads
    them: a trajectory's lines (the default), or the calls a session trace recorded (`iter_session_calls`)."""
    report = CheckReport()
    out = report_console()
    progress = Console(stderr=True, highlight=False)
    size = max(path.stat().st_size, 1)
    decided = _decided_calls(path, calls)
    printer = ChunkPrinter(out)
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
                printer.add(result, decided.get((item.line, item.call_id or "")))
            if report.calls % PROGRESS_EVERY == 0:
                done = min(100, round(100 * handle.tell() / size))
                progress.print(f"[dim]… {report.calls:,} calls checked ({done}% of {path.name})[/]")
    if not json_lines:
        printer.flush(last=True)
        out.print(f"{report.calls} calls, {sum(report.writes.values())} writes: "
                  + ", ".join(f"{v} {n}" for v, n in report.writes.items())
                  + f"; {report.failed} expectation(s) failed, {report.broken} broken line(s)")
    for failure in report.failures:
        print_error(failure)
    if report.failed > len(report.failures):
        print_error(f"… and {report.failed - len(report.failures)} more failed expectation(s)")
    return report
