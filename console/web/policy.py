"""The web server's pure decisions, shared by `console.cli.serve` (the command line) and `console.web.server` (the
server): what the server is told (`ServeConfig`), which origins may open a console, what a tab may send.

A module of its own so that the server does not import the command line (serve -> webserver -> serve was an
import circle) and both stay free of each other's dependencies: nothing here imports aiohttp or
textual-serve.
"""

from __future__ import annotations

import hmac
import ipaddress
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from console.runtime.operators import Operators

TOKEN_ENV = "LEDGERAGENT_TOKEN"
MAX_COLUMNS = 500  # a terminal wider or taller than this is clamped: its frames grow with the area (3000 x 3000
MAX_ROWS = 200  # took a tab from 86 to 336 MB and sent a 33 MB frame)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")  # the names a browser on this machine uses for us

Origin = tuple[str, str, int]  # scheme, lower-case host (no brackets), port (80/443 filled in)


@dataclass(frozen=True)
class DeskServing:
    """`serve --supervise`: the host's argv up to its socket path and after it, and each tab's argv prefix."""

    host_argv: tuple[str, ...]  # `python -m console supervise --listen`: the socket path goes after it
    host_options: tuple[str, ...]  # supervise's session options as given to serve, after the socket path
    tab_argv: tuple[str, ...]  # `python -m console.cli.tab desk-connect`: `SOCKET --operator=NAME` follow (the tab's
    # token for the desk's socket comes in its environment, console.runtime.operators.DESK_TOKEN_ENV)
    environment: Mapping[str, str] = field(default_factory=dict)  # the host's: the tabs' (+ the key for a model)
    live_model: bool = False  # the host runs sessions on a live model, so it (and only it) has the key

    def host(self, socket: Path) -> list[str]:
        return [*self.host_argv, str(socket), *self.host_options]

    def tab(self, socket: Path, operator: str) -> list[str]:
        return [*self.tab_argv, str(socket), f"--operator={operator}"]  # as serve passes every option on

    def tab_command(self, socket: Path, operator: str) -> str:
        """The tab's shell command line for textual-serve (as `console.cli.serve.child_command`: quoted, `exec`)."""
        return "exec " + shlex.join(self.tab(socket, operator))


@dataclass(frozen=True)
class ServeConfig:
    """Everything the web server needs, decided up front from the command line and the environment."""

    command: str  # shell command line of one console process (already quoted)
    environment: Mapping[str, str]  # the child's whole environment, before textual-serve adds its own keys
    host: str
    port: int
    token: str | None
    max_sessions: int
    public_url: str | None
    home: Path  # LEDGERAGENT_HOME of the children: their session folders are under home / "sessions"
    live_model: bool = False  # a real model is configured, so the children get the LLM key
    token_source: str = "option"  # "generated", "option", "environment", "none", or "operators" (theirs alone)
    desk: DeskServing | None = None  # --supervise: every tab joins one headless desk
    # At a desk, who a tab is. With --operators / --operators-file: the operator whose token the tab presents
    # (`operators`; `shown_tokens` are the tokens made for this run, printed once at start); `token` is then
    # None. Otherwise the one shared token (or none) is one identity: `operator` (serve's --operator).
    operators: Operators | None = None
    shown_tokens: Mapping[str, str] = field(default_factory=dict)
    operator: str = ""

    @property
    def authenticated(self) -> bool:
        """Every request must present a token: the shared one, or an operator's."""
        return self.token is not None or self.operators is not None


def allowed_origins(port: int, public_url: str | None = None, extra: Sequence[str] = ()) -> frozenset[Origin]:
    """The origins a page of ours can have: the loopback names at our port, --public-url, and `extra`
    (e.g. the address of a non-loopback bind). A browser's websocket Origin must be one of them."""
    urls = [f"http://{name}:{port}" for name in LOOPBACK_NAMES]
    urls += [url for url in (public_url, *extra) if url]
    return frozenset(origin for origin in map(parse_origin, urls) if origin is not None)


def parse_origin(text: str) -> Origin | None:
    """`scheme://host[:port]` as (scheme, host, port), or None for anything else.

    None for `null` (sandboxed frames, file: pages, data: URLs send it), for `file:`, `data:` or any scheme
    but http(s), for an empty host, a bad port, user info, or a path: an Origin header never has those.
    """
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if parts.username is not None or parts.password is not None or parts.path not in ("", "/") or parts.query \
            or parts.fragment:
        return None
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname.lower(), port if port is not None else default


def origin_allowed(origin: str | None, allowed: frozenset[Origin]) -> bool:
    """Whether a websocket with this Origin header may open a console.

    No header at all is a program, not a web page (browsers always send one on a websocket): the token
    decides for those. Any header must name exactly one of `allowed` (scheme, host and port).
    """
    if origin is None:
        return True
    parsed = parse_origin(origin)
    return parsed is not None and parsed in allowed


def host_name(header: str) -> str:
    """The lower-case host name a `Host` header names ("" when it is missing or malformed)."""
    try:
        return (urlsplit(f"//{header}").hostname or "").lower()
    except ValueError:
        return ""


def host_allowed(host: str, bind_host: str, public_url: str | None = None) -> bool:
    """Whether a request naming `host` (see `host_name`) may reach a server bound to `bind_host`.

    Bound to loopback, the server is reached by a loopback name (or its --public-url, through a proxy): any
    other name in the Host header is a page that rebound its own name to 127.0.0.1 (DNS rebinding). A server
    bound elsewhere is reached by many names; its token decides."""
    public_host = (urlsplit(public_url).hostname or "").lower() if public_url else ""
    return bool(host) and (not is_loopback(bind_host) or is_loopback(host) or host == public_host)


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, for programs (browsers use the cookie)."""
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def token_matches(presented: str | None, token: str) -> bool:
    """A constant-time comparison: how long it takes says nothing about how much of the token was right.

    Bytes that are not UTF-8 (a header decoded with `surrogateescape`) compare as the bytes they were, so a
    malformed token is a mismatch, never an encoding error."""
    return presented is not None and hmac.compare_digest(presented.encode("utf-8", "surrogateescape"),
                                                         token.encode("utf-8", "surrogateescape"))


def terminal_size(width: object, height: object) -> tuple[int, int]:
    """A terminal size as the console gets it: positive integers, clamped to MAX_COLUMNS x MAX_ROWS.

    Raises ValueError (with the reason to show) for anything else: a string, a float, a bool, zero or less.
    Digit strings are accepted, as the page sends its first size in the query string.
    """
    values = []
    for name, value, limit in (("width", width, MAX_COLUMNS), ("height", height, MAX_ROWS)):
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {str(value)[:20]!r}")
        values.append(min(value, limit))
    return values[0], values[1]


def is_loopback(host: str) -> bool:
    """True for names and addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
