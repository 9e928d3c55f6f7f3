"""`ledgeragent serve`: the operator console in a browser, one console process per tab, safe by default.

textual-serve runs a shell command per websocket and pipes the terminal protocol to xterm.js in the page, so
each browser tab gets its own console process, and therefore its own session folder and database copy (each
console process makes a fresh one): two tabs never share state. What textual-serve does not do, and this
module adds (the server side lives in `console.webserver`):

- bind to 127.0.0.1 unless told otherwise, and refuse any other address without an access token;
- check that token on every page and websocket request (`?token=` once, then a cookie), else 401;
- start the child with only the environment a console needs, not a copy of ours (textual-serve's default
  would hand every secret in the server's environment to every tab); the LLM key only with a live model;
- build the child command from argv with `shlex` quoting, since textual-serve runs it through a shell;
- cap the number of console processes, and say so clearly to the tab that does not get one.

This module is the command line and the pure decisions (command, environment, bind policy), kept free of
aiohttp and textual-serve so `ledgeragent` starts as fast as before; `cmd_serve` imports the server lazily.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.model_args import model_argv

HELP = "serve the operator console to web browsers (one console process per tab)"
DESCRIPTION = """\
Serve the operator console to web browsers. Each tab runs its own console process, with its own session
folder and database copy; closing the tab ends that console and keeps its trace on disk.

Safe by default: binds 127.0.0.1. Any other address needs an access token (--token, or better the
LEDGERAGENT_TOKEN environment variable), and then every page and websocket request must present it: open
the printed URL once, the browser keeps the token in a cookie. Tabs get only the environment a console needs
(the LLM key only with --model). For TLS, put a reverse proxy in front: see docs/browser.md."""
TOKEN_ENV = "LEDGERAGENT_TOKEN"
MIN_TOKEN_LENGTH = 16
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 4

# What a console process needs from our environment, and nothing else. The names are exact; LC_* is a prefix.
CHILD_ENV_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",  # basics, locale, time zone
    "TERM", "COLORTERM", "NO_COLOR",  # terminal capabilities (textual-serve sets the rest)
    "PYTHONPATH", "PYTHONHOME", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE",  # to run at all
    "SYSTEMROOT",  # Windows needs it to start any process
})
CHILD_ENV_PREFIXES = ("LC_",)
# Only when the console talks to a live model: the key is the one secret a tab may need.
LIVE_MODEL_ENV_NAMES = frozenset({"OPENAI_API_KEY", "OPENAI_BASE_URL"})


class ServeError(Exception):
    """A refused configuration (e.g. a public bind without a token): printed without a traceback, status 2."""


@dataclass(frozen=True)
class ServeConfig:
    """Everything the web server needs, decided up front from the command line and the environment."""

    command: str  # shell command line of one console process (already quoted)
    environment: Mapping[str, str]  # the child's whole environment, before textual-serve adds its own keys
    host: str
    port: int
    token: str | None
    max_sessions: int
    public_url: str | None
    home: Path  # LEDGERAGENT_HOME of the children: their session folders are under home / "sessions"
    live_model: bool = False  # a real model is configured, so the children get the LLM key


def register(subparsers: Any) -> None:
    """Add the `serve` subcommand (with its handler) to an argparse subparsers object."""
    from console.cli import _add_console_arguments

    parser: argparse.ArgumentParser = subparsers.add_parser("serve", help=HELP, description=DESCRIPTION,
                                                            formatter_class=argparse.RawDescriptionHelpFormatter)
    web = parser.add_argument_group("web server")
    web.add_argument("--host", default=DEFAULT_HOST,
                     help="address to bind (default: %(default)s; any other address needs --token)")
    web.add_argument("--port", type=int, default=DEFAULT_PORT, help="TCP port (default: %(default)s; 0 = any free)")
    web.add_argument("--token", help=f"access token every request must present (default: ${TOKEN_ENV}); prefer "
                     "the environment variable, a command line is visible to other local users")
    web.add_argument("--max-sessions", type=_positive_int, default=DEFAULT_MAX_SESSIONS, metavar="N",
                     help="console processes at once, one per open tab (default: %(default)s)")
    web.add_argument("--public-url", metavar="URL",
                     help="the address browsers use, when behind a reverse proxy (https://… makes the page use "
                          "wss://); default: derived from the page's own address")
    _add_console_arguments(parser)  # the same options as `ledgeragent console`: every tab runs that
    parser.set_defaults(handler=cmd_serve)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    """Validate, then serve until Ctrl+C / SIGTERM; open tabs' consoles are ended, their traces stay."""
    from console.cli import CliError

    try:
        config = build_config(args, os.environ)
    except ServeError as exc:
        raise CliError(str(exc)) from exc
    from console.webserver import ConsoleServer

    ConsoleServer(config).serve()
    return 0


def build_config(args: argparse.Namespace, environ: Mapping[str, str]) -> ServeConfig:
    """Check the console options once (a typo should fail here, not in every tab) and the bind policy."""
    from console.cli import _domain, _scenario
    from console.live import SessionSpec, SupervisionMode
    from console.storage import data_root

    token = args.token if args.token is not None else (environ.get(TOKEN_ENV) or None)
    check_bind(args.host, token)
    domain = _domain(args.domain)
    scenario = None if args.scenario in ("", "none", "chat") else _scenario(domain, args.scenario).name
    model = "operator" if args.seat == "agent" else (args.model or "scripted")
    seat = "watch" if args.seat == "agent" else args.seat
    problems = SessionSpec(domain=domain.name, scenario=scenario, agent=args.agent, model=model,
                           base_url=args.base_url, seat=seat, mode=SupervisionMode(args.mode)).problems()
    if problems:
        raise ServeError("; ".join(problems))
    if args.db and not Path(args.db).is_file():
        raise ServeError(f"no such database file: {args.db}")
    if args.public_url is not None and not args.public_url.startswith(("http://", "https://")):
        raise ServeError("--public-url must start with http:// or https://")
    home = Path(environ["LEDGERAGENT_HOME"]) if environ.get("LEDGERAGENT_HOME") else data_root()
    live = model not in ("scripted", "operator")
    return ServeConfig(command=child_command(console_argv(args)),
                       environment=child_environment(environ, home=home.resolve(), live_model=live),
                       host=args.host, port=args.port, token=token, max_sessions=args.max_sessions,
                       public_url=args.public_url.rstrip("/") if args.public_url else None, home=home.resolve(),
                       live_model=live)


def check_bind(host: str, token: str | None) -> None:
    """Loopback needs nothing; any other address is reachable by others, so it needs a strong token."""
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise ServeError(f"the token must be at least {MIN_TOKEN_LENGTH} characters; make one with: "
                         "python -c 'import secrets; print(secrets.token_urlsafe(24))'")
    if token is None and not is_loopback(host):
        raise ServeError(f"binding to {host} exposes the console to the network: set an access token with "
                         f"--token or ${TOKEN_ENV} (python -c 'import secrets; print(secrets.token_urlsafe(24))'),"
                         f" or keep the default --host {DEFAULT_HOST}")


def is_loopback(host: str) -> bool:
    """True for names and addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def console_argv(args: argparse.Namespace) -> list[str]:
    """The `ledgeragent console …` argv every tab runs: the server's own interpreter and code, our options."""
    scenario = args.scenario
    if Path(scenario).suffix == ".json" and Path(scenario).is_file():
        scenario = str(Path(scenario).resolve())  # a scenario file: the same file whatever the child's cwd
    argv = [sys.executable, "-m", "console", "console", "--domain", args.domain, "--scenario", scenario,
            "--agent", args.agent, "--seat", args.seat, "--mode", args.mode, "--operator", args.operator]
    if args.model:
        argv += ["--model", args.model]
    if args.base_url:
        argv += ["--base-url", args.base_url]
    if args.db:
        argv += ["--db", str(Path(args.db).resolve())]
    if args.pace is not None:
        argv += ["--pace", repr(float(args.pace))]
    if args.autostart:
        argv.append("--autostart")
    return argv + model_argv(args)


def child_command(argv: Sequence[str]) -> str:
    """A shell command line for textual-serve (it uses a shell): every word quoted, and `exec` so the shell
    becomes the console process, and ending it (closing the tab) ends the console, not just a shell."""
    return "exec " + shlex.join(argv)


def child_environment(environ: Mapping[str, str], *, home: Path, live_model: bool,
                      source_root: Path | None = None) -> dict[str, str]:
    """Only what a console process needs: an allowlist, so a secret we have never heard of stays out too.

    `LEDGERAGENT_HOME` is always set (resolved), so every tab writes its session folder where the server
    says, whatever XDG variables the child would otherwise have looked at. When the server runs from a source
    checkout, its root goes first on PYTHONPATH so the child imports the very code the server validated with.
    """
    env = {name: value for name, value in environ.items()
           if name in CHILD_ENV_NAMES or name.startswith(CHILD_ENV_PREFIXES)}
    if live_model:
        env |= {name: value for name, value in environ.items() if name in LIVE_MODEL_ENV_NAMES}
    env["LEDGERAGENT_HOME"] = str(home)
    root = source_root if source_root is not None else Path(__file__).resolve().parents[1]
    if root.name not in ("site-packages", "dist-packages"):
        paths = [str(root), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(root)]]
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m console.serve …`: the same as `ledgeragent serve …`, without the main CLI's wiring."""
    from console.cli import CliError, _err

    parser = argparse.ArgumentParser(prog="ledgeragent")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    try:
        return cmd_serve(args)
    except CliError as exc:
        _err(str(exc))
        return 2


if __name__ == "__main__":
    sys.exit(main())
