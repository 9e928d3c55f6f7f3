"""`ledgeragent run`: play a scenario headless and print its transcript (or its events as JSON lines)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from rich.console import Console

from console.cli.errors import CliError, positive_int, print_error
from console.cli.model_options import add_model_arguments
from console.cli.options import _open_backend, _settings, add_evidence_argument, evidence_mode
from console.runtime.lookup import _domain, _scenario
from console.runtime.storage import claim_session_folder
from console.runtime.textview import TranscriptPrinter
from core.agent import AGENTS
from core.events import EventBus, GateDecided
from core.llm.base import ChatModel
from core.scenario import Scenario
from core.session import Session
from core.strict_json import inert_json
from domains.registry import DOMAINS, load_offline_reader

_err = print_error


def register(sub: Any) -> None:
    """Add this sub-command (with its handler) to the `ledgeragent` parser's subparsers."""
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


def _model(args: argparse.Namespace, scenario: Scenario) -> ChatModel:
    if args.model is None:
        return scenario.build_model(load_offline_reader(scenario.domain))
    return _settings(args).build(args.model, args.base_url)


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
                bus.subscribe(lambda event: print(inert_json(event.model_dump_json()), flush=True))
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
