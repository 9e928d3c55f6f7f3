"""`ledgeragent serve`: the operator console in a browser, one console process per tab, safe by default.

textual-serve runs a shell command per websocket and pipes the terminal protocol to xterm.js in the page, so
each browser tab gets its own console process, and therefore its own session folder and database copy (each
console process makes a fresh one): two tabs never share state. What textual-serve does not do, and this
module adds (the server side lives in `console.web.server`):

- bind to 127.0.0.1 unless told otherwise; make a random access token even there (as Jupyter does), unless
  `--no-token` says otherwise, which only loopback allows; refuse a public address or URL without a token;
- check that token on every page and websocket request (`?token=` once, then a cookie), else 401;
- accept a websocket only from the console's own page: its Origin must be one of the server's own origins
  (`allowed_origins`, `origin_allowed`), never `null`, `file:` or another port;
- start the child with only the environment a console needs, not a copy of ours (textual-serve's default
  would hand every secret in the server's environment to every tab); the LLM key only with a live model;
- build the child command from argv with `shlex` quoting, since textual-serve runs it through a shell;
- cap the number of console processes, and say so clearly to the tab that does not get one;
- bound what a tab may send (terminal size, message size: `terminal_size`), and time out idle connections.

This module is the command line and the pure decisions (command, environment, bind policy), kept free of
aiohttp and textual-serve so `ledgeragent` starts as fast as before; `cmd_serve` imports the server lazily.
What the server itself needs of them (`ServeConfig`, the origin and size checks) is in `console.web.policy`,
which both import: the server never imports this module.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from console.cli.errors import tcp_port
from console.web.policy import LOOPBACK_NAMES as LOOPBACK_NAMES  # re-exported: the policy's names stay here too
from console.web.policy import MAX_COLUMNS as MAX_COLUMNS
from console.web.policy import MAX_ROWS as MAX_ROWS
from console.web.policy import TOKEN_ENV as TOKEN_ENV
from console.web.policy import DeskServing
from console.web.policy import Origin as Origin
from console.web.policy import ServeConfig as ServeConfig
from console.web.policy import allowed_origins as allowed_origins
from console.web.policy import is_loopback as is_loopback
from console.web.policy import origin_allowed as origin_allowed
from console.web.policy import parse_origin as parse_origin
from console.web.policy import terminal_size as terminal_size

if TYPE_CHECKING:
    from console.runtime.operators import Operators

HELP = "serve the operator console to web browsers (one console process per tab)"
DESCRIPTION = """\
Serve the operator console to web browsers. Each tab runs its own console process, with its own session
folder and database copy; closing the tab ends that console and keeps its trace on disk.

Safe by default: binds 127.0.0.1 and makes a random access token for the run (set your own with
LEDGERAGENT_TOKEN, or --token); every page and websocket request must present it: open the printed URL once,
the browser keeps the token in a cookie. --no-token drops it, on a loopback address only. Tabs get only the
environment a console needs (the LLM key only with --model). For TLS, put a reverse proxy in front and give
its address with --public-url: see docs/browser.md.

With --supervise every tab is an operator at one desk: the operator its token belongs to (--operators makes
each their own, --operators-file names them by hash); with the shared token, every tab is --operator."""
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


def register(subparsers: Any) -> None:
    """Add the `serve` subcommand (with its handler) to an argparse subparsers object."""
    from console.cli.options import _add_console_arguments
    from console.cli.supervise_options import add_operator_arguments, add_session_arguments

    # "resolve": the desk's --domain and --mode (supervise's declaration, console.cli.supervise_options) replace the
    # console's, declared first; their defaults are None, so each mode of `serve` applies its own (build_config).
    parser: argparse.ArgumentParser = subparsers.add_parser("serve", help=HELP, description=DESCRIPTION,
                                                            formatter_class=argparse.RawDescriptionHelpFormatter,
                                                            conflict_handler="resolve")
    web = parser.add_argument_group("web server")
    web.add_argument("--host", default=DEFAULT_HOST,
                     help="address to bind (default: %(default)s; any other address needs --token)")
    web.add_argument("--port", type=tcp_port, default=DEFAULT_PORT,
                     help="TCP port (default: %(default)s; 0 = any free)")
    web.add_argument("--token", help=f"access token every request must present (default: ${TOKEN_ENV}, else a "
                     "random one made for this run); prefer the environment variable, a command line is visible "
                     "to other local users")
    web.add_argument("--no-token", action="store_true",
                     help="no access token: anyone on this machine can open a console (loopback only; not with "
                          "--token or a public --public-url)")
    web.add_argument("--max-sessions", type=_positive_int, default=DEFAULT_MAX_SESSIONS, metavar="N",
                     help="console processes at once, one per open tab (default: %(default)s)")
    web.add_argument("--public-url", metavar="URL",
                     help="the address browsers use, when behind a reverse proxy (https://… makes the page use "
                          "wss://); default: derived from the page's own address")
    _add_console_arguments(parser)  # the same options as `ledgeragent console`: every tab runs that
    desk = parser.add_argument_group(
        "supervision desk (--supervise)",
        "the sessions of `ledgeragent supervise`, with its option names and meanings (also --agent and --pace "
        "above); the desk runs them headless and every tab is an operator at it")
    desk.add_argument("--supervise", action="store_true",
                      help="serve one supervision desk (`supervise --listen`, started with the server); every tab "
                           "is an operator at it: the one its token belongs to (with the shared token: --operator)")
    add_operator_arguments(desk, serving=True)  # instead of the shared token: not with --token
    add_session_arguments(desk, serving=True)
    parser.set_defaults(handler=cmd_serve)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    """Validate, then serve until Ctrl+C / SIGTERM; open tabs' consoles are ended, their traces stay."""
    from console.cli.options import CliError

    try:
        config = build_config(args, os.environ)
    except ServeError as exc:
        raise CliError(str(exc)) from exc
    from console.web.server import ConsoleServer

    ConsoleServer(config).serve()
    return 0


def build_config(args: argparse.Namespace, environ: Mapping[str, str]) -> ServeConfig:
    """Check the console options once (a typo should fail here, not in every tab) and the bind policy."""
    from console.runtime.live import SessionSpec, SupervisionMode
    from console.runtime.lookup import _domain, _scenario, first_scenario
    from console.runtime.storage import data_root

    operators, shown = desk_operators(args, environ)
    if operators is not None:
        token, source = None, "operators"
    else:
        token, source = choose_token(args.token, environ.get(TOKEN_ENV) or None, no_token=args.no_token)
    if args.public_url is not None and not args.public_url.startswith(("http://", "https://")):
        raise ServeError("--public-url must start with http:// or https://")
    check_bind(args.host, token, public_url=args.public_url, operators=operators is not None)
    home = Path(environ["LEDGERAGENT_HOME"]) if environ.get("LEDGERAGENT_HOME") else data_root()
    if getattr(args, "supervise", False):
        desk = desk_serving(args, environ, home.resolve())
        return ServeConfig(command=child_command(list(desk.tab_argv)),
                           environment=child_environment(environ, home=home.resolve(), live_model=False),
                           host=args.host, port=args.port, token=token, max_sessions=args.max_sessions,
                           public_url=args.public_url.rstrip("/") if args.public_url else None,
                           home=home.resolve(), token_source=source, desk=desk, operators=operators,
                           shown_tokens=shown, operator=shared_operator(args, operators))
    given = desk_only_options_given(args)
    if given:
        raise ServeError(f"{', '.join(given)}: only with --supervise (they choose the desk's sessions)")
    if args.domain == "all":
        raise ServeError("--domain all: only with --supervise (a tab's console runs one domain)")
    args.domain = args.domain or CONSOLE_DOMAIN  # the console's defaults: None here is "not given"
    args.mode = args.mode or CONSOLE_MODE
    domain = _domain(args.domain)
    if args.scenario is None:  # a domain alone opens its first scenario (as `ledgeragent console` does)
        args.scenario = first_scenario(domain) or "chat"
    scenario = None if args.scenario in ("", "none", "chat") else _scenario(domain, args.scenario).name
    if getattr(args, "compare", False):  # every tab shows the compare view: its options are checked here once
        from console.runtime.compare_run import compare_problem

        problem = compare_problem(seat=args.seat, agent=args.agent, mode=args.mode, scenario=scenario)
        if problem is not None:
            raise ServeError(problem)
    model = "operator" if args.seat == "agent" else (args.model or "scripted")
    seat = "watch" if args.seat == "agent" else args.seat
    problems = SessionSpec(domain=domain.name, scenario=scenario, agent=args.agent, model=model,
                           base_url=args.base_url, seat=seat, mode=SupervisionMode(args.mode)).problems()
    if problems:
        raise ServeError("; ".join(problems))
    if args.db and not Path(args.db).is_file():
        raise ServeError(f"no such database file: {args.db}")
    live = model not in ("scripted", "operator")
    return ServeConfig(command=child_command(console_argv(args)),
                       environment=child_environment(environ, home=home.resolve(), live_model=live),
                       host=args.host, port=args.port, token=token, max_sessions=args.max_sessions,
                       public_url=args.public_url.rstrip("/") if args.public_url else None, home=home.resolve(),
                       live_model=live, token_source=source)


def desk_operators(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[Operators | None, dict[str, str]]:
    """`--operators` (a token made for each, to print once) or `--operators-file`; (None, {}) without them.

    Each operator's own token replaces the shared one, so --token, --no-token and $LEDGERAGENT_TOKEN are
    refused alongside (which token would be whose?); so is a desk-less server (its tabs are not operators
    at a desk: they all run the console as --operator).
    """
    from console.runtime.operators import OperatorError, generate, load_file, parse_names

    given = "--operators" if args.operators is not None else "--operators-file" if args.operators_file else None
    if given is None:
        return None, {}
    if not getattr(args, "supervise", False):
        raise ServeError(f"{given}: only with --supervise (the operators of a desk)")
    shared = [name for name, is_given in (("--token", args.token is not None), ("--no-token", args.no_token),
                                          (f"${TOKEN_ENV}", bool(environ.get(TOKEN_ENV)))) if is_given]
    if shared:
        raise ServeError(f"{given}: each operator has a token of their own; not with {', '.join(shared)}")
    try:
        if args.operators is not None:
            return generate(parse_names(args.operators))
        return load_file(Path(args.operators_file)), {}
    except OperatorError as exc:
        raise ServeError(str(exc)) from None


def shared_operator(args: argparse.Namespace, operators: Operators | None) -> str:
    """At a desk without --operators, who the one shared token (or no token) is: serve's --operator, checked as
    an operator name (it goes on the tabs' command line and into the desk's operators file)."""
    from console.runtime.operators import OperatorError, check_name

    if operators is not None:
        return ""
    try:
        return check_name(args.operator)
    except OperatorError as exc:
        raise ServeError(f"--operator: {exc} (with --supervise the shared token acts as this operator)") from None


def desk_serving(args: argparse.Namespace, environ: Mapping[str, str], home: Path) -> DeskServing:
    """`--supervise`: the desk host's argv, environment and each tab's argv, checked now (a typo fails here,
    not in the host).

    The host is `python -m console supervise --listen SOCKET <the session options given>`: the options are
    read off supervise's own declaration (`console.cli.supervise_options.add_session_arguments`, which `serve` uses
    too) and passed on as given; the host applies supervise's defaults. The very argv is parsed by the
    `supervise` parser and checked as `supervise` checks it (`check_session_options`) before the server
    starts. A mode must ask a human (an autopilot desk has nothing to supervise).

    A live model (`--model`/`--base-url`/`--user-model`, or a specs line naming one) is the host's alone: it
    runs the sessions, so it gets the allowlisted environment plus the key (`LIVE_MODEL_ENV_NAMES`, never on a
    command line); the tabs only decide, and their environment never has it.
    """
    from console.cli.options import CliError
    from console.cli.supervise_options import MODES

    if args.mode == "autopilot":
        asking = ", ".join(repr(mode) for mode in MODES if mode != "autopilot")
        raise ServeError(f"--supervise needs a --mode that asks a human: one of {asking}")
    unsupported = [name for name, given in (("--scenario", args.scenario is not None), ("--db", args.db),
                                             ("--seat", args.seat != "watch"), ("--autostart", args.autostart))
                   if given]
    if unsupported:
        raise ServeError(f"{', '.join(unsupported)}: not with --supervise (the desk's sessions are chosen with "
                         "--scenarios, --tasks or --specs, as for supervise)")
    checked = desk_host_options(args, model_options=True)
    try:
        host_args = _supervise_parser().parse_args(["supervise", "--listen", "desk.sock", *checked])
        from console.cli.supervise import check_session_options

        specs, _ = check_session_options(host_args)
    except CliError as exc:
        raise ServeError(str(exc)) from None
    live = any(spec.model not in ("scripted", "operator") or spec.user_model for spec in specs)
    options = checked if live else desk_host_options(args)  # the model settings only matter to a model
    return DeskServing(host_argv=(sys.executable, "-m", "console", "supervise", "--listen"),
                       host_options=tuple(options), tab_argv=(sys.executable, "-m", "console.cli.tab", "desk-connect"),
                       environment=child_environment(environ, home=home, live_model=live), live_model=live)


CONSOLE_DOMAIN = "retail"  # `serve` without --supervise: a tab's console, with `ledgeragent console`'s defaults
CONSOLE_MODE = "autopilot"


def desk_only_options_given(args: argparse.Namespace) -> list[str]:
    """The options of supervise's session declaration that `serve` has only for the desk and that were given
    (every one but --domain, --mode and --evidence, which the console has too; None is "not given" when
    serving)."""
    from console.cli.supervise_options import add_session_arguments

    reference = argparse.ArgumentParser(add_help=False)
    add_session_arguments(reference, serving=True)
    return [action.option_strings[0] for action in reference._actions
            if action.dest not in ("domain", "mode", "evidence") and getattr(args, action.dest, None) is not None]


def desk_host_options(args: argparse.Namespace, *, model_options: bool = False) -> list[str]:
    """The session options given to `serve`, as `supervise` reads them: every action of supervise's session
    declaration, in its order, with the value `serve` parsed (none given: left out, so supervise's default);
    a specs file as an absolute path (the host's cwd need not be ours). `model_options`: also the live-model
    settings (`--timeout`, `--retries`, ...: console.cli.model_options, the same declaration in both parsers)."""
    from console.cli.model_options import add_model_arguments
    from console.cli.supervise_options import add_session_arguments

    reference = argparse.ArgumentParser(add_help=False)
    add_session_arguments(reference)
    if model_options:
        add_model_arguments(reference)
    words: list[str] = []
    for action in reference._actions:  # as console_argv: argparse keeps no public list
        value = getattr(args, action.dest, None)
        if action.dest == "specs" and isinstance(value, str):
            value = str(Path(value).resolve())
        words += _option_words(action, value)
    return words


class _RaisingParser(argparse.ArgumentParser):
    """argparse whose usage error is a ServeError (one line), not a printed usage and an exit."""

    def error(self, message: str) -> NoReturn:
        raise ServeError(f"the desk host's options: {message}")


def _supervise_parser() -> argparse.ArgumentParser:
    """The `ledgeragent supervise` parser itself (its one declaration, console.cli.supervise_options)."""
    from console.cli.supervise_options import register as register_supervise

    parser = _RaisingParser(prog="ledgeragent")
    register_supervise(parser.add_subparsers(dest="command"))
    return parser


def choose_token(option: str | None, environment: str | None, *, no_token: bool) -> tuple[str | None, str]:
    """The access token and where it came from: --token, else $LEDGERAGENT_TOKEN, else a random one.

    A random one even on loopback, as Jupyter Server does: without it any web page or local program that can
    reach the port can drive the console. `--no-token` is the explicit way out (it wins over the variable,
    which a developer may have set for another server; it cannot be combined with --token).
    """
    if no_token:
        if option is not None:
            raise ServeError("--no-token and --token contradict each other: give one of them")
        return None, "none"
    if option is not None:
        return option, "option"
    if environment is not None:
        return environment, "environment"
    from console.runtime.tokens import new_token

    return new_token(), "generated"


def check_bind(host: str, token: str | None, *, public_url: str | None = None, operators: bool = False) -> None:
    """A token of at least 16 characters, and no token-less server anyone but this machine can reach.

    Without a token the server must be on loopback (`--host`) and be reached only there: a `--public-url`
    on another host means a reverse proxy makes it public, whatever address it binds. `operators`: every
    operator has a token of their own (as good as a token, wherever it binds).
    """
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise ServeError(f"the token must be at least {MIN_TOKEN_LENGTH} characters; make one with: "
                         "python -c 'import secrets; print(secrets.token_hex(24))'")
    if token is not None or operators:
        return
    if not is_loopback(host):
        raise ServeError(f"binding to {host} exposes the console to the network: it needs an access token "
                         f"(drop --no-token; set one with ${TOKEN_ENV} or --token), or keep the default "
                         f"--host {DEFAULT_HOST}")
    public_host = urlsplit(public_url).hostname if public_url else None
    if public_url is not None and not (public_host and is_loopback(public_host)):
        raise ServeError(f"--public-url {public_url} means the console is reachable through a proxy, by anyone "
                         "who can reach that: it needs an access token (drop --no-token)")


def console_argv(args: argparse.Namespace) -> list[str]:
    """The argv every tab runs: `ledgeragent console …` with our options, through `console.cli.tab` (which keeps the
    console's stderr out of the server's log: see there), with the server's own interpreter and code.

    The options are read off the console parser's own actions (`console.cli.options._add_console_arguments`,
    which `ledgeragent console` and `serve` both use), not listed here: an option added there reaches every
    tab with no edit here. Every value the command line holds is passed on explicitly (a default computed
    per process, such as --operator, is the server's), files as absolute paths (the child's cwd may differ).
    """
    from console.cli.options import _add_console_arguments

    reference = argparse.ArgumentParser(add_help=False)
    _add_console_arguments(reference)
    argv = [sys.executable, "-m", "console.cli.tab"]
    for action in reference._actions:  # argparse keeps no public list; this one has been stable since 2.7
        argv += _option_words(action, _tab_value(action.dest, getattr(args, action.dest, None)))
    return argv


def _tab_value(dest: str, value: object) -> object:
    """A value as the child should get it: a file as an absolute path, the same file whatever its cwd."""
    if isinstance(value, str) and dest in _FILE_OPTIONS and value:
        path = Path(value)
        if dest == "db" or (path.suffix == ".json" and path.is_file()):  # a scenario may also be a name
            return str(path.resolve())
    return value


_FILE_OPTIONS = frozenset({"db", "scenario"})  # console options whose value may name a file


def _option_words(action: argparse.Action, value: object) -> list[str]:
    """The words that give `action` this value on a command line ([] for None, or a flag at its default).

    A value is joined to its option (`--db=/x.db`): as a word of its own, a value starting with `-` (a model
    name, a path, a token) would read as an option and the child would not start."""
    if not action.option_strings:
        raise TypeError(f"console argument {action.dest!r} is positional: console_argv cannot pass it on")
    option = next((name for name in action.option_strings if name.startswith("--")), action.option_strings[0])
    if value is None:
        return []
    if action.nargs == 0:  # store_true / store_false / store_const: present or not
        return [option] if value != action.default else []
    if isinstance(value, list):  # append: the option once per value
        return [f"{option}={_word(item)}" for item in value]
    if action.nargs not in (None, "?"):
        raise TypeError(f"console option {option} takes {action.nargs!r} values: console_argv cannot pass it on")
    return [f"{option}={_word(value)}"]


def _word(value: object) -> str:
    """A value as its option reads it back: repr for floats (exact), str otherwise (enums by value)."""
    if isinstance(value, float):
        return repr(value)
    return str(getattr(value, "value", value))


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
    root = source_root if source_root is not None else Path(__file__).resolve().parents[2]
    if root.name not in ("site-packages", "dist-packages"):
        paths = [str(root), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(root)]]
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m console.cli.serve …`: the same as `ledgeragent serve …`, without the main CLI's wiring."""
    from console.cli.options import CliError, _err

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
