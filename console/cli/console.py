"""`ledgeragent console` (and `ledgeragent` alone): the operator console, or with `--compare` the baseline and
LedgerAgent side by side, or with `--recorded FILE [--at C:I]` a recording's audit opened at a write.
The Textual apps are imported here, when the console opens, never at start-up."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.cli.errors import CliError
from console.cli.options import _add_console_arguments, _settings
from console.runtime.lookup import _domain, _scenario, first_scenario

if TYPE_CHECKING:
    from console.tui.app import RecordedRequest


def register(sub: Any) -> None:
    """Add this sub-command (with its handler) to the `ledgeragent` parser's subparsers."""
    console = sub.add_parser("console", help="the operator console (the default command)")
    _add_console_arguments(console)
    # The console's own, not in `_add_console_arguments` (which `serve` shares): a browser never names a file.
    console.add_argument("--recorded", metavar="FILE",
                         help="open a recorded conversation (any format `check --as-recorded` reads) as the audit of "
                              "what the gate would have said; with --db, every call re-executed on that database")
    console.add_argument("--at", metavar="CONVERSATION:CALL",
                         help="with --recorded: open the conversation at that write (indexes from 0, as `ledgeragent "
                              "audit`'s report gives them)")
    console.set_defaults(handler=cmd_console)


def _recorded(args: argparse.Namespace) -> RecordedRequest | None:
    """`--recorded FILE [--db DB] [--at C:I]` checked (one line and exit 2 for a missing file or a bad --at)."""
    from console.runtime.audit_replay import parse_at
    from console.tui.app import RecordedRequest

    if args.recorded is None:
        if args.at is not None:
            raise CliError("--at names a write of a recording: give the file with --recorded FILE")
        return None
    if getattr(args, "compare", False):
        raise CliError("--recorded opens a recording, --compare runs two live sessions: choose one")
    path = Path(args.recorded)
    if not path.is_file():
        raise CliError(f"no such recording: {path}")
    database = Path(args.db) if args.db else None
    if database is not None and not database.exists():
        raise CliError(f"no such database file: {database}")
    from console.tui.screens.recorded import check_at

    try:
        at = None if args.at is None else parse_at(args.at)
        if at is not None:
            check_at(path, at)  # a conversation or call the file does not have: one line, before the console opens
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return RecordedRequest(path, database, at)


def cmd_console(args: argparse.Namespace) -> int:
    from console.runtime.live import SessionSpec, SupervisionMode
    from console.tui.app import make_app

    recorded = _recorded(args)
    domain = _domain(args.domain)
    scenario = None if args.scenario in ("", "none", "chat") else args.scenario
    if args.scenario is None:  # a domain alone opens its first scenario
        scenario = first_scenario(domain)
    if scenario is not None:
        scenario = _scenario(domain, scenario).name
    if getattr(args, "compare", False):
        return _compare(args, domain.name, scenario)
    model = "operator" if args.seat == "agent" else (args.model or "scripted")
    seat = "watch" if args.seat == "agent" else args.seat
    live_db = Path(args.db) if args.db and recorded is None else None  # with --recorded, --db is the audit's
    spec = SessionSpec(domain=domain.name, scenario=scenario, agent=args.agent, model=model, base_url=args.base_url,
                       seat=seat, mode=SupervisionMode(args.mode), db=live_db, evidence=args.evidence)
    problems = spec.problems()
    if problems:
        raise CliError("; ".join(problems))
    app = make_app(domain.name, scenario, agent=args.agent, model=model, base_url=args.base_url, seat=seat,
                   mode=SupervisionMode(args.mode), operator=args.operator, autostart=args.autostart,
                   db=spec.db, pace=args.pace if args.pace is not None else (0.6 if model == "scripted" else 0.0),
                   evidence=args.evidence, recorded=recorded)
    settings = _settings(args)
    app.model_factory = lambda chosen: settings.build(chosen.model, chosen.base_url)  # also for sessions started later
    app.run()
    return app.return_code or 0  # 1 after a crash (Textual printed the traceback), not a clean 0


def _compare(args: argparse.Namespace, domain: str, scenario: str | None) -> int:
    from console.runtime.compare_run import compare_problem
    from console.runtime.live import SessionSpec, SupervisionMode
    from console.tui.compare_app import CompareConsole

    problem = compare_problem(seat=args.seat, agent=args.agent, mode=args.mode, scenario=scenario)
    if problem is not None:
        raise CliError(problem)
    model = args.model or "scripted"
    spec = SessionSpec(domain=domain, scenario=scenario, model=model, base_url=args.base_url,
                       mode=SupervisionMode.AUTOPILOT, db=Path(args.db) if args.db else None,
                       pace=args.pace if args.pace is not None else (0.6 if model == "scripted" else 0.0))
    problems = spec.problems()
    if problems:
        raise CliError("; ".join(problems))
    settings = _settings(args)
    app = CompareConsole(spec, operator=args.operator, autostart=args.autostart,
                         model_factory=lambda chosen: settings.build(chosen.model, chosen.base_url))
    app.run()
    return app.return_code or 0
