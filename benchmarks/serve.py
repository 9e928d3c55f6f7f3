"""Browser figures (issue 7): page load to the first painted console, and a key press to a visible change.

Both run against a real `ledgeragent serve` (`python -m console.serve`, port 0) over loopback, each tab a real
console process with the scripted retail demo:

- page load: in headless Chromium when one is installed (`benchmarks.browser`), from navigation start to
  `body.-first-byte` (textual-serve's page sets it when the first screen bytes reach xterm.js), timed inside
  the page with `performance.now()`. Always also over the websocket: connect → first screen frame. Both
  include starting the tab's console process, which is most of the time.
- key press: over the websocket, once the console is idle: send `m` (cycles the supervision mode, so the status
  bar changes) and time until the next screen frame arrives. Textual's 60 fps refresh timer is inside it.

`ServedConsole` and `Tab` are shared with tests/console/test_serve.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

from benchmarks.browser import Chromium, find_chromium
from benchmarks.timing import MS, Result, S, summarise

ROOT = Path(__file__).resolve().parents[1]
FIRST_PAINT_BYTES = 10  # textual-serve's page shows the terminal once a frame larger than this arrives


class ServedConsole:
    """`python -m console.serve --port 0 …` in a subprocess; `url` once it listens, its log lines as they come."""

    def __init__(self, *args: str, home: Path, env: Mapping[str, str] | None = None, timeout: float = 20.0) -> None:
        self.args = args
        self.home = home
        base = dict(os.environ if env is None else env)
        for name in ("COLUMNS", "LINES"):
            base.pop(name, None)
        self.env = base | {"LEDGERAGENT_HOME": str(home)}
        self.timeout = timeout
        self.lines: list[str] = []
        self.url = ""  # where it listens (http://127.0.0.1:port), for clients on this machine
        self.open_url = ""  # what it tells a person to open (the public URL, with the token)
        self._changed = threading.Condition()
        self._drained = False
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServedConsole:
        self._process = subprocess.Popen([sys.executable, "-m", "console.serve", "--port", "0", *self.args],
                                         cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._drain, daemon=True).start()
        try:
            self.url = self.wait_for_line(r"listening: (\S+)", self.timeout).group(1)
            self.open_url = self.wait_for_line(r"open: (\S+)", self.timeout).group(1)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def _drain(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._drained = True  # the server has exited: no line will come any more
            self._changed.notify_all()

    def wait_for_line(self, pattern: str, timeout: float = 10.0, start: int = 0) -> re.Match[str]:
        """The first log line (from index `start`) matching `pattern`; AssertionError with the log if none."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[start:]:
                    found = compiled.search(line)
                    if found:
                        return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._drained:
                    log = "\n".join(self.lines)
                    raise AssertionError(f"server never logged {pattern!r}; its output:\n{log}")
                self._changed.wait(min(remaining, 0.2))

    @contextlib.contextmanager
    def log_on_failure(self) -> Iterator[None]:
        """Add the server's output (its consoles' errors included) to an AssertionError raised inside."""
        try:
            yield
        except AssertionError as exc:
            with self._changed:
                log = "\n".join(self.lines)
            raise AssertionError(f"{exc}\n--- server output ---\n{log}") from exc

    def console_pids(self) -> list[int]:
        """The console processes started so far, in order (from the server's "tab opened" log lines)."""
        with self._changed:
            found = [re.search(r"tab opened .*console pid (\d+)", line) for line in self.lines]
        return [int(match.group(1)) for match in found if match]

    def stop(self) -> int | None:
        """SIGTERM (the server ends its consoles), then SIGKILL if it hangs; the exit status."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode


class Tab:
    """A websocket client speaking textual-serve's `/ws` protocol, as the page's xterm.js does."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.frames = 0
        self.bytes = 0
        self.painted = asyncio.Event()  # a frame big enough for the page to show the terminal
        self.last_frame = time.perf_counter()
        self.texts: asyncio.Queue[str] = asyncio.Queue()
        self.closed = asyncio.Event()
        self.close_reason = ""  # the server's words in its close frame
        self._frame = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, http: aiohttp.ClientSession, url: str, width: int = 160, height: int = 45,
                   **kwargs: Any) -> Tab:
        socket = await http.ws_connect(f"{url}/ws?width={width}&height={height}", max_msg_size=0, **kwargs)
        return cls(socket)

    async def _read(self) -> None:
        # Always drain: aiohttp stops reading the socket when its queue is full, which would stall the console.
        while True:
            message = await self.socket.receive()
            if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED,
                                aiohttp.WSMsgType.ERROR):
                if message.type == aiohttp.WSMsgType.CLOSE:
                    self.close_reason = str(message.extra or "")
                break
            if message.type == aiohttp.WSMsgType.BINARY:
                self.frames += 1
                self.bytes += len(message.data)
                self.last_frame = time.perf_counter()
                self._frame.set()
                if len(message.data) > FIRST_PAINT_BYTES:
                    self.painted.set()
            elif message.type == aiohttp.WSMsgType.TEXT:
                await self.texts.put(message.data)
        self.closed.set()

    async def send_key(self, text: str) -> None:
        await self.socket.send_json(["stdin", text])

    async def key_to_frame(self, text: str, timeout: float = 5.0) -> float:
        """Send a key, wait for the next screen frame: the seconds between the two (the frame's arrival time
        is taken by the reader as it comes off the socket, not when this coroutine wakes up)."""
        self._frame.clear()
        start = time.perf_counter()
        await self.send_key(text)
        await asyncio.wait_for(self._frame.wait(), timeout)
        return self.last_frame - start

    async def quiet(self, for_seconds: float = 0.15, timeout: float = 10.0) -> None:
        """Wait until no frame has arrived for `for_seconds` (the console is idle)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() - self.last_frame < for_seconds:
            if time.perf_counter() > deadline:
                raise AssertionError("the console never went quiet")
            await asyncio.sleep(for_seconds / 3)

    async def close(self) -> None:
        await self.socket.close()
        with_timeout = asyncio.wait_for(self._reader, 5)
        try:
            await with_timeout
        except (TimeoutError, asyncio.CancelledError):
            self._reader.cancel()


async def _first_frame_over_websocket(url: str, repeat: int) -> list[int]:
    samples: list[int] = []
    async with aiohttp.ClientSession() as http:
        for _ in range(repeat):
            start = time.perf_counter_ns()
            tab = await Tab.open(http, url)
            await asyncio.wait_for(tab.painted.wait(), 30)
            samples.append(time.perf_counter_ns() - start)
            await tab.close()
            await asyncio.sleep(0.3)  # let the previous console exit: one at a time, like one user reloading
    return samples


async def _key_to_frame(url: str, repeat: int, warmup: int = 3) -> list[int]:
    samples: list[int] = []
    async with aiohttp.ClientSession() as http:
        tab = await Tab.open(http, url)
        await asyncio.wait_for(tab.painted.wait(), 30)
        for index in range(warmup + repeat):
            await tab.quiet()
            seconds = await tab.key_to_frame("m")
            if index >= warmup:
                samples.append(int(seconds * S))
        await tab.close()
    return samples


_FIRST_BYTE_PROBE = """
new MutationObserver(() => {
  if (!window.__firstByte && document.body && document.body.classList.contains("-first-byte")) {
    window.__firstByte = performance.now();
  }
}).observe(document, {attributes: true, subtree: true, attributeFilter: ["class"]});
"""


async def _page_load_in_chromium(executable: str, url: str, repeat: int) -> list[int]:
    samples: list[int] = []
    async with Chromium(executable) as browser:
        for _ in range(repeat):
            page = await browser.new_page()
            await page.add_init_script(_FIRST_BYTE_PROBE)
            await page.goto(url + "/")
            millis = await page.wait_for("window.__firstByte", timeout=30)
            samples.append(int(float(millis) * MS))
            await page.close()
            await asyncio.sleep(0.3)
    return samples


def bench_serve(repeat: int = 5, key_repeat: int = 30, browser: bool = True) -> list[Result]:
    """The served console's figures; the browser row only when Chromium is installed (and `browser`)."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as home:
        with ServedConsole("--pace", "0", "--max-sessions", "2", home=Path(home)) as server:
            executable = find_chromium() if browser else None
            if executable is not None:
                samples = asyncio.run(_page_load_in_chromium(executable, server.url, repeat))
                results.append(summarise("serve_page_load", "serve: page load to first painted console "
                                         "(headless Chromium, console process start included)", samples,
                                         target_ns=3 * S))
            samples = asyncio.run(_first_frame_over_websocket(server.url, repeat))
            results.append(summarise("serve_first_frame", "serve: websocket open to first screen frame "
                                     "(console process start included)", samples, target_ns=3 * S,
                                     note="" if executable else "no Chromium: the page-load row is skipped"))
            samples = asyncio.run(_key_to_frame(server.url, key_repeat))
            results.append(summarise("serve_key_latency", "serve: key press to the next screen frame (loopback "
                                     "websocket, 60 fps timer included)", samples, target_ns=150 * MS))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.serve`: just these rows."""
    from benchmarks.report import environment, print_report

    print_report(bench_serve(), environment("serve"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
