"""`ledgeragent`: the operator console, and headless runs, trajectory checks, predicate and scenario lists."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.check_report import check_text_file, run_check
from console.cli_common import (  # noqa: F401 - re-exported: the old names stay importable from console.cli
    DEMO_SCENARIO,
    _add_console_arguments,
    _default_operator,
    _domain,
    _scenario,
    add_evidence_argument,
    evidence_mode,
    first_scenario,
    infer_domain,
)
from console.cli_errors import CliError as CliError  # re-exported: console.serve raises it
from console.cli_errors import OneLineParser, positive_int, print_error, run_handler
from console.eval_args import register as register_eval
from console.mcp_args import register as register_mcp
from console.model_args import add_model_arguments, model_settings
from console.recorded_report import check_as_recorded
from console.serve import register as register_serve
from console.storage import claim_session_folder
from console.supervise_args import register as register_supervise
from console.textview import VERDICT_STYLE, TranscriptPrinter
from core.agent import AgentConfig
from core.domain import Domain
from core.events import EventBus, GateDecided
from core.evidence import EvidenceMode
from core.llm.base import ChatModel
from core.llm.settings import ModelSettings
from core.replay import Checker, TrajectoryProblem, iter_session_calls, iter_trajectory
from core.scenario import Scenario, ScenarioError, list_scenarios, load_scenario
from core.session import Session
from core.trace import read_session_start
from domains.registry import DOMAINS, load_offline_reader
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import BackendSourceError, open_backend

AGENTS = {
    "ledger": AgentConfig(ledger=True, gate=True),
    "fc": AgentConfig(ledger=False, gate=False),
    "ledger-no-gate": AgentConfig(ledger=True, gate=False),
}


_err = print_error


async def _open_backend(domain: Domain, db_path: Path, source: str | None) -> SQLiteToolBackend:
    try:
        return await open_backend(domain.name, db_path, source=Path(source) if source else None)
    except BackendSourceError as exc:
        raise CliError(str(exc)) from exc


def _model(args: argparse.Namespace, scenario: Scenario) -> ChatModel:
    if args.model is None:
        return scenario.build_model(load_offline_reader(scenario.domain))
    return _settings(args).build(args.model, args.base_url)


def _settings(args: argparse.Namespace) -> ModelSettings:
    try:
        return model_settings(args)
    except ValueError as exc:
        raise CliError(str(exc)) from exc


async def cmd_run(args: argparse.Namespace) -> int:
    domain = _domain(args.domain)
    scenario = _scenario(domain, args.scenario)
    evidence = evidence_mode(args.evidence, scenario)
    config = replace(AGENTS[args.agent], evidence=evidence)
    if args.disable_predicate:
        known = {p.id for p in domain.predicates}
        unknown = sorted(set(args.disable_predicate) - known)
        if unknown:
            raise CliError(f"unknown predicate(s): {', '.join(unknown)}")
        config = replace(config, disabled_predicates=frozenset(args.disable_predicate))
    model = _model(args, scenario)  # before anything is opened: a bad model setting leaves nothing behind
    with claim_session_folder(args.out, domain.name, scenario.name) as claimed:
        folder = claimed.path
        backend = await _open_backend(domain, folder / "db.sqlite", args.db)
        try:
            bus = EventBus()
            session = Session(domain=domain, backend=backend, model=model, user=scenario.build_user(),
                              config=config, trace_path=folder / "trace.jsonl", bus=bus, scenario=scenario.name,
                              max_steps=args.max_steps)
            claimed.started()
            if args.json:
                bus.subscribe(lambda event: print(event.model_dump_json(), flush=True))
            else:
                bus.subscribe(TranscriptPrinter())
            result = await session.run()
        finally:
            await backend.close()
    verdicts = [e.verdict for e in bus.history if isinstance(e, GateDecided)]
    problems = []
    scripted_for = scenario.evidence or "assist"  # the verdicts a script expects hold in the mode it was written for
    if (scenario.expect.verdicts is not None and args.agent == "ledger" and evidence.value == scripted_for
            and verdicts != scenario.expect.verdicts):
        problems.append(f"expected gate verdicts {scenario.expect.verdicts}, got {verdicts}")
    if scenario.expect.end_reason is not None and result.reason != scenario.expect.end_reason:
        problems.append(f"expected the session to end with {scenario.expect.end_reason!r}, got {result.reason!r}")
    out = Console(stderr=args.json, highlight=False)
    out.print(f"[dim]trace: {folder / 'trace.jsonl'}   database: {folder / 'db.sqlite'}[/]")
    for problem in problems:
        _err(problem)
    return 1 if problems else 0


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


def cmd_predicates(args: argparse.Namespace) -> int:
    domain = _domain(args.domain)
    if args.coverage:
        from console.coverage import coverage, print_report

        print_report(coverage(domain), as_json=args.json)
        return 0
    if args.json:
        for p in domain.predicates:
            print(json.dumps({"id": p.id, "tools": sorted(p.tools), "severity": p.severity.value,
                              "policy": p.policy, "source": p.source, "location": p.location,
                              "enabled": not p.switched_off}))
        return 0
    table = Table("id", "tools", "severity", "policy", title=f"{domain.title}: {len(domain.predicates)} predicates")
    for p in domain.predicates:
        table.add_row(p.id, ", ".join(sorted(p.tools)), f"[{VERDICT_STYLE[p.severity.value]}]{p.severity.value}[/]",
                      escape(p.policy))
    Console(highlight=False).print(table)
    return 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    names = [args.domain] if args.domain else list(DOMAINS)
    table = Table("domain", "scenario", "title")
    for name in names:
        domain = _domain(name)
        for scenario_name, path in list_scenarios(domain.scenarios_dir).items():
            try:
                title = load_scenario(path).title
            except ScenarioError as exc:
                title = f"[red]{escape(str(exc))}[/]"
            table.add_row(name, scenario_name, title)
    Console(highlight=False).print(table)
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    from console.app import make_app
    from console.live import SessionSpec, SupervisionMode

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
    from console.compare_app import CompareConsole
    from console.compare_run import compare_problem
    from console.live import SessionSpec, SupervisionMode

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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ledgeragent-console")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="ledgeragent", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command")

    console = sub.add_parser("console", help="the operator console (the default command)")
    _add_console_arguments(console)
    console.set_defaults(handler=cmd_console)

    run = sub.add_parser("run", help="run a scenario and print the event stream")
    run.add_argument("--domain", default="retail", choices=DOMAINS)
    run.add_argument("--scenario", required=True, help="scenario name (see `ledgeragent scenarios`) or a .json path")
    run.add_argument("--headless", action="store_true", help=argparse.SUPPRESS)  # accepted: `run` is headless
    run.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    run.add_argument("--agent", choices=sorted(AGENTS), default="ledger")
    run.add_argument("--disable-predicate", action="append", default=[], metavar="ID")
    run.add_argument("--model", help="use a real model through an OpenAI-compatible endpoint instead of the script")
    run.add_argument("--base-url", help="OpenAI-compatible base URL (OpenAI, vLLM, Ollama, llama.cpp server)")
    add_model_arguments(run)
    run.add_argument("--max-steps", type=positive_int, default=60)
    run.add_argument("--db", help="start from this data: a tau2 db.json or a .sqlite file (default: seed data)")
    run.add_argument("--out", help="session folder (default: a new folder under the user data dir)")
    add_evidence_argument(run, None)
    run.set_defaults(handler=cmd_run)

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
                       help="audit a recorded conversation (a trace, a tau2 results file, OpenAI chat messages or "
                       "check lines): every write judged in its recorded context, then applied as recorded")
    add_evidence_argument(check, None, "assist; a session trace: the mode its session ran in; with --as-recorded, "
                          "assist with --db and ask without (no database to read from)")
    check.set_defaults(handler=cmd_check)

    preds = sub.add_parser("predicates", help="list a domain's predicates")
    preds.add_argument("--domain", default="retail", choices=DOMAINS)
    preds.add_argument("--json", action="store_true")
    preds.add_argument("--coverage", action="store_true",
                       help="each policy sentence -> its predicates -> their tests; house rules and what no "
                            "predicate can check listed apart")
    preds.set_defaults(handler=cmd_predicates)

    scen = sub.add_parser("scenarios", help="list the scripted scenarios")
    scen.add_argument("--domain", choices=DOMAINS)
    scen.set_defaults(handler=cmd_scenarios)

    register_eval(sub)
    register_serve(sub)
    register_supervise(sub)
    register_mcp(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["console", *argv]  # `ledgeragent` alone opens the console
    args = parser.parse_args(argv)
    handler: Any = args.handler
    return run_handler(handler, args, argv)


if __name__ == "__main__":
    sys.exit(main())
