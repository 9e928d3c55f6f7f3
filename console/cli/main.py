"""`ledgeragent`: the operator console, and headless runs, trajectory checks, predicate and scenario lists.

The parser and the dispatch only: each sub-command is its own module here (`console`, `run`, `check`,
`predicates`, `scenarios`, `eval`, `supervise`, `audit`, `serve`, `mcp`), registered on one parser.

`ledgeragent mcp` is dispatched before the parser is built, to its own (`console.cli.mcp_options.main`): a
desktop client launches it for every chat and waits for its handshake, which must not wait for every other
command's options to be imported. The sub-commands are imported inside `build_parser` for the same reason."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ledgeragent-console")
    except PackageNotFoundError:
        return "unknown"


DESCRIPTION = "`ledgeragent`: the operator console, and headless runs, trajectory checks, predicate and scenario lists."


def build_parser() -> argparse.ArgumentParser:
    from console.cli import audit, check, predicates, run, scenarios
    from console.cli import console as console_command
    from console.cli.errors import OneLineParser
    from console.cli.eval_options import register as register_eval
    from console.cli.mcp_options import register as register_mcp
    from console.cli.serve import register as register_serve
    from console.cli.supervise_options import register as register_supervise

    parser = OneLineParser(prog="ledgeragent", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command")

    for module in (console_command, run, check, predicates, scenarios):
        module.register(sub)
    register_eval(sub)
    register_serve(sub)
    register_supervise(sub)
    audit.register(sub)
    register_mcp(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["mcp"]:
        from console.cli.mcp_options import main as mcp_main

        return mcp_main(argv)
    from console.cli.errors import run_handler

    parser = build_parser()
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["console", *argv]  # `ledgeragent` alone opens the console
    args = parser.parse_args(argv)
    handler: Any = args.handler
    return run_handler(handler, args, argv)


if __name__ == "__main__":
    sys.exit(main())
