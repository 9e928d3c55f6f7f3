"""What `ledgeragent mcp` does (its options and its start: console.cli.mcp_options).

Everything given is checked before anything starts (a bad domain, data file, socket, token or mode is one
line and exit 2, no folder left behind); then the server runs on its transport until its client goes (stdio)
or SIGTERM / Ctrl+C, and every session still open ends with its trace complete. Nothing but the MCP messages
is written to stdout over stdio: every log line goes to stderr.

Over stdio the handshake was answered before this module was imported (`console.mcp.handshake`); the data
the sessions start from (`console.mcp.data`) is then loaded once the server serves, not before, and data that
cannot be used stops the server the same way, one line and exit 2, only later. Over HTTP it is loaded first.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.cli.errors import CliError
from console.mcp.data import SessionData
from console.mcp.manager import McpSessions
from console.mcp.server import ServerOptions, build_server
from console.mcp.session import McpLiveSession, McpSessionSpec
from console.mcp.stdio import serve_stdio
from console.runtime.desk.desk import Desk
from console.runtime.live import SupervisionMode
from core.domain import Domain
from domains.registry import load_domain

if TYPE_CHECKING:  # the HTTP transport, the desk's socket and `serve`'s rules: imported where they are used
    from console.runtime.desk.remote import DeskHost

EOF_GRACE = 5.0  # seconds the transport gets to wind down after its client closed the pipe


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def settle_heap() -> None:
    """Leave what exists before the first client (the modules, the domain, the server) out of every garbage
    collection from now on (`gc.freeze`, after a collection, so no garbage is frozen with it).

    Those objects live as long as the process, and they are most of its heap: a full collection walked them all
    again each time, some 150 ms on this machine's cores during which no session's call was answered. Frozen, a
    collection walks what the sessions made. Objects are still freed by their reference counts."""
    gc.collect()
    gc.freeze()


def cmd_mcp(args: argparse.Namespace) -> int:
    domain = load_domain(args.domain)
    mode = SupervisionMode(args.mode)  # (the options were checked together by console.cli.mcp_options)
    db = Path(args.db) if args.db else None
    spec = McpSessionSpec(domain=domain.name, scenario=None, model="mcp", mode=mode, db=db, evidence=args.evidence)
    problems = spec.problems()
    if problems:
        raise CliError("; ".join(problems))
    token: str | None = None
    if args.transport == "http":
        from console.cli.serve import ServeError, check_bind, choose_token
        from console.web.policy import TOKEN_ENV

        try:
            token, source = choose_token(args.token, os.environ.get(TOKEN_ENV) or None, no_token=args.no_token)
            check_bind(args.host, token)
        except ServeError as exc:  # the same rules as `serve`, in its words
            raise CliError(str(exc)) from None
        args.token_source = source
    audit = None
    if args.listen:
        from console.cli.supervise import audit_path

        audit = audit_path(args)
    data = SessionData(domain.name, db)
    try:
        return asyncio.run(_serve(args, domain, spec, audit, token, data))
    finally:
        data.close()


async def _serve(args: argparse.Namespace, domain: Domain, spec: McpSessionSpec, audit: Path | None,
                 token: str | None, data: SessionData) -> int:
    if getattr(args, "early", None) is None:  # nobody was answered yet: the data is checked before serving
        await data.template()
    try:
        desk = Desk([], concurrency=1, audit_path=audit)
    except OSError as exc:
        raise CliError(f"cannot open the audit log {audit}: {exc.strerror or exc}") from None
    host: DeskHost | None = None
    try:
        if args.listen:
            from console.runtime.desk.remote import DeskHost, SocketPathError

            host = DeskHost(desk, Path(args.listen), log=log)
            try:
                await host.start()
            except SocketPathError as exc:
                host = None
                raise CliError(str(exc)) from None
            log(f"desk: MCP sessions at {host.path} (join: ledgeragent supervise --connect {host.path} "
                f"--operator NAME); audit log {audit}")

        def opened(key: str, live: McpLiveSession) -> None:
            log(f"mcp: session for {live.spec.label}: {live.folder}")

        sessions = McpSessions(desk, spec, decision_timeout=args.decision_timeout, on_opened=opened, log=log,
                               data=data)
        settle_heap()
        if args.transport == "stdio":
            await _stdio(args, domain, sessions, data)
        else:
            await _http(args, domain, sessions, token)
    finally:
        if host is not None:
            await host.close()
        await desk.close()
    return 0


async def _stdio(args: argparse.Namespace, domain: Domain, sessions: McpSessions, data: SessionData) -> None:
    server = build_server(domain, sessions, lambda _ctx: "stdio",
                          ServerOptions(ledger_in_results=args.ledger_in_results, discover=True))
    closed = asyncio.Event()

    async def eof() -> None:
        closed.set()
        await sessions.end_all("client_disconnected")

    serving = asyncio.create_task(serve_stdio(server, on_eof=eof, max_line=args.max_request_bytes,
                                              early=getattr(args, "early", None)), name="mcp stdio")
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stopped.set)
    log(f"mcp: serving {domain.name} on stdio")
    made = data.start()  # the sessions' data, now that the server serves (console.mcp.data)
    waiters = [asyncio.ensure_future(stopped.wait()), asyncio.ensure_future(closed.wait())]
    unusable: BaseException | None = None
    try:
        watched: set[asyncio.Future[Any]] = {serving, *waiters, made}
        while True:
            done, watched = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            if made in done and made.exception() is not None:
                unusable = made.exception()
            if unusable is not None or done - {made}:
                break
        if unusable is not None:
            await sessions.end_all("server_stopped")
        elif stopped.is_set():
            await sessions.end_all("server_stopped")
        elif closed.is_set() and not serving.done():
            await asyncio.wait([serving], timeout=EOF_GRACE)  # the SDK finishes what it was writing
    finally:
        for waiter in waiters:
            waiter.cancel()
        if not serving.done():
            serving.cancel()
        with contextlib.suppress(BaseException):
            await serving
        await sessions.end_all("server_stopped")
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)
    if unusable is not None:  # the data given cannot be used: one line and exit 2, as before serving
        raise unusable


async def _http(args: argparse.Namespace, domain: Domain, sessions: McpSessions, token: str | None) -> None:
    from console.mcp.http import HttpOptions, HttpPolicy, bind, build_app, key_of, serve_http
    from console.web.policy import allowed_origins

    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    port = int(sock.getsockname()[1])
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{port}/mcp"
    options = HttpOptions(host=args.host, port=port, max_request=args.max_request_bytes,
                          max_sessions=args.max_sessions, idle_timeout=args.idle_timeout,
                          json_response=not args.listen,  # no desk: no call can be held
                          head_timeout=args.header_timeout, max_waiting=args.max_waiting_connections)
    per_client = args.max_sessions_per_client or max(1, args.max_sessions // 4)
    policy = HttpPolicy(bind_host=args.host, token=token, rate=args.rate,
                        origins=allowed_origins(port, extra=args.allow_origin), log=log,
                        max_request=args.max_request_bytes, body_timeout=args.body_timeout,
                        max_inflight=max(64, 8 * args.max_sessions), max_sessions=args.max_sessions,
                        max_sessions_per_client=min(per_client, args.max_sessions),
                        reclaim_idle=min(args.reclaim_after, args.idle_timeout))
    server = build_server(domain, sessions, key_of,
                          ServerOptions(ledger_in_results=args.ledger_in_results, discover=False))

    def announce() -> None:
        log(f"mcp: serving {domain.name} at {url}")
        if token is None:
            log("mcp: no access token (--no-token): anyone on this machine can call it")
        elif getattr(args, "token_source", "") == "generated":
            log(f"mcp: token {token} (clients send the header Authorization: Bearer <token>; shown once)")
        else:
            log(f"mcp: token from {getattr(args, 'token_source', 'option')} (Authorization: Bearer <token>)")

    guard = build_app(server, sessions, policy, options, announce=announce)
    await serve_http(guard, sock, options)
    await sessions.end_all("server_stopped")
