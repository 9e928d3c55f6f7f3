"""`ledgeragent predicates`: a domain's rules (id, tools, severity, the policy sentence each encodes), or with
`--coverage` each policy sentence with the predicates that encode it and the tests that exercise them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.runtime.lookup import _domain
from console.runtime.textview import VERDICT_STYLE
from domains.registry import DOMAINS


def register(sub: Any) -> None:
    """Add this sub-command (with its handler) to the `ledgeragent` parser's subparsers."""
    preds = sub.add_parser("predicates", help="list a domain's predicates")
    preds.add_argument("--domain", default="retail", choices=DOMAINS)
    preds.add_argument("--json", action="store_true")
    preds.add_argument("--coverage", action="store_true",
                       help="each policy sentence -> its predicates -> their tests; house rules and what no "
                            "predicate can check listed apart")
    preds.set_defaults(handler=cmd_predicates)


def cmd_predicates(args: argparse.Namespace) -> int:
    domain = _domain(args.domain)
    if args.coverage:
        from console.runtime.coverage import coverage, print_report

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
