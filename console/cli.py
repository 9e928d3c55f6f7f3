"""`ledgeragent`: the operator console, and headless runs, trajectory checks, predicate and scenario lists."""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.eval_cli import register as register_eval
from console.model_args import add_model_arguments, model_settings
from console.serve import register as register_serve
from console.storage import new_session_dir
from console.textview import VERDICT_STYLE, TranscriptPrinter
from core.agent import AgentConfig
from core.domain import Domain
from core.events import EventBus, GateDecided
from core.llm.base import ChatModel
from core.llm.settings import ModelSettings
from core.replay import Checker, parse_trajectory
from core.scenario import Scenario, ScenarioError, list_scenarios, load_scenario
from core.session import Session
from domains.registry import DOMAINS, UnknownDomain, load_domain
from mock_backends.registry import BackendSourceError, open_backend

AGENTS = {
    "ledger": AgentConfig(ledger=True, gate=True),
    "fc": AgentConfig(ledger=False, gate=False),
    "ledger-no-gate": AgentConfig(ledger=True, gate=False),
}


class CliError(Exception):
    """A problem with the user's input: printed on stderr without a traceback, exit status 2."""


def _err(message: str) -> None:
    Console(stderr=True, highlight=False).print(f"[bold red]error:[/] {escape(message)}")


def _domain(name: str) -> Domain:
    try:
        return load_domain(name)
    except UnknownDomain as exc:
        raise CliError(str(exc.args[0])) from exc


def _scenario(domain: Domain, name: str) -> Scenario:
    available = list_scenarios(domain.scenarios_dir)
    path = Path(name)
    if path.suffix == ".json" and path.exists():
        chosen = path
    elif name in available:
        chosen = available[name]
    else:
        raise CliError(f"unknown scenario {name!r} for {domain.name}; available: {', '.join(available) or 'none'}")
    try:
        scenario = load_scenario(chosen)
    except ScenarioError as exc:
        raise CliError(str(exc)) from exc
    if scenario.domain != domain.name:
        raise CliError(f"scenario {scenario.name!r} is for domain {scenario.domain!r}, not {domain.name!r}")
    return scenario


def _model(args: argparse.Namespace, scenario: Scenario) -> ChatModel:
    if args.model is None:
        return scenario.build_model()
    return _settings(args).build(args.model, args.base_url)


def _settings(args: argparse.Namespace) -> ModelSettings:
    try:
        return model_settings(args)
    except ValueError as exc:
        raise CliError(str(exc)) from exc


async def cmd_run(args: argparse.Namespace) -> int:
    if not args.headless:
        raise CliError("`run` is the headless runner: pass --headless (or use `ledgeragent console` for the UI)")
    domain = _domain(args.domain)
    scenario = _scenario(domain, args.scenario)
    config = AGENTS[args.agent]
    if args.disable_predicate:
        known = {p.id for p in domain.predicates}
        unknown = sorted(set(args.disable_predicate) - known)
        if unknown:
            raise CliError(f"unknown predicate(s): {', '.join(unknown)}")
        config = AgentConfig(ledger=config.ledger, gate=config.gate,
                             disabled_predicates=frozenset(args.disable_predicate))
    folder = Path(args.out) if args.out else new_session_dir(domain.name, scenario.name)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        backend = await open_backend(domain.name, folder / "db.sqlite", source=Path(args.db) if args.db else None)
    except BackendSourceError as exc:
        raise CliError(str(exc)) from exc
    bus = EventBus()
    session = Session(domain=domain, backend=backend, model=_model(args, scenario), user=scenario.build_user(),
                      config=config, trace_path=folder / "trace.jsonl", bus=bus, scenario=scenario.name,
                      max_steps=args.max_steps)
    if args.json:
        bus.subscribe(lambda event: print(event.model_dump_json(), flush=True))
    else:
        bus.subscribe(TranscriptPrinter())
    try:
        result = await session.run()
    finally:
        await backend.close()
    verdicts = [e.verdict for e in bus.history if isinstance(e, GateDecided)]
    problems = []
    if scenario.expect.verdicts is not None and args.agent == "ledger" and verdicts != scenario.expect.verdicts:
        problems.append(f"expected gate verdicts {scenario.expect.verdicts}, got {verdicts}")
    if scenario.expect.end_reason is not None and result.reason != scenario.expect.end_reason:
        problems.append(f"expected the session to end with {scenario.expect.end_reason!r}, got {result.reason!r}")
    out = Console(stderr=args.json, highlight=False)
    out.print(f"[dim]trace: {folder / 'trace.jsonl'}   database: {folder / 'db.sqlite'}[/]")
    for problem in problems:
        _err(problem)
    return 1 if problems else 0


async def cmd_check(args: argparse.Namespace) -> int:
    domain = _domain(args.domain)
    path = Path(args.trajectory)
    if not path.is_file():
        raise CliError(f"no such trajectory file: {path}")
    trajectory = parse_trajectory(path.read_text(encoding="utf-8"))
    for problem in trajectory.problems:
        _err(f"{path}:{problem.line}: {problem.message} (line skipped)")
    folder = Path(args.out) if args.out else new_session_dir(domain.name, f"check-{path.stem}")
    try:
        backend = await open_backend(domain.name, folder / "db.sqlite", source=Path(args.db) if args.db else None)
    except BackendSourceError as exc:
        raise CliError(str(exc)) from exc
    try:
        checker = Checker(domain, backend)
        results = []
        table = Table("#", "line", "tool", "kind", "verdict", "rules", "reason", "expect", box=None)
        for call in trajectory.calls:
            result = await checker.check(call)
            results.append(result)
            if args.json:
                print(json.dumps(result.to_json(), ensure_ascii=False), flush=True)
            elif result.kind == "write" or result.verdict != "ALLOW" or args.all:
                met = "" if result.met is None else ("[green]✓[/]" if result.met else f"[red]✗ {result.expect}[/]")
                style = VERDICT_STYLE.get(result.verdict, "")
                table.add_row(str(result.index), str(result.line), result.name, result.kind,
                              f"[{style}]{result.verdict}[/]", escape(", ".join(result.predicates)),
                              escape(result.reason[:300]), met)
    finally:
        await backend.close()
    failed = [r for r in results if r.met is False]
    if not args.json:
        console = Console(highlight=False)
        console.print(table)
        writes = [r for r in results if r.kind == "write"]
        console.print(f"{len(results)} calls, {len(writes)} writes: "
                      + ", ".join(f"{v} {sum(r.verdict == v for r in writes)}" for v in VERDICT_STYLE)
                      + f"; {len(failed)} expectation(s) failed, {len(trajectory.problems)} broken line(s)")
    for r in failed:
        _err(f"{path}:{r.line}: {r.name} expected {r.expect}, got {r.verdict} {r.reason}")
    return 1 if failed or trajectory.problems else 0


def cmd_predicates(args: argparse.Namespace) -> int:
    domain = _domain(args.domain)
    if args.json:
        for p in domain.predicates:
            print(json.dumps({"id": p.id, "tools": sorted(p.tools), "severity": p.severity.value,
                              "policy": p.policy, "source": p.source}))
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
    if scenario is not None:
        scenario = _scenario(domain, scenario).name
    model = "operator" if args.seat == "agent" else (args.model or "scripted")
    seat = "watch" if args.seat == "agent" else args.seat
    spec = SessionSpec(domain=domain.name, scenario=scenario, agent=args.agent, model=model, base_url=args.base_url,
                       seat=seat, mode=SupervisionMode(args.mode), db=Path(args.db) if args.db else None)
    problems = spec.problems()
    if problems:
        raise CliError("; ".join(problems))
    app = make_app(domain.name, scenario, agent=args.agent, model=model, base_url=args.base_url, seat=seat,
                   mode=SupervisionMode(args.mode), operator=args.operator, autostart=args.autostart,
                   db=spec.db, pace=args.pace if args.pace is not None else (0.6 if model == "scripted" else 0.0))
    settings = _settings(args)
    app.model_factory = lambda chosen: settings.build(chosen.model, chosen.base_url)  # also for sessions started later
    app.run()
    return 0


def _add_console_arguments(parser: argparse.ArgumentParser) -> None:
    from console.live import SupervisionMode

    parser.add_argument("--domain", default="retail", choices=DOMAINS)
    parser.add_argument("--scenario", default="refund-to-original-payment",
                        help="scenario name, or 'chat' for free chat (needs --seat customer and a real model)")
    parser.add_argument("--agent", choices=sorted(AGENTS), default="ledger")
    parser.add_argument("--model", help="a model name for an OpenAI-compatible endpoint (default: scripted demo)")
    parser.add_argument("--base-url", help="OpenAI-compatible base URL; the key comes from OPENAI_API_KEY")
    parser.add_argument("--seat", choices=("watch", "customer", "agent"), default="watch",
                        help="watch, play the customer, or play the agent")
    parser.add_argument("--mode", choices=[m.value for m in SupervisionMode], default="autopilot",
                        help="when the operator is asked about writes")
    parser.add_argument("--operator", default=_default_operator(), help="your name in the audit trail")
    parser.add_argument("--autostart", action="store_true", help="start the session right away")
    parser.add_argument("--db", help="start from this data: a tau2 db.json or a .sqlite file")
    parser.add_argument("--pace", type=float, help="seconds between steps (default 0.6 for the scripted demo, so "
                        "an audience can follow; 0 for real models)")
    add_model_arguments(parser)


def _default_operator() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "operator"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ledgeragent", description=__doc__)
    sub = parser.add_subparsers(dest="command")

    console = sub.add_parser("console", help="the operator console (the default command)")
    _add_console_arguments(console)
    console.set_defaults(handler=cmd_console)

    run = sub.add_parser("run", help="run a scenario and print the event stream")
    run.add_argument("--domain", default="retail", choices=DOMAINS)
    run.add_argument("--scenario", required=True, help="scenario name (see `ledgeragent scenarios`) or a .json path")
    run.add_argument("--headless", action="store_true", help="no UI: print the transcript")
    run.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    run.add_argument("--agent", choices=sorted(AGENTS), default="ledger")
    run.add_argument("--disable-predicate", action="append", default=[], metavar="ID")
    run.add_argument("--model", help="use a real model through an OpenAI-compatible endpoint instead of the script")
    run.add_argument("--base-url", help="OpenAI-compatible base URL (OpenAI, vLLM, Ollama, llama.cpp server)")
    add_model_arguments(run)
    run.add_argument("--max-steps", type=int, default=60)
    run.add_argument("--db", help="start from this data: a tau2 db.json or a .sqlite file (default: seed data)")
    run.add_argument("--out", help="session folder (default: a new folder under the user data dir)")
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="replay a trajectory of tool calls through the ledger and gate")
    check.add_argument("trajectory")
    check.add_argument("--domain", default="retail", choices=DOMAINS)
    check.add_argument("--db", help="a tau2 db.json or a .sqlite file (default: seed data)")
    check.add_argument("--json", action="store_true", help="one JSON object per call")
    check.add_argument("--all", action="store_true", help="also list successful reads")
    check.add_argument("--out", help="folder for the replay database")
    check.set_defaults(handler=cmd_check)

    preds = sub.add_parser("predicates", help="list a domain's predicates")
    preds.add_argument("--domain", default="retail", choices=DOMAINS)
    preds.add_argument("--json", action="store_true")
    preds.set_defaults(handler=cmd_predicates)

    scen = sub.add_parser("scenarios", help="list the scripted scenarios")
    scen.add_argument("--domain", choices=DOMAINS)
    scen.set_defaults(handler=cmd_scenarios)

    register_eval(sub)
    register_serve(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["console", *argv]  # `ledgeragent` alone opens the console
    args = parser.parse_args(argv)
    handler: Any = args.handler
    try:
        if inspect.iscoroutinefunction(handler):
            return int(asyncio.run(handler(args)))
        return int(handler(args))
    except CliError as exc:
        _err(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
