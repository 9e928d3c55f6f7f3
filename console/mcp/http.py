"""The server over streamable HTTP (`--transport http`): many clients, one session each, safe by default.

The SDK's `StreamableHTTPSessionManager` speaks the protocol (one `Mcp-Session-Id` per client, minted at the
handshake; its request-body limit). A call's answer is a JSON body when no operator can hold a call (no desk:
every call answers as soon as it has run), an SSE stream when one can (`--listen`): a held write may wait
minutes for its decision, and the stream's keep-alive pings keep the client's read timeout from giving up on
it meanwhile. The JSON answer is the cheaper one by far: one body instead of a stream with its own tasks, and
the SDK's client reads it to its end, so it keeps its connection for the next call, where it closes the
connection of every stream it has had its answer from.

Below the app, `console.mcp.connections` gives each request's head a deadline and bounds the connections
that have sent none (a flood of silent connections never takes a real client's place). In front of the SDK,
`Guard` applies the rules `ledgeragent serve` applies, with the same functions (`console.web.policy`), before
a request reaches the SDK, in this order:

- one of each header that says who is asking and about what (`Host`, `Origin`, `Authorization`,
  `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`): two of one are refused (400), since the SDK
  reads the first and a proxy or this guard might read the last;
- the `Host` header: bound to loopback (the default, 127.0.0.1), only a loopback name is answered (the MCP
  specification's advice against DNS rebinding: a page that rebinds its name to 127.0.0.1 is refused);
- the `Origin` header: absent (a program) or exactly one of the server's own origins (`--allow-origin` adds
  more); a browser page of any other origin is refused;
- the token: `Authorization: Bearer <token>` on every request, compared in constant time (made at start and
  printed once unless given with `--token` / $LEDGERAGENT_TOKEN; `--no-token` only on loopback);
- only `/mcp` is served;
- a rate limit per client session (token bucket), answered 429 with `Retry-After`. A session is known by the
  id the SDK minted for it (read off the response that opened it); a request naming any other id shares one
  bucket with the requests that open sessions, so made-up ids neither escape the limit nor grow its tables;
- at most `max_inflight` requests at once (503 with `Retry-After`);
- a POST's body is read here, whole, within `body_timeout` seconds (408) and `max_request` bytes (413); a
  client that goes before its body has arrived is one log line, not a traceback from the SDK;
- the message must be one JSON-RPC message as MCP has them (`console.mcp.jsonrpc`: no batch, a request id
  that is a string or an integer): else 400 with JSON-RPC's invalid request;
- an `initialize` (a new session) is admitted within `max_sessions` in all and `max_sessions_per_client` per
  client (its address and its `clientInfo` name: the token alone tells no two holders apart). At either cap
  the session of that group with no request for the longest, if that is `reclaim_idle` seconds or more, is
  ended to make room (its id then answers 404 saying so); else the new one is refused, 503 at the server's
  cap, 429 at the client's, both with `Retry-After`.

The SDK's own DNS-rebinding settings are switched off: the rules are these, in one place. Every refusal is
a JSON-RPC error body with the HTTP status and one log line on stderr, and touches no session; a refusal
before the token has been checked, or of the token, closes the connection too, so it cannot be kept open.

Sessions end when the client deletes its MCP session (DELETE, what a client does on close), when it has had
no request in flight for `idle_timeout` seconds, when its place is reclaimed, or when the server stops: each
time `McpSessions.end`, so its trace ends with `session_ended`. Idle ends are this module's: the SDK's own
idle timer is off, and the SDK's session is ended here with a DELETE of its own (its one public way).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console.mcp.jsonrpc import INVALID_REQUEST, Refusal, invalid_refusal, shape_refusal
from console.mcp.manager import MAX_CLIENT_NAME, McpSessions
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
SINGLE_HEADERS = frozenset({"host", "origin", "authorization", SESSION_HEADER, "mcp-protocol-version",
                            "last-event-id"})
MAX_ENDED = 4096  # ended session ids still answered with why (a few dozen bytes each)
Owner = tuple[str, str]  # the client a session belongs to: its address and its clientInfo name


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
    max_request: int = 1024 * 1024  # bytes of a request's body
    body_timeout: float = 30.0  # seconds a request's body may take to arrive, once its head has
    max_inflight: int = 512  # requests being served at once (an open event stream is one)
    max_sessions: int = 64
    max_sessions_per_client: int = 16
    reclaim_idle: float = 60.0  # a session with no request for this long may be ended to make room for a new one


@dataclass(frozen=True)
class Refused:
    """A request the guard answers itself: HTTP status, the JSON-RPC error, whether to close the connection."""

    status: int
    refusal: Refusal
    close: bool = False

    @classmethod
    def plain(cls, status: int, message: str, *, close: bool = False) -> Refused:
        return cls(status, Refusal(INVALID_REQUEST, None, message), close)


class ClientGone(Exception):
    """The client closed its connection before its request's body had arrived."""


def _client_name(value: Any) -> str:
    params = value.get("params") if isinstance(value, dict) else None
    info = params.get("clientInfo") if isinstance(params, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name[:MAX_CLIENT_NAME] if isinstance(name, str) else ""


class Guard:
    """ASGI middleware: the checks above, then the SDK; keeps each session's requests for idle ends and its
    owner for the caps. `end_session` ends one (its ledger session and the SDK's)."""

    def __init__(self, app: ASGIApp, policy: HttpPolicy, *,
                 on_deleted: Callable[[str], Awaitable[None]],
                 end_session: Callable[[str, str], Awaitable[None]]) -> None:
        self.app = app
        self.policy = policy
        self.on_deleted = on_deleted
        self.end_session = end_session
        self.buckets: dict[str, Bucket] = {}
        self.inflight: dict[str, int] = {}
        self.last_seen: dict[str, float] = {}
        self.owners: dict[str, Owner] = {}
        self.opening: Counter[Owner] = Counter()
        self.ended: OrderedDict[str, str] = OrderedDict()  # session id -> why it ended, the newest last
        self.active = 0  # requests being served
        self._admission = asyncio.Lock()

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
        raw = scope.get("headers", [])
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
        refused = self.refusal(scope, raw, headers)
        if refused is not None:
            await self._refuse(scope, send, refused)
            return
        self.active += 1
        try:
            await self._serve(scope, receive, send, headers)
        finally:
            self.active -= 1

    async def _serve(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        named = headers.get(SESSION_HEADER)
        key = self.known(headers)
        if named and not key and named in self.ended:
            await self._refuse(scope, send, Refused.plain(404, f"this session has ended: {self.ended[named]}; "
                                                               "start a new one (the initialize handshake)"))
            return
        owner: Owner | None = None
        if scope.get("method") == "POST":
            try:
                body = await self._body(receive, headers)
            except ClientGone as gone:
                client = scope.get("client") or ("?", 0)
                self.policy.log(f"mcp: POST {str(scope.get('path'))[:80]} from {client[0]}: the client went "
                                f"before its request's body had arrived ({gone})")
                return
            except TimeoutError:
                await self._refuse(scope, send, Refused.plain(
                    408, f"the request's body did not arrive within {self.policy.body_timeout:g} s", close=True))
                return
            if isinstance(body, Refused):
                await self._refuse(scope, send, body)
                return
            message, value = self.message(body)
            if isinstance(message, Refused):
                await self._refuse(scope, send, message)
                return
            if named is None and _is_initialize(message):
                owner = ((scope.get("client") or ("?", 0))[0], _client_name(value))
                refused = await self.admit(owner)
                if refused is not None:
                    await self._refuse(scope, send, refused)
                    return
            receive = _replay(body, receive)
        try:
            await self._forward(scope, receive, send, key, owner)
        finally:
            if owner is not None:
                self.opening[owner] -= 1
                if self.opening[owner] <= 0:
                    del self.opening[owner]

    async def _forward(self, scope: Scope, receive: Receive, send: Send, key: str, owner: Owner | None) -> None:
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
            # (an opening request the guard could not read as one is still counted, under its address)
            self.owners[minted[0]] = owner or ((scope.get("client") or ("?", 0))[0], "")
        if key and scope.get("method") == "DELETE" and status and status[0] < 300:
            await self.on_deleted(key)
            self.forget(key)

    def known(self, headers: dict[str, str]) -> str:
        """The request's session id when this server minted it, else NEW (see the module docstring)."""
        key = headers.get(SESSION_HEADER, NEW)
        return key if key in self.last_seen else NEW

    def refusal(self, scope: Scope, raw: list[tuple[bytes, bytes]], headers: dict[str, str]) -> Refused | None:
        """What a request's head alone is refused for, or None."""
        policy = self.policy
        if len(raw) != len(headers):
            names = Counter(k.decode("latin-1").lower() for k, _ in raw)
            twice = sorted(name for name, count in names.items() if count > 1 and name in SINGLE_HEADERS)
            if twice:
                return Refused.plain(400, f"the request has more than one {twice[0]} header: send one",
                                     close=True)
        host = host_name(headers.get("host", ""))
        if not host:
            return Refused.plain(400, "the request has no Host header", close=True)
        if not host_allowed(host, policy.bind_host):
            return Refused.plain(403, f"this server answers only to a loopback name, not {host[:60]!r} "
                                      "(DNS rebinding?)", close=True)
        if not origin_allowed(headers.get("origin"), policy.origins):
            return Refused.plain(403, f"Origin {headers.get('origin', '')[:80]!r} may not use this server",
                                 close=True)
        if policy.token is not None and not token_matches(bearer_token(headers.get("authorization")), policy.token):
            return Refused.plain(401, "an access token is needed: Authorization: Bearer <token> (printed when the "
                                      "server started)", close=True)
        if scope.get("path") != PATH:
            return Refused.plain(404, f"nothing here: the MCP endpoint is {PATH}", close=True)
        key = self.known(headers)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = Bucket(policy.rate, max(1.0, 2 * policy.rate))
        if not bucket.take(time.monotonic()):
            return Refused.plain(429, f"too many requests (more than {policy.rate:g} a second): slow down")
        if self.active >= policy.max_inflight:
            return Refused.plain(503, f"the server is busy ({policy.max_inflight} requests in flight): try again")
        return None

    async def _body(self, receive: Receive, headers: dict[str, str]) -> bytes | Refused:
        """The POST's whole body, within the size and time limits (TimeoutError past the time)."""
        limit = self.policy.max_request
        too_large = Refused.plain(413, f"the request's body is larger than {limit} bytes (--max-request-bytes)",
                                  close=True)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return too_large
        chunks: list[bytes] = []
        size = 0
        async with asyncio.timeout(self.policy.body_timeout):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    expected = f" of {declared}" if declared else ""
                    raise ClientGone(f"{size}{expected} bytes")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return too_large
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)

    def message(self, body: bytes) -> tuple[Any, Any] | tuple[Refused, None]:
        """(the JSON-RPC message, its JSON value), or the refusal of a body that is no MCP message. A body
        that is not JSON is left to the SDK (its parse error is JSON-RPC's)."""
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return None, None
        refusal = shape_refusal(value)
        if refusal is None:
            try:
                return types.jsonrpc_message_adapter.validate_python(value, by_name=False), value
            except ValidationError as exc:
                reason = str(exc.errors()[0].get("msg", "invalid message")) if exc.errors() else "invalid message"
                refusal = invalid_refusal(value, reason) or Refusal(INVALID_REQUEST, None,
                                                                     f"Invalid response: {reason[:300]}")
        return Refused(400, refusal), None

    async def admit(self, owner: Owner) -> Refused | None:
        """Room for a new session of `owner`, reclaiming an idle one when a cap is reached (module docstring);
        the refusal when there is none. Admitted, it counts as opening until its handshake is answered."""
        policy = self.policy
        async with self._admission:
            mine = [key for key, of in self.owners.items() if of == owner]
            if len(mine) + self.opening[owner] >= policy.max_sessions_per_client and not await self.reclaim(mine):
                name = f"{owner[1]!r}" if owner[1] else "with no name"
                return Refused(429, Refusal(INVALID_REQUEST, None, (
                    f"this client ({name} from {owner[0]}) has {policy.max_sessions_per_client} sessions open, "
                    f"the most one client may have (--max-sessions-per-client): end one (DELETE) or try again "
                    f"once one has been idle {policy.reclaim_idle:g} s")))
            opening = sum(self.opening.values())
            if len(self.owners) + opening >= policy.max_sessions and not await self.reclaim(list(self.owners)):
                return Refused(503, Refusal(INVALID_REQUEST, None, (
                    f"this server has {policy.max_sessions} sessions open, the most it keeps (--max-sessions), "
                    f"all used in the last {policy.reclaim_idle:g} s: try again later")))
            self.opening[owner] += 1
        return None

    async def reclaim(self, candidates: list[str]) -> bool:
        """End the candidate idle the longest, if it has been idle `reclaim_idle` seconds or more."""
        now = time.monotonic()
        idle = [(self.last_seen.get(key, now), key) for key in candidates if self.inflight.get(key, 0) == 0]
        idle = [(seen, key) for seen, key in idle if now - seen >= self.policy.reclaim_idle]
        if not idle:
            return False
        seen, key = min(idle)
        await self.end(key, "client_idle", f"it had no request for {now - seen:.0f} s and its place was needed "
                                           "for a new session")
        return True

    async def end(self, key: str, reason: str, why: str) -> None:
        """End a session the server ends (idle, reclaimed): forgotten here, ended in the SDK and the ledger."""
        self.forget(key)
        self.ended[key] = why
        while len(self.ended) > MAX_ENDED:
            self.ended.popitem(last=False)
        await self.end_session(key, reason)

    def idle(self, timeout: float, now: float) -> list[str]:
        """Sessions with no request in flight for `timeout` seconds."""
        return [key for key, seen in self.last_seen.items()
                if self.inflight.get(key, 0) == 0 and now - seen >= timeout]

    def forget(self, key: str) -> None:
        for table in (self.buckets, self.inflight, self.last_seen, self.owners):
            table.pop(key, None)

    async def _refuse(self, scope: Scope, send: Send, refused: Refused) -> None:
        client = scope.get("client") or ("?", 0)
        self.policy.log(f"mcp: refused {scope.get('method')} {str(scope.get('path'))[:80]} from {client[0]}: "
                        f"{refused.status} {refused.refusal.message}")
        body = json.dumps(refused.refusal.body()).encode("utf-8")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if refused.status in (429, 503):
            headers.append((b"retry-after", b"1"))
        if refused.close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _is_initialize(message: Any) -> bool:
    return isinstance(message, types.JSONRPCRequest) and message.method == "initialize"


def _replay(body: bytes, receive: Receive) -> Receive:
    """The request's body (read by the guard) handed on as one message, then the connection's own receive
    (which tells the app when the client goes)."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    max_request: int
    max_sessions: int
    idle_timeout: float
    json_response: bool = False  # True only where no call can be held (see the module docstring)
    head_timeout: float = 10.0  # seconds a request's head may take to arrive (console.mcp.connections)
    max_waiting: int = 512  # connections that have sent no request yet, at once
    keep_alive: int = 30  # seconds a kept-alive connection may wait for its next request


def build_app(server: Server[Any], sessions: McpSessions, policy: HttpPolicy, options: HttpOptions, *,
              announce: Callable[[], None]) -> Guard:
    """The ASGI app: `Guard` in front of the SDK's session manager, whose lifespan also runs the idle check
    and, on the way out, ends every session (`server_stopped`)."""
    manager = StreamableHTTPSessionManager(
        app=server, json_response=options.json_response, max_request_body_size=options.max_request,
        max_sessions=options.max_sessions, session_idle_timeout=None,  # idle ends are the guard's (see above)
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    sdk = StreamableHTTPASGIApp(manager)

    async def deleted(key: str) -> None:
        await sessions.end(key, "client_disconnected")

    async def end_session(key: str, reason: str) -> None:
        await _delete_in_sdk(sdk, key)
        await sessions.end(key, reason)

    guard: Guard

    async def idle_check() -> None:
        while True:
            await asyncio.sleep(max(0.05, min(options.idle_timeout / 4, 30.0)))
            for key in guard.idle(options.idle_timeout, time.monotonic()):
                await guard.end(key, "client_idle", f"it had no request for {options.idle_timeout:g} s "
                                                    "(--idle-timeout)")

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
    guard = Guard(app, policy, on_deleted=deleted, end_session=end_session)
    return guard


async def _delete_in_sdk(sdk: ASGIApp, key: str) -> None:
    """End the SDK's session `key` as a client's DELETE would (the manager's one public way to end one)."""
    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "DELETE",
                    "scheme": "http", "path": PATH, "raw_path": PATH.encode(), "root_path": "", "query_string": b"",
                    "headers": [(SESSION_HEADER.encode(), key.encode("latin-1"))], "client": None, "server": None}

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: Message) -> None:
        pass

    await sdk(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0: a free one), so the address is known before the server runs.

    Made with its protocol named (IPPROTO_TCP), not 0: asyncio sets TCP_NODELAY only on connections of a socket
    that says it is TCP. Without it, a response's body waits behind its headers for the client's delayed ACK
    (Nagle's algorithm): some 40 ms on every request of a kept-alive connection."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(BACKLOG)
    sock.setblocking(False)
    return sock


BACKLOG = 2048  # connections the kernel holds before we accept them (uvicorn's default)


async def serve_http(guard: Guard, sock: socket.socket, options: HttpOptions) -> None:
    """Serve until SIGTERM / SIGINT (uvicorn's own handling), then end every session.

    uvicorn's concurrency limit is off (it counts connections that have sent nothing: see
    console.mcp.connections); the guard's `max_inflight` and the bound on waiting connections replace it."""
    import uvicorn

    from console.mcp.connections import ConnectionLimits, protocol_class

    limits = ConnectionLimits(head_timeout=options.head_timeout, max_waiting=options.max_waiting)
    config = uvicorn.Config(guard, log_level="warning", access_log=False, lifespan="on",
                            http=protocol_class(limits, guard.policy.log), limit_concurrency=None,
                            timeout_keep_alive=options.keep_alive, backlog=BACKLOG,
                            timeout_graceful_shutdown=5, h11_max_incomplete_event_size=64 * 1024)
    await uvicorn.Server(config).serve(sockets=[sock])
