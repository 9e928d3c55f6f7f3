"""A desk with no UI served on a socket, and the way in to one: what `--listen` / `--connect` run.

`ledgeragent supervise --listen PATH` runs the desk headless (`host_until_stopped`): it serves the socket,
prints one line saying where, runs every session to its end, then keeps serving (operators may still read
the trace and audit) until SIGTERM or Ctrl+C. `ledgeragent supervise --connect PATH --operator NAME` opens
the desk screens on a `RemoteDesk` (`connect`). `ledgeragent serve --supervise` starts the first as a
child process (`python -m console.desk.hosting listen …`) and each browser tab runs the second.

The `supervise` command's own option module belongs to the desk's terminal screens; until it is merged,
`main` here carries the few session options a served desk needs (a domain's scenarios under a supervision
mode), so the host child has a command line of its own. Every failure is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from console.cli_errors import CliError, OneLineParser, positive_int, run_handler
from console.desk.desk import Desk, check_operator
from console.desk.remote import DeskHost, RemoteDesk, SocketPathError, check_socket_path
from console.desk.view import DeskRefused
from console.live import SessionSpec, SupervisionMode

ASKING_MODES = tuple(m.value for m in SupervisionMode if m is not SupervisionMode.AUTOPILOT)


async def host_until_stopped(desk: Desk, path: Path, *, announce: Callable[[str], None] | None = None,
                             log: Callable[[str], None] | None = None, stop: asyncio.Event | None = None) -> int:
    """Serve `desk` at `path`, run its sessions, keep serving after they ended, until `stop` (SIGTERM/SIGINT).

    `announce` gets exactly one line, once the socket accepts connections: "desk: N session(s) at PATH".
    Stopping before the sessions ended ends them (their traces say desk_closed). Raises CliError (one line)
    when the socket cannot be served.
    """
    out = announce or (lambda line: print(line, flush=True))
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
    try:
        host = DeskHost(desk, path, log=log)
        await host.start()
    except SocketPathError as exc:
        for signum in handled:
            loop.remove_signal_handler(signum)
        await desk.close()
        raise CliError(str(exc)) from None
    try:
        out(f"desk: {len(desk.sessions)} session(s) at {host.path}")
        runner = asyncio.create_task(desk.run(), name="desk run")
        await stop.wait()
        if not runner.done():
            await desk.close()
        with contextlib.suppress(BaseException):
            await runner
    finally:
        await host.close()
        await desk.close()
        for signum in handled:
            loop.remove_signal_handler(signum)
    return 0


def run_hosting(args: argparse.Namespace, build_desk: Callable[[], Desk] | None = None,
                screens: Callable[[RemoteDesk], Awaitable[int]] | None = None) -> int | None:
    """The `--listen` / `--connect` branch of `ledgeragent supervise`; None when neither option was given.

    `build_desk` makes the desk from the command's own session options (for `--listen`); `screens` runs the
    desk screens on the `RemoteDesk` (for `--connect`, as `args.operator`; default `open_screens`) and returns
    the exit status. Failures are CliError (one line, exit 2, via `run_handler`).
    """
    if getattr(args, "listen", None):
        if build_desk is None:
            raise CliError("--listen needs the desk's sessions")
        path = Path(args.listen)
        make = build_desk

        async def serve() -> int:
            return await host_until_stopped(make(), path, log=lambda line: print(line, file=sys.stderr,
                                                                                      flush=True))

        return asyncio.run(serve())
    if getattr(args, "connect", None):
        target = args.connect
        show = screens or open_screens

        async def join() -> int:
            remote = await connect(target, args.operator)
            try:
                return await show(remote)
            finally:
                await remote.close()

        return asyncio.run(join())
    return None


async def connect(path: Path | str, operator: str, *, timeout: float = 10.0) -> RemoteDesk:
    """A `RemoteDesk` on the desk at `path` as `operator`; CliError (one line) when there is none there."""
    try:
        name = check_operator(operator)
        target = check_socket_path(Path(path))
        return await RemoteDesk.connect(target, name, timeout=timeout)
    except (DeskRefused, SocketPathError) as exc:
        raise CliError(str(exc)) from None


# ------------------------------------------------------------------------------------ command line (interim)


def scenario_specs(domain: str, scenarios: Sequence[str], mode: SupervisionMode, agent: str) -> list[SessionSpec]:
    """One session per scenario of `domain` ("all" or none given: every one, in name order), as `supervise`
    builds them. CliError (one line) for an unknown domain or scenario."""
    from console.desk_specs import scenario_specs as supervise_specs

    names = "all" if list(scenarios) in ([], ["all"]) else ",".join(scenarios)
    specs = [replace(spec, agent=agent) for spec in supervise_specs(domain, names, mode)]
    if not specs:
        raise CliError(f"domain {domain} has no scenarios to supervise")
    return specs


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """The served desk's sessions: a domain's scenarios under a mode that asks a human, and the desk's knobs."""
    from console.cli_common import AGENT_NAMES
    from domains.registry import DOMAINS

    parser.add_argument("--domain", default="retail", choices=DOMAINS)
    parser.add_argument("--scenarios", default="all", metavar="all|NAME,NAME",
                        help="the domain's scenarios to run (default: all), as `supervise --scenarios`")
    parser.add_argument("--agent", choices=AGENT_NAMES, default="ledger")
    parser.add_argument("--mode", choices=ASKING_MODES, default=SupervisionMode.APPROVE_WRITES.value,
                        help="which calls wait for an operator (default: %(default)s)")
    parser.add_argument("--concurrency", type=positive_int, default=8, help="sessions running at once")
    parser.add_argument("--audit", metavar="PATH", help="the desk's audit log (default: under the data dir)")


def _listen(args: argparse.Namespace) -> int:
    from console.storage import data_root

    names = [] if args.scenarios == "all" else [n.strip() for n in args.scenarios.split(",") if n.strip()]
    specs = scenario_specs(args.domain, names, SupervisionMode(args.mode), args.agent)
    root = data_root()
    audit = Path(args.audit) if args.audit else \
        root / "desk" / f"audit-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.jsonl"
    try:
        audit.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the audit log's folder {audit.parent}: {exc.strerror or exc}") from None

    args.listen = args.path
    status = run_hosting(args, lambda: Desk(specs, concurrency=args.concurrency, root=root, audit_path=audit))
    assert status is not None
    return status


def _connect(args: argparse.Namespace) -> int:
    args.connect = args.path
    status = run_hosting(args)
    assert status is not None
    return status


async def open_screens(remote: RemoteDesk) -> int:
    """The desk screens on `remote`: `console.desk_app.SupervisorApp` with no lifecycle (the host owns the
    sessions; this operator only decides). Looked up by name: the screens come from their own branch."""
    try:
        screens = importlib.import_module("console.desk_app")
    except ImportError:
        raise CliError("this build has no desk screens (console.desk_app): connect cannot open the desk") from None
    app = screens.SupervisorApp(remote, operator=remote.operator)
    await app.run_async()
    return int(app.return_code or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m console.desk.hosting listen PATH [session options]` / `connect PATH --operator NAME`."""
    parser = OneLineParser(prog="ledgeragent-desk")
    commands = parser.add_subparsers(dest="command", required=True)
    listen = commands.add_parser("listen", help="serve a headless desk on a Unix socket")
    listen.add_argument("path")
    add_session_arguments(listen)
    listen.set_defaults(handler=_listen)
    join = commands.add_parser("connect", help="open the desk served on a Unix socket")
    join.add_argument("path")
    join.add_argument("--operator", required=True)
    join.set_defaults(handler=_connect)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return run_handler(args.handler, args, argv)


if __name__ == "__main__":
    sys.exit(main())
