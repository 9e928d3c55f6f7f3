"""The web server behind `ledgeragent serve`: textual-serve's `Server`, locked down the way Jupyter Server is.

textual-serve 1.1.3 has no hook for any of this, so this module subclasses it and relies on parts that are not
public API: `Server._make_app` (replaced: our routes, middleware, no static index), `Server._process_messages`
(replaced: strict messages), the `AppService` constructor, `_build_environment`, `_process` and `run` (replaced:
the console's stderr is logged, never copied to our stdout). pyproject pins textual-serve exactly for that
reason: re-read its server.py and app_service.py before bumping it. From aiohttp it uses
`AppRunner._make_server` and `web.Server`'s `_loop`/`_kwargs`, to answer its parser's errors itself
(`HttpProtocol`); tests/console/web/test_browser_bad_input.py sends those requests over a raw socket.

Every request is checked first (`_guard`): its Host, the UTF-8 of what is read of it, the Origin of a
websocket, then who presents it (`_authenticate`: the shared token, or at a desk with --operators the operator
whose token it is; never a name in the address). Per tab: the page (`/`) loads xterm.js, which opens `/ws`;
`handle_websocket` checks the size, takes the console started when the page was served (`_prestart`: only
for a browser's top-level navigation of the page, `_not_a_navigation`; its start overlaps the page's own load
and it draws only once it has the tab's size, `console.web.driver`), or claims one of `max_sessions` slots and
starts one (`ConsoleProcess`), and relays keys and screen bytes until either side closes. Closing the tab
asks a running console to quit (killed if it has not within `STOP_GRACE`) and ends a console that is still
starting at once; its session folder (trace.jsonl, db.sqlite) stays on disk, since the console writes the
trace as it goes. Every refusal is one log line and a clear page or close reason; a bad tab never takes the
server or another tab with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import re
import signal
import socket
import sys
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.typedefs import Handler, Middleware
from rich.console import Console
from rich.markup import escape
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from console.runtime.desk.serving import DeskProcess
from console.runtime.operators import DESK_TOKEN_ENV, FAILURES, REFILL_S, Operators, TokenChecks, TooManyTries
from console.web import driver as web_driver
from console.web.policy import (
    TOKEN_ENV,
    ServeConfig,
    allowed_origins,
    bearer_token,
    host_allowed,
    host_name,
    is_loopback,
    origin_allowed,
    terminal_size,
    token_matches,
)

log = logging.getLogger("ledgeragent.serve")

TITLE = "LedgerAgent Console"
TEMPLATES = Path(__file__).with_name("templates")  # our copy of textual-serve's page: no third-party fonts
STOP_GRACE = 5.0  # seconds a running console gets to quit after its tab closed, before it is killed
ENDING_GRACE = 20.0  # seconds a console whose app has ended by itself gets to finish (a crash report) and exit
START_GRACE = 1.0  # seconds a console that has not drawn yet gets after SIGTERM, before it is killed
EXIT_WAIT = 1.0  # seconds between a console's output ending and its exit being reported, at most
ROOM_WAIT = 1.5  # seconds a new tab waits for another to close (reloads, races) before "all in use"
IDLE_TIMEOUT = 5.0  # seconds a connection may take to send a whole request, or idle between requests
MAX_MESSAGE = 64 * 1024  # bytes in one websocket message from the page (keys, a paste): more closes the tab
HEARTBEAT = 15.0  # seconds between websocket pings: a vanished browser is noticed within twice that
PRESTART_TTL = 10.0  # seconds a console started for a page load waits for that page's websocket, then is ended
PRESTART_SIZE = (80, 24)  # the COLUMNS x ROWS a pre-started console gets; it draws only at its tab's size
PRESTART_BUFFER = 4 * 1024 * 1024  # bytes of screen output kept for a pre-started console before a tab takes it
STDERR_LINES = 20  # lines of a console's stderr logged (console.cli.tab reduces it to one; this is the fuse)
STDERR_LINE_CHARS = 500
# What textual-serve itself puts in a child's environment (driver, size, colours); everything else is ours.
SERVE_ENV_NAMES = frozenset({"TEXTUAL_DRIVER", "TEXTUAL_FPS", "TEXTUAL_COLOR_SYSTEM", "TERM_PROGRAM",
                             "TERM_PROGRAM_VERSION", "COLUMNS", "ROWS"})
DEBUG_ENV_NAMES = frozenset({"TEXTUAL", "TEXTUAL_LOG"})
# On every response, errors included: no framing (a hostile page could overlay the console and harvest clicks),
# no Referer carrying a URL, no MIME sniffing; the page itself may only talk to this server.
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'",
                    "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
                    "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Resource-Policy": "same-origin"}
UNSPECIFIED_HOSTS = ("0.0.0.0", "::", "")
# The request headers the server reads: each must be UTF-8 text (`_not_utf8`), or the request is a 400.
READ_HEADERS = ("Host", "Origin", "Authorization", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-Dest")
_SURROGATE = re.compile("[\ud800-\udfff]")  # what aiohttp's surrogateescape makes of bytes that are not UTF-8


class BadMessage(ValueError):
    """A websocket message from a tab that is not one the page sends: the tab is closed with this reason."""


@dataclass(frozen=True)
class Command:
    """One checked message from the page: `kind` is stdin, resize, ping, focus or blur."""

    kind: str
    text: str = ""  # stdin: the keys; ping: the token to echo
    width: int = 0
    height: int = 0


def _no_constants(name: str) -> Any:
    raise BadMessage(f"{name} is not JSON")


def parse_message(data: str) -> Command:
    """A page message (`["stdin", "…"]`, `["resize", {"width": w, "height": h}]`, `["ping", "…"]`,
    `["focus"]`, `["blur"]`), strictly: strict JSON, the exact shape, a size `terminal_size` accepts."""
    try:
        envelope = json.loads(data, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise BadMessage(f"not JSON ({str(exc)[:60]})") from None
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        raise BadMessage("not a [type, …] list")
    kind, args = envelope[0], envelope[1:]
    if kind == "stdin" and len(args) == 1 and isinstance(args[0], str):
        return Command("stdin", text=args[0])
    if kind == "ping" and len(args) == 1 and isinstance(args[0], str) and len(args[0]) <= 64:
        return Command("ping", text=args[0])
    if kind in ("focus", "blur") and not args:
        return Command(kind)
    if kind == "resize" and len(args) == 1 and isinstance(args[0], dict) and set(args[0]) == {"width", "height"}:
        try:
            width, height = terminal_size(args[0]["width"], args[0]["height"])
        except ValueError as exc:
            raise BadMessage(f"bad resize: {exc}") from None
        return Command("resize", width=width, height=height)
    raise BadMessage(f"unexpected {kind[:20]!r} message")


class Relay:
    """Where a console's output goes: kept in order until a tab takes the console, then that tab's websocket.

    A console started for a page load (`ConsoleServer._prestart`) begins drawing before its tab's websocket
    exists; what it wrote is replayed to the tab first, so the tab sees the whole stream (the alternate screen,
    mouse modes, the first frame) exactly as if it had been there. Output past PRESTART_BUFFER makes the
    console unusable for a tab (`overflowed`), not the server's memory larger.
    """

    def __init__(self) -> None:
        self.kept: list[bytes | str] = []
        self.size = 0
        self.overflowed = False
        self.closed = False  # the console's output ended (or it asked to close) before any tab took it
        self.websocket: web.WebSocketResponse | None = None

    async def write_bytes(self, data: bytes) -> None:
        if self.websocket is not None:
            await self.websocket.send_bytes(data)
        else:
            self._keep(data)

    async def write_str(self, text: str) -> None:
        if self.websocket is not None:
            await self.websocket.send_str(text)
        else:
            self._keep(text)

    async def close(self) -> None:
        if self.websocket is not None:
            await self.websocket.close()
        else:
            self.closed = True

    def _keep(self, item: bytes | str) -> None:
        self.size += len(item)
        if self.size > PRESTART_BUFFER:
            self.overflowed = True
            self.kept.clear()
        elif not self.overflowed:
            self.kept.append(item)

    async def attach(self, websocket: web.WebSocketResponse) -> None:
        """Replay what was kept to `websocket`, then send everything there as it comes."""
        while self.kept:
            item = self.kept.pop(0)
            if isinstance(item, bytes):
                await websocket.send_bytes(item)
            else:
                await websocket.send_str(item)
        self.websocket = websocket


class ConsoleProcess(AppService):
    """One console process behind one browser tab, started with the environment we chose, not a copy of ours."""

    def __init__(self, command: str, *, environment: Mapping[str, str], sized_by_tab: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self._environment = dict(environment)
        # Started before its tab exists (`ConsoleServer._prestart`): it waits for the tab's size before it
        # draws (console.web.driver), and the first thing it is sent is that size.
        self.sized_by_tab = sized_by_tab
        self.drawn = asyncio.Event()  # the console has sent a screen: it is up and reads its stdin
        self.ending = asyncio.Event()  # its app has ended by itself (q, a crash): the process is on its way out
        self.size = (0, 0)  # the terminal size it was started with, or last told

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        # textual-serve starts from os.environ.copy(): keep only the keys it adds, on top of our allowlist.
        served = super()._build_environment(width=width, height=height)
        keep = SERVE_ENV_NAMES | (DEBUG_ENV_NAMES if self.debug else frozenset())
        ours = {"TEXTUAL_DRIVER": web_driver.DRIVER} | ({web_driver.SIZE_ENV: "wait"} if self.sized_by_tab else {})
        return self._environment | {name: value for name, value in served.items() if name in keep} | ours

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        """Started, and not yet exited."""
        return self._process is not None and self._process.returncode is None

    async def start(self, width: int, height: int) -> None:
        self.size = (width, height)
        await super().start(width, height)

    async def set_terminal_size(self, width: int, height: int) -> None:
        self.size = (width, height)
        await super().set_terminal_size(width, height)

    async def on_data(self, payload: bytes) -> None:
        self.drawn.set()
        await super().on_data(payload)

    async def on_meta(self, data: bytes) -> None:
        with contextlib.suppress(ValueError, AttributeError):
            if json.loads(data).get("type") == "exit":
                self.ending.set()
        await super().on_meta(data)

    async def run(self) -> None:
        """Relay the console's output (textual-serve's framing); log its stderr, never print it.

        textual-serve's own `run` writes a console's stderr to the server's stdout. When the output ends by
        itself (`q`, a crash), the tab's websocket is closed too, so the page says "session ended" instead of
        freezing (a crash sends no `exit` packet).
        """
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        stderr = asyncio.create_task(self._log_stderr(process.stderr))
        stdout = process.stdout
        try:
            ready = False
            for _ in range(10):  # the prelude line says it is a Textual app on the web driver
                line = await stdout.readline()
                if not line:
                    break
                if line == b"__GANGLION__\n":
                    ready = True
                    break
            if not ready:
                log.error("console pid %s did not start (see its lines above)", self.pid)
            while ready:
                kind = await stdout.readexactly(1)
                size = int.from_bytes(await stdout.readexactly(4), "big")
                payload = await stdout.readexactly(size)
                if kind == b"D":
                    await self.on_data(payload)
                elif kind == b"M":
                    await self.on_meta(payload)
                elif kind == b"P":
                    await self.on_packed(payload)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(stderr, EXIT_WAIT)
            with contextlib.suppress(Exception):
                await self.remote_close()

    async def _log_stderr(self, stream: asyncio.StreamReader) -> None:
        """Each line the console writes to stderr becomes one server log line, up to STDERR_LINES of them."""
        logged = dropped = 0
        pending = b""
        while True:
            chunk = await stream.read(4096)
            pending += chunk
            lines = pending.split(b"\n")
            pending = lines.pop() if chunk else b""
            if len(pending) > STDERR_LINE_CHARS:  # a line without an end: log what fits, drop the rest
                lines.append(pending)
                pending = b""
            for raw in lines:
                text = raw.decode("utf-8", "replace").rstrip()
                if not text:
                    continue
                if logged < STDERR_LINES:
                    log.warning("console pid %s: %s", self.pid, text[:STDERR_LINE_CHARS])
                    logged += 1
                else:
                    dropped += 1
            if not chunk:
                break
        if dropped:
            log.warning("console pid %s: %d more stderr line(s) not logged", self.pid, dropped)

    async def shut_down(self, grace: float = STOP_GRACE) -> int | None:
        """End the console; returns its exit status.

        A console that has drawn is asked to quit (it closes its session, the trace is complete) and killed
        if it has not within `grace`; its stdin is closed after the request, as a console whose app has
        ended by itself (a crash) otherwise waits for more input forever. One that has not drawn yet (the
        tab closed while it was starting) does not read the quit request yet: it gets SIGTERM at once and
        SIGKILL after START_GRACE, so quick open/close cycles do not each hold a slot for seconds. Waits for
        the exit before any kill even when the output has ended: `Process.kill()` polls (reaps) a process
        that has just exited, and asyncio's child watcher then reports exit status 255 for it.
        """
        process = self._process
        if process is None:
            return None
        if self.ending.is_set():
            grace = max(grace, ENDING_GRACE)  # not hung: finishing (writing a crash report takes a while)
        if not self.drawn.is_set():
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            grace = START_GRACE
        else:
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
            await self.send_meta({"type": "quit"})
        if process.stdin is not None:  # then end of input: a console whose app has already ended (a crash)
            process.stdin.close()  # waits for its stdin to close before it exits
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._task, grace)  # the output has ended
            self._task = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), EXIT_WAIT)
        if process.returncode is None:
            log.warning("console pid %s did not quit within %.0f s: killing it", process.pid, grace + EXIT_WAIT)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), STOP_GRACE)
        return process.returncode


class HttpProtocol(web.RequestHandler):
    """aiohttp's HTTP/1 protocol, with its own error answers made ours.

    A request aiohttp cannot parse (a bad request line, method, header or header size) or a handler that
    raised never reaches the application, so no middleware sees it: aiohttp answers from
    `RequestHandler.handle_error`, a bare text response without our headers, and logs the parser's exception
    with a traceback. Here that answer is our page with SECURITY_HEADERS, `Connection: close` (aiohttp closes
    the connection after it, as before), and the log gets one line (a traceback only for a 500: our bug).
    """

    def handle_error(self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:  # a response has started: nothing sane can be sent any more
            raise ConnectionError("the response was already started; cannot send an error page") from exc
        if status >= 500:
            log.error("error answering %s %s from %s", request.method, request.path, request.remote, exc_info=exc)
            title, text = "Internal error", "The console server failed to answer this request (see its log)."
        else:
            reason = next(iter((message or str(exc or "")).splitlines()), "")[:200]
            log.warning("refused a malformed request from %s: %d (%s)", request.remote, status, reason)
            title, text = "Bad request", "The server could not read this request."
        response = _page(status, title, text)
        response.force_close()
        return response


class _HttpServer(web.Server):
    """aiohttp's connection factory, making `HttpProtocol`s."""

    def __call__(self) -> web.RequestHandler:
        return HttpProtocol(self, loop=self._loop, **self._kwargs)


class _AppRunner(web.AppRunner):
    """`web.AppRunner` whose connections speak `HttpProtocol`."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _HttpServer  # the same object and fields, with our `__call__`
        return server


class ConsoleServer(Server):
    """textual-serve's server, locked down: token, Host and Origin checks, limits, session cap, clean child env."""

    def __init__(self, config: ServeConfig) -> None:
        super().__init__(config.command, host=config.host, port=config.port, title=TITLE,
                         public_url=config.public_url, templates_path=TEMPLATES)
        self.config = config
        self.console = Console(stderr=True, soft_wrap=True)  # stdout is not ours: the URL and logs go to stderr
        self.cookie_name = f"ledgeragent_token_{config.port}"  # cookies ignore ports: one name per server
        self.origins = allowed_origins(config.port, config.public_url)
        self._used = 0  # slots claimed: live console processes, including those being stopped
        self._stopping = 0  # of those, the ones whose tab has gone (they free their slot within STOP_GRACE)
        self._slots = asyncio.Condition()
        self._tabs: dict[ConsoleProcess, web.WebSocketResponse] = {}
        self._prestarted: list[tuple[ConsoleProcess, Relay]] = []  # started for a page, no tab has taken them yet
        self._background: set[asyncio.Task[None]] = set()
        self._prestarting = False  # a console for a page load is being started
        self._desk: DeskProcess | None = None  # --supervise: the one headless desk every tab joins
        self._desk_socket: Path | None = None
        self._started_for: dict[ConsoleProcess, str | None] = {}  # the operator a pre-started console is for
        self._operators: dict[ConsoleProcess, str] = {}  # desk tabs: who each console acts as
        # At a desk: the token each operator presented (theirs, or the shared one), which their tabs present to
        # the desk's socket in turn: the desk host knows the same operators (`_desk_operators`).
        self._tokens: dict[str, str] = {}
        # Operators' tokens are checked at a bounded cost: a flood of wrong ones is slowed down per client (429)
        # and never runs more than a couple of scrypt checks at once, and a known token costs no check.
        self._checks = TokenChecks(config.operators) if config.operators is not None else None

    # ------------------------------------------------------------------------------------------- life

    def initialize_logging(self) -> None:
        """Plain timestamped lines on stderr (greppable, never wrapped), instead of textual-serve's rich table."""
        logging.basicConfig(level=logging.DEBUG if self.debug else logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")

    def serve(self, debug: bool = False) -> None:
        """Serve until SIGINT/SIGTERM, then end every tab's console (their traces stay on disk)."""
        self.debug = debug
        self.initialize_logging()
        asyncio.run(self.serve_until_stopped())

    async def serve_until_stopped(self) -> None:
        runner = await self.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, stop.set)
        try:
            await stop.wait()
        finally:
            log.info("shutting down: ending %d console(s); their traces stay under %s", len(self._tabs),
                     self.config.home / "sessions")
            await runner.cleanup()

    async def start(self) -> web.AppRunner:
        """Bind and serve in the running loop; the caller stops with `await runner.cleanup()`.

        Our own runner rather than textual-serve's `web.run_app`: it lets the port be 0 (any free one, for
        tests), prints the real address, keeps aiohttp's access log off (it would log `?token=`), and closes
        a connection that has not sent a whole request, or has idled, for IDLE_TIMEOUT (aiohttp's default
        keeps an idle connection an hour: a few hundred half-open connections would exhaust the server), and
        answers what aiohttp's parser refuses with our headers (`HttpProtocol`).
        """
        if self.config.desk is not None and self._desk is None:
            desk = self.config.desk
            self._desk = DeskProcess(desk.host, desk.environment, log=log.info, operators=self._desk_operators())
            self._desk_socket = await self._desk.start()
        runner = _AppRunner(await self._make_app(), handle_signals=False, access_log=None,
                               shutdown_timeout=2 * STOP_GRACE, keepalive_timeout=IDLE_TIMEOUT)
        try:
            await runner.setup()
            await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            if self._desk is not None:  # no server, so no desk: never leave the host child behind
                await self._desk.stop()
                self._desk = None
            raise
        self.port = int(runner.addresses[0][1])
        self.cookie_name = f"ledgeragent_token_{self.port}"
        self.public_url = self.config.public_url or f"http://{_url_host(self.host)}:{self.port}"
        extra = [] if is_loopback(self.host) or self.host in UNSPECIFIED_HOSTS else [self.public_url]
        self.origins = allowed_origins(self.port, self.config.public_url, extra)
        self._announce()
        return runner

    def _desk_operators(self) -> str | None:
        """Who the desk host is to know, as an --operators-file: the operators and their tokens' hashes (with
        the shared token: its one operator); None without a token (then nothing here knows anyone either)."""
        config = self.config
        if config.operators is not None:
            return config.operators.text()
        if config.token is not None:
            return Operators.from_tokens({config.operator: config.token}).text()
        return None

    def _announce(self) -> None:
        """What the server is, where, and who can reach it: each line true for this configuration."""
        url = self.open_url()
        if self.host in UNSPECIFIED_HOSTS and self.config.public_url is None:
            url = url.replace(_url_host(self.host), socket.gethostname(), 1)
        out = self.console
        out.print(f"[bold]{TITLE}[/] in the browser: up to {self.config.max_sessions} tab(s) at once, "
                  f"one console process each", highlight=False)
        bound = f"[{self.host}]" if ":" in self.host else self.host
        everywhere = " (every interface)" if self.host in UNSPECIFIED_HOSTS else ""
        out.print(f"listening: http://{bound}:{self.port}{everywhere}", highlight=False)
        config = self.config
        if config.shown_tokens:  # --operators: each one's address, with their token, this once
            for name, token in config.shown_tokens.items():
                out.print(f"open as {escape(name)}: [bold cyan]{escape(self.open_url(token))}[/]", highlight=False)
        elif config.operators is not None:
            out.print(f"open: [bold cyan]{escape(url)}[/] with ?token=<your token>", highlight=False)
        else:
            out.print(f"open: [bold cyan]{escape(url)}[/]", highlight=False)
        out.print(f"session folders: {escape(str(config.home / 'sessions'))}", highlight=False)
        if config.operators is not None:
            out.print(f"supervision desk: operators {escape(', '.join(config.operators.names))}; each tab is the "
                      "operator whose token it presents (give each their own address, keep them apart)",
                      highlight=False)
        elif config.desk is not None:
            out.print(f"supervision desk: every tab is operator {escape(config.operator)} (the "
                      f"{'access token' if config.token else 'address'} is one identity: give each person their "
                      "own with --operators)", highlight=False)
        for line in self._reach():
            out.print(line, highlight=False)
        if self.config.live_model:
            out.print("live model: each console gets OPENAI_API_KEY; nothing else from this environment",
                      highlight=False)
        if self.config.desk is not None and self.config.desk.live_model:
            out.print("live model: the desk host gets OPENAI_API_KEY, the tabs (operators) never; nothing else "
                      "from this environment", highlight=False)
        out.print("Ctrl+C stops the server and every console", style="dim", highlight=False)

    def _reach(self) -> list[str]:
        """Who can reach the consoles, and what stops the others (the lines `_announce` prints)."""
        config = self.config
        public = config.public_url
        proxied = public is not None and not is_loopback(urlsplit(public).hostname or "")
        lines = []
        # What a request must present: the shared token, or (--operators / --operators-file) an operator's own.
        lock = "an operator's own token" if config.operators is not None else "the token in the URL above"
        if not config.authenticated:
            lines.append("[yellow]no token (--no-token): every user and program on this machine can open a "
                         "console; web pages cannot (their Origin is refused)[/]")
        elif proxied:
            lines.append(f"reachable through your proxy at {escape(str(public))}: anyone who can reach it gets "
                         f"an access-token page; {lock} is the lock")
        elif is_loopback(self.host):
            lines.append(f"only this machine can connect (loopback), and only with {lock}")
        else:
            lines.append(f"[yellow]reachable from the network on {escape(self.host)}: anyone who can reach "
                         f"this address gets an access-token page; {lock} is the lock[/]")
        if config.operators is not None:
            lines.append(f"wrong tokens: {FAILURES} tries per address, then one every {REFILL_S:g} s (429 with "
                         "Retry-After); a known operator is never slowed down")
        if config.token_source == "generated":
            lines.append(f"the token was made for this run: set ${TOKEN_ENV} to keep one across restarts")
        scheme = urlsplit(public).scheme if public else "http"
        if config.authenticated and scheme != "https" and (proxied or not is_loopback(self.host)):
            lines.append("[yellow]plain HTTP: the token and every keystroke cross the network unencrypted; put a "
                         "TLS proxy in front (docs/browser.md)[/]")
        return lines

    def open_url(self, token: str | None = None) -> str:
        """The URL to open in a browser, with the token (the shared one, or `token`) when there is one."""
        base = self.public_url.rstrip("/") + "/"
        token = token or self.config.token
        return base + (f"?{urlencode({'token': token})}" if token else "")

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: textual-serve prints a logo and the raw command here; `_announce` says what matters."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Close every tab (each handler then ends its console), and wait for the consoles to be gone."""
        for websocket in list(self._tabs.values()):
            with contextlib.suppress(Exception):
                await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"the console server is shutting down")
        while self._prestarted:
            process, _ = self._prestarted.pop()
            await self._end_unclaimed(process, "not taken before the server stopped")
        async with self._slots:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slots.wait_for(lambda: self._used == 0), 2 * STOP_GRACE)
        if self._desk is not None:  # after the tabs: their operators' claims are released as they go
            status = await self._desk.stop()
            log.info("desk host ended (exit %s); its sessions' traces stay under %s", status,
                     self.config.home / "sessions")
            self._desk = None

    # ------------------------------------------------------------------------------------------- http

    async def _make_app(self) -> web.Application:
        """textual-serve's routes, behind our guard, and `/static/` without a directory listing."""
        app = web.Application(middlewares=[self._guard()])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    def _guard(self) -> Middleware:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            refusal = self._refusal(request)
            if refusal is not None:
                return refusal
            who = await self._authenticate(request)
            if isinstance(who, web.Response):
                return who
            request["operator"] = who
            if self.config.authenticated and request.query.get("token") and request.path == "/":
                return self._keep_token_in_cookie(request)
            try:
                response = await handler(request)
            except web.HTTPException as exc:  # 404, 405…: our page, with the headers, not aiohttp's bare text
                if exc.status < 400:
                    exc.headers.update(SECURITY_HEADERS)
                    raise
                return _page(exc.status, exc.reason, "There is nothing here: open the console's address.")
            if not response.prepared:  # a websocket has been answered already (with the headers)
                response.headers.update(SECURITY_HEADERS)
            return response

        return guard

    def _refusal(self, request: web.Request) -> web.Response | None:
        """Why this request may not go on (a ready error page), or None to let it through."""
        unreadable = _not_utf8(request, self.cookie_name)
        if unreadable is not None:
            return self._refuse(request, 400, "Bad request", f"The request's {html.escape(unreadable)} is not "
                                "UTF-8 text. If it is this console's cookie, open the address that "
                                "<code>ledgeragent serve</code> printed again.", detail=f"{unreadable} is not UTF-8")
        host = host_name(request.headers.get("Host", ""))  # not `request.host`: without a header that is ours
        if not host:
            return self._refuse(request, 400, "Bad request", "The request has no <code>Host</code> header.")
        if not host_allowed(host, self.host, self.config.public_url):
            # Bound to loopback, so reached by a loopback name: a foreign Host header is DNS rebinding.
            return self._refuse(request, 403, "Wrong address", "This console only answers to localhost / "
                                "127.0.0.1 (and its --public-url). Start the server with --public-url to reach it "
                                "through a proxy by another name.")
        if request.path == "/ws" and not origin_allowed(request.headers.get("Origin"), self.origins):
            # Another page (another port, a sandboxed frame, a file) driving the console from this browser.
            return self._refuse(request, 403, "Forbidden", "The console only accepts its own page.",
                                detail=f"Origin {request.headers.get('Origin', '')[:100]!r} is not this server's")
        if request.path == "/ws":
            try:
                _query_size(request)
            except ValueError as exc:
                return self._refuse(request, 400, "Bad terminal size", html.escape(str(exc)), detail=str(exc))
        if self.config.desk is not None and "operator" in request.query:
            # Who a tab is comes from its token, never from what its address says.
            return self._refuse(request, 400, "Operators are known by their token",
                                "An address cannot name its operator: open the address printed for you (it ends "
                                "in <code>?token=…</code>); the desk knows whose token it is.",
                                detail=f"operator {request.query['operator'][:40]!r} in the address")
        return None

    async def _authenticate(self, request: web.Request) -> str | web.Response:
        """Who presents this request (a refusal page if nobody the server knows): at a desk with --operators,
        the operator whose token it is; otherwise, with the shared token or without a token, the one identity
        `config.operator` ("" for a console without a desk, where it does not matter)."""
        config = self.config
        if not config.authenticated:
            return config.operator
        presented = request.query.get("token") or request.cookies.get(self.cookie_name) or _bearer(request)
        who: str | None = None
        if presented is not None and self._checks is not None:
            try:
                who = await self._checks.identify(presented, request.remote or "")
            except TooManyTries as exc:
                refused = self._refuse(request, 429, "Too many tries",
                                       f"{html.escape(exc.message[:1].upper() + exc.message[1:])}. The tabs already "
                                       "open keep working.", detail=exc.message)
                refused.headers["Retry-After"] = str(exc.seconds)
                return refused
        elif presented is not None and config.token is not None:
            who = config.operator if token_matches(presented, config.token) else None
        if who is not None and presented is not None and config.desk is not None:
            self._tokens[who] = presented
        if who is None:
            return self._refuse(request, 401, "Access token needed",
                                "Open the address that <code>ledgeragent serve</code> printed (it ends in "
                                "<code>?token=…</code>); your browser then keeps the token in a cookie.")
        return who

    def _refuse(self, request: web.Request, status: int, title: str, message: str, detail: str = "") -> web.Response:
        log.warning("refused %s %s from %s: %d %s%s", request.method, request.path, request.remote, status, title,
                    f" ({detail})" if detail else "")
        return _page(status, title, message)

    def _keep_token_in_cookie(self, request: web.Request) -> web.Response:
        """Move a valid `?token=` into a cookie and out of the address bar (and the browser's history)."""
        rest = [(key, value) for key, value in request.query.items() if key != "token"]
        response = web.Response(status=303, headers={"Location": "./" + (f"?{urlencode(rest)}" if rest else ""),
                                                     "Cache-Control": "no-store", **SECURITY_HEADERS})
        https = request.secure or self.public_url.startswith("https:")
        response.set_cookie(self.cookie_name, request.query["token"], path="/", httponly=True, samesite="Strict",
                            secure=https)  # checked by `_authenticate`: the shared token, or an operator's
        return response

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page. Served even when every slot is taken: the websocket decides, and says why in the page.

        (A page-level "all in use" would refuse reloads: a browser asks for the new page while the old one,
        and so its websocket and console, are still alive, and lets go of them only once the answer arrives.)
        URLs are relative unless --public-url is set, and the page derives the websocket URL (ws: or wss:)
        from its own address, so it works behind a TLS proxy or on 0.0.0.0 (textual-serve would bake in
        `http://0.0.0.0:8000`).
        """
        base = self.config.public_url
        websocket_url = ""
        if base:
            websocket_url = ("wss:" if base.startswith("https:") else "ws:") + base.split(":", 1)[1] + "/ws"
        font_size = min(max(to_int(request.query.get("fontsize", "16"), 16), 6), 64)
        context = {
            "font_size": font_size,
            "app_websocket_url": websocket_url,
            "config": {"static": {"url": f"{base}/static/" if base else "static/"}},
            "application": {"name": TITLE},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        unlike = _not_a_navigation(request)
        if unlike is None:
            self._in_background(self._prestart(self._operator_key(request)))
        else:
            log.info("served the page without pre-starting a console: not a navigation of this page (%s)", unlike)
        return response

    # ------------------------------------------------------------------------------------ pre-started consoles

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _operator_key(self, request: web.Request) -> str | None:
        """At a desk, the operator the request's token belongs to (`_authenticate`); None anywhere else."""
        return str(request["operator"]) if self.config.desk is not None else None

    def _console(self, key: str | None, **kwargs: Any) -> ConsoleProcess:
        """A console process for a tab; at a desk, one that joins it as operator `key`, with the token that
        operator presented in its environment (never on its command line): the desk host checks it too."""
        command = self.command
        environment = dict(self.config.environment)
        operator = None
        if self.config.desk is not None and self._desk_socket is not None and key is not None:
            operator = key
            command = self.config.desk.tab_command(self._desk_socket, operator)
            if operator in self._tokens:
                environment[DESK_TOKEN_ENV] = self._tokens[operator]
        process = ConsoleProcess(command, environment=environment, download_manager=self.download_manager,
                                 debug=self.debug, **kwargs)
        if operator is not None:
            self._operators[process] = operator
        self._started_for[process] = key
        return process

    def _forget(self, process: ConsoleProcess) -> None:
        self._started_for.pop(process, None)
        self._operators.pop(process, None)

    async def _prestart(self, key: str | None = None) -> None:
        """Start a console for the page just served, so that it is starting while the browser loads the page.

        Most of a page load is the console's own start (a Python process importing Textual and the domain),
        which used to begin only when the page's websocket arrived, after the page, its scripts and styles had
        loaded. The first websocket that comes takes it (`_adopt`: all consoles run the same command, so any
        tab may take any of them); one that no websocket takes within PRESTART_TTL is ended. At most one waits
        at a time, and only in a free slot: a page load never takes a slot an open tab could get.
        """
        async with self._slots:
            if self._prestarted or self._prestarting or self._used >= self.config.max_sessions:
                return
            self._used += 1
            self._prestarting = True
        relay = Relay()
        process = self._console(key, write_bytes=relay.write_bytes, write_str=relay.write_str, close=relay.close,
                                sized_by_tab=True)
        try:
            await process.start(*PRESTART_SIZE)  # a placeholder: it waits for its tab's size to draw
        except Exception:
            log.exception("could not pre-start a console")
            self._forget(process)
            await self._tab_gone()
            await self._release_slot()
            return
        finally:
            self._prestarting = False
        entry = (process, relay)
        self._prestarted.append(entry)  # only now: a tab takes a running process, never one half started
        log.info("pre-started console pid %s for a page load (%d/%d)", process.pid, self._used,
                 self.config.max_sessions)
        await asyncio.sleep(PRESTART_TTL)
        if entry in self._prestarted:
            self._prestarted.remove(entry)
            await self._end_unclaimed(process, f"not taken by a tab within {PRESTART_TTL:.0f} s")

    def _adopt(self, key: str | None = None) -> tuple[ConsoleProcess, Relay] | None:
        """A pre-started console for a new tab, if one is waiting and still usable; unusable ones are ended.

        At a desk only one started for the same operator (the one the page's token belongs to): it already acts
        as that operator, with their token.
        """
        for entry in list(self._prestarted):
            process, relay = entry
            if not (relay.closed or relay.overflowed or process.ending.is_set()) and process.running:
                if self._started_for.get(process) == key:
                    self._prestarted.remove(entry)
                    return entry
                continue
            self._prestarted.remove(entry)
            self._in_background(self._end_unclaimed(process, "ended before a tab took it"))
        return None

    async def _end_unclaimed(self, process: ConsoleProcess, why: str) -> None:
        """End a pre-started console no tab took, and free its slot."""
        await self._tab_gone()
        try:
            status = await process.shut_down()
            log.info("pre-started console pid %s %s: ended (exit %s)", process.pid, why, status)
        finally:
            self._forget(process)
            await self._release_slot()

    # -------------------------------------------------------------------------------------- websocket

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: claim a slot, run one console process, relay until either side closes, end the process."""
        width, height = _query_size(request)  # checked by `_refusal`
        websocket = web.WebSocketResponse(heartbeat=HEARTBEAT, max_msg_size=MAX_MESSAGE)
        websocket.headers.update(SECURITY_HEADERS)
        await websocket.prepare(request)
        key = self._operator_key(request)
        adopted = self._adopt(key)
        if adopted is None and not await self._claim_slot():
            await self._refuse_tab(websocket)
            return websocket
        if adopted is None:
            process = self._console(key, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                    close=websocket.close)
        else:
            process = adopted[0]
        self._tabs[process] = websocket
        try:
            if adopted is None:
                await process.start(width, height)
            else:  # started for this page (or another one): the tab's size first (it waits for it to draw)
                await process.set_terminal_size(width, height)
                await adopted[1].attach(websocket)
            operator = self._operators.get(process)
            log.info("tab opened from %s: console pid %s%s%s (%d/%d)", request.remote, process.pid,
                     " (pre-started)" if adopted else "", f" as operator {operator}" if operator else "", self._used,
                     self.config.max_sessions)
            await self._process_messages(websocket, process)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception:
            log.exception("console pid %s failed", process.pid)
        finally:
            await self._tab_gone()
            try:
                status = await process.shut_down()
                log.info("tab closed: console pid %s ended (exit %s); its trace stays in its session folder",
                         process.pid, status)
            finally:
                del self._tabs[process]
                self._forget(process)
                await self._release_slot()
        return websocket

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """Relay the page's messages to the console until the tab closes; a bad one closes the tab, with why.

        textual-serve's version asserts on the shape and passes a resize of any type or size on, which
        crashed the console ("abc" columns) or blew it up (3000 x 3000). Oversized messages are refused by
        aiohttp itself (`max_msg_size`: close code 1009).
        """
        async for message in websocket:
            if message.type == WSMsgType.ERROR:  # e.g. a message over MAX_MESSAGE: aiohttp closes the socket
                log.warning("closed a tab (console pid %s): %s", getattr(app_service, "pid", None),
                            str(message.data)[:200])
                return
            if message.type != WSMsgType.TEXT:
                await self._close_bad_tab(websocket, app_service, "binary messages are not accepted")
                return
            try:
                command = parse_message(message.data)
            except BadMessage as exc:
                await self._close_bad_tab(websocket, app_service, str(exc))
                return
            if command.kind == "stdin":
                await app_service.send_bytes(command.text.encode("utf-8"))
            elif command.kind == "resize":
                await app_service.set_terminal_size(command.width, command.height)
            elif command.kind == "ping":
                await websocket.send_json(["pong", command.text])
            elif command.kind == "blur":
                await app_service.blur()
            elif command.kind == "focus":
                await app_service.focus()

    async def _close_bad_tab(self, websocket: web.WebSocketResponse, app_service: AppService, reason: str) -> None:
        log.warning("closed a tab (console pid %s): %s", getattr(app_service, "pid", None), reason)
        message = f"The console closed: the page sent a bad message ({reason})."
        await websocket.close(code=WSCloseCode.POLICY_VIOLATION, message=message.encode()[:123])


    def _has_room(self) -> bool:
        """A slot is free, or will be once a console whose tab has gone has ended."""
        return self._used - self._stopping < self.config.max_sessions

    async def _room(self, timeout: float) -> bool:
        """`_has_room`, waiting up to `timeout` for it (a tab's websocket may close just after another opens)."""
        async with self._slots:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slots.wait_for(self._has_room), timeout)
            return self._has_room()

    async def _claim_slot(self) -> bool:
        """A free slot, or False: waits for a closing tab's console to end (a reload), never for a live one."""
        if not await self._room(ROOM_WAIT):
            return False
        async with self._slots:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slots.wait_for(lambda: self._used < self.config.max_sessions),
                                       STOP_GRACE + EXIT_WAIT)
            if self._used >= self.config.max_sessions:
                return False
            self._used += 1
            return True

    async def _tab_gone(self) -> None:
        """The tab has gone; its console is being ended (a waiting tab may count on its slot)."""
        async with self._slots:
            self._stopping += 1
            self._slots.notify_all()

    async def _release_slot(self) -> None:
        """The tab's console has ended: its slot is free."""
        async with self._slots:
            self._stopping -= 1
            self._used -= 1
            self._slots.notify_all()

    async def _refuse_tab(self, websocket: web.WebSocketResponse) -> None:
        """Say it in the terminal and in the close frame (our page shows the reason over a Restart button)."""
        limit = self.config.max_sessions
        log.warning("refused a tab: %s", _all_in_use(limit).lower())
        text = (f"\x1b[2J\x1b[H\x1b[1m{_all_in_use(limit)}.\x1b[0m\r\n"
                "Close another console tab, then press Restart.\r\n")
        with contextlib.suppress(ConnectionError):
            await websocket.send_bytes(text.encode())
        reason = f"{_all_in_use(limit)}: close another console tab, then press Restart."
        await websocket.close(code=WSCloseCode.TRY_AGAIN_LATER, message=reason.encode()[:123])


def _all_in_use(limit: int) -> str:
    return "The only console session is in use" if limit == 1 else f"All {limit} console sessions are in use"


def _query_size(request: web.Request) -> tuple[int, int]:
    """The first terminal size, from `/ws?width=…&height=…` (clamped; ValueError if not positive integers)."""
    return terminal_size(request.query.get("width", "80"), request.query.get("height", "24"))


def _not_utf8(request: web.Request, cookie_name: str) -> str | None:
    """What of the request the server reads is not UTF-8 text (None when all of it is).

    aiohttp decodes header bytes with `surrogateescape`, so bytes that are not UTF-8 (Latin-1, an encoded lone
    surrogate) come through as lone surrogates, which no comparison or log line may meet (comparing such a
    cookie with the token was a UnicodeEncodeError, a 500). Only what the server reads is checked: the
    headers in READ_HEADERS, its own cookie, the address's query. Other headers and other services'
    cookies (any service on this host can set a cookie for it) are never read, so they cannot lock anyone out.
    """
    for name in READ_HEADERS:
        if any(_SURROGATE.search(value) for value in request.headers.getall(name, ())):
            return f"{name} header"
    if _SURROGATE.search(request.cookies.get(cookie_name, "")):
        return "cookie"
    try:
        parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        return "address"
    return None


def _not_a_navigation(request: web.Request) -> str | None:
    """None for a browser's top-level navigation of this server's own page; else what it is instead.

    Only such a request gets a console started for it before its websocket comes (`_prestart`). A page on
    another port of this host is same-site (cookies, SameSite=Strict ones too, do not tell ports apart), so
    its `fetch(…, {mode: "no-cors", credentials: "include"})` comes with the operator's cookie; the browser
    marks it `Sec-Fetch-Mode: no-cors`, `Sec-Fetch-Site: same-site`, which no page script can change. A
    request without the headers (a program, a browser too old to send them) starts nothing either: its
    websocket, if one comes, starts its own console.
    """
    mode, site, dest = (request.headers.get(name, "") for name in ("Sec-Fetch-Mode", "Sec-Fetch-Site",
                                                                     "Sec-Fetch-Dest"))
    if mode == "navigate" and dest == "document" and site in ("same-origin", "none"):
        return None
    return ", ".join(f"{name} {value[:20]!r}" if value else f"no {name}"
                     for name, value in (("Sec-Fetch-Mode", mode), ("Sec-Fetch-Site", site), ("Sec-Fetch-Dest", dest)))


def _bearer(request: web.Request) -> str | None:
    """`Authorization: Bearer <token>`, for scripts and probes (browsers use the cookie)."""
    return bearer_token(request.headers.get("Authorization"))


def _url_host(host: str) -> str:
    if host in UNSPECIFIED_HOSTS:
        return "127.0.0.1" if host != "::" else "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _page(status: int, title: str, message: str) -> web.Response:
    """A small self-contained page in the console's colours (no scripts, no third-party requests)."""
    body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · {TITLE}</title>
<style>body{{background:#0c181f;color:#e8eef2;font-family:"Roboto Mono",Menlo,monospace;display:flex;
align-items:center;justify-content:center;height:100vh;margin:0}}main{{max-width:40em;background:#12232d;
padding:2em 2.5em}}h1{{font-size:1.2em}}code{{color:#8fd3ff}}</style></head>
<body><main><h1>{html.escape(title)}</h1><p>{message}</p><p><small>{TITLE} · HTTP {status}</small></p></main>
</body></html>"""
    headers = {"Cache-Control": "no-store", **SECURITY_HEADERS}
    return web.Response(status=status, text=body, content_type="text/html", headers=headers)
