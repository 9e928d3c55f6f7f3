"""Headless Chromium over the DevTools protocol: for the browser figures and the end-to-end browser test.

Plain CDP over aiohttp's websocket client (aiohttp comes with textual-serve) rather than Playwright: no extra
package and no browser download (`playwright install` cannot run offline); it drives the system Chromium
(Debian package `chromium`, installed by `.ci/run`). Only what the tests need: open a tab at a size, run
JavaScript, wait for a condition, press a key, take a screenshot.

A test module shares one browser process (`BrowserProcess`) and gives each test its own connection with its own
browser context (`Chromium.attach`): a fresh profile's worth of cookies and storage per test, without a new
browser start per test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# What works here: no sandbox (containers, root), no GPU, nothing phoning home, no throttling of tabs that are
# not in front (two tabs at once must both run at full speed).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--mute-audio",
         "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
         "--disable-backgrounding-occluded-windows", "--hide-scrollbars", "--remote-debugging-port=0")


def find_chromium() -> str | None:
    """`$LEDGERAGENT_CHROMIUM`, else the first Chromium-like browser on PATH, else None."""
    chosen = os.environ.get("LEDGERAGENT_CHROMIUM")
    if chosen:
        return chosen if Path(chosen).exists() else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class DevToolsError(RuntimeError):
    """Chromium did not start, or answered a command with an error."""


class Page:
    """One tab, attached through a flat DevTools session."""

    def __init__(self, browser: Chromium, session_id: str, target_id: str) -> None:
        self.browser = browser
        self.session_id = session_id
        self.target_id = target_id

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        return await self.browser.send(method, session_id=self.session_id, **params)

    async def evaluate(self, expression: str) -> Any:
        reply = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise DevToolsError(f"{expression!r} raised: {reply['exceptionDetails']}")
        return reply.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float = 15.0, interval: float = 0.02) -> Any:
        """Poll a JavaScript expression until it is truthy; its value, or AssertionError after `timeout`.

        An expression that throws counts as not yet (the page may be between documents while it loads)."""
        deadline = time.monotonic() + timeout
        last_error = ""
        while True:
            try:
                value = await self.evaluate(expression)
            except DevToolsError as exc:
                value, last_error = None, str(exc)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"page never satisfied {expression!r} within {timeout} s {last_error}")
            await asyncio.sleep(interval)

    async def add_init_script(self, source: str) -> None:
        """Run `source` in every document this tab loads, before the page's own scripts."""
        await self.send("Page.addScriptToEvaluateOnNewDocument", source=source)

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def press(self, key: str, code: str, key_code: int, text: str = "") -> None:
        """One key, down and up, as a keyboard would send it to the focused element."""
        down: dict[str, Any] = {"key": key, "code": code, "windowsVirtualKeyCode": key_code}
        if text:
            down |= {"text": text, "unmodifiedText": text}
        await self.send("Input.dispatchKeyEvent", type="keyDown", **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=key_code)

    async def click(self, x: float, y: float) -> None:
        """A left click at (x, y) CSS pixels, as a mouse would: press and release."""
        for kind in ("mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", buttons=1, clickCount=1)

    async def screenshot(self, path: Path) -> Path:
        reply = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(reply["data"]))
        return path

    async def close(self) -> None:
        await self.browser.send("Target.closeTarget", targetId=self.target_id)


class BrowserProcess:
    """A headless Chromium process with a throwaway profile, and the address of its DevTools socket.

    Started and stopped without an event loop, so one process can outlive the loops of the tests that use it."""

    def __init__(self, executable: str, start_timeout: float = 20.0) -> None:
        self.executable = executable
        self.start_timeout = start_timeout
        self.endpoint = ""  # ws://127.0.0.1:<port>/devtools/browser/<id> once started
        self._profile = Path(tempfile.mkdtemp(prefix="ledgeragent-chromium-"))
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> BrowserProcess:
        """Launch and wait for the DevTools port (DevToolsError if the browser cannot start); `close()` when done."""
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        self._process = subprocess.Popen([self.executable, *FLAGS, f"--user-data-dir={self._profile}",
                                          "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.start_timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self._process.poll() is not None:
                raise DevToolsError(f"{self.executable} exited with status {self._process.returncode}")
            if time.monotonic() > deadline:
                raise DevToolsError(f"{self.executable} did not open its DevTools port in {self.start_timeout} s")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.endpoint = f"ws://127.0.0.1:{port}{path}"

    def close(self) -> None:
        """End the browser (SIGTERM, then SIGKILL if it lingers) and remove its profile."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)


class Chromium:
    """`async with Chromium(path) as browser:` a headless browser with a throwaway profile; or
    `await Chromium.attach(process.endpoint)`: a connection of one's own, in a browser context of one's own, to
    a browser that outlives it."""

    def __init__(self, executable: str, start_timeout: float = 20.0) -> None:
        self.executable = executable
        self.start_timeout = start_timeout
        self._process: BrowserProcess | None = None  # the browser this connection started, and ends on close
        self._context: str | None = None  # the browser context its tabs open in (None: the default one)
        self._http: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._closed = False

    async def __aenter__(self) -> Chromium:
        return await self.start()

    async def start(self) -> Chromium:
        """Launch and connect (DevToolsError if the browser cannot start); `close()` when done."""
        try:
            self._process = BrowserProcess(self.executable, self.start_timeout)
            await asyncio.to_thread(self._process.start)
            await self._connect(self._process.endpoint)
        except BaseException:
            await self.close()
            raise
        return self

    @classmethod
    async def attach(cls, process: BrowserProcess) -> Chromium:
        """Connect to a running browser, in a new browser context (cookies, storage and cache of its own, as a
        fresh profile has); `close()` disposes of the context and leaves the browser running."""
        browser = cls(process.executable)
        try:
            await browser._connect(process.endpoint)
            browser._context = (await browser.send("Target.createBrowserContext"))["browserContextId"]
        except BaseException:
            await browser.close()
            raise
        return browser

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def _connect(self, endpoint: str) -> None:
        self._http = aiohttp.ClientSession()
        self._socket = await self._http.ws_connect(endpoint, max_msg_size=0)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._socket is not None
        async for message in self._socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            future = self._pending.pop(data.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(data)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(DevToolsError("the browser closed its DevTools connection"))

    async def send(self, method: str, session_id: str | None = None, **params: Any) -> dict[str, Any]:
        assert self._socket is not None
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session_id is not None:
            message["sessionId"] = session_id
        await self._socket.send_str(json.dumps(message))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise DevToolsError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def new_page(self, width: int = 1600, height: int = 900) -> Page:
        """A new tab in its own window (so it is never a throttled background tab), `width`×`height` CSS px."""
        context = {} if self._context is None else {"browserContextId": self._context}
        target = await self.send("Target.createTarget", url="about:blank", newWindow=True, width=width,
                                 height=height, **context)
        attached = await self.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)
        page = Page(self, attached["sessionId"], target["targetId"])
        await page.send("Page.enable")
        await page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=False)
        return page

    async def close(self) -> None:
        """A browser this connection started is closed; an attached one only loses this connection's context
        (and with it every tab opened through it). Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._socket is not None and not self._socket.closed:
            with contextlib.suppress(Exception):
                if self._process is not None:
                    await asyncio.wait_for(self.send("Browser.close"), 5)
                elif self._context is not None:
                    await asyncio.wait_for(self.send("Target.disposeBrowserContext",
                                                     browserContextId=self._context), 10)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if self._socket is not None:
            await self._socket.close()
        if self._http is not None:
            await self._http.close()
        if self._process is not None:
            await asyncio.to_thread(self._process.close)
