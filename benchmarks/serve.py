"""Browser figures: page load to the first painted console, and a key press to a visible change.

Both run against a real `ledgeragent serve` (`python -m console.cli.serve`, port 0) over loopback, each tab a real
console process with the scripted retail demo:

- page load: in headless Chromium when one is installed (`benchmarks.browser`), from navigation start to
  `body.-first-byte` (textual-serve's page sets it when the first screen bytes reach xterm.js), timed inside
  the page with `performance.now()`. Always also over the websocket: connect → first screen frame. Both
  include starting the tab's console process, which is most of the time; in the browser it starts when the
  page is served (the server pre-starts it), over a bare websocket only when the websocket opens.
- key press: over the websocket, once the console is idle: send `m` (cycles the supervision mode, so the status
  bar changes) and time until the next screen frame arrives. Textual's 60 fps refresh timer is inside it.

`ServedConsole` and `Tab` are shared with tests/console/web/test_serve.py.
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
from typing import IO, Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp

from benchmarks.browser import Chromium, find_chromium
from benchmarks.timing import MS, Result, S, summarise

ROOT = Path(__file__).resolve().parents[1]
FIRST_PAINT_BYTES = 10  # textual-serve's page shows the terminal once a frame larger than this arrives


class ServedConsole:
    """`python -m console.cli.serve --port 0 …` in a subprocess; `url` once it listens, its log lines as they come."""

    def __init__(self, *args: str, home: Path, env: Mapping[str, str] | None = None, timeout: float = 60.0) -> None:
        self.args = args
        self.home = home
        base = dict(os.environ if env is None else env)
        for name in ("COLUMNS", "LINES"):
            base.pop(name, None)
        self.env = base | {"LEDGERAGENT_HOME": str(home)}
        self.timeout = timeout
        self.lines: list[str] = []  # everything it wrote, stdout and stderr, in order of arrival
        self.stdout_lines: list[str] = []  # what it wrote to stdout (nothing: stdout is left to the caller)
        self.url = ""  # where it listens (http://127.0.0.1:port), for clients on this machine
        self.open_url = ""  # what it tells a person to open (the public URL, with the token)
        self.token: str | None = None  # the access token in `open_url` (made by the server unless given)
        self.operator_urls: dict[str, str] = {}  # `--operators`: each operator's own address, with their token
        self._changed = threading.Condition()
        self._drained = 0  # streams read to their end (2: the server has exited)
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServedConsole:
        self._process = subprocess.Popen([sys.executable, "-m", "console.cli.serve", "--port", "0", *self.args],
                                         cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                         errors="replace")
        threading.Thread(target=self._drain, args=(self._process.stdout, self.stdout_lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self._process.stderr, None), daemon=True).start()
        try:
            self.url = self.wait_for_line(r"listening: (\S+)", self.timeout).group(1)
            self.open_url = self.wait_for_line(r"open(?: as \S+)?: (\S+)", self.timeout).group(1)
            self.token = parse_qs(urlsplit(self.open_url).query).get("token", [None])[0]
            self.wait_for_line(r"Ctrl\+C stops the server", self.timeout)  # the last line of the announcement
            with self._changed:
                found = [re.search(r"open as (\S+): (\S+)", line) for line in self.lines]
            self.operator_urls = {match.group(1): match.group(2) for match in found if match}
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

    def _drain(self, stream: IO[str] | None, also: list[str] | None) -> None:
        assert stream is not None
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                if also is not None:
                    also.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._drained += 1  # both streams at their end: the server has exited, no line will come any more
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
                if remaining <= 0 or self._drained == 2:
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
        self.largest = 0  # the largest screen frame so far, in bytes
        self.painted = asyncio.Event()  # a frame big enough for the page to show the terminal
        self.last_frame = time.perf_counter()
        self.texts: asyncio.Queue[str] = asyncio.Queue()
        self.closed = asyncio.Event()
        self.close_reason = ""  # the server's words in its close frame
        self._frame = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, http: aiohttp.ClientSession, url: str, width: int | str = 160, height: int | str = 45,
                   token: str | None = None, **kwargs: Any) -> Tab:
        """Connect as the page does (`token`: sent as `?token=`, as a script would; the page has a cookie)."""
        query = f"width={width}&height={height}" + (f"&{urlencode({'token': token})}" if token else "")
        socket = await http.ws_connect(f"{url}/ws?{query}", max_msg_size=0, **kwargs)
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
                self.largest = max(self.largest, len(message.data))
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


async def _first_frame_over_websocket(url: str, token: str | None, repeat: int) -> list[int]:
    samples: list[int] = []
    async with aiohttp.ClientSession() as http:
        for _ in range(repeat):
            start = time.perf_counter_ns()
            tab = await Tab.open(http, url, token=token)
            await asyncio.wait_for(tab.painted.wait(), 60)
            samples.append(time.perf_counter_ns() - start)
            await tab.close()
            await asyncio.sleep(0.3)  # let the previous console exit: one at a time, like one user reloading
    return samples


async def _key_to_frame(url: str, token: str | None, repeat: int, warmup: int = 3) -> list[int]:
    samples: list[int] = []
    async with aiohttp.ClientSession() as http:
        tab = await Tab.open(http, url, token=token)
        await asyncio.wait_for(tab.painted.wait(), 60)
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


async def _page_load_in_chromium(executable: str, open_url: str, repeat: int) -> list[int]:
    """From navigation start (the printed URL: its `?token=` redirect included) to the first painted screen."""
    samples: list[int] = []
    async with Chromium(executable) as browser:
        for _ in range(repeat):
            page = await browser.new_page()
            await page.add_init_script(_FIRST_BYTE_PROBE)
            await page.goto(open_url)
            millis = await page.wait_for("window.__firstByte", timeout=60)
            samples.append(int(float(millis) * MS))
            await page.close()
            await asyncio.sleep(0.3)
    return samples


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (a zombie has ended; only its exit status is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def rss_bytes(pid: int) -> int:
    """Resident memory of a process, from /proc (0 where there is none)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


async def _close_while_starting(server: ServedConsole, repeat: int) -> list[int]:
    """Open a tab and close it at once, while its console is still starting: the time until that console
    process is gone (a console closed while starting used to wait 6 s and be killed)."""
    samples: list[int] = []
    async with aiohttp.ClientSession() as http:
        for _ in range(repeat):
            known = len(server.console_pids())
            tab = await Tab.open(http, server.url, token=server.token)
            deadline = time.monotonic() + 10
            while len(server.console_pids()) <= known and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            pid = server.console_pids()[-1]
            start = time.perf_counter_ns()
            await tab.close()
            while alive(pid) and time.perf_counter_ns() - start < 20 * S:
                await asyncio.sleep(0.005)
            samples.append(time.perf_counter_ns() - start)
    return samples


async def _soak(server: ServedConsole, cycles: int, tabs: int, painted_every: int) -> int:
    """`cycles` open/close cycles over `tabs` concurrent tabs; every `painted_every`-th waits for a screen
    first (a console that has started), the others close at once (a console still starting). Returns how
    many of the tabs that waited were refused instead ("all in use": slots of closing tabs not yet free)."""
    counter = iter(range(cycles))
    refused = 0

    async def one_tab(http: aiohttp.ClientSession) -> None:
        nonlocal refused
        for index in counter:
            tab = await Tab.open(http, server.url, token=server.token)
            if index % painted_every == 0:  # a screen, or the "all in use" refusal (slots still being freed)
                deadline = time.monotonic() + 60
                while not (tab.painted.is_set() or tab.closed.is_set()) and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                refused += not tab.painted.is_set()
            await tab.close()

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(one_tab(http) for _ in range(tabs)))
    return refused


def soak(server: ServedConsole, cycles: int = 200, tabs: int = 4, painted_every: int = 10) -> list[Result]:
    """The bounded soak: orphan console processes after it, and the server's memory growth over it.

    The memory baseline is taken after a warm-up of one cycle per tab (the first tabs load the page
    template, aiohttp's websocket machinery and the console command's first run: a one-off cost, not a leak).
    """
    asyncio.run(_soak(server, tabs, tabs, 1))
    before = rss_bytes(server.pid)
    start = len(server.console_pids())
    refused = asyncio.run(_soak(server, cycles, tabs, painted_every))
    pids = server.console_pids()[start:]
    deadline = time.monotonic() + 3 * 5.0  # each ends within STOP_GRACE, and they end concurrently
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    orphans = sum(alive(pid) for pid in pids)
    after = rss_bytes(server.pid)
    note = (f"{len(pids)} consoles started, {refused} tab(s) refused as all in use; server RSS "
            f"{before / 2**20:.1f} -> {after / 2**20:.1f} MiB")
    return [
        Result(key="serve_soak_orphans", figure=f"serve soak: console processes left after {cycles} open/close "
               f"cycles over {tabs} concurrent tabs", median_ns=orphans, p95_ns=orphans, n=len(pids), target_ns=1,
               unit="count", note=note),
        Result(key="serve_soak_rss_growth", figure="serve soak: server memory (RSS) growth over the soak "
               "(target: 10 % of its RSS after warm-up)", median_ns=after - before, p95_ns=after - before, n=1,
               target_ns=int(before * 0.10), unit="B", note=note),
    ]


def bench_serve(repeat: int = 5, key_repeat: int = 30, browser: bool = True, soak_cycles: int = 200) -> list[Result]:
    """The served console's figures; the browser row only when Chromium is installed (and `browser`)."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as home:
        with ServedConsole("--pace", "0", "--max-sessions", "4", home=Path(home)) as server:
            executable = find_chromium() if browser else None
            if executable is not None:
                samples = asyncio.run(_page_load_in_chromium(executable, server.open_url, repeat))
                results.append(summarise("serve_page_load", "serve: page load to first painted console "
                                         "(headless Chromium, console process start included)", samples,
                                         target_ns=3 * S))
            samples = asyncio.run(_first_frame_over_websocket(server.url, server.token, repeat))
            results.append(summarise("serve_first_frame", "serve: websocket open to first screen frame "
                                     "(console process start included)", samples, target_ns=3 * S,
                                     note="" if executable else "no Chromium: the page-load row is skipped"))
            samples = asyncio.run(_key_to_frame(server.url, server.token, key_repeat))
            results.append(summarise("serve_key_latency", "serve: key press to the next screen frame (loopback "
                                     "websocket, 60 fps timer included)", samples, target_ns=150 * MS))
            samples = asyncio.run(_close_while_starting(server, repeat))
            results.append(summarise("serve_close_starting", "serve: tab closed while its console starts -> "
                                     "that console process gone", samples, target_ns=int(1.5 * S)))
            if soak_cycles and sys.platform == "linux":
                results += soak(server, cycles=soak_cycles)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.serve`: just these rows."""
    from benchmarks.report import environment, print_report

    print_report(bench_serve(), environment("serve"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
