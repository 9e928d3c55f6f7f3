"""`ledgeragent check FILE --as-recorded`: the audit of a recorded conversation, on the terminal or as JSON lines.

The judging is `core.recorded` (no UI); this module picks the domain and the database, prints each
conversation's writes as soon as it is audited (a file of many tau2 simulations is never held as one report),
then the summary table. Problems of the input go to stderr, one line each with its position; the exit status is
`check`'s: 2 when the file is unusable, 1 when a problem was reported, else 0 (verdicts are findings, not
failures).

Nothing is cut: on a terminal each line wraps at word boundaries (a call's details keep their indent), piped it
has no width limit (console/cli/check_report.py's `report_console`). In a session trace, a write its operator
decided says so beside the verdict, from the trace's `SupervisorDecided` events: "BLOCK, force-allowed by dana at
T: why; ran" (console/cli/session_decisions.py), never inferred from the verdict or the outcome.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from console.cli.check_report import check_text_file, fit_columns, print_detail, report_console
from console.cli.errors import CliError, print_error
from console.cli.session_decisions import SessionDecision, decisions_words, session_decisions
from console.runtime.facts import verdict_words
from console.runtime.lookup import recording_domain as recording_domain  # re-exported
from console.runtime.storage import claim_session_folder
from console.runtime.textview import VERDICT_STYLE
from console.runtime.textview import shown as inert_view
from core.conversation_rules import customer_said
from core.evidence import EvidenceMode
from core.recorded.audit import (
    CATEGORIES,
    HYPOTHETICAL,
    NOT_JUDGED,
    AuditedCall,
    ConversationAudit,
    RecordedAudit,
)
from core.recorded.formats import is_gzip, read_auditable
from core.recorded.model import FORMAT_WORDS, Recording, RecordingError
from core.strict_json import inert, inert_json, printable
from mock_backends.registry import open_backend

RECORDED_WORDS = {"ok": "ran", "error": "ran: error", "not run": "not run", "no result": "no result",
                  "unreadable": "ran: unreadable result"}
CATEGORY_STYLE = {"ALLOW": VERDICT_STYLE["ALLOW"], "needs a read": "bold cyan",
                  "breaks a rule": VERDICT_STYLE["REVISE"], "BLOCK": VERDICT_STYLE["BLOCK"], NOT_JUDGED: "bold"}


def _recorded(call: AuditedCall) -> str:
    if call.recorded == "database":
        return "ran (database)" if call.taken else "failed (database)"
    return RECORDED_WORDS.get(call.recorded, call.recorded)


def _agent_write(call: AuditedCall) -> bool:
    return call.agent_write


def _verdict(call: AuditedCall) -> str:
    category = call.category
    if category is None:
        if call.kind == "write" and not _agent_write(call):
            return "[dim]the customer's own (never gated)[/]"
        return f"[dim]{call.kind}[/]"
    if category == NOT_JUDGED:
        return f"[{CATEGORY_STYLE[category]}]NOT JUDGED[/]"
    shown = f"REVISE: {category}" if category in ("needs a read", "breaks a rule") else category
    return f"[{CATEGORY_STYLE[category]}]{shown}[/]"


def _operator(call: AuditedCall, decided: SessionDecision) -> str:
    """What the session's operator decided, for the call's first line; the verdict the session's gate gave when
    it is not the one shown (the rules may have changed since), from the decision's own event."""
    first = decided.decisions[0]
    said = verdict_words(first.gate_verdict, first.gate_refusal)
    shown = call.decision.verdict.value if call.decision is not None else None
    return decisions_words(decided) + (f" (the session's gate said {said})" if said and first.gate_verdict != shown
                                       else "")


def print_call(out: Console, call: AuditedCall, decided: SessionDecision | None = None) -> None:
    """One call as a block: position, tool, verdict, what the session's operator decided (a trace) and what the
    recording says became of it; then each objecting rule with its whole reason, the evidence, and how the
    database's result differs."""
    call = inert_view(call)  # a recording's text, printed: inert
    staled = f" (stale: {', '.join(call.staled)})" if call.staled else ""
    operator = f", {escape(_operator(call, decided))}; " if decided is not None else "  "
    out.print(f"{escape(call.where.short())}  [bold]{escape(call.call.name)}[/]  {_verdict(call)}{operator}"
              f"{escape(_recorded(call) + staled)}")
    decision = call.decision
    if call.needs_database:  # the gate's only objections are what a database read would supply
        print_detail(out, Text(f"not judged: {call.not_judged or ''}"))
    for result in decision.failed if decision is not None and not call.needs_database else ():
        print_detail(out, Text(f"{result.predicate_id}: {result.reason}"))
    said = customer_said(decision.results) if decision is not None else ""
    if said:  # the customer's yes and stated reason, quoted beside the verdict, never judged
        print_detail(out, Text(f"customer: {inert(said)}", "dim"))
    if decision is not None and decision.evidence:
        print_detail(out, Text(f"evidence: {', '.join(decision.evidence)}", "dim"))
    if call.problem:
        print_detail(out, Text(f"not judged: {call.problem}", "dim"))
    if call.difference:
        print_detail(out, Text.assemble(("differs from the database:", "yellow"), f" {call.difference}"))


def trace_decisions(path: Path, recording: Recording) -> dict[int, SessionDecision]:
    """A session trace's operator decisions by the line of the tool result they led to (the line an audited call
    of a trace is at); none for the other formats."""
    if recording.format != "trace":
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()  # numbered as core.recorded.formats numbers them
    return {d.result_at: d for d in session_decisions(lines) if d.result_at is not None}


@dataclass
class AuditReport:
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    rows: list[tuple[str, dict[str, int], int, int]] = field(default_factory=list)  # label, counts, differ, problems
    problems: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0

    def add(self, audit: ConversationAudit) -> None:
        counts = audit.counts()
        for key, value in counts.items():
            self.totals[key] += value
        self.rows.append((audit.label or "(the conversation)", counts, len(audit.differences), len(audit.problems)))
        self.problems += len(audit.problems)


def summary_table(report: AuditReport, *, database: bool) -> Table:
    """One row per conversation (when there are several) and the total: writes and their verdicts."""
    columns = ["conversation", "writes", *CATEGORIES, *(["differ from the database"] if database else []), "problems"]
    table = Table(box=None, title=f"{HYPOTHETICAL}, every write in its recorded context", title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")  # wrapped at words, never cut with an ellipsis
    rows = report.rows if len(report.rows) > 1 else []
    for label, counts, differ, problems in rows:
        table.add_row(escape(inert(label)), str(sum(counts.values())), *(str(counts[c]) for c in CATEGORIES),
                      *([str(differ)] if database else []), str(problems))
    differ_total = sum(r[2] for r in report.rows)
    table.add_row("total", str(sum(report.totals.values())), *(str(report.totals[c]) for c in CATEGORIES),
                  *([str(differ_total)] if database else []), str(report.problems), style="bold")
    return table


def summary_lines(report: AuditReport, *, database: bool) -> list[str]:
    """The summary table's rows as lines, for a terminal too narrow for its columns without splitting words."""
    rows = report.rows if len(report.rows) > 1 else []
    totals = ("total", report.totals, sum(r[2] for r in report.rows), report.problems)
    return [f"{inert(label)}: {sum(counts.values())} write(s): " + ", ".join(f"{counts[c]} {c}" for c in CATEGORIES)
            + (f"; {differ} differ from the database" if database else "") + f"; {problems} problem(s)"
            for label, counts, differ, problems in [*rows, totals]]


def print_summary(out: Console, report: AuditReport, *, database: bool) -> None:
    table = summary_table(report, database=database)
    if out.soft_wrap or fit_columns(out, table):  # piped: the table at its own width, however wide
        out.print(table)
        return
    out.print(Text(f"{HYPOTHETICAL}, every write in its recorded context"))
    for line in summary_lines(report, database=database):
        out.print(Text(line, "bold" if line.startswith("total: ") else ""))


async def _report(recording: Recording, audit: RecordedAudit, *, json_lines: bool, show_all: bool,
                  database: str | None, decided: dict[int, SessionDecision] | None = None) -> AuditReport:
    report = AuditReport()
    out = report_console()
    decided = decided or {}
    source = recording.source
    for problem in recording.problems:
        print_error(problem.at(source))
    report.problems += len(recording.problems)
    if not json_lines:
        where = f"; every call re-executed on {database}" if database else ""
        out.print(f"[bold]{escape(inert(source))}[/]: {FORMAT_WORDS[recording.format]}, {len(recording.conversations)} "
                  f"conversation(s), domain {audit.domain.name}{escape(where)}. Verdicts are {HYPOTHETICAL}: each "
                  "write judged in the context the recording gave it, then applied as recorded.")
    async for conversation in audit.run(recording):
        for problem in conversation.problems:
            print_error(problem.at(source))
        report.add(conversation)
        shown = [c for c in conversation.calls if show_all or _agent_write(c) or c.difference is not None]
        if json_lines:
            for call in shown:
                print(inert_json(printable(json.dumps(call.to_json(source), ensure_ascii=False, allow_nan=False))),
                      flush=True)
            continue
        if conversation.label and shown:
            out.print(f"[bold]{escape(inert(conversation.label))}[/]")
        for call in shown:
            print_call(out, call, decided.get(call.where.line) if call.where.line is not None else None)
    if not json_lines:
        print_summary(out, report, database=database is not None)
    return report


async def check_as_recorded(args: argparse.Namespace) -> int:
    """The `--as-recorded` form of `ledgeragent check` (see the module docstring)."""
    path = Path(args.trajectory)
    if not path.is_file():
        raise CliError(f"no such recording: {path}")
    if not is_gzip(path):  # a compressed recording is checked as the text it inflates to, by its reader
        check_text_file(path)
    try:
        recording = read_auditable(path)
    except RecordingError as exc:
        raise CliError(str(exc)) from None
    domain = recording_domain(recording, args.domain)
    decided = trace_decisions(path, recording)
    evidence = getattr(args, "evidence", None)
    if args.db is None and recording.results_recorded:
        if evidence == EvidenceMode.ASSIST.value:
            raise CliError("--evidence assist with --as-recorded needs --db: the gate reads what a write lacks from "
                           "a database, and the recording holds only the reads the agent made")
        return (await _report(recording, RecordedAudit(domain), json_lines=args.json, show_all=args.all,
                              database=None, decided=decided)).exit_code
    mode = EvidenceMode.choose(evidence)  # with a database to read from, the gate reads by default
    label = args.db or "the seed data (check lines record no results)"
    with claim_session_folder(args.out, domain.name, f"check-{path.stem}") as folder:
        backend = await open_backend(domain.name, folder.path / "db.sqlite", source=Path(args.db) if args.db else None)
        folder.started()
        try:
            report = await _report(recording, RecordedAudit(domain, backend, evidence=mode), json_lines=args.json,
                                   show_all=args.all, database=label, decided=decided)
        finally:
            await backend.close()
    return report.exit_code
