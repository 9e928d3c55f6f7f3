"""What the CLI's sub-commands share: the console's options (one parser definition, so the browser's argv is
built from it), the evidence option, the default operator name. Domain and scenario lookup is
console.runtime.lookup (the screens use it too)."""

from __future__ import annotations

import argparse
from pathlib import Path

from console.cli.arg_types import EVIDENCE_MODES as EVIDENCE_MODES  # re-exported: declared in a module
from console.cli.arg_types import add_evidence_argument as add_evidence_argument  # that imports nothing else
from console.cli.errors import CliError as CliError  # re-exported
from console.cli.errors import non_negative_float, print_error
from console.cli.model_options import add_model_arguments, model_settings
from core.agent import AGENTS
from core.domain import Domain
from core.evidence import EvidenceMode
from core.llm.settings import ModelSettings
from core.scenario import Scenario
from domains.registry import DOMAINS
from mock_backends.base import SQLiteToolBackend
from mock_backends.registry import BackendSourceError, open_backend

AGENT_NAMES = tuple(sorted(AGENTS))


_err = print_error  # the one printer of user errors (console.cli.errors): one line, never a traceback


def evidence_mode(chosen: str | None, scenario: Scenario | None = None) -> EvidenceMode:
    """The mode a session runs in: the operator's choice, else the scenario's, else assist."""
    return EvidenceMode.choose(chosen, None if scenario is None else scenario.evidence)


def _add_console_arguments(parser: argparse.ArgumentParser) -> None:
    from console.runtime.live import SupervisionMode

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


async def _open_backend(domain: Domain, db_path: Path, source: str | None) -> SQLiteToolBackend:
    try:
        return await open_backend(domain.name, db_path, source=Path(source) if source else None)
    except BackendSourceError as exc:
        raise CliError(str(exc)) from exc


def _settings(args: argparse.Namespace) -> ModelSettings:
    try:
        return model_settings(args)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
