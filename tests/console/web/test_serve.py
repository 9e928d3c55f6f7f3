"""`ledgeragent serve`: the console in a browser, driven over the websocket and in headless Chromium.

Every server here is the real one (`python -m console.cli.serve --port 0`) in a subprocess, with a temporary
LEDGERAGENT_HOME; every tab is a real console process running the scripted retail demo at --pace 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest

from benchmarks.browser import Chromium, find_chromium
from benchmarks.serve import ServedConsole, Tab
from console.cli.serve import (
    CHILD_ENV_NAMES,
    ServeError,
    build_config,
    check_bind,
    child_command,
    child_environment,
    console_argv,
    main,
    register,
)
from console.web.server import PRESTART_TTL, ConsoleProcess

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOT = ROOT / "docs" / "screenshots" / "browser.png"
TOKEN = "t0ken-for-tests-0123456789abcdef"
SECRETS = {"SECRET_X": "must-not-reach-a-tab", "OPENAI_API_KEY": "sk-fake-key-must-not-reach-a-tab",
           "AWS_SECRET_ACCESS_KEY": "nope"}


@pytest.fixture(autouse=True)
def no_token_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own $LEDGERAGENT_TOKEN would turn every server here into a token server."""
    monkeypatch.delenv("LEDGERAGENT_TOKEN", raising=False)


def server_env() -> dict[str, str]:
    """Our environment plus secrets a careless server would hand to every tab."""
    return dict(os.environ) | SECRETS


def traces(home: Path) -> list[Path]:
    return sorted((home / "sessions").glob("*/trace.jsonl"))


def session_folders(home: Path) -> list[Path]:
    """One per console process: made when the console opens its session (the trace comes a moment later)."""
    return sorted(p for p in (home / "sessions").glob("*") if p.is_dir())


async def wait_until(condition: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Poll (never a fixed sleep) until `condition` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        await asyncio.sleep(0.05)


def ended(trace: Path) -> bool:
    return trace.exists() and '"type":"session_ended"' in trace.read_text()


def verdicts(trace: Path) -> list[str]:
    events = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return [e["verdict"] for e in events if e["type"] == "gate_decision"]


def child_environ(pid: int) -> dict[str, str] | None:
    """A process's real environment, from /proc (None where there is no /proc)."""
    path = Path(f"/proc/{pid}/environ")
    if not path.exists():
        return None
    pairs = [item.split("=", 1) for item in path.read_bytes().decode().split("\0") if "=" in item]
    return {name: value for name, value in pairs}


async def raw_request(url: str, data: bytes, timeout: float = 10.0) -> bytes:
    """Send raw bytes to the server, read until it closes (what a hand-written or broken client does)."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


# ------------------------------------------------------------------------------------------ websocket level


async def test_a_key_over_the_websocket_runs_the_demo_and_closing_the_tab_ends_its_console(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", home=home, env=server_env()) as server:
        assert server.token is not None  # made by the server: a token on loopback too, by default
        async with aiohttp.ClientSession() as http:
            tab = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(tab.painted.wait(), 60)
            pid = int(server.wait_for_line(r"console pid (\d+)").group(1))

            await tab.socket.send_json(["ping", "p-1"])  # the page's keep-alive: answered by the server itself
            assert json.loads(await asyncio.wait_for(tab.texts.get(), 5)) == ["pong", "p-1"]

            environ = child_environ(pid)
            if environ is not None:  # what the console process really got: our allowlist + textual-serve's keys
                assert not set(SECRETS) & set(environ), "a secret reached the tab's console"
                assert environ["LEDGERAGENT_HOME"] == str(home.resolve())
                assert environ["TEXTUAL_DRIVER"] == "console.web.driver:TabDriver"  # Textual's, sized by its tab
                extra = set(environ) - CHILD_ENV_NAMES - {"LEDGERAGENT_HOME", "TEXTUAL_DRIVER", "TEXTUAL_FPS",
                                                          "TEXTUAL_COLOR_SYSTEM", "TERM_PROGRAM",
                                                          "TERM_PROGRAM_VERSION", "COLUMNS", "ROWS"}
                shell_own = {"PWD", "OLDPWD", "SHLVL", "_"}  # set by /bin/sh itself before it execs the console
                assert not {name for name in extra - shell_own if not name.startswith("LC_")}

            await wait_until(lambda: len(traces(home)) == 1, what="the tab's session folder")
            trace = traces(home)[0]
            before = trace.stat().st_size
            await tab.send_key(" ")  # space starts the scenario
            await wait_until(lambda: ended(trace), what="the scenario's end in the trace")
            assert trace.stat().st_size > before
            assert verdicts(trace) == ["REVISE", "ALLOW"]

            await tab.close()
            server.wait_for_line(rf"console pid {pid} ended", timeout=10)
            assert not Path(f"/proc/{pid}").exists() or sys.platform != "linux"
            assert ended(trace) and (trace.parent / "db.sqlite").exists()  # the trace stays on disk


async def test_with_a_token_every_page_and_websocket_needs_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", home=home, env=server_env() | {"LEDGERAGENT_TOKEN": TOKEN}) as server:
        url = server.url
        assert server.open_url == f"{url}/?token={TOKEN}"  # the URL to open, with the token
        async with aiohttp.ClientSession() as http:
            for path in ("/", "/?token=wrong-wrong-wrong-wrong", "/static/js/textual.js"):
                async with http.get(url + path, allow_redirects=False) as response:
                    assert response.status == 401, path
                    assert "Access token needed" in await response.text()
            for query in ("", "&token=wrong-wrong-wrong-wrong"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(f"{url}/ws?width=80&height=24{query}")
                assert refused.value.status == 401
            async with http.get(f"{url}/", headers={"Authorization": "Bearer nope"}) as response:
                assert response.status == 401
        assert not session_folders(home), "a refused request started a console"

        # The browser's way: ?token= once; the server moves it into a cookie and out of the address bar.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            async with browser.get(f"{url}/?token={TOKEN}&fontsize=14", allow_redirects=False) as response:
                assert response.status == 303
                assert response.headers["Location"] == "./?fontsize=14"
                cookie = response.headers["Set-Cookie"]
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            async with browser.get(f"{url}/") as response:
                assert response.status == 200 and "textual-terminal" in await response.text()
                assert response.headers["X-Frame-Options"] == "DENY"
            with pytest.raises(aiohttp.WSServerHandshakeError) as foreign:  # another site's page, our cookie
                await browser.ws_connect(f"{url}/ws", headers={"Origin": "http://evil.example"})
            assert foreign.value.status == 403
            tab = await Tab.open(browser, url, headers={"Origin": url})
            await asyncio.wait_for(tab.painted.wait(), 60)
            await tab.send_key("q")  # quitting the console closes the tab's websocket (the page says so)
            await asyncio.wait_for(tab.closed.wait(), 10)
            server.wait_for_line(r"console pid \d+ ended \(exit 0\)")


async def test_without_a_token_only_loopback_names_are_answered(tmp_path: Path) -> None:
    with ServedConsole("--pace", "0", "--no-token", home=tmp_path / "home") as server:
        assert server.token is None and server.open_url == f"{server.url}/"
        server.wait_for_line(r"no token \(--no-token\): every user and program on this machine can open a console")
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{server.url}/", headers={"Host": "evil.example"}) as response:
                assert response.status == 403  # DNS rebinding: a foreign name pointing at 127.0.0.1
            async with http.get(f"{server.url}/", headers={"Host": "localhost:1"}) as response:
                assert response.status == 200
            async with http.get(f"{server.url}/", headers={"Host": ""}) as response:
                assert response.status == 400  # an empty Host is refused (by aiohttp's parser already)
        reply = await raw_request(server.url, b"GET / HTTP/1.0\r\n\r\n")
        assert reply.startswith(b"HTTP/1.0 400 ") and b"has no <code>Host</code> header" in reply  # not our name


async def test_behind_a_tls_proxy_the_page_uses_wss_on_the_public_address(tmp_path: Path) -> None:
    with ServedConsole("--public-url", "https://console.example.com/", home=tmp_path / "home") as server:
        assert server.open_url == f"https://console.example.com/?token={server.token}"
        server.wait_for_line(r"reachable through your proxy at https://console.example.com")
        async with aiohttp.ClientSession() as http:
            # What the proxy forwards: the public name in Host (nginx `proxy_set_header Host $host`, Caddy's default).
            headers = {"Host": "console.example.com", "Authorization": f"Bearer {server.token}"}
            async with http.get(f"{server.url}/", headers=headers) as response:
                assert response.status == 200
                page = await response.text()
            assert 'data-session-websocket-url="wss://console.example.com/ws"' in page
            assert 'href="https://console.example.com/static/css/xterm.css"' in page
            assert "fonts.googleapis.com" not in page  # no third-party requests from an operator console


async def test_the_tab_after_the_last_slot_gets_a_clear_refusal_not_a_hang(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", "--max-sessions", "1", home=home) as server:
        async with aiohttp.ClientSession() as http:
            first = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(first.painted.wait(), 60)
            await wait_until(lambda: len(session_folders(home)) == 1, what="the first tab's session folder")
            [first_folder] = session_folders(home)

            second = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(second.closed.wait(), 10)  # refused within ROOM_WAIT, not left hanging
            assert second.socket.close_code == aiohttp.WSCloseCode.TRY_AGAIN_LATER
            # The page shows the close frame's reason in its "session ended" dialog, over a Restart button.
            assert second.close_reason.startswith("The only console session is in use: close another console tab")
            assert second.bytes > 0  # the message was written into the terminal too
            assert len(session_folders(home)) == 1  # no console was started for it

            await first.close()  # the slot is for the next tab as soon as that console has ended
            # Its session never started (nobody pressed space): the console leaves no folder behind.
            await wait_until(lambda: not first_folder.exists(), what="the unused first session's folder removed")
            third = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(third.painted.wait(), 60)
            await wait_until(lambda: len(server.console_pids()) >= 2, what="the third tab's console in the log")
            pids = server.console_pids()
            assert len(pids) == 2  # the refused tab never got a console process
            await wait_until(lambda: len(session_folders(home)) == 1, what="the third tab's session folder")
            [third_folder] = session_folders(home)
            await third.send_key(" ")  # start its session: from now on it has a trace to keep
            trace = third_folder / "trace.jsonl"  # made a moment after the folder, when the session opens
            await wait_until(lambda: trace.is_file() and trace.stat().st_size > 0, what="the third tab's trace")

            # Stopping the server (SIGTERM) with a tab open: the tab is told, its console ends, the trace stays.
            assert await asyncio.to_thread(server.stop) == 0
            await asyncio.wait_for(third.closed.wait(), 5)
            assert third.socket.close_code == aiohttp.WSCloseCode.GOING_AWAY
            assert not Path(f"/proc/{pids[-1]}").exists() or sys.platform != "linux"
            assert session_folders(home) == [third_folder] and trace.stat().st_size > 0


async def test_a_page_load_starts_its_console_and_the_tab_takes_it(tmp_path: Path) -> None:
    """The page's console starts when the page is served, not when its websocket arrives (most of a
    page load was the console's start, begun only after the page, its scripts and styles had loaded). The tab
    gets that very process, with everything it drew so far; one that no tab takes is ended and frees its slot."""
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", "--max-sessions", "1", home=home) as server, server.log_on_failure():
        bearer = {"Authorization": f"Bearer {server.token}"} | NAVIGATION
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{server.url}/", headers=bearer) as response:
                assert response.status == 200
            pid = int(server.wait_for_line(r"pre-started console pid (\d+) for a page load", timeout=60).group(1))
            tab = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(tab.painted.wait(), 60)
            server.wait_for_line(rf"tab opened from .*: console pid {pid} \(pre-started\)", timeout=60)
            await tab.quiet()
            await tab.key_to_frame("m", timeout=60)  # it reads the tab's keys
            await tab.close()
            server.wait_for_line(rf"console pid {pid} ended", timeout=60)

            # A page whose websocket never comes: its console is ended, and the only slot is free again.
            start = len(server.lines)
            async with http.get(f"{server.url}/", headers=bearer) as response:
                assert response.status == 200
            unused = int(server.wait_for_line(r"pre-started console pid (\d+)", timeout=60, start=start).group(1))
            server.wait_for_line(rf"pre-started console pid {unused} not taken by a tab within \d+ s: ended",
                                 timeout=60 + PRESTART_TTL)
            await wait_until(lambda: not Path(f"/proc/{unused}").exists() or sys.platform != "linux",
                             what="the unused console gone")
            tab = await Tab.open(http, server.url, token=server.token)
            await asyncio.wait_for(tab.painted.wait(), 60)
            assert tab.socket.close_code is None  # not refused as "in use"
            await tab.close()


# What a browser sends when the person opens the page (typed, a bookmark, a reload, the redirect from ?token=).
NAVIGATION = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none", "Sec-Fetch-Dest": "document"}


NOT_NAVIGATIONS = {
    "no headers": {},  # curl, a script, a browser that sends none: the websocket starts its console
    "no-cors fetch": {"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "empty"},
    "cors fetch": {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": "empty"},
    "same-site link": NAVIGATION | {"Sec-Fetch-Site": "same-site"},  # a link on a page of another port here
    "cross-site link": NAVIGATION | {"Sec-Fetch-Site": "cross-site"},
    "iframe": NAVIGATION | {"Sec-Fetch-Dest": "iframe"},  # framed (the page also refuses to be shown framed)
    "site missing": {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},
}


async def test_only_a_navigation_to_the_page_itself_pre_starts_a_console(tmp_path: Path) -> None:
    """A page on another port of this host (same-site: cookies do not tell ports apart) fetching the console's
    address, or a program with the token, got the page and a console started for it, one after another as
    each ended; at a desk that console joined as an operator. Only a browser's top-level navigation of this
    server's own origin starts one now (`Sec-Fetch-*`); the page is served either way."""
    with ServedConsole("--pace", "0", home=tmp_path / "home") as server, server.log_on_failure():
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http:
            for what, headers in NOT_NAVIGATIONS.items():
                start = len(server.lines)
                async with http.get(f"{server.url}/", headers=headers) as response:
                    assert response.status == 200 and "textual-terminal" in await response.text(), what
                server.wait_for_line(r"served the page without pre-starting a console: not a navigation", 60,
                                     start=start)
            assert not any("pre-started console" in line for line in server.lines)
            for site in ("none", "same-origin"):  # typed or a bookmark; a reload or a link on our own page
                start = len(server.lines)
                async with http.get(f"{server.url}/", headers=NAVIGATION | {"Sec-Fetch-Site": site}) as response:
                    assert response.status == 200
                pid = server.wait_for_line(r"pre-started console pid (\d+) for a page load", 60, start=start).group(1)
                tab = await Tab.open(http, server.url)  # takes it, so the next page load may start one again
                server.wait_for_line(rf"tab opened .*console pid {pid} \(pre-started\)", 60, start=start)
                await tab.close()


def test_a_public_address_without_a_token_is_refused_before_binding(capsys: pytest.CaptureFixture[str]) -> None:
    def error() -> str:
        return " ".join(capsys.readouterr().err.split())  # rich wraps long lines at 80 columns

    assert main(["--host", "0.0.0.0", "--no-token", "--port", "1"]) == 2
    assert "needs an access token" in error()
    assert main(["--public-url", "https://console.example.com", "--no-token", "--port", "1"]) == 2
    assert "needs an access token" in error()
    assert main(["--token", TOKEN, "--no-token", "--port", "1"]) == 2
    assert "contradict" in error()
    with pytest.raises(ServeError, match="at least 16"):
        check_bind("0.0.0.0", "short")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", TOKEN)


def test_consoles_starting_in_the_same_second_get_separate_folders(tmp_path: Path) -> None:
    """Two tabs opened at once start two consoles at once: each must claim its own session folder."""
    from concurrent.futures import ThreadPoolExecutor

    from console.runtime.storage import new_session_folder

    with ThreadPoolExecutor(8) as pool:
        claims = list(pool.map(lambda _: new_session_folder("retail", "same", tmp_path), range(16)))
    folders = [claim.path for claim in claims]
    assert len(set(folders)) == 16 and all(claim.path.is_dir() and claim.lock.held for claim in claims)
    for claim in claims:
        claim.release()


def test_the_browser_figures_run() -> None:
    """benchmarks/serve.py's websocket rows, with tiny counts (the suite runs them in full)."""
    from benchmarks.serve import bench_serve

    rows = {row.key: row for row in bench_serve(repeat=1, key_repeat=3, browser=False, soak_cycles=0)}
    assert set(rows) == {"serve_first_frame", "serve_key_latency", "serve_close_starting"}
    assert rows["serve_key_latency"].n == 3 and rows["serve_first_frame"].median_ns > 0


# ------------------------------------------------------------------------------------------ pure decisions


def serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_the_child_command_is_quoted_for_the_shell() -> None:
    args = serve_args("--operator", "O'Brien; rm -rf ~ $(id)", "--pace", "0")
    command = child_command(console_argv(args))
    words = shlex.split(command)
    assert words[0] == "exec" and words[1] == sys.executable
    assert "--operator=O'Brien; rm -rf ~ $(id)" in words
    assert words[2:4] == ["-m", "console.cli.tab"]  # `ledgeragent console`, with its stderr kept in a log file


def console_parser() -> argparse.ArgumentParser:
    """`ledgeragent console`'s options alone, as the tab parses them."""
    from console.cli.options import _add_console_arguments

    parser = argparse.ArgumentParser()
    _add_console_arguments(parser)
    return parser


def test_every_console_option_reaches_the_tab_with_its_value(tmp_path: Path) -> None:
    """Each console option, set away from its default on `serve`, reads back the same in the tab's argv."""
    db = tmp_path / "start.sqlite"
    db.write_bytes(b"")
    args = serve_args("--domain", "airline", "--scenario", "chat", "--agent", "fc", "--model", "m", "--base-url",
                      "http://127.0.0.1:9/v1", "--seat", "customer", "--mode", "approve writes", "--operator", "Ann",
                      "--autostart", "--db", str(db), "--pace", "0.25", "--tool-choice", "required",
                      "--max-tokens", "77", "--timeout", "9.5", "--retries", "0", "--model-args", '{"seed": 7}',
                      "--compare", "--evidence", "ask")
    argv = console_argv(args)
    assert argv[:3] == [sys.executable, "-m", "console.cli.tab"]
    tab = console_parser().parse_args(argv[3:])
    defaults = console_parser().parse_args([])
    for dest, value in vars(tab).items():
        assert value == getattr(args, dest), dest
        assert value != getattr(defaults, dest), f"{dest} is at its default: the test does not cover it"
    assert tab.db == str(db.resolve())


def test_a_new_console_option_reaches_the_tab_without_an_edit_in_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tab's argv is read off the console parser: an option added there is passed on (the
    hand-written list dropped anything it did not name)."""
    import console.cli.options as cli_common

    original = cli_common._add_console_arguments

    def with_new_options(parser: argparse.ArgumentParser) -> None:
        original(parser)
        parser.add_argument("--brand-new", help="an option added after serve was written")
        parser.add_argument("--new-flag", action="store_true")
        parser.add_argument("--tag", action="append")

    monkeypatch.setattr(cli_common, "_add_console_arguments", with_new_options)
    args = serve_args("--brand-new", "x y", "--new-flag", "--tag", "a", "--tag", "b")
    tab = console_parser().parse_args(console_argv(args)[3:])
    assert (tab.brand_new, tab.new_flag, tab.tag) == ("x y", True, ["a", "b"])


def test_a_value_that_starts_with_a_dash_reaches_the_tab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given as `--model=-m` on serve's command line, such a value is still the option's value in the tab (as a
    word of its own it read as an unknown option there, and the tab did not start)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-shop.sqlite").write_bytes(b"")
    args = serve_args("--model=-tiny-model", "--base-url=http://127.0.0.1:9/v1", "--db=-shop.sqlite",
                      "--operator=-ann")
    tab = console_parser().parse_args(console_argv(args)[3:])
    assert (tab.model, tab.operator, tab.db) == ("-tiny-model", "-ann", str(tmp_path / "-shop.sqlite"))


def test_the_child_environment_is_an_allowlist(tmp_path: Path) -> None:
    environ = {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm"} | SECRETS
    env = child_environment(environ, home=tmp_path, live_model=False, source_root=tmp_path / "src")
    assert not set(SECRETS) & set(env)
    assert env["LEDGERAGENT_HOME"] == str(tmp_path) and env["LC_ALL"] == "C.UTF-8"
    assert env["PYTHONPATH"] == str(tmp_path / "src")  # a source checkout: the child runs the server's code
    live = child_environment(environ, home=tmp_path, live_model=True)
    assert live["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"] and "SECRET_X" not in live


def test_only_a_live_model_gets_the_key(tmp_path: Path) -> None:
    environ = {"PATH": "/bin", "LEDGERAGENT_HOME": str(tmp_path)} | SECRETS
    scripted = build_config(serve_args(), environ)
    assert "OPENAI_API_KEY" not in scripted.environment and not scripted.live_model
    live = build_config(serve_args("--model", "gpt-test", "--scenario", "chat", "--seat", "customer"), environ)
    assert live.environment["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"] and "SECRET_X" not in live.environment
    assert "--model=gpt-test" in live.command


def test_textual_serve_environment_copy_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """textual-serve 1.1.3 starts a child's environment from os.environ.copy(); ours keeps only its own keys."""
    monkeypatch.setenv("SECRET_X", "server-only")

    async def nothing(*_: object) -> None:
        return None

    from textual_serve.download_manager import DownloadManager

    process = ConsoleProcess("true", environment={"PATH": "/bin", "LEDGERAGENT_HOME": "/h"}, write_bytes=nothing,
                             write_str=nothing, close=nothing, download_manager=DownloadManager())
    env = process._build_environment(width=120, height=40)
    assert "SECRET_X" not in env
    assert env["COLUMNS"] == "120" and env["ROWS"] == "40" and env["PATH"] == "/bin"
    assert env["TEXTUAL_DRIVER"] == "console.web.driver:TabDriver"
    assert "LEDGERAGENT_TAB_SIZE" not in env  # only a console started before its tab waits for the tab's size
    waiting = ConsoleProcess("true", environment={"PATH": "/bin"}, sized_by_tab=True, write_bytes=nothing,
                             write_str=nothing, close=nothing, download_manager=DownloadManager())
    assert waiting._build_environment(width=80, height=24)["LEDGERAGENT_TAB_SIZE"] == "wait"


# ------------------------------------------------------------------------------------------ real browser

CHROMIUM = find_chromium()
FIRST_BYTE = "!!document.body && document.body.classList.contains('-first-byte')"
# Counts the screen frames each tab receives, so the test can wait for a settled screen before a screenshot.
FRAME_PROBE = """
(() => {
  const Native = window.WebSocket;
  window.__lastFrame = 0;
  window.WebSocket = class extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("message", () => { window.__lastFrame = performance.now(); });
    }
  };
})();
"""


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package `chromium`; .ci/run "
                    "installs it, or set LEDGERAGENT_CHROMIUM to a Chromium/Chrome binary)")
async def test_two_browser_tabs_run_the_retail_demo_independently(
        browser: Chromium, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", home=home) as server, server.log_on_failure():
        try:
            pages = [await browser.new_page(1600, 900), await browser.new_page(1600, 900)]
            for page in pages:
                await page.add_init_script(FRAME_PROBE)
                await page.goto(server.open_url)
            for page in pages:
                await page.wait_for(FIRST_BYTE, timeout=60)  # the terminal is painted
            await wait_until(lambda: len(traces(home)) == 2, what="one session folder per tab")
            for page in pages:  # what a person does: press space (the page gives the terminal the focus)
                await page.press(" ", "Space", 32, text=" ")
            await wait_until(lambda: all(ended(t) for t in traces(home)), what="both scenarios ending")
            first, second = traces(home)
            assert first.parent != second.parent  # two folders, two databases
            assert verdicts(first) == verdicts(second) == ["REVISE", "ALLOW"]
            # A settled screen (no frame for 0.4 s) shows the REVISE verdict in the gate pane.
            await pages[0].wait_for("window.__lastFrame > 0 && performance.now() - window.__lastFrame > 400",
                                    timeout=10)
            shot = await pages[0].screenshot(tmp_path / "browser.png")
            assert shot.stat().st_size > 10_000
            if not SCREENSHOT.exists() or os.environ.get("LEDGERAGENT_SCREENSHOTS") == "update":
                SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(shot, SCREENSHOT)  # docs/browser.md's picture (LEDGERAGENT_SCREENSHOTS=update)
            assert await pages[1].evaluate("!document.body.classList.contains('-closed')")
        finally:
            await browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package `chromium`; .ci/run "
                    "installs it, or set LEDGERAGENT_CHROMIUM to a Chromium/Chrome binary)")
async def test_in_the_browser_a_full_server_says_so_and_a_reload_keeps_working(
        browser: Chromium, tmp_path: Path) -> None:
    with ServedConsole("--pace", "0", "--max-sessions", "1", home=tmp_path / "home") as server, \
            server.log_on_failure():
        try:
            first = await browser.new_page(1000, 600)
            await first.goto(server.open_url)
            await first.wait_for(FIRST_BYTE, timeout=60)
            # A reload asks for the page while its old console still holds the only slot: it must still work.
            await first.send("Page.reload")
            await wait_until(lambda: len(server.console_pids()) == 2, what="a new console for the reloaded tab")
            await first.wait_for(FIRST_BYTE, timeout=60)

            second = await browser.new_page(1000, 600)
            await second.goto(server.open_url)
            await second.wait_for("!!document.body && document.body.classList.contains('-closed')", timeout=10)
            message = await second.evaluate("document.querySelector('.closed-dialog .message').textContent")
            assert message.startswith("The only console session is in use")
            assert await first.evaluate("!document.body.classList.contains('-closed')")
        finally:
            await browser.close()
