"""Bad input from a browser tab: the tab concerned is closed with a
clear reason, the server and every other tab keep working, no console process is left behind.

All of it against the real server (`python -m console.cli.serve --port 0`) with real console processes, over
textual-serve's websocket protocol as the page speaks it, or over a raw TCP socket where a client misbehaves
below HTTP.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import pytest

from benchmarks.serve import ServedConsole, Tab, alive
from console.cli.serve import MAX_COLUMNS, MAX_ROWS
from console.web.server import MAX_MESSAGE, SECURITY_HEADERS

T = TypeVar("T")
WAIT = 60.0  # generous: a correctness test, on a machine that may be busy


def clean_env() -> dict[str, str]:
    """Our environment without a developer's own $LEDGERAGENT_TOKEN."""
    return {name: value for name, value in os.environ.items() if name != "LEDGERAGENT_TOKEN"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedConsole]:
    home = tmp_path_factory.mktemp("bad-input") / "home"
    # Four slots: the bystander below holds one for the whole module, three tabs may be open besides it.
    with ServedConsole("--pace", "0", "--max-sessions", "4", home=home, env=clean_env()) as served:
        yield served


class Bystander:
    """A tab kept open beside every bad one of the module, on an event loop of its own in a thread: it reads its
    websocket (and answers the server's pings) between the tests as a browser tab would."""

    def __init__(self, server: ServedConsole) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.http: aiohttp.ClientSession | None = None
        self.tab = self.call(self._open(server))

    async def _open(self, server: ServedConsole) -> Tab:
        self.http = aiohttp.ClientSession()
        return (await painted_tab(self.http, server))[0]

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the bystander's loop, from any thread, and return its result."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=2 * WAIT)

    async def still_works(self) -> None:
        await asyncio.to_thread(self.call, still_works(self.tab))

    def close(self) -> None:
        async def closing() -> None:
            await self.tab.close()
            if self.http is not None:
                await self.http.close()

        try:
            self.call(closing())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


@pytest.fixture(scope="module")
def bystander(server: ServedConsole) -> Iterator[Bystander]:
    """One tab for the module's bad-message tests: after each bad message it must still answer."""
    tab = Bystander(server)
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        await asyncio.sleep(0.05)


async def painted_tab(http: aiohttp.ClientSession, server: ServedConsole, **kwargs: object) -> tuple[Tab, int]:
    """A tab whose console has drawn its first screen, and that console's pid."""
    known = len(server.console_pids())
    tab = await Tab.open(http, server.url, token=server.token, **kwargs)  # type: ignore[arg-type]
    await asyncio.wait_for(tab.painted.wait(), WAIT)
    await wait_until(lambda: len(server.console_pids()) > known, "the tab's console pid in the log")
    return tab, server.console_pids()[-1]


async def still_works(tab: Tab) -> None:
    """The tab's console answers a key (m cycles the supervision mode) with a new screen."""
    await tab.quiet()
    await tab.key_to_frame("m", timeout=WAIT)


async def raw(url: str, data: bytes, timeout: float = 30.0) -> bytes:
    """Send raw bytes, then read until the server closes the connection (TimeoutError if it never does)."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


async def one_response(url: str, data: bytes, timeout: float = 30.0) -> bytes:
    """Send raw bytes, then read one whole response: its head and the Content-Length bytes of its body. The
    server may keep the connection open for another request (an answered request does not close it)."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(data)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        return head + await asyncio.wait_for(reader.readexactly(content_length(head)), timeout)
    finally:
        writer.close()


def content_length(head: bytes) -> int:
    return int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(
        b"content-length")))


def until_closed(url: str, data: bytes, timeout: float = 30.0) -> bytes:
    """`raw` over a blocking socket, for a thread: everything the server sent before it closed the connection."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    received = b""
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as connection:
        connection.sendall(data)
        while chunk := connection.recv(65536):  # socket.timeout (an OSError) if it is never closed
            received += chunk
    return received


# A connection that stalls is closed only after the server's idle timeout, seconds of nothing: the stalls are
# all started together, the first time a test asks for one, and each test checks its own.
STALLS = {"silent": b"", "headers-never-end": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n",
          "no-host-yet": b"GET / HTTP/1.1\r\n"}


@pytest.fixture(scope="module")
def stalled(server: ServedConsole) -> Iterator[dict[str, Future[bytes]]]:
    """What each stalled connection received before the server closed it, started at once in threads: the
    cases of STALLS, and `idle` (a whole request answered, then nothing more sent)."""
    idle = f"GET /nope HTTP/1.1\r\nHost: {urlsplit(server.url).netloc}\r\n\r\n".encode()
    with ThreadPoolExecutor(max_workers=len(STALLS) + 1) as pool:
        yield {name: pool.submit(until_closed, server.url, data) for name, data in (STALLS | {"idle": idle}).items()}


# ------------------------------------------------------------------------------------------ messages


@pytest.mark.parametrize(("message", "code", "reason"), [
    ("not json", 1008, "not JSON"),
    ('["stdin", NaN]', 1008, "not JSON"),
    ('["resize", {"width": "abc", "height": 24}]', 1008, "width must be a positive integer"),  # crashed it before
    ('["resize", {"width": 0, "height": 24}]', 1008, "width must be a positive integer"),
    ('["resize", {"width": 80}]', 1008, "unexpected 'resize' message"),
    ('["quit"]', 1008, "unexpected 'quit' message"),
    ({"not": "a list"}, 1008, "not a [type"),
    (b"\x00\x01binary", 1008, "binary messages are not accepted"),
    ("x" * (MAX_MESSAGE + 1), 1009, ""),  # aiohttp refuses it: "message too big"
], ids=["not-json", "nan", "string-width", "zero-width", "no-height", "quit", "object", "binary", "huge"])
async def test_a_bad_message_closes_only_its_own_tab(server: ServedConsole, bystander: Bystander,
                                                     http: aiohttp.ClientSession, message: object, code: int,
                                                     reason: str) -> None:
    with server.log_on_failure():
        bad, pid = await painted_tab(http, server)
        if isinstance(message, bytes):
            await bad.socket.send_bytes(message)
        elif isinstance(message, str):
            await bad.socket.send_str(message if not message.startswith("x") else f'["stdin", "{message}"]')
        else:
            await bad.socket.send_json(message)
        await asyncio.wait_for(bad.closed.wait(), WAIT)
        assert bad.socket.close_code == code
        if reason:
            assert "the page sent a bad message" in bad.close_reason and reason in bad.close_reason
        # Its console was asked to quit and has ended (exit 0 on an idle machine; on a very busy one it may
        # need longer than the 5 s grace and be killed); no traceback anywhere.
        server.wait_for_line(rf"console pid {pid} ended \(exit -?\d+\)", timeout=WAIT)
        await bystander.still_works()  # the other tab, and the server, carry on
        assert not any("Traceback" in line for line in server.lines)


async def test_a_huge_terminal_is_clamped(server: ServedConsole, http: aiohttp.ClientSession) -> None:
    """3000 x 3000 took a tab from 86 to 336 MB and sent a 33 MB frame: now it is 500 x 200 at most."""
    with server.log_on_failure():
        tab, pid = await painted_tab(http, server, width=3000, height=3000)
        environ = Path(f"/proc/{pid}/environ")
        if environ.exists():
            pairs = dict(item.split("=", 1) for item in environ.read_bytes().decode().split("\0") if "=" in item)
            assert (pairs["COLUMNS"], pairs["ROWS"]) == (str(MAX_COLUMNS), str(MAX_ROWS))
        await tab.socket.send_json(["resize", {"width": 3000, "height": 3000}])
        await still_works(tab)
        assert tab.largest < 8 * 1024 * 1024  # a full 500 x 200 screen in truecolor is a few MB at most
        await tab.close()
        server.wait_for_line(rf"console pid {pid} ended \(exit 0\)", timeout=WAIT)


@pytest.mark.parametrize("query", ["width=abc&height=24", "width=0&height=24", "width=80&height=-1",
                                   "width=80.5&height=24"])
async def test_a_bad_size_in_the_address_is_refused_before_a_console_starts(
        server: ServedConsole, http: aiohttp.ClientSession, query: str) -> None:
    before = len(server.console_pids())
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await http.ws_connect(f"{server.url}/ws?{query}&token={server.token}")
    assert refused.value.status == 400
    assert len(server.console_pids()) == before


# ------------------------------------------------------------------------------------------ connections


async def test_rapid_open_close_cycles_leave_no_console_behind(server: ServedConsole,
                                                               http: aiohttp.ClientSession) -> None:
    """Tabs closed while their console starts: each console ends at once (it used to wait 6 s and be
    SIGKILLed, holding a slot); afterwards there is no console process left and a new tab works."""
    with server.log_on_failure():
        before = len(server.console_pids())
        start = len(server.lines)

        async def cycles(count: int) -> None:
            for _ in range(count):
                tab = await Tab.open(http, server.url, token=server.token)
                await tab.close()

        await asyncio.gather(*(cycles(5) for _ in range(3)))
        await wait_until(lambda: len(server.console_pids()) - before == 15, "15 consoles started")
        pids = server.console_pids()[before:]
        await wait_until(lambda: not any(alive(pid) for pid in pids), "every console gone")
        assert not [line for line in server.lines[start:] if "killing it" in line]  # SIGTERM sufficed
        tab, _ = await painted_tab(http, server)
        await still_works(tab)
        await tab.close()


@pytest.mark.parametrize("stall", list(STALLS))
async def test_a_connection_without_a_whole_request_is_closed(server: ServedConsole,
                                                              stalled: dict[str, Future[bytes]], stall: str) -> None:
    """Slowloris, half-open sockets: closed after a few seconds (aiohttp's default kept them an hour)."""
    reply = await asyncio.wrap_future(stalled[stall])
    assert reply == b""  # closed without an answer
    async with aiohttp.ClientSession() as http, http.get(f"{server.url}/static/css/xterm.css") as response:
        assert response.status == 401  # and the server answers others as ever (no token here: 401)


async def test_an_idle_connection_after_a_request_is_closed(stalled: dict[str, Future[bytes]]) -> None:
    received = await asyncio.wrap_future(stalled["idle"])
    head, _, body = received.partition(b"\r\n\r\n")
    head += b"\r\n\r\n"
    assert head.startswith(b"HTTP/1.1 401")
    assert b"X-Frame-Options: DENY" in head  # headers on every response
    assert len(body) == content_length(head)  # the whole answer, then closed for idling, nothing more


@pytest.mark.parametrize("request_bytes", [
    b"GARBAGE\r\n\r\n",  # no request line
    b"GET / HTTP/9.x\r\nHost: 127.0.0.1\r\n\r\n",  # a bad version
    b"G\x01T / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",  # a bad method
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nNo colon here\r\n\r\n",  # a bad header line
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",  # a header over 8190 bytes
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",  # a bad length
], ids=["no-request-line", "bad-version", "bad-method", "bad-header", "huge-header", "bad-length"])
async def test_a_request_aiohttp_cannot_parse_gets_the_security_headers(server: ServedConsole,
                                                                        request_bytes: bytes) -> None:
    """aiohttp answers these itself, before any middleware: the answer still carries every security header,
    the connection is then closed (`raw` reads to its end), and the log has one line (no traceback)."""
    start = len(server.lines)
    reply = await raw(server.url, request_bytes, timeout=WAIT)
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    assert re.fullmatch(r"HTTP/1\.[01] 4\d\d .*", status_line), status_line
    headers = {name.strip().lower(): value.strip() for name, _, value in (h.partition(":") for h in header_lines)}
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name.lower()) == value, (name, headers)
    assert b"a" * 100 not in body  # nothing of the request echoed back
    server.wait_for_line(r"refused a malformed request from", timeout=WAIT, start=start)
    assert not any("Traceback" in line for line in server.lines[start:])


def not_utf8_requests(server: ServedConsole) -> dict[str, bytes]:
    """Requests whose headers the server reads (Host, Origin, Authorization, its own cookie, the Sec-Fetch
    headers) or whose token, in the address, are not UTF-8: Latin-1 bytes, a UTF-8-encoded lone surrogate."""
    port = urlsplit(server.url).port
    token = (server.token or "").encode()
    upgrade = (b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")
    return {
        "cookie-latin-1": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ledgeragent_token_%d=t\xe9\xff\r\n\r\n" % port,
        "cookie-surrogate": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ledgeragent_token_%d=\xed\xb2\x80\r\n\r\n"
                            % port,
        "bearer-latin-1": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \xe9\xe9\r\n\r\n",
        "host-latin-1": b"GET / HTTP/1.1\r\nHost: 127.0.0.\xe9\r\n\r\n",
        "origin-latin-1": b"GET /ws?width=80&height=24 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token
                          + b"\r\nOrigin: http://127.0.0.1:\xe9\r\n" + upgrade + b"\r\n",
        "sec-fetch-latin-1": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token
                             + b"\r\nSec-Fetch-Mode: navig\xe9te\r\n\r\n",
        "token-surrogate": b"GET /?token=%ED%B2%80 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    }


@pytest.mark.parametrize("case", ["cookie-latin-1", "cookie-surrogate", "bearer-latin-1", "host-latin-1",
                                  "origin-latin-1", "sec-fetch-latin-1", "token-surrogate"])
async def test_a_header_or_cookie_that_is_not_utf8_is_a_400_with_the_security_headers(server: ServedConsole,
                                                                                      case: str) -> None:
    """Raw bytes over a socket (aiohttp's own client would refuse or re-encode them). A cookie whose value was
    not UTF-8 was a 500 and a traceback (UnicodeEncodeError comparing it with the token); a service on
    another port of this host can set such a cookie for 127.0.0.1."""
    start = len(server.lines)
    reply = await one_response(server.url, not_utf8_requests(server)[case], timeout=WAIT)
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    assert re.fullmatch(r"HTTP/1\.[01] 400 .*", status_line), (status_line, body[:300])
    headers = {name.strip().lower(): value.strip() for name, _, value in (h.partition(":") for h in header_lines)}
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name.lower()) == value, (name, headers)
    await wait_until(lambda: any("refused" in line for line in server.lines[start:]), "the refusal logged")
    assert not any("Traceback" in line or "Error" in line for line in server.lines[start:]), server.lines[start:]


async def test_a_foreign_cookie_that_is_not_utf8_breaks_nothing(server: ServedConsole) -> None:
    """Another service on this host may set any cookie for 127.0.0.1: one that is not the console's is never
    read, whatever its bytes, so it cannot lock the operator out."""
    token = (server.token or "").encode()
    reply = await raw(server.url, b"GET /static/css/xterm.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
                      b"\r\nAuthorization: Bearer " + token + b"\r\nCookie: other=\xe9\xff; x=\xed\xb2\x80\r\n\r\n",
                      timeout=WAIT)
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]


# ------------------------------------------------------------------------------------------ crashes


async def test_a_console_crash_goes_to_a_log_file_not_to_stdout(tmp_path: Path) -> None:
    """A console that crashes (here: its --db is not a database, before its session started) files its traceback
    under the data dir's logs/ (in its session folder once it has one); the server logs one line saying where,
    and writes nothing to its stdout. The console then exits by itself, with status 1: it is not killed (it was,
    on a loaded machine, while the interpreter shut down for longer than the server's grace, and it reported a
    clean 0). No timing is asserted: the waits are generous."""
    home = tmp_path / "home"
    bad_db = tmp_path / "garbage.sqlite"
    bad_db.write_bytes(b"this is not a SQLite database, " * 100)
    with ServedConsole("--db", str(bad_db), home=home, env=clean_env(), timeout=3 * WAIT) as server, \
            server.log_on_failure():
        async with aiohttp.ClientSession() as http:
            tab = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(tab.closed.wait(), 3 * WAIT)  # the console died: the page says "session ended"
            line = server.wait_for_line(r"console crashed \(exit 1\): .* - the full log is in (\S+)",
                                        timeout=3 * WAIT)
            log = Path(line.group(1))
            # its session never started (a failed start leaves no folder), so its log is under the data dir's logs/
            assert log.parent == (home / "logs").resolve() and log.name.startswith("console-")
            assert not any((home / "sessions").glob("*/trace.jsonl"))
            assert "Traceback (most recent call last)" in log.read_text()
            server.wait_for_line(r"console pid \d+ ended \(exit 1\)", timeout=3 * WAIT)
        assert server.stdout_lines == []
        assert not any("Traceback" in line for line in server.lines)  # one line, not the traceback
        assert not any("killing it" in line for line in server.lines)  # it exited by itself
