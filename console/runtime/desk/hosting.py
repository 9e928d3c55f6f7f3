"""A desk with no UI served on a socket, and the way in to one: what `--listen` / `--connect` run.

`ledgeragent supervise --listen PATH` runs the desk headless (`host_until_stopped`): it serves the socket,
prints one line saying where, runs every session to its end, then keeps serving (operators may still read
the trace and audit) until SIGTERM or Ctrl+C. `ledgeragent supervise --connect PATH --operator NAME` opens
the desk screens on a `RemoteDesk` (`connect`). `ledgeragent serve --supervise` starts the first as a
child process (`python -m console supervise --listen SOCKET …`, the same command line and options) and each
browser tab runs the second. Every failure is one line and exit status 2.
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
from pathlib import Path

from console.runtime.desk.desk import Desk, check_operator
from console.runtime.desk.remote import DeskHost, RemoteDesk, SocketPathError, check_socket_path
from console.runtime.desk.view import DeskRefused
from console.runtime.errors import CliError
from console.runtime.operators import DESK_TOKEN_ENV, OperatorError, Operators, generate, load_file, parse_names


async def host_until_stopped(desk: Desk, path: Path, *, announce: Callable[[str], None] | None = None,
                             log: Callable[[str], None] | None = None, stop: asyncio.Event | None = None,
                             notes: Sequence[str] = (), operators: Operators | None = None) -> int:
    """Serve `desk` at `path`, run its sessions, keep serving after they ended, until `stop` (SIGTERM/SIGINT).

    `announce` gets exactly one line, once the socket accepts connections: "desk: N session(s) at PATH";
    then `log` gets each of `notes` (e.g. where the audit log is: said only once the desk really serves).
    Stopping before the sessions ended ends them (their traces say desk_closed). Raises CliError (one line)
    when the socket cannot be served. `operators`: the desk knows them, and a connection is the operator
    whose token it presents (`DeskHost`).
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
        host = DeskHost(desk, path, log=log, operators=operators)
        await host.start()
    except SocketPathError as exc:
        for signum in handled:
            loop.remove_signal_handler(signum)
        await desk.close()
        raise CliError(str(exc)) from None
    try:
        out(f"desk: {len(desk.sessions)} session(s) at {host.path}")
        for note in notes:
            if log is not None:
                log(note)
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
                screens: Callable[[RemoteDesk], Awaitable[int]] | None = None, *,
                notes: Sequence[str] = ()) -> int | None:
    """The `--listen` / `--connect` branch of `ledgeragent supervise`; None when neither option was given.

    `build_desk` makes the desk from the command's own session options (for `--listen`); `screens` runs the
    desk screens on the `RemoteDesk` (for `--connect`, as `args.operator`; default `open_screens`) and returns
    the exit status; `notes` are logged on stderr once the socket serves. Failures are CliError (one line,
    exit 2, via `run_handler`).
    """
    if getattr(args, "listen", None):
        if build_desk is None:
            raise CliError("--listen needs the desk's sessions")
        path = Path(args.listen)
        make = build_desk
        operators, tokens = listen_operators(args)
        told = [*notes, *(f"desk: {name}'s token, shown this once: {token} (they connect with "
                          f"{DESK_TOKEN_ENV}=<it> ledgeragent supervise --connect {path} --operator {name})"
                          for name, token in tokens.items())]

        async def serve() -> int:
            return await host_until_stopped(make(), path, notes=told, operators=operators,
                                            log=lambda line: print(line, file=sys.stderr, flush=True))

        return asyncio.run(serve())
    if getattr(args, "connect", None):
        target = args.connect
        show = screens or open_screens
        token = os.environ.get(DESK_TOKEN_ENV) or None

        async def join() -> int:
            remote = await connect(target, args.operator, token=token)
            try:
                return await show(remote)
            finally:
                await remote.close()

        return asyncio.run(join())
    return None


def listen_operators(args: argparse.Namespace) -> tuple[Operators | None, dict[str, str]]:
    """`--listen` with `--operators` (a token made for each, shown once) or `--operators-file`; (None, {})
    without them: then a connection is the operator it names (the socket's permissions are the lock)."""
    try:
        if getattr(args, "operators", None) is not None:
            return generate(parse_names(args.operators))
        if getattr(args, "operators_file", None):
            return load_file(Path(args.operators_file)), {}
    except OperatorError as exc:
        raise CliError(str(exc)) from None
    return None, {}


async def connect(path: Path | str, operator: str, *, timeout: float = 10.0, token: str | None = None) -> RemoteDesk:
    """A `RemoteDesk` on the desk at `path` as `operator` (with `token`, for a desk that knows its operators);
    CliError (one line) when there is none there, or it refuses us."""
    try:
        name = check_operator(operator)
        target = check_socket_path(Path(path))
        return await RemoteDesk.connect(target, name, timeout=timeout, token=token)
    except (DeskRefused, SocketPathError) as exc:
        raise CliError(str(exc)) from None


async def open_screens(remote: RemoteDesk) -> int:
    """The desk screens on `remote`: `console.tui.desk_app.SupervisorApp` with no lifecycle (the host owns the
    sessions; this operator only decides). Looked up by name: the screens come from their own branch."""
    try:
        screens = importlib.import_module("console.tui.desk_app")
    except ImportError:
        raise CliError("this build has no desk screens (console.tui.desk_app): connect cannot open the desk") from None
    app = screens.SupervisorApp(remote, operator=remote.operator)
    await app.run_async()
    return int(app.return_code or 0)
