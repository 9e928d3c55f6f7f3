"""What the CLI's sub-commands and the browser server share: the user-error type and printer, domain and
scenario lookup, and the console's options (one parser definition, so the browser's argv is built from it).

Split out of console/cli.py so console/serve.py no longer imports the CLI module (cli -> serve -> cli was an
import circle); console.cli re-exports every name for old callers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from console.cli_errors import CliError as CliError  # re-exported
from console.cli_errors import non_negative_float, print_error
from console.model_args import add_model_arguments
from core.domain import Domain
from core.evidence import EvidenceMode
from core.scenario import Scenario, ScenarioError, list_scenarios, load_scenario
from domains.registry import DOMAINS, UnknownDomain, load_domain

AGENT_NAMES = ("fc", "ledger", "ledger-no-gate")
DEMO_SCENARIO = "refund-to-original-payment"  # what `ledgeragent` alone opens (retail)


_err = print_error  # the one printer of user errors (console.cli_errors): one line, never a traceback


def _domain(name: str) -> Domain:
    try:
        return load_domain(name)
    except UnknownDomain as exc:
        raise CliError(str(exc.args[0])) from exc


def infer_domain(names: set[str]) -> Domain:
    """The one domain whose tools include every tool the trajectory calls; a clear error otherwise."""
    if not names:
        raise CliError("cannot tell the domain: the file holds no valid tool call; pass --domain")
    matches = [d for d in (load_domain(n) for n in DOMAINS) if names <= {t.name for t in d.tools}]
    if len(matches) != 1:
        which = "no domain has" if not matches else f"{', '.join(d.name for d in matches)} all have"
        raise CliError(f"cannot tell the domain: {which} the tools this file calls; pass --domain")
    return matches[0]


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


def first_scenario(domain: Domain) -> str | None:
    """The scenario a domain opens with when none is named: the retail demo, else its first in name order."""
    available = list(list_scenarios(domain.scenarios_dir))
    if DEMO_SCENARIO in available:
        return DEMO_SCENARIO
    return available[0] if available else None


EVIDENCE_MODES = ("assist", "ask")


def add_evidence_argument(parser: argparse._ActionsContainer, default: str | None, shown: str | None = None) -> None:
    """`--evidence assist|ask`: who makes the reads a write's rules lack (core.evidence). `default` None: the
    scenario's own mode if it names one, else assist (`shown` words the default when a command decides it
    otherwise)."""
    shown = shown or default or "assist, or the scenario's own"
    parser.add_argument("--evidence", choices=EVIDENCE_MODES, default=default,
                        help=f"assist: the gate reads missing or stale records itself before judging a write; ask: "
                             f"the model is told to read them (the paper's gate). Default: {shown}")


def evidence_mode(chosen: str | None, scenario: Scenario | None = None) -> EvidenceMode:
    """The mode a session runs in: the operator's choice, else the scenario's, else assist."""
    return EvidenceMode.choose(chosen, None if scenario is None else scenario.evidence)


def _add_console_arguments(parser: argparse.ArgumentParser) -> None:
    from console.live import SupervisionMode

    parser.add_argument("--domain", default="retail", choices=DOMAINS)
    parser.add_argument("--scenario", default=None,
                        help="scenario name (default: the domain's first), or 'chat' for free chat (needs --seat "
                        "customer and a real model)")
    parser.add_argument("--agent", choices=AGENT_NAMES, default="ledger")
    parser.add_argument("--model", help="a model name for an OpenAI-compatible endpoint (default: scripted demo)")
    parser.add_argument("--base-url", help="OpenAI-compatible base URL; the key comes from OPENAI_API_KEY")
    parser.add_argument("--seat", choices=("watch", "customer", "agent"), default="watch",
                        help="watch, play the customer, or play the agent")
    parser.add_argument("--mode", choices=[m.value for m in SupervisionMode], default="autopilot",
                        help="when the operator is asked about writes")
    parser.add_argument("--operator", default=_default_operator(), help="your name in the audit trail")
    parser.add_argument("--autostart", action="store_true", help="start the session right away")
    parser.add_argument("--db", help="start from this data: a tau2 db.json or a .sqlite file")
    parser.add_argument("--compare", action="store_true",
                        help="two sessions of the scenario side by side: the function-calling baseline and "
                        "LedgerAgent, the same customer lines, stepped together")
    add_evidence_argument(parser, None)
    parser.add_argument("--pace", type=non_negative_float,
                        help="seconds between steps (default 0.6 for the scripted demo, so an audience can follow; "
                        "0 for real models)")
    add_model_arguments(parser)


def _default_operator() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "operator"


