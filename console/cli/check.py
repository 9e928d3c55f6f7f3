"""`ledgeragent check`: replay a trajectory of tool calls (or a session's own trace) through a fresh ledger,
gate and database; `--as-recorded` audits a recorded conversation instead (console.cli.recorded_report). The
report is printed by console.cli.check_report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from console.cli.check_report import check_text_file, run_check
from console.cli.errors import CliError
from console.cli.options import _open_backend, add_evidence_argument, evidence_mode
from console.cli.recorded_report import check_as_recorded
from console.runtime.lookup import _domain, infer_domain
from console.runtime.storage import claim_session_folder
from core.evidence import EvidenceMode
from core.replay import Checker, TrajectoryProblem, iter_session_calls, iter_trajectory
from core.trace import read_session_start
from domains.registry import DOMAINS


def register(sub: Any) -> None:
    """Add this sub-command (with its handler) to the `ledgeragent` parser's subparsers."""
    check = sub.add_parser("check", help="replay a trajectory of tool calls (or a session's trace.jsonl: the calls "
                                         "it recorded) through the ledger and gate")
    check.add_argument("trajectory")
    check.add_argument("--domain", choices=DOMAINS, help="default: a session trace's own domain, else the one "
                                                         "domain whose tools the file calls")
    check.add_argument("--db", help="a tau2 db.json or a .sqlite file (default: seed data)")
    check.add_argument("--json", action="store_true", help="one JSON object per call")
    check.add_argument("--all", action="store_true", help="also list successful reads")
    check.add_argument("--out", help="folder for the replay database")
    check.add_argument("--as-recorded", action="store_true",
                       help="audit a recorded conversation (a trace, a tau2 results file, a tau-bench results list, "
                       "OpenAI chat messages or check lines; gzipped or not): every write judged in its recorded "
                       "context, then applied as recorded")
    add_evidence_argument(check, None, "assist; a session trace: the mode its session ran in; with --as-recorded, "
                          "assist with --db and ask without (no database to read from)")
    check.set_defaults(handler=cmd_check)


def _tool_names(path: Path) -> set[str]:
    """The tool names a trajectory file calls, read line by line (bounded memory; broken lines are reported
    later, by the check itself)."""
    names: set[str] = set()
    with path.open("rb") as handle:
        for item in iter_trajectory(line.decode("utf-8") for line in handle):
            if not isinstance(item, TrajectoryProblem):
                names.add(item.name)
    return names


async def cmd_check(args: argparse.Namespace) -> int:
    if args.as_recorded:
        return await check_as_recorded(args)
    path = Path(args.trajectory)
    if not path.is_file():
        raise CliError(f"no such trajectory file: {path}")
    check_text_file(path)
    started = read_session_start(path)  # a session's own trace: its recorded calls, in its domain
    if started is not None:
        if args.domain and args.domain != started.domain:
            raise CliError(f"{path} is a session trace of the {started.domain} domain, not {args.domain} (leave "
                           "--domain out)")
        domain, calls = _domain(started.domain), iter_session_calls
        # the gate the session had, unless told otherwise: its calls were made with that gate's answers
        evidence = EvidenceMode(args.evidence or started.evidence)
    else:
        domain = _domain(args.domain) if args.domain else infer_domain(_tool_names(path))
        calls = iter_trajectory
        evidence = evidence_mode(args.evidence)
    with claim_session_folder(args.out, domain.name, f"check-{path.stem}") as folder:
        backend = await _open_backend(domain, folder.path / "db.sqlite", args.db)
        folder.started()
        try:
            checker = Checker(domain, backend, evidence=evidence)
            report = await run_check(path, checker, json_lines=args.json, show_all=args.all, calls=calls)
        finally:
            await backend.close()
    return report.exit_code
