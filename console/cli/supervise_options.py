"""`ledgeragent supervise`: its command line only (and the filters of a desk's audit log, which `ledgeragent audit`
prints: console.cli.audit).

Declared here, apart from the work (`console.cli.supervise`, imported when one of the two runs), so
`ledgeragent --help` and the console's cold start never import the desk, Textual screens or pydantic models
they do not use (as `console.cli.eval_options` does for `eval`).
"""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.errors import non_negative_float, positive_float, positive_int
from console.cli.model_options import add_model_arguments
from console.cli.options import AGENT_NAMES, _default_operator, add_evidence_argument

SUPERVISE_HELP = "supervise many live sessions from one desk: an approval inbox with the gate's evidence"
SUPERVISE_DESCRIPTION = """\
Start many sessions at once (each with its own folder, database copy and trace) and supervise them from one
desk: a sessions table and an approval inbox of every call that waits for a human, oldest first, with the
gate's verdict, failing rules and evidence. Every decision is written to the desk's audit log (JSONL) before
it takes effect; read it back with `ledgeragent audit FILE`."""
MODES = ("approve writes", "approve non-ALLOW", "step", "autopilot")
AUDIT_DECISIONS = ("approve", "accept_verdict", "veto", "edit", "force_allow", "step", "resume")
AUDIT_VERDICTS = ("ALLOW", "REVISE", "BLOCK", "None")
DEFAULT_MODE = "approve non-ALLOW"


def register(subparsers: Any) -> None:
    """Add `supervise` (with its handler) to an argparse subparsers object; `audit` is console.cli.audit's (a desk's
    audit log is one of its two forms, with the options declared here: AUDIT_DECISIONS, AUDIT_VERDICTS)."""
    sup: argparse.ArgumentParser = subparsers.add_parser(
        "supervise", help=SUPERVISE_HELP, description=SUPERVISE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_session_arguments(sup)
    sup.add_argument("--operator", default=_default_operator(), help="your name in the audit trail")
    sup.add_argument("--audit", metavar="PATH",
                     help="the desk's audit log (default: a new desk folder under the data dir, audit.jsonl)")
    add_model_arguments(sup)
    add_hosting_arguments(sup)
    sup.set_defaults(handler=_cmd_supervise)


def add_session_arguments(parser: argparse._ActionsContainer, *, serving: bool = False) -> None:
    """The desk's sessions and knobs, declared once: `supervise` and `serve --supervise` (which passes them on
    to `supervise --listen`, so both read them with this one declaration).

    `serving` is for `serve`, whose parser already has the console's `--agent`, `--pace`, `--model` and
    `--base-url` (same names, same meanings: not declared twice) and whose `--domain` and `--mode` these
    replace (its parser resolves the conflict): every default is then None, "not given", so that `serve`
    without `--supervise` keeps the console's defaults and refuses a desk-only option, and `serve --supervise`
    passes on only what was given (the host applies supervise's defaults, the ones in the help).
    """
    def default(value: object) -> object:
        return None if serving else value

    parser.add_argument("--domain", default=default("all"), metavar="all|DOMAIN",
                        help="a domain or 'all' (default: all" + ("; without --supervise: retail)" if serving else ")"))
    parser.add_argument("--scenarios", metavar="all|NAME,NAME",
                        help="the domain's scripted scenarios to run (default: all of them, unless --tasks is given); "
                             "with --domain all, a name is DOMAIN/NAME or one only one domain has")
    parser.add_argument("--tasks", metavar="all|ID,ID",
                        help="evaluation tasks to run as sessions (the domain's tasks file; with --domain all, every "
                             "domain's): the task's customer, starting data and, without --model, its offline agent")
    parser.add_argument("--user-model", metavar="NAME",
                        help="with --tasks: an LLM user simulator plays the customer (same endpoint as --model)")
    parser.add_argument("--error-profile", metavar="NAME",
                        help="with --tasks and the offline agent: simulated errors (`realistic`), the draw `eval` "
                             "makes for trial 0; the agent is named scripted-simulated-errors(NAME)")
    parser.add_argument("--repeat", type=positive_int, default=default(1), metavar="N",
                        help="run each session spec N times (default: 1)")
    parser.add_argument("--mode", choices=MODES, default=default(DEFAULT_MODE),
                        help=f"when a session asks the desk (default: {DEFAULT_MODE}"
                             + ("; without --supervise: autopilot)" if serving else ")"))
    parser.add_argument("--concurrency", type=positive_int, default=default(8), metavar="N",
                        help="sessions running at once (default: 8)")
    add_evidence_argument(parser, None)  # the console's own option too (serve): same name, same meaning
    if not serving:
        parser.add_argument("--agent", choices=AGENT_NAMES, default="ledger",
                            help="the agent of the scenario and task sessions (default: ledger)")
        parser.add_argument("--model", help="a model name on an OpenAI-compatible endpoint (default: the scripts)")
        parser.add_argument("--base-url", help="OpenAI-compatible base URL; the key comes from OPENAI_API_KEY")
        parser.add_argument("--pace", type=non_negative_float, default=0.0, metavar="S",
                            help="seconds between steps of each session (default: 0)")
    parser.add_argument("--specs", metavar="FILE",
                        help="JSON lines, one session spec per line (domain, scenario or task, agent, model, "
                             "base_url, user_model, mode, max_steps, db, disabled_predicates, pace, evidence), "
                             "instead of --domain/--scenarios/--tasks")
    parser.add_argument("--amber", type=non_negative_float, default=default(30.0), metavar="SECONDS",
                        help="a pending call turns amber after this long (default: 30)")
    parser.add_argument("--red", type=non_negative_float, default=default(120.0), metavar="SECONDS",
                        help="and red after this long (default: 120)")
    parser.add_argument("--claim-ttl", type=positive_float, default=default(60.0), metavar="SECONDS",
                        help="how long highlighting an inbox item keeps it yours (default: 60)")


def add_hosting_arguments(parser: argparse.ArgumentParser) -> None:
    """`--listen PATH` / `--connect PATH` (one or the other): the desk headless on a Unix socket, or joining
    one as another operator (console.runtime.desk.hosting does both)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--listen", metavar="PATH",
                       help="run the desk without a UI and serve it on this Unix socket (in a private folder) "
                            "until SIGTERM; operators join with --connect")
    group.add_argument("--connect", metavar="PATH",
                       help="open the desk served at this Unix socket (by --listen) as --operator (a desk that "
                            "knows its operators wants your token, in $LEDGERAGENT_DESK_TOKEN)")
    add_operator_arguments(parser)


def add_operator_arguments(parser: argparse._ActionsContainer, *, serving: bool = False) -> None:
    """`--operators NAME,NAME` / `--operators-file FILE` (one or the other): who a served desk's operators are,
    declared once for `supervise --listen` and `serve --supervise` (`serving`: a tab, not a connection, and the
    token in its address). Read by console.runtime.operators."""
    who = parser.add_mutually_exclusive_group()
    scope, whom, where = ("", "a tab", "its open: address") if serving else ("with --listen: ", "a connection",
                                                                            "on stderr")
    who.add_argument("--operators", metavar="NAME,NAME",
                     help=f"{scope}the desk's operators, each with a token of their own made now and printed once "
                          f"({where}); {whom} is the operator whose token it presents, never a name it states")
    who.add_argument("--operators-file", metavar="FILE",
                     help=f"{scope}the desk's operators as lines NAME HASH (sha256:<hex> or scrypt:…; "
                          "python -m console.runtime.operators NAME makes them)")


def _cmd_supervise(args: argparse.Namespace) -> int:
    from console.cli.supervise import cmd_supervise  # the desk and its screens: only when `supervise` runs

    return cmd_supervise(args)
