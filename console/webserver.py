"""The web server behind `ledgeragent serve`: textual-serve's `Server`, with a guard, a session cap, a clean env.

textual-serve 1.1.3 has no hook for any of this, so this module subclasses it and relies on parts that are not
public API: `Server._make_app` (to add the middleware), `Server._process_messages`, the `AppService` constructor
and `_build_environment`, and `AppService._process`. pyproject pins textual-serve exactly for that reason:
re-read its server.py and app_service.py before bumping it.

Per tab: the page (`/`) loads xterm.js, which opens `/ws`; `handle_websocket` claims one of `max_sessions`
slots, starts one console process (`ConsoleProcess`) and relays keys and screen bytes until either side
closes. Closing the tab asks the console to quit and kills it if it does not within `STOP_GRACE`; its session
folder (trace.jsonl, db.sqlite) stays on disk, since the console writes the trace as it goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import logging
import signal
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp_jinja2
from aiohttp import WSCloseCode, web
from aiohttp.typedefs import Handler, Middleware
from rich.console import Console
from rich.markup import escape
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from console.serve import ServeConfig, is_loopback

log = logging.getLogger("ledgeragent.serve")

TITLE = "LedgerAgent Console"
TEMPLATES = Path(__file__).with_name("templates")  # our copy of textual-serve's page: no third-party fonts
STOP_GRACE = 5.0  # seconds a console gets to quit after its tab closed, before it is killed
EXIT_WAIT = 1.0  # seconds between a console's output ending and its exit being reported, at most
ROOM_WAIT = 1.5  # seconds a new tab waits for another to close (reloads, races) before "all in use"
# What textual-serve itself puts in a child's environment (driver, size, colours); everything else is ours.
SERVE_ENV_NAMES = frozenset({"TEXTUAL_DRIVER", "TEXTUAL_FPS", "TEXTUAL_COLOR_SYSTEM", "TERM_PROGRAM",
                             "TERM_PROGRAM_VERSION", "COLUMNS", "ROWS"})
DEBUG_ENV_NAMES = frozenset({"TEXTUAL", "TEXTUAL_LOG"})
# No framing (a hostile page could overlay the console and harvest clicks), no Referer carrying a URL.
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'",
                    "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}
UNSPECIFIED_HOSTS = ("0.0.0.0", "::", "")


class ConsoleProcess(AppService):
    """One console process behind one browser tab, started with the environment we chose, not a copy of ours."""

    def __init__(self, command: str, *, environment: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self._environment = dict(environment)

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        # textual-serve starts from os.environ.copy(): keep only the keys it adds, on top of our allowlist.
        served = super()._build_environment(width=width, height=height)
        keep = SERVE_ENV_NAMES | (DEBUG_ENV_NAMES if self.debug else frozenset())
        return self._environment | {name: value for name, value in served.items() if name in keep}

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    async def run(self) -> None:
        """Relay the process's output; when it ends by itself (`q`, a crash), close the tab's websocket too,
        so the page says "session ended" instead of freezing (a crash sends no `exit` packet)."""
        try:
            await super().run()
        finally:
            with contextlib.suppress(Exception):
                await self.remote_close()

    async def shut_down(self, grace: float = STOP_GRACE) -> int | None:
        """Ask the console to quit, kill it if it has not within `grace`; returns its exit status.

        Waits for the exit before any kill even when the output has ended: `Process.kill()` polls (reaps) a
        process that has just exited, and asyncio's child watcher then reports exit status 255 for it.
        """
        process = self._process
        with contextlib.suppress(TimeoutError, ConnectionError):
            await asyncio.wait_for(self.stop(), grace)  # sends `quit`, returns when the output has ended
        if process is None:
            return None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), EXIT_WAIT)
        if process.returncode is None:
            log.warning("console pid %s did not quit within %.0f s: killing it", process.pid, grace + EXIT_WAIT)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), grace)
        return process.returncode


class ConsoleServer(Server):
    """textual-serve's server, safe by default: token guard, Host/Origin checks, session cap, clean child env."""

    def __init__(self, config: ServeConfig) -> None:
        super().__init__(config.command, host=config.host, port=config.port, title=TITLE,
                         public_url=config.public_url, templates_path=TEMPLATES)
        self.config = config
        self.console = Console(stderr=True, soft_wrap=True)  # stdout is not ours: the URL and logs go to stderr
        self.cookie_name = f"ledgeragent_token_{config.port}"  # cookies ignore ports: one name per server
        self._used = 0  # slots claimed: live console processes, including those being stopped
        self._stopping = 0  # of those, the ones whose tab has gone (they free their slot within STOP_GRACE)
        self._slots = asyncio.Condition()
        self._tabs: dict[ConsoleProcess, web.WebSocketResponse] = {}

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
        tests), prints the real address, and keeps aiohttp's access log off (it would log `?token=`).
        """
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None,
                               shutdown_timeout=2 * STOP_GRACE)
        await runner.setup()
        await web.TCPSite(runner, self.host, self.port).start()
        self.port = int(runner.addresses[0][1])
        self.cookie_name = f"ledgeragent_token_{self.port}"
        self.public_url = self.config.public_url or f"http://{_url_host(self.host)}:{self.port}"
        self._announce()
        return runner

    def _announce(self) -> None:
        url = self.open_url()
        if self.host in UNSPECIFIED_HOSTS and self.config.public_url is None:
            url = url.replace(_url_host(self.host), socket.gethostname(), 1)
        out = self.console
        out.print(f"[bold]{TITLE}[/] in the browser: up to {self.config.max_sessions} tab(s) at once, "
                  f"one console process each", highlight=False)
        bound = f"[{self.host}]" if ":" in self.host else self.host
        everywhere = " (every interface)" if self.host in UNSPECIFIED_HOSTS else ""
        out.print(f"listening: http://{bound}:{self.port}{everywhere}", highlight=False)
        out.print(f"open: [bold cyan]{escape(url)}[/]", highlight=False)
        out.print(f"session folders: {escape(str(self.config.home / 'sessions'))}", highlight=False)
        if self.config.token is None:
            out.print("no token: only this machine can connect (bound to a loopback address)", highlight=False)
        elif not is_loopback(self.host) and not self.public_url.startswith("https:"):
            out.print("[yellow]plain HTTP: the token and every keystroke cross the network unencrypted; put a TLS "
                      "proxy in front (docs/browser.md)[/]", highlight=False)
        if self.config.live_model:
            out.print("live model: each console gets OPENAI_API_KEY; nothing else from this environment",
                      highlight=False)
        out.print("Ctrl+C stops the server and every console", style="dim", highlight=False)

    def open_url(self) -> str:
        """The URL to open in a browser, with the token when there is one."""
        base = self.public_url.rstrip("/") + "/"
        return base + (f"?{urlencode({'token': self.config.token})}" if self.config.token else "")

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: textual-serve prints a logo and the raw command here; `_announce` says what matters."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Close every tab (each handler then ends its console), and wait for the consoles to be gone."""
        for websocket in list(self._tabs.values()):
            with contextlib.suppress(Exception):
                await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"the console server is shutting down")
        async with self._slots:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slots.wait_for(lambda: self._used == 0), 2 * STOP_GRACE)

    # ------------------------------------------------------------------------------------------- http

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard())
        return app

    def _guard(self) -> Middleware:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            refusal = self._refusal(request)
            if refusal is not None:
                return refusal
            if self.config.token is not None and "token" in request.query and request.path == "/":
                return self._keep_token_in_cookie(request)
            response = await handler(request)
            if not response.prepared:  # a websocket has been answered already; pages get the headers
                response.headers.update(SECURITY_HEADERS)
            return response

        return guard

    def _refusal(self, request: web.Request) -> web.Response | None:
        """Why this request may not go on (a ready error page), or None to let it through."""
        host = (urlsplit(f"//{request.host}").hostname or "").lower()
        public_host = (urlsplit(self.config.public_url).hostname or "") if self.config.public_url else ""
        if self.config.token is None and not (is_loopback(host) or host == public_host.lower()):
            # No token means "this machine only": a foreign Host header is DNS rebinding, not a local user.
            return self._refuse(request, 403, "Wrong address", "Without a token this console only answers to "
                                "localhost / 127.0.0.1. Start the server with --token to reach it by another name.")
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin is not None:
            allowed = {request.host.lower(), urlsplit(self.config.public_url or "").netloc.lower()}
            if urlsplit(origin).netloc.lower() not in allowed:
                # Another web site's page trying to drive the console with this browser's cookie.
                return self._refuse(request, 403, "Forbidden", "The console only accepts its own page.")
        token = self.config.token
        if token is None:
            return None
        presented = request.query.get("token") or request.cookies.get(self.cookie_name) or _bearer(request)
        if presented is None or not hmac.compare_digest(presented.encode(), token.encode()):
            return self._refuse(request, 401, "Access token needed",
                                "Open the address that <code>ledgeragent serve</code> printed (it ends in "
                                "<code>?token=…</code>); your browser then keeps the token in a cookie.")
        return None

    def _refuse(self, request: web.Request, status: int, title: str, message: str) -> web.Response:
        log.warning("refused %s %s from %s: %d %s", request.method, request.path, request.remote, status, title)
        return _page(status, title, message)

    def _keep_token_in_cookie(self, request: web.Request) -> web.Response:
        """Move a valid `?token=` into a cookie and out of the address bar (and the browser's history)."""
        rest = [(key, value) for key, value in request.query.items() if key != "token"]
        response = web.Response(status=303, headers={"Location": "./" + (f"?{urlencode(rest)}" if rest else ""),
                                                     "Cache-Control": "no-store", **SECURITY_HEADERS})
        https = request.secure or self.public_url.startswith("https:")
        assert self.config.token is not None
        response.set_cookie(self.cookie_name, self.config.token, path="/", httponly=True, samesite="Strict",
                            secure=https)
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
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": websocket_url,
            "config": {"static": {"url": f"{base}/static/" if base else "static/"}},
            "application": {"name": TITLE},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    # -------------------------------------------------------------------------------------- websocket

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: claim a slot, run one console process, relay until either side closes, end the process."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        await websocket.prepare(request)
        if not await self._claim_slot():
            await self._refuse_tab(websocket)
            return websocket
        process = ConsoleProcess(self.command, environment=self.config.environment,
                                 write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                 close=websocket.close, download_manager=self.download_manager, debug=self.debug)
        self._tabs[process] = websocket
        try:
            await process.start(width, height)
            log.info("tab opened from %s: console pid %s (%d/%d)", request.remote, process.pid, self._used,
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
                await self._release_slot()
        return websocket

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


def _bearer(request: web.Request) -> str | None:
    """`Authorization: Bearer <token>`, for scripts and probes (browsers use the cookie)."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


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
