"""`ledgeragent console` (and `ledgeragent` alone): the operator console, or with `--compare` the baseline and
LedgerAgent side by side. The Textual apps are imported here, when the console opens, never at start-up."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from console.cli.errors import CliError
from console.cli.options import _add_console_arguments, _settings
from console.runtime.lookup import _domain, _scenario, first_scenario


def register(sub: Any) -> None:
    """Add this sub-command (with its handler) to the `ledgeragent` parser's subparsers."""
    console = sub.add_parser("console", help="the operator console (the default command)")
    _add_console_arguments(console)
    console.set_defaults(handler=cmd_console)


def cmd_console(args: argparse.Namespace) -> int:
    from console.runtime.live import SessionSpec, SupervisionMode
    from console.tui.app import make_app

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
    spec = SessionSpec(domain=domain.name, scenario=scenario, agent=args.agent, model=model, base_url=args.base_url,
                       seat=seat, mode=SupervisionMode(args.mode), db=Path(args.db) if args.db else None,
                       evidence=args.evidence)
    problems = spec.problems()
    if problems:
        raise CliError("; ".join(problems))
    app = make_app(domain.name, scenario, agent=args.agent, model=model, base_url=args.base_url, seat=seat,
                   mode=SupervisionMode(args.mode), operator=args.operator, autostart=args.autostart,
                   db=spec.db, pace=args.pace if args.pace is not None else (0.6 if model == "scripted" else 0.0),
                   evidence=args.evidence)
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
