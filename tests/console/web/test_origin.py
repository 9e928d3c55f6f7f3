"""`ledgeragent serve`'s pure decisions: which Origin may open a console, the token, the bind, sizes, messages.

The table below lists the origins a hostile page can present: the server's own origins pass; `null` (sandboxed
frames, file: and data: pages), an empty host, `file:`/`data:`, a wrong scheme, host or port are refused. Before
the fix the server compared only the host:port part against a set that held "" when --public-url was not given,
so `null` and `file://` passed.
"""

from __future__ import annotations

import argparse

import pytest

from console.cli.serve import (
    MAX_COLUMNS,
    MAX_ROWS,
    ServeError,
    allowed_origins,
    build_config,
    check_bind,
    choose_token,
    origin_allowed,
    register,
)
from console.web.server import BadMessage, Command, parse_message

PORT = 8000
OURS = allowed_origins(PORT)
BEHIND_PROXY = allowed_origins(PORT, "https://console.example.com")


@pytest.mark.parametrize(("origin", "allowed"), [
    ("http://127.0.0.1:8000", True),
    ("http://localhost:8000", True),
    ("http://LOCALHOST:8000", True),  # host names are case-insensitive
    ("http://[::1]:8000", True),
    (None, True),  # no header: not a browser (browsers always send one on a websocket); the token decides
    ("null", False),  # a sandboxed iframe, a file: page, a data: URL
    ("", False),
    ("http://", False),  # empty host
    ("http://:8000", False),
    ("file://", False),
    ("file:///home/operator/evil.html", False),
    ("data:text/html,hi", False),
    ("https://127.0.0.1:8000", False),  # wrong scheme
    ("ws://127.0.0.1:8000", False),
    ("http://127.0.0.1:8001", False),  # another port: another local service's page
    ("http://127.0.0.1", False),  # port 80 is not ours
    ("http://127.0.0.2:8000", False),  # another loopback address is another origin
    ("http://evil.example:8000", False),
    ("http://127.0.0.1:8000.evil.example", False),
    ("http://user@127.0.0.1:8000", False),
    ("http://127.0.0.1:8000/path", False),
    ("http://127.0.0.1:99999", False),  # not a port
    ("http://127.0.0.1:80a", False),
    ("chrome-extension://abcdef", False),
])
def test_only_the_servers_own_origins_may_open_a_console(origin: str | None, allowed: bool) -> None:
    assert origin_allowed(origin, OURS) is allowed


@pytest.mark.parametrize(("origin", "allowed"), [
    ("https://console.example.com", True),
    ("https://console.example.com:443", True),  # the default port, spelt out
    ("http://console.example.com", False),  # the proxy serves https: plain http is another origin
    ("https://console.example.com:8443", False),
    ("https://evil.console.example.com", False),
    ("http://127.0.0.1:8000", True),  # the server itself, from this machine
    ("null", False),
])
def test_behind_a_proxy_the_public_url_is_the_origin(origin: str, allowed: bool) -> None:
    assert origin_allowed(origin, BEHIND_PROXY) is allowed


def test_a_non_loopback_bind_adds_its_own_address() -> None:
    origins = allowed_origins(PORT, None, ["http://192.0.2.7:8000"])
    assert origin_allowed("http://192.0.2.7:8000", origins)
    assert not origin_allowed("http://192.0.2.8:8000", origins)


# ------------------------------------------------------------------------------------------ token and bind


def test_a_token_is_made_unless_given_or_refused() -> None:
    token, source = choose_token(None, None, no_token=False)
    assert source == "generated" and token is not None and len(token) >= 32
    assert choose_token(None, None, no_token=False)[0] != token  # random, each run
    assert choose_token("x" * 16, "y" * 16, no_token=False) == ("x" * 16, "option")
    assert choose_token(None, "y" * 16, no_token=False) == ("y" * 16, "environment")
    assert choose_token(None, "y" * 16, no_token=True) == (None, "none")  # the explicit opt-out wins
    with pytest.raises(ServeError, match="contradict"):
        choose_token("x" * 16, None, no_token=True)


@pytest.mark.parametrize(("host", "token", "public_url", "problem"), [
    ("127.0.0.1", None, None, None),
    ("::1", None, None, None),
    ("localhost", None, "http://localhost:8000", None),
    ("0.0.0.0", None, None, "exposes the console"),
    ("192.0.2.7", None, None, "exposes the console"),
    ("127.0.0.1", None, "https://console.example.com", "reachable through a proxy"),  # loopback bind, public URL
    ("127.0.0.1", "short", None, "at least 16"),
    ("0.0.0.0", "t" * 16, None, None),
    ("127.0.0.1", "t" * 16, "https://console.example.com", None),
])
def test_the_bind_policy(host: str, token: str | None, public_url: str | None, problem: str | None) -> None:
    if problem is None:
        check_bind(host, token, public_url=public_url)
    else:
        with pytest.raises(ServeError, match=problem):
            check_bind(host, token, public_url=public_url)


def serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_the_config_carries_the_token_and_where_it_came_from(tmp_path: object) -> None:
    environ = {"PATH": "/bin", "LEDGERAGENT_HOME": str(tmp_path)}
    made = build_config(serve_args(), environ)
    assert made.token and made.token_source == "generated"
    assert build_config(serve_args(), environ | {"LEDGERAGENT_TOKEN": "e" * 20}).token == "e" * 20
    none = build_config(serve_args("--no-token"), environ | {"LEDGERAGENT_TOKEN": "e" * 20})
    assert none.token is None and none.token_source == "none"
    with pytest.raises(ServeError, match="needs an access token"):
        build_config(serve_args("--no-token", "--public-url", "https://console.example.com"), environ)
    with pytest.raises(ServeError, match="exposes the console"):
        build_config(serve_args("--no-token", "--host", "0.0.0.0"), environ)


# ------------------------------------------------------------------------------------------ page messages


@pytest.mark.parametrize(("text", "command"), [
    ('["stdin", " "]', Command("stdin", text=" ")),
    ('["ping", "1733030000000"]', Command("ping", text="1733030000000")),
    ('["focus"]', Command("focus")),
    ('["blur"]', Command("blur")),
    ('["resize", {"width": 120, "height": 40}]', Command("resize", width=120, height=40)),
    ('["resize", {"width": 3000, "height": 3000}]', Command("resize", width=MAX_COLUMNS, height=MAX_ROWS)),
])
def test_the_pages_messages_are_understood(text: str, command: Command) -> None:
    assert parse_message(text) == command


@pytest.mark.parametrize(("text", "reason"), [
    ("not json", "not JSON"),
    ('["stdin", NaN]', "not JSON"),
    ('["resize", {"width": Infinity, "height": 1}]', "not JSON"),
    ("[" * 100_000, "not JSON"),  # nesting deep enough to blow a recursive parser
    ("{}", "not a"),
    ("[]", "not a"),
    ("[1]", "not a"),
    ('["stdin"]', "unexpected"),
    ('["stdin", 1]', "unexpected"),
    ('["stdin", "a", "b"]', "unexpected"),
    ('["ping", {"x": 1}]', "unexpected"),
    ('["focus", 1]', "unexpected"),
    ('["quit"]', "unexpected"),  # only the server may ask a console to quit
    ('["resize", {"width": "abc", "height": 24}]', "width must be a positive integer"),
    ('["resize", {"width": 80, "height": 0}]', "height must be a positive integer"),
    ('["resize", {"width": -5, "height": 24}]', "width must be a positive integer"),
    ('["resize", {"width": 80.5, "height": 24}]', "width must be a positive integer"),
    ('["resize", {"width": true, "height": 24}]', "width must be a positive integer"),
    ('["resize", {"width": 80}]', "unexpected"),
    ('["resize", {"width": 80, "height": 24, "x": 1}]', "unexpected"),
    ('["resize", [80, 24]]', "unexpected"),
])
def test_bad_messages_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(BadMessage, match=reason):
        parse_message(text)
