"""`ledgeragent audit`: the audit of many recorded conversations as a report a person reads (`--out FOLDER`), or,
with one file and no `--out`, a supervision desk's audit log printed (console.cli.supervise, as before).

`ledgeragent audit FILES... --out report/ [--db [DOMAIN=]PATH]... [--model NAME] [--force]`:

- every file is read as `check --as-recorded` reads one (any recording format), its domain from the file or
  its tools, its model from the file (tau2's `info.agent_info.llm`, a trace's session), else `--model`, else
  the file's name, and the report says which;
- `--db` is repeatable: `--db airline=PATH` names the domain, a plain `--db PATH` is matched to the one domain
  whose database it is (by its content: each domain's loader is tried). A domain with a database is audited
  with evidence assist, the gate reading what a write lacks from it; a domain without one is audited on the
  recorded results only, and its writes that needed a read the gate would have made are "not judged";
- each conversation is audited (`core.recorded.audit.RecordedAudit`, one per domain, the database restored
  between conversations) and added to the report's counts and findings (`core.recorded.report`), then let go:
  a run of thousands of conversations holds one file's conversations at a time, never their events;
- a file or line that cannot be read is one `error:` line on stderr with its position, and the rest is audited;
  the report lists them too. Exit 0: the report is written; 1: written, and the input had problems; 2: bad
  usage, an unusable `--out` or `--db`, or nothing could be audited at all (no report is written then).

A progress bar runs on stderr while files are audited, only on a terminal (as `ledgeragent eval`'s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from console.cli.check_report import check_text_file
from console.cli.errors import CliError, one_line
from console.runtime.audit_folder import claim_report_folder, write_report
from console.runtime.lookup import recording_domain
from core.domain import Domain
from core.evidence import EvidenceMode
from core.recorded.audit import NOT_JUDGED, RecordedAudit
from core.recorded.formats import read_auditable
from core.recorded.model import FORMAT_WORDS, Recording, RecordingError
from core.recorded.report import KINDS, REFUSED, AuditReport, SourceFile
from domains.registry import DOMAINS
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import BackendSourceError, open_backend

GZIP_MAGIC = b"\x1f\x8b"
DESK_RECORD_TYPES = frozenset({"decision", "outcome", "regate"})

HELP = "audit recorded conversations of many files into a report (--out FOLDER: HTML, Markdown, JSON); or, with " \
       "one FILE and no --out, print a supervision desk's audit log (decisions with their outcomes), filtered"
DESCRIPTION = """\
Audit recordings into a report:  ledgeragent audit FILES... --out FOLDER [--db [DOMAIN=]PATH]... [--model NAME]
  Every write of every recorded conversation judged in its recorded context, as `check --as-recorded` does;
  the report (index.html, report.md, audit.json) counts them per model and domain and lists the findings.
Print a desk's audit log:        ledgeragent audit AUDIT.jsonl [--operator NAME] [--verdict V] [--decision D] [--json]
"""


def register(sub: Any) -> None:
    """Add `audit` (both forms, one handler that tells them apart by `--out`) to the parser's subparsers."""
    from console.cli.supervise_options import AUDIT_DECISIONS, AUDIT_VERDICTS

    audit: argparse.ArgumentParser = sub.add_parser("audit", help=HELP, description=DESCRIPTION,
                                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.add_argument("files", nargs="+", metavar="FILE",
                       help="recordings (any format check --as-recorded reads), or one desk audit.jsonl")
    report = audit.add_argument_group("a report of recordings")
    report.add_argument("--out", metavar="FOLDER", help="the report's folder (new or empty; see --force)")
    report.add_argument("--db", action="append", default=[], metavar="[DOMAIN=]PATH",
                        help="a domain's database (a tau2 db.json, telecom db.toml, the tau-Trait telehealth folder, "
                             "or a .sqlite); repeatable, one per domain; without DOMAIN= it is matched by content. A "
                             "domain without one is judged on the recorded results only")
    report.add_argument("--model", metavar="NAME",
                        help="the model of files that name none (tau-bench lists); default: the file's name")
    report.add_argument("--domain", choices=DOMAINS,
                        help="the domain of files that neither name one nor call tools only one domain has")
    report.add_argument("--force", action="store_true",
                        help="write into a folder that is not empty (its index.html, report.md, audit.json replaced)")
    desk = audit.add_argument_group("a supervision desk's audit log")
    desk.add_argument("--operator", help="only this operator's decisions")
    desk.add_argument("--verdict", choices=AUDIT_VERDICTS, help="only decisions on calls the gate gave this verdict")
    desk.add_argument("--decision", choices=AUDIT_DECISIONS, help="only this kind of decision")
    desk.add_argument("--json", action="store_true", help="one JSON object per decision, with its outcome")
    audit.set_defaults(handler=cmd_audit)


REPORT_ONLY = ("db", "model", "domain", "force")
DESK_ONLY = ("operator", "verdict", "decision", "json")


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return [f"--{name}" for name in names if getattr(args, name) not in (None, False, [])]


def _first_line(path: Path) -> bytes:
    with contextlib.suppress(OSError), path.open("rb") as handle:
        for line in handle:
            if line.strip():
                return line[:65536]
    return b""


def _is_recording(path: Path) -> bool:
    """Whether a file named without `--out` is plainly not a desk's audit log (whose lines are whole JSON
    objects, one record each): gzipped, a document that opens over several lines (a pretty-printed tau2 file),
    or a first line that is JSON but no desk record. A line that does not parse is left to the desk log's reader,
    which skips it (a log's last line can be torn)."""
    import json

    head = _first_line(path)
    if head.startswith(GZIP_MAGIC) or head.strip() in (b"{", b"["):
        return True
    try:
        value = json.loads(head)
    except ValueError:
        return False
    return not (isinstance(value, dict) and value.get("type") in DESK_RECORD_TYPES)


def cmd_audit(args: argparse.Namespace) -> int:
    """Sync, as the desk log's printer is (it may run where an event loop runs already); the audit of recordings
    runs its own loop."""
    if args.out is not None:
        wrong = _given(args, DESK_ONLY)
        if wrong:
            raise CliError(f"{', '.join(wrong)}: options of a desk's audit log, not of a report of recordings "
                           "(--out)")
        return asyncio.run(audit_recordings(args))
    wrong = _given(args, REPORT_ONLY)
    if len(args.files) > 1 or wrong:
        raise CliError(f"{', '.join(wrong) or 'several files'}: an audit of recordings writes a report; name its "
                       "folder with --out FOLDER")
    path = Path(args.files[0])
    if path.is_file() and _is_recording(path):
        raise CliError(f"{path} is no supervision desk audit log; to audit recordings, name the report's folder: "
                       f"ledgeragent audit {path} --out FOLDER")
    from console.cli.supervise import cmd_audit as print_desk_audit

    args.file = args.files[0]
    return print_desk_audit(args)


# -- databases ------------------------------------------------------------------------------------------------


@dataclass
class Database:
    domain: str
    source: str  # as given on the command line
    backend: SQLiteToolBackend


async def _open(domain: str, source: str, scratch: Path) -> SQLiteToolBackend:
    return await open_backend(domain, scratch / f"{domain}.sqlite", source=Path(source))


def _split(value: str) -> tuple[str | None, str]:
    """`DOMAIN=PATH` when the part before the first "=" is a domain's name, else a plain path."""
    name, sep, rest = value.partition("=")
    if sep and name in DOMAINS:
        return name, rest
    return None, value


async def _match(source: str, scratch: Path) -> Database:
    """The domain whose loader accepts `source` (by its content, never by its file name): each domain's is
    tried in turn, and the first that loads it wins (a database valid for two domains' models does not occur:
    their records differ in shape, and a session's .sqlite names its tables)."""
    if not Path(source).exists():
        raise CliError(f"--db {source}: no such file or folder")
    for domain in DOMAINS:
        try:
            return Database(domain, source, await _open(domain, source, scratch))
        except BackendSourceError:
            continue
    raise CliError(f"--db {source}: no domain's database (tau2 airline or retail db.json, telecom db.toml, the "
                   "tau-Trait telehealth folder, or a session's .sqlite); name its domain with --db DOMAIN=PATH "
                   "to see why")


async def open_databases(values: list[str], scratch: Path) -> dict[str, Database]:
    """Each `--db` opened on a copy in `scratch` (the sources are never written), keyed by domain."""
    opened: dict[str, Database] = {}
    try:
        for n, value in enumerate(values):
            domain, source = _split(value)
            if domain is not None and domain in opened:
                raise CliError(f"--db {value}: a second database for the {domain} domain")
            folder = scratch / f"db-{n}"  # each --db's copies apart: a second one never touches an open one
            folder.mkdir()
            if domain is not None:
                try:
                    opened[domain] = Database(domain, source, await _open(domain, source, folder))
                except BackendSourceError as exc:
                    raise CliError(f"--db {value}: {exc}") from None
                continue
            database = await _match(source, folder)
            if database.domain in opened:
                await database.backend.close()
                raise CliError(f"--db {value}: a second database for the {database.domain} domain")
            opened[database.domain] = database
    except BaseException:
        for database in opened.values():
            await database.backend.close()
        raise
    return opened


# -- the run --------------------------------------------------------------------------------------------------


class Run:
    """One audit: the report, the databases, one `RecordedAudit` per domain, the consoles."""

    def __init__(self, args: argparse.Namespace, databases: dict[str, Database], err: Console) -> None:
        self.args = args
        self.databases = databases
        self.audits: dict[str, RecordedAudit] = {}
        self.report = AuditReport()
        self.err = err

    def problem(self, source: SourceFile, problem: Any) -> None:
        self.report.add_problem(source, problem)
        self.err.print(f"[bold red]error:[/] {escape(one_line(self.report.problems[-1]))}")

    def _auditor(self, domain: Domain) -> RecordedAudit:
        audit = self.audits.get(domain.name)
        if audit is None:
            database = self.databases.get(domain.name)
            audit = RecordedAudit(domain) if database is None else RecordedAudit(
                domain, database.backend, evidence=EvidenceMode.ASSIST)
            self.audits[domain.name] = audit
        return audit

    def _read(self, source: SourceFile) -> tuple[Recording, Domain] | None:
        path = Path(source.path)
        try:
            if not path.is_file():
                raise CliError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
            if not _first_line(path).startswith(GZIP_MAGIC):  # a gzipped file is its reader's to inflate
                check_text_file(path)
            recording = read_auditable(path)
        except (CliError, RecordingError) as exc:
            source.unusable = one_line(str(exc))
            self.problem(source, source.unusable)
            return None
        source.format = recording.format
        try:
            try:
                domain = recording_domain(recording, None)
            except CliError:
                if self.args.domain is None:
                    raise
                domain = recording_domain(recording, self.args.domain)
        except CliError as exc:
            source.unusable = one_line(str(exc).replace("; pass --domain", " (pass --domain)"))
            self.problem(source, source.unusable)
            return None
        return recording, domain

    def _model(self, source: SourceFile, recording: Recording) -> str:
        if recording.model:
            source.model, source.model_source = recording.model, "recording"
        elif self.args.model:
            source.model, source.model_source = self.args.model, "--model"
        else:
            name = Path(source.path).name
            for suffix in (".gz", ".jsonl", ".json"):
                name = name.removesuffix(suffix)
            source.model, source.model_source = name, "file name"
        return source.model

    async def file(self, path: str, progress: Progress, bar: Any) -> None:
        source = self.report.add_file(path)
        read = self._read(source)
        if read is None:
            progress.update(bar, advance=1)
            return
        recording, domain = read
        source.domain = domain.name
        model = self._model(source, recording)
        for problem in recording.problems:
            self.problem(source, problem)
        database = self.databases.get(domain.name)
        source.database = None if database is None else database.source
        if not recording.results_recorded and database is None:
            source.unusable = ("check lines record no results: auditing them needs the database of their domain "
                               f"(--db {domain.name}=PATH)")
            self.problem(source, source.unusable)
            progress.update(bar, advance=1)
            return
        auditor = self._auditor(domain)
        conversations = recording.conversations
        step = 1 / len(conversations)
        index = 0
        async for audited in auditor.run(recording):
            before = len(self.report.problems)
            self.report.add_conversation(source, index, conversations[index], audited, domain, model)
            for line in self.report.problems[before:]:
                self.err.print(f"[bold red]error:[/] {escape(one_line(line))}")
            index += 1
            progress.update(bar, advance=step, description=f"{self.report.conversations} conversations · "
                                                           f"{escape(_shortened(Path(path).name))}")
        recording.conversations = []  # let the file's conversations go before the next file is read


def _shortened(name: str, limit: int = 40) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ledgeragent-audit-") as folder:
        yield Path(folder)


async def audit_recordings(args: argparse.Namespace) -> int:
    out = Console(highlight=False)
    if not out.is_terminal:
        out = Console(highlight=False, width=200)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    folder = claim_report_folder(Path(args.out), force=args.force)
    with _scratch() as scratch:
        databases = await open_databases(list(args.db), scratch)
        try:
            run = Run(args, databases, err)
            progress = Progress(TextColumn("[bold]audit[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
                                TimeElapsedColumn(), TextColumn("{task.description}"), console=err, transient=True,
                                disable=not err.is_terminal)
            run.err = progress.console
            bar = progress.add_task("", total=len(args.files))
            with progress:
                for path in args.files:
                    await run.file(path, progress, bar)
        finally:
            for database in databases.values():
                await database.backend.close()
    report = run.report
    if not report.conversations:
        raise CliError(f"no conversation could be audited ({len(report.problems)} problem(s), the first: "
                       f"{report.problems[0] if report.problems else 'none'}); no report written")
    written = write_report(folder, report)
    print_summary(out, report, written)
    return 1 if report.problems else 0


def print_summary(out: Console, report: AuditReport, written: list[Path]) -> None:
    """What the report says in a few lines: the counts per model and domain, the findings, where it is."""
    totals = report.totals()
    refused = sum(totals.get(k, 0) for k in REFUSED)
    table = Table("model", "domain", "conversations", "writes", *KINDS, box=None, title_justify="left",
                  title="what the gate would have said, every write in its recorded context")
    for group in report.sorted_groups():
        table.add_row(escape(group.model), escape(group.domain), str(group.conversations),
                      str(sum(group.writes.values())), *(str(group.writes.get(k, 0)) for k in KINDS))
    table.add_row("total", "", str(report.conversations), str(report.writes), *(str(totals.get(k, 0)) for k in KINDS),
                  style="bold")
    formats = sorted({FORMAT_WORDS.get(f.format, f.format) for f in report.files if f.format})
    out.print(f"audited {report.conversations} conversation(s) in {len(report.files)} file(s) "
              f"({escape('; '.join(formats))})")
    out.print(table)
    out.print(f"{report.writes} writes of the agents: {totals.get('ALLOW', 0)} allowed, {refused} refused, "
              f"{totals.get(NOT_JUDGED, 0)} not judged")
    out.print(f"rewarded, but a rule of the written policy broken: {len(report.rewarded_violations())} write(s)")
    if report.problems:
        out.print(f"problems of the input: {len(report.problems)} (on stderr, and in the report)")
    out.print("report: " + " · ".join(escape(str(p)) for p in written))
