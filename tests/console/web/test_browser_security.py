"""Hostile pages in a real Chromium: none of them may open a console.

What an attacker on the same machine does: a page served from another loopback port (any local dev server,
a compromised tool) opens the console's websocket, directly or from a sandboxed iframe (its Origin is then
`null`), or the operator opens a local `file://` page (Origin `null` too). Before the fix the default server
(loopback, no token) compared only host:port against a set holding "" and so let `null` through: the iframe
and the file page opened a console and could type into it and read its screen.

Each page reports what it got: "console" (a screen frame arrived) or "refused:<close code>". Two servers: the
default one (a token made at start; the browser has its cookie, as the operator's browser would, and a cookie
is sent from another port of the same host), and `--no-token` (only the Origin check stands in the way).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest
from aiohttp import web

from benchmarks.browser import Chromium, Page, find_chromium
from benchmarks.serve import ServedConsole

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package `chromium`; "
                                ".ci/run installs it, or set LEDGERAGENT_CHROMIUM to a Chromium/Chrome binary)")

# Opens the console's websocket and reports to `report(result)`; `report` differs between a page and a frame.
PROBE = """
(function () {
  const socket = new WebSocket(%(target)s);
  socket.binaryType = "arraybuffer";
  let got = null;
  socket.addEventListener("message", (event) => {
    if (!got && typeof event.data !== "string") { got = "console"; report(got); socket.close(); }
  });
  socket.addEventListener("close", (event) => { if (!got) { got = "refused:" + event.code; report(got); } });
})();
"""
REPORT_HERE = "function report(result) { window.__result = result; }"
REPORT_TO_PARENT = "function report(result) { parent.postMessage(result, '*'); }"


def direct_page(target: str) -> str:
    return f"<!DOCTYPE html><html><body><script>{REPORT_HERE}\n{PROBE % {'target': json.dumps(target)}}</script>" \
           "</body></html>"


def framed_page(target: str) -> str:
    """A sandboxed iframe (scripts allowed, no same-origin: its Origin is `null`) runs the probe."""
    inner = f"<script>{REPORT_TO_PARENT}\n{PROBE % {'target': json.dumps(target)}}</script>"
    srcdoc = inner.replace("&", "&amp;").replace('"', "&quot;")
    return ("<!DOCTYPE html><html><body><script>window.addEventListener('message', (e) => "
            "{ window.__result = e.data; });</script>"
            f'<iframe sandbox="allow-scripts" srcdoc="{srcdoc}"></iframe></body></html>')


def fetching_page(target: str) -> str:
    """What a page on another port may do without a websocket: fetch the console's address with the cookies
    the browser has for 127.0.0.1 (an opaque answer it cannot read, but the request is made)."""
    return ("<!DOCTYPE html><html><body><script>"
            f"fetch({json.dumps(target)}, {{mode: 'no-cors', credentials: 'include'}})"
            ".then(() => { window.__result = 'fetched'; }, (e) => { window.__result = 'failed: ' + e; });"
            "</script></body></html>")


class HostilePages:
    """Another local web server, on its own loopback port, serving pages that go for the console."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> HostilePages:
        async def direct(_: web.Request) -> web.Response:
            return web.Response(text=direct_page(self.target), content_type="text/html")

        async def framed(_: web.Request) -> web.Response:
            return web.Response(text=framed_page(self.target), content_type="text/html")

        async def fetching(request: web.Request) -> web.Response:
            return web.Response(text=fetching_page(request.query["url"]), content_type="text/html")

        app = web.Application()
        app.router.add_get("/direct.html", direct)
        app.router.add_get("/framed.html", framed)
        app.router.add_get("/fetching.html", fetching)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def logged(server: ServedConsole, fragment: str, count: int, timeout: float = 60.0) -> list[str]:
    """The server's log lines holding `fragment`, once there are `count` of them. The server logs a tab or a
    refusal as it answers, but its lines are read here by a thread of their own: one may land a moment after
    the page has seen the answer, so a test that counts lines waits for them (the deadline only bounds it)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [line for line in list(server.lines) if fragment in line]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.05)


async def result_of(page: Page, url: str) -> str:
    await page.goto(url)
    return str(await page.wait_for("window.__result", timeout=20))


@pytest.mark.parametrize("options", [(), ("--no-token",)], ids=["default", "no-token"])
async def test_pages_of_another_origin_cannot_open_a_console(options: tuple[str, ...], browser: Chromium,
                                                             tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", *options, home=home) as server, server.log_on_failure():
        target = server.url.replace("http:", "ws:") + "/ws?width=80&height=24"
        # The operator's own tab first: the browser now holds the token cookie, if there is a token.
        operator = await browser.new_page(1000, 600)
        await operator.goto(server.open_url)
        await operator.wait_for("!!document.body && document.body.classList.contains('-first-byte')", timeout=60)
        await logged(server, "tab opened", 1)  # logged once the tab has its first bytes: it may come after them
        consoles = len(server.console_pids())
        assert consoles == 1

        evil_file = tmp_path / "evil.html"
        evil_file.write_text(direct_page(target))
        async with HostilePages(target) as pages:
            attacker = await browser.new_page(800, 600)
            results = {
                "another port": await result_of(attacker, f"{pages.url}/direct.html"),
                "sandboxed iframe": await result_of(attacker, f"{pages.url}/framed.html"),
                "file page": await result_of(attacker, evil_file.as_uri()),
            }
        assert all(result.startswith("refused") for result in results.values()), results
        assert len(server.console_pids()) == consoles  # no console was started for any of them
        refusals = await logged(server, "refused GET /ws", 3)
        assert len(refusals) == 3 and all("403 Forbidden" in line for line in refusals), refusals
        assert any("Origin 'null'" in line for line in refusals)
        assert await operator.evaluate("!document.body.classList.contains('-closed')")  # still working


async def test_a_fetch_from_another_port_starts_no_console_and_joins_no_desk(browser: Chromium,
                                                                              tmp_path: Path) -> None:
    """Alice's browser has her cookie for the desk; a page on another loopback port fetches the desk's
    address (`no-cors`, with credentials: the cookie goes along, ports are one site). That used to get a
    console started, which joined the desk as an operator and claimed the first free call for as long as it
    lived, again and again. Now the page is served and nothing is started: the browser's `Sec-Fetch-*`
    headers say it is not a navigation of the console's own page."""
    from urllib.parse import urlencode, urlsplit

    from console.runtime.desk.remote import RemoteDesk
    from tests.support.desk_remote import SCENARIO, until_items

    desk = ("--supervise", "--mode", "approve writes", "--domain", "retail", "--scenarios", SCENARIO)
    with ServedConsole(*desk, "--operators", "alice,probe", home=tmp_path / "home") as server, \
            server.log_on_failure():
        socket = Path(server.wait_for_line(r"desk host pid \d+: desk: 1 session\(s\) at (\S+)", 60).group(1))
        tokens = {name: url.split("?token=", 1)[1] for name, url in server.operator_urls.items()}
        probe = await RemoteDesk.connect(socket, "probe", token=tokens["probe"])
        try:
            await until_items(probe)
            attacker = await browser.new_page(800, 600)
            await attacker.send("Network.setCookie", name=f"ledgeragent_token_{urlsplit(server.url).port}",
                                value=tokens["alice"], url=server.url + "/", httpOnly=True, sameSite="Strict")
            async with HostilePages(server.url) as pages:
                result = await result_of(attacker, f"{pages.url}/fetching.html?{urlencode({'url': server.url + '/'})}")
            # The request is made with the cookie; its answer is then withheld from the page (our
            # Cross-Origin-Resource-Policy: same-origin makes the fetch fail), but the server has served it.
            assert result in ("fetched", "failed: TypeError: Failed to fetch"), result
            line = server.wait_for_line(r"served the page without pre-starting a console: not a navigation .*", 60)
            assert "'no-cors'" in line.group(0) and "'same-site'" in line.group(0)  # the browser's own words
            assert not any("pre-started console" in line or re.search(r"desk: (?!probe )\S+ connected", line)
                           for line in server.lines)
            assert all(item.claimed_by is None for item in probe.snapshot().items)
        finally:
            await probe.close()
