"""`ledgeragent mcp`: its command line, and its start (the work is `console.cli.mcp`, imported when `mcp` runs,
so `ledgeragent --help` and the console's cold start never import the MCP SDK).

`main` is how `ledgeragent mcp` starts (console.cli.main hands it the command line before building its own
parser): a desktop client launches the server for every chat and waits for the answer to its `initialize`, so
over stdio that answer is written first (`console.mcp.handshake`, which imports nothing heavy), and only then
is the rest imported: the MCP SDK, the domain, the session runtime. Nothing here imports more than argparse
and the domains' names.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from console.cli.arg_types import add_evidence_argument, positive_float, positive_int, tcp_port
from domains.registry import DOMAINS

HELP = "serve a domain's tools over the Model Context Protocol, every write behind the policy gate"
DESCRIPTION = """\
Put a domain behind the ledger and the policy gate for any MCP client (a desktop assistant, an IDE, an
OpenAI Agents SDK or LangGraph agent). Each client session is one LedgerAgent session with its own folder,
database copy, ledger, gate and trace: reads run and are kept in the ledger; writes are judged first (ALLOW
runs; REVISE and BLOCK come back as an error result with the gate's feedback). With --listen the sessions are
on a supervision desk that operators join with `ledgeragent supervise --connect SOCKET`; then --mode can hold
writes for a human. Over HTTP the server binds 127.0.0.1 and needs the token it prints once."""
MODES = ("autopilot", "approve writes", "approve non-ALLOW")
DEFAULT_DECISION_TIMEOUT = 120.0


def register(subparsers: Any) -> None:
    """Add the `mcp` subcommand (with its handler) to an argparse subparsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp", help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)


class _OneLineParser(argparse.ArgumentParser):
    """`console.cli.errors.OneLineParser`'s one-line usage error, without importing it unless there is one."""

    def error(self, message: str) -> NoReturn:
        from console.cli.errors import EXIT_BAD_INPUT, print_error, usage_error

        print_error(usage_error(self.prog, message))
        sys.exit(EXIT_BAD_INPUT)


def main(argv: Sequence[str]) -> int:
    """`ledgeragent mcp ...` (`argv` from "mcp" on): parsed, the stdio handshake answered early (module
    docstring), then run under the command line's error contract (`console.cli.errors.run_handler`)."""
    parser = _OneLineParser(prog="ledgeragent mcp", description=DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(list(argv[1:]))
    args.early = None
    problem = argument_problem(args)
    if problem is not None:  # before anything is read or answered
        from console.cli.errors import EXIT_BAD_INPUT, print_error

        print_error(problem)
        return EXIT_BAD_INPUT
    if args.transport == "stdio" and not args.listen and not args.audit:
        from console.mcp.handshake import answer_early

        args.early = answer_early(args.domain, max_line=args.max_request_bytes)
    from console.cli.errors import run_handler

    return run_handler(_cmd_mcp, args, list(argv))


def argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options taken together (one line), or None: checked before the server starts."""
    if args.mode != "autopilot" and not args.listen:
        return (f"--mode {args.mode!r} holds writes for an operator: add --listen SOCKET, so operators can decide "
                "them (ledgeragent supervise --connect SOCKET)")
    if args.audit and not args.listen:
        return "--audit is the desk's log: it needs --listen"
    if args.transport == "stdio" and (args.token or args.no_token or args.allow_origin):
        return "--token, --no-token and --allow-origin are for --transport http (stdio has no network)"
    if args.db and not os.path.exists(args.db):
        return f"no such database file: {args.db}"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--domain", required=True, choices=DOMAINS)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                        help="stdio (default: what a desktop client launches) or streamable HTTP")
    parser.add_argument("--db", help="every session starts from this data: a tau2 db.json or a .sqlite file "
                                     "(default: the shipped seed data)")
    parser.add_argument("--mode", choices=MODES, default="autopilot",
                        help="when a write waits for an operator (default: autopilot, never; the others need "
                             "--listen)")
    parser.add_argument("--decision-timeout", type=positive_float, default=DEFAULT_DECISION_TIMEOUT, metavar="S",
                        help="how long a held write waits for an operator before the client is told it was not "
                             f"decided, and it does not run (default: {DEFAULT_DECISION_TIMEOUT:g})")
    add_evidence_argument(parser, None)
    parser.add_argument("--ledger-in-results", action="store_true",
                        help="append the session's ledger to every tool result (it is always the resource "
                             "ledgeragent://ledger)")
    parser.add_argument("--listen", metavar="SOCKET",
                        help="serve the sessions' desk on this Unix socket (in a private folder): operators join "
                             "with `ledgeragent supervise --connect SOCKET --operator NAME`")
    parser.add_argument("--audit", metavar="PATH",
                        help="the desk's audit log (default with --listen: a new desk folder under the data dir)")
    http = parser.add_argument_group("streamable HTTP (--transport http)")
    http.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    http.add_argument("--port", type=tcp_port, default=8765, help="port (default: %(default)s; 0: any free one)")
    http.add_argument("--token", help="the access token clients send as `Authorization: Bearer` (default: "
                                      "$LEDGERAGENT_TOKEN, else a random one, printed once)")
    http.add_argument("--no-token", action="store_true", help="no access token (loopback only)")
    http.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                      help="also accept browser requests from this origin (scheme://host:port; repeatable)")
    http.add_argument("--max-sessions", type=positive_int, default=64, metavar="N",
                      help="client sessions open at once (default: %(default)s)")
    http.add_argument("--max-request-bytes", type=positive_int, default=1024 * 1024, metavar="N",
                      help="largest request body, also the longest stdio line (default: %(default)s)")
    http.add_argument("--rate", type=positive_float, default=100.0, metavar="N",
                      help="requests a second per client session (default: %(default)s)")
    http.add_argument("--idle-timeout", type=positive_float, default=1800.0, metavar="S",
                      help="a session with no request for this long ends (default: %(default)s)")
    http.add_argument("--max-sessions-per-client", type=positive_int, default=None, metavar="N",
                      help="sessions one client (its address and clientInfo name) may have open at once "
                           "(default: a quarter of --max-sessions)")
    http.add_argument("--reclaim-after", type=positive_float, default=60.0, metavar="S",
                      help="at --max-sessions (or a client's own cap) a new session takes the place of the one "
                           "idle the longest, if it has had no request for this long (default: %(default)s)")
    http.add_argument("--header-timeout", type=positive_float, default=10.0, metavar="S",
                      help="a request's head must arrive within this long, else 408 and the connection is "
                           "closed (default: %(default)s)")
    http.add_argument("--body-timeout", type=positive_float, default=30.0, metavar="S",
                      help="a request's body must arrive within this long after its head, else 408 (default: "
                           "%(default)s)")
    http.add_argument("--max-waiting-connections", type=positive_int, default=512, metavar="N",
                      help="connections that have not sent a request yet, at once: past it the oldest is "
                           "closed (default: %(default)s)")
    parser.set_defaults(handler=_cmd_mcp, early=None)


def _cmd_mcp(args: argparse.Namespace) -> int:
    from console.cli.errors import CliError

    problem = argument_problem(args)
    if problem is not None:
        raise CliError(problem)
    from console.cli.mcp import cmd_mcp  # the MCP SDK: only when `mcp` runs

    return cmd_mcp(args)
