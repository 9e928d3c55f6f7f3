"""`ledgeragent scenarios`: the scripted scenarios of one domain or of all."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.runtime.lookup import _domain
from core.scenario import ScenarioError, list_scenarios, load_scenario
from domains.registry import DOMAINS


def register(sub: Any) -> None:
    """Add this sub-command (with its handler) to the `ledgeragent` parser's subparsers."""
    scen = sub.add_parser("scenarios", help="list the scripted scenarios")
    scen.add_argument("--domain", choices=DOMAINS)
    scen.set_defaults(handler=cmd_scenarios)


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
