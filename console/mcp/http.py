"""The server over streamable HTTP (`--transport http`): many clients, one session each, safe by default.

The SDK's `StreamableHTTPSessionManager` speaks the protocol (one `Mcp-Session-Id` per client, minted at the
handshake; its request-body limit). A call's answer is a JSON body when no operator can hold a call (no desk:
every call answers as soon as it has run), an SSE stream when one can (`--listen`): a held write may wait
minutes for its decision, and the stream's keep-alive pings keep the client's read timeout from giving up on
it meanwhile. The JSON answer is the cheaper one by far: one body instead of a stream with its own tasks, and
the SDK's client reads it to its end, so it keeps its connection for the next call, where it closes the
connection of every stream it has had its answer from. In front of it, `Guard` applies the rules
`ledgeragent serve` applies, with the same functions (`console.web.policy`), before a request reaches the
SDK:

- the `Host` header: bound to loopback (the default, 127.0.0.1), only a loopback name is answered (the MCP
  specification's advice against DNS rebinding: a page that rebinds its name to 127.0.0.1 is refused);
- the `Origin` header: absent (a program) or exactly one of the server's own origins (`--allow-origin` adds
  more); a browser page of any other origin is refused;
- the token: `Authorization: Bearer <token>` on every request, compared in constant time (made at start and
  printed once unless given with `--token` / $LEDGERAGENT_TOKEN; `--no-token` only on loopback);
- a rate limit per client session (token bucket), answered 429 with `Retry-After`. A session is known by the
  id the SDK minted for it (read off the response that opened it); a request naming any other id shares one
  bucket with the requests that open sessions, so made-up ids neither escape the limit nor grow its tables;
- only `/mcp` is served.

The SDK's own DNS-rebinding settings are switched off: the rules are these, in one place. Every refusal is
a JSON-RPC error body with the HTTP status, one log line on stderr, and touches no session.

Sessions end when the client deletes its MCP session (DELETE, what a client does on close), when it has had
no request in flight for `idle_timeout` seconds (the SDK forgets its transport then too), or when the server
stops: each time `McpSessions.end`, so its trace ends with `session_ended`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console.mcp.manager import McpSessions
from console.web.policy import (
    Origin,
    bearer_token,
    host_allowed,
    host_name,
    origin_allowed,
    token_matches,
)

PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
NEW = ""  # the rate-limit key of requests that name no session this server minted (an opening one, or a made-up id)


def key_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The client session a request belongs to: its `Mcp-Session-Id` (checked by the SDK's manager)."""
    headers = getattr(ctx.request, "headers", None)
    key = headers.get(SESSION_HEADER) if headers is not None else None
    if not key:
        raise MCPError(code=types.INVALID_REQUEST, message="no MCP session: this server keeps one ledger per "
                                                           "client session, opened with the initialize handshake")
    return str(key)


@dataclass
class Bucket:
    """`rate` requests a second, bursts up to `burst`."""

    rate: float
    burst: float
    tokens: float = 0.0
    at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass(frozen=True)
class HttpPolicy:
    bind_host: str
    token: str | None
    origins: frozenset[Origin]
    rate: float  # requests per second per client session (and for all session-opening requests together)
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)


class Guard:
    """ASGI middleware: the checks above, then the SDK; notes each session's requests for idle ends."""

    def __init__(self, app: ASGIApp, policy: HttpPolicy, *,
                 on_deleted: Callable[[str], Awaitable[None]]) -> None:
        self.app = app
        self.policy = policy
        self.on_deleted = on_deleted
        self.buckets: dict[str, Bucket] = {}
        self.inflight: dict[str, int] = {}
        self.last_seen: dict[str, float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a WebSocket (MCP uses none): refused before anything behind us sees it
            client = scope.get("client") or ("?", 0)
            self.policy.log(f"mcp: refused {scope['type']} {str(scope.get('path'))[:80]} from {client[0]}: "
                            "403 only HTTP requests are served")
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            code, why = refusal
            client = scope.get("client") or ("?", 0)
            self.policy.log(f"mcp: refused {scope.get('method')} {str(scope.get('path'))[:80]} from {client[0]}: "
                            f"{code} {why}")
            await _refuse(send, code, why)
            return
        key = self.known(headers)
        if key:
            self.inflight[key] += 1
        status: list[int] = []
        minted: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                if not key:  # the response that opens a session names the id the SDK minted for it
                    minted.extend(v.decode("latin-1") for k, v in message.get("headers", ())
                                  if k.lower() == SESSION_HEADER.encode())
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if key in self.inflight:  # (not forgotten meanwhile)
                self.inflight[key] -= 1
                self.last_seen[key] = time.monotonic()
        if minted and status and status[0] < 400:
            self.inflight[minted[0]] = 0
            self.last_seen[minted[0]] = time.monotonic()
        if key and scope.get("method") == "DELETE" and status and status[0] < 300:
            await self.on_deleted(key)
            self.forget(key)

    def known(self, headers: dict[str, str]) -> str:
        """The request's session id when this server minted it, else NEW (see the module docstring)."""
        key = headers.get(SESSION_HEADER, NEW)
        return key if key in self.last_seen else NEW

    def refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """(HTTP status, why) for a request that may not go on, or None."""
        policy = self.policy
        host = host_name(headers.get("host", ""))
        if not host:
            return 400, "the request has no Host header"
        if not host_allowed(host, policy.bind_host):
            return 403, f"this server answers only to a loopback name, not {host[:60]!r} (DNS rebinding?)"
        if not origin_allowed(headers.get("origin"), policy.origins):
            return 403, f"Origin {headers.get('origin', '')[:80]!r} may not use this server"
        if policy.token is not None and not token_matches(bearer_token(headers.get("authorization")), policy.token):
            return 401, "an access token is needed: Authorization: Bearer <token> (printed when the server started)"
        if scope.get("path") != PATH:
            return 404, f"nothing here: the MCP endpoint is {PATH}"
        key = self.known(headers)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = Bucket(policy.rate, max(1.0, 2 * policy.rate))
        if not bucket.take(time.monotonic()):
            return 429, f"too many requests (more than {policy.rate:g} a second): slow down"
        return None

    def idle(self, timeout: float, now: float) -> list[str]:
        """Sessions with no request in flight for `timeout` seconds."""
        return [key for key, seen in self.last_seen.items()
                if self.inflight.get(key, 0) == 0 and now - seen >= timeout]

    def forget(self, key: str) -> None:
        for table in (self.buckets, self.inflight, self.last_seen):
            table.pop(key, None)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": types.INVALID_REQUEST, "message": message}}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 429:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    max_request: int
    max_sessions: int
    idle_timeout: float
    json_response: bool = False  # True only where no call can be held (see the module docstring)


def build_app(server: Server[Any], sessions: McpSessions, policy: HttpPolicy, options: HttpOptions, *,
              announce: Callable[[], None]) -> Guard:
    """The ASGI app: `Guard` in front of the SDK's session manager, whose lifespan also runs the idle check
    and, on the way out, ends every session (`server_stopped`)."""
    manager = StreamableHTTPSessionManager(
        app=server, json_response=options.json_response, max_request_body_size=options.max_request,
        max_sessions=options.max_sessions,
        session_idle_timeout=options.idle_timeout,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    sdk = StreamableHTTPASGIApp(manager)

    async def deleted(key: str) -> None:
        await sessions.end(key, "client_disconnected")

    guard: Guard

    async def idle_check() -> None:
        while True:
            await asyncio.sleep(max(0.05, min(options.idle_timeout / 4, 30.0)))
            for key in guard.idle(options.idle_timeout, time.monotonic()):
                guard.forget(key)
                await sessions.end(key, "client_idle")

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            checker = asyncio.create_task(idle_check(), name="mcp idle check")
            announce()
            try:
                yield
            finally:
                checker.cancel()
                with contextlib.suppress(BaseException):
                    await checker
                await sessions.end_all("server_stopped")

    app = Starlette(routes=[Route(PATH, endpoint=sdk)], lifespan=lifespan)
    guard = Guard(app, policy, on_deleted=deleted)
    return guard


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0: a free one), so the address is known before the server runs.

    Made with its protocol named (IPPROTO_TCP), not 0: asyncio sets TCP_NODELAY only on connections of a socket
    that says it is TCP. Without it, a response's body waits behind its headers for the client's delayed ACK
    (Nagle's algorithm): some 40 ms on every request of a kept-alive connection."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(512)
    sock.setblocking(False)
    return sock


async def serve_http(guard: Guard, sock: socket.socket, options: HttpOptions) -> None:
    """Serve until SIGTERM / SIGINT (uvicorn's own handling), then end every session."""
    import uvicorn

    config = uvicorn.Config(guard, log_level="warning", access_log=False, lifespan="on",
                            limit_concurrency=max(64, 8 * options.max_sessions), timeout_keep_alive=30,
                            timeout_graceful_shutdown=5, h11_max_incomplete_event_size=64 * 1024)
    await uvicorn.Server(config).serve(sockets=[sock])
