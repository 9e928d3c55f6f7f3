"""`ledgeragent check FILE --as-recorded`: the audit of a recorded conversation, on the terminal or as JSON lines.

The judging is `core.recorded` (no UI); this module picks the domain and the database, prints each
conversation's writes as soon as it is audited (a file of many tau2 simulations is never held as one report),
then the summary table. Problems of the input go to stderr, one line each with its position; the exit status is
`check`'s: 2 when the file is unusable, 1 when a problem was reported, else 0 (verdicts are findings, not
failures).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.cli.check_report import check_text_file
from console.cli.errors import CliError, print_error
from console.runtime.lookup import recording_domain as recording_domain  # re-exported
from console.runtime.storage import claim_session_folder
from console.runtime.textview import VERDICT_STYLE
from core.conversation_rules import customer_said
from core.evidence import EvidenceMode
from core.recorded.audit import CATEGORIES, HYPOTHETICAL, AuditedCall, ConversationAudit, RecordedAudit
from core.recorded.formats import read_auditable
from core.recorded.model import FORMAT_WORDS, Recording, RecordingError
from core.strict_json import printable
from core.tools import Requestor
from mock_backends.registry import open_backend

RECORDED_WORDS = {"ok": "ran", "error": "ran: error", "not run": "not run", "no result": "no result",
                  "unreadable": "ran: unreadable result"}
CATEGORY_STYLE = {"ALLOW": VERDICT_STYLE["ALLOW"], "needs a read": "bold cyan",
                  "breaks a rule": VERDICT_STYLE["REVISE"], "BLOCK": VERDICT_STYLE["BLOCK"]}


def _recorded(call: AuditedCall) -> str:
    if call.recorded == "database":
        return "ran (database)" if call.taken else "failed (database)"
    return RECORDED_WORDS.get(call.recorded, call.recorded)


def _agent_write(call: AuditedCall) -> bool:
    return call.kind == "write" and call.call.requestor is Requestor.ASSISTANT


def _verdict(call: AuditedCall) -> str:
    category = call.category
    if category is None:
        if call.kind == "write" and not _agent_write(call):
            return "[dim]the customer's own (never gated)[/]"
        return "[dim]not judged[/]" if call.kind == "write" else f"[dim]{call.kind}[/]"
    shown = f"REVISE: {category}" if category in ("needs a read", "breaks a rule") else category
    return f"[{CATEGORY_STYLE[category]}]{shown}[/]"


def print_call(out: Console, call: AuditedCall) -> None:
    """One call as a block: position, tool, verdict and what the recording says became of it; then each objecting
    rule with its reason, the evidence, and how the database's result differs. Lines wrap at any width."""
    staled = f" (stale: {', '.join(call.staled)})" if call.staled else ""
    out.print(f"{escape(call.where.short())}  [bold]{escape(call.call.name)}[/]  {_verdict(call)}  "
              f"{escape(_recorded(call) + staled)}")
    decision = call.decision
    for result in decision.failed if decision is not None else ():
        out.print(f"    {escape(result.predicate_id)}: {escape(result.reason[:400])}")
    said = customer_said(decision.results) if decision is not None else ""
    if said:  # the customer's yes and stated reason, quoted beside the verdict, never judged
        out.print(f"    [dim]customer: {escape(said[:400])}[/]")
    if decision is not None and decision.evidence:
        out.print(f"    [dim]evidence: {escape(', '.join(decision.evidence))}[/]")
    if call.problem:
        out.print(f"    [dim]not judged: {escape(call.problem)}[/]")
    if call.difference:
        out.print(f"    [yellow]differs from the database:[/] {escape(call.difference)}")


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
    table = Table(*columns, box=None, title=f"{HYPOTHETICAL}, every write in its recorded context",
                  title_justify="left")
    rows = report.rows if len(report.rows) > 1 else []
    for label, counts, differ, problems in rows:
        table.add_row(escape(label), str(sum(counts.values())), *(str(counts[c]) for c in CATEGORIES),
                      *([str(differ)] if database else []), str(problems))
    differ_total = sum(r[2] for r in report.rows)
    table.add_row("total", str(sum(report.totals.values())), *(str(report.totals[c]) for c in CATEGORIES),
                  *([str(differ_total)] if database else []), str(report.problems), style="bold")
    return table


async def _report(recording: Recording, audit: RecordedAudit, *, json_lines: bool, show_all: bool,
                  database: str | None) -> AuditReport:
    report = AuditReport()
    out = Console(highlight=False, soft_wrap=True)
    source = recording.source
    for problem in recording.problems:
        print_error(problem.at(source))
    report.problems += len(recording.problems)
    if not json_lines:
        where = f"; every call re-executed on {database}" if database else ""
        out.print(f"[bold]{escape(source)}[/]: {FORMAT_WORDS[recording.format]}, {len(recording.conversations)} "
                  f"conversation(s), domain {audit.domain.name}{escape(where)}. Verdicts are {HYPOTHETICAL}: each "
                  "write judged in the context the recording gave it, then applied as recorded.")
    async for conversation in audit.run(recording):
        for problem in conversation.problems:
            print_error(problem.at(source))
        report.add(conversation)
        shown = [c for c in conversation.calls if show_all or _agent_write(c) or c.difference is not None]
        if json_lines:
            for call in shown:
                print(printable(json.dumps(call.to_json(source), ensure_ascii=False, allow_nan=False)), flush=True)
            continue
        if conversation.label and shown:
            out.print(f"[bold]{escape(conversation.label)}[/]")
        for call in shown:
            print_call(out, call)
    if not json_lines:
        out.print(summary_table(report, database=database is not None))
    return report


async def check_as_recorded(args: argparse.Namespace) -> int:
    """The `--as-recorded` form of `ledgeragent check` (see the module docstring)."""
    path = Path(args.trajectory)
    if not path.is_file():
        raise CliError(f"no such recording: {path}")
    check_text_file(path)
    try:
        recording = read_auditable(path)
    except RecordingError as exc:
        raise CliError(str(exc)) from None
    domain = recording_domain(recording, args.domain)
    evidence = getattr(args, "evidence", None)
    if args.db is None and recording.results_recorded:
        if evidence == EvidenceMode.ASSIST.value:
            raise CliError("--evidence assist with --as-recorded needs --db: the gate reads what a write lacks from "
                           "a database, and the recording holds only the reads the agent made")
        return (await _report(recording, RecordedAudit(domain), json_lines=args.json, show_all=args.all,
                              database=None)).exit_code
    mode = EvidenceMode.choose(evidence)  # with a database to read from, the gate reads by default
    label = args.db or "the seed data (check lines record no results)"
    with claim_session_folder(args.out, domain.name, f"check-{path.stem}") as folder:
        backend = await open_backend(domain.name, folder.path / "db.sqlite", source=Path(args.db) if args.db else None)
        folder.started()
        try:
            report = await _report(recording, RecordedAudit(domain, backend, evidence=mode), json_lines=args.json,
                                   show_all=args.all, database=label)
        finally:
            await backend.close()
    return report.exit_code
