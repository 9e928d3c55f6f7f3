"""The browser console's first frame has the tab's size, in headless Chromium.

A console is started as its page is served, before the page knows its terminal size; the page then says it
(`/ws?width=…&height=…`, then `["resize", …]`). That console used to keep the size it was started with (80 x 24,
or the previous tab's): the page's size reached it while it was still starting, Textual's web driver applied
it, then applied its own start-up size after it. Only the top-left cells were redrawn, over a stale full-size
frame ("ALLOW 0 REVISE 0 BLOCK 0" in the wrong place, the review dialog squeezed in a corner).

Each tab's screen, read from xterm.js's own buffer, must equal the screen of a console started at that size
from the first (a bare websocket with the size in its address, read through a terminal emulator): at two
window sizes, then after a reload at a third.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
import pyte
import pytest

from benchmarks.browser import Chromium, Page, find_chromium
from benchmarks.serve import ServedConsole
from tests.support.xterm import CATCH_TERMINAL, SCREEN

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package `chromium`; "
                                ".ci/run installs it, or set LEDGERAGENT_CHROMIUM to a Chromium/Chrome binary)")
WAIT = 60.0
FIRST_BYTE = "!!document.body && document.body.classList.contains('-first-byte')"


class Reference:
    """A console started at `cols` x `rows` over a bare websocket (no page, so never a pre-started one),
    its output fed to a terminal emulator as it comes: what a console of that size shows."""

    def __init__(self, cols: int, rows: int) -> None:
        self.socket: aiohttp.ClientWebSocketResponse | None = None
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    async def read(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        async for message in socket:
            if message.type == aiohttp.WSMsgType.BINARY:
                self.stream.feed(message.data)


@contextlib.asynccontextmanager
async def reference(server: ServedConsole, cols: int, rows: int) -> AsyncIterator[Reference]:
    seen = Reference(cols, rows)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http:
        socket = seen.socket = await http.ws_connect(f"{server.url}/ws?width={cols}&height={rows}",
                                                     max_msg_size=0)
        reader = asyncio.create_task(seen.read(socket))
        try:
            yield seen
        finally:
            await socket.close()
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader


async def same_screen(page: Page, server: ServedConsole) -> None:
    """Wait until the tab's xterm.js screen equals a reference console's at the tab's size, pane for pane
    (every line of the screen: each pane's borders, titles and text), then press `m` in both (the supervision
    mode changes in the status bar) and wait until they are equal again, each showing the change.

    The key is what makes this a test of the size the console kept, not of a moment: it is read after
    everything the console queued while it started (its start-up size included), so the screen it redraws
    is at the size the console ends up with. Both screens settle as their frames arrive; the deadline only
    bounds the wait, and on failure the two screens are shown line by line."""
    shown = await page.wait_for(SCREEN, timeout=WAIT)
    cols, rows = shown["cols"], shown["rows"]
    async with reference(server, cols, rows) as expected:
        first = await until_equal(page, expected, cols, rows)
        await page.press("m", "KeyM", 77, text="m")
        assert expected.socket is not None
        await expected.socket.send_json(["stdin", "m"])
        await until_equal(page, expected, cols, rows, unlike=first)


async def until_equal(page: Page, expected: Reference, cols: int, rows: int,
                      unlike: Sequence[str] = ()) -> list[str]:
    deadline = time.monotonic() + WAIT
    while True:
        shown = await page.evaluate(SCREEN)
        shown["lines"] = [line.rstrip() for line in shown["lines"]]  # spaces the console wrote stay in xterm.js
        lines = expected.lines()
        if (shown["cols"], shown["rows"]) == (cols, rows) and shown["lines"] == lines and lines != list(unlike):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"the tab's screen ({shown['cols']} x {shown['rows']}) never became that of a "
                                 f"console started at {cols} x {rows}:\n" + side_by_side(shown["lines"], lines))
        await asyncio.sleep(0.1)


def side_by_side(shown: Sequence[str], expected: Sequence[str]) -> str:
    return "\n".join(f"{'  ' if a == b else '!='} {a}\n   {b}" for a, b in zip(shown, expected, strict=False))


async def test_a_pre_started_console_draws_at_the_tab_size_at_two_sizes_and_after_a_reload(
        browser: Chromium, tmp_path: Path) -> None:
    with ServedConsole("--pace", "0", "--mode", "approve non-ALLOW", home=tmp_path / "home") as server, \
            server.log_on_failure():
        for width, height in ((1280, 800), (1920, 1080)):
            page = await browser.new_page(width, height)
            await page.add_init_script(CATCH_TERMINAL)
            start = len(server.lines)
            await page.goto(server.open_url)
            await page.wait_for(FIRST_BYTE, timeout=WAIT)
            server.wait_for_line(r"tab opened .* \(pre-started\)", WAIT, start=start)  # the case at stake
            await same_screen(page, server)
            if width != 1920:
                await page.close()
        # The same tab, resized and reloaded: a new console, pre-started at the previous tab's size.
        await page.send("Emulation.setDeviceMetricsOverride", width=1000, height=700, deviceScaleFactor=1,
                        mobile=False)
        await page.evaluate("window.__before_reload = true")
        start = len(server.lines)
        await page.send("Page.reload")
        server.wait_for_line(r"tab opened .* \(pre-started\)", WAIT, start=start)
        await page.wait_for(f"!window.__before_reload && {FIRST_BYTE}", timeout=WAIT)
        await same_screen(page, server)
