"""How every `ledgeragent` command fails: one line on stderr and an exit status, never a traceback.

- Bad input (`CliError`, an unusable folder, a damaged or foreign database): `error: <what>`, exit 2.
- Ctrl-C: exit 130.
- Anything else is a bug: `error: unexpected <Type>: <message> (details: <crash log>)`, exit 70. The log
  holds the traceback and the command line, written under the data dir (or the temp dir if that fails), so
  the report can be filed without re-running anything.

Kept out of `console/cli.py` so the commands stay about what they do, not about how they fail.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape

from console.storage import StorageError, data_root
from core.strict_json import printable
from mock_backends.registry import BackendSourceError
from mock_backends.store import StoreError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_CRASH = 70  # EX_SOFTWARE


class CliError(Exception):
    """A problem with the user's input: printed on stderr without a traceback, exit status 2."""


USER_ERRORS: tuple[type[BaseException], ...] = (CliError, StorageError, BackendSourceError, StoreError)


def one_line(message: str, limit: int = 1000) -> str:
    """`message` as one printable line: newlines folded, lone surrogates escaped, bounded length."""
    text = " ".join(printable(str(message)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_error(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/] {escape(one_line(message))}")


def non_negative_int(text: str) -> int:
    """argparse type: a whole number >= 0 (`--retries -1` is refused by the parser, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be 1 or more, got 0")
    return value


def tcp_port(text: str) -> int:
    """argparse type: a TCP port, 0 (any free one) to 65535; anything else is the parser's one-line error."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is at most 65535, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (`--pace nan` or `--pace -1` is refused by the parser, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of 0 or more, got {text}")
    return value


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`error: ledgeragent run: argument --retries: ...`), exit 2."""

    def error(self, message: str) -> NoReturn:
        print_error(f"{self.prog}: {message} (see {self.prog} --help)")
        sys.exit(EXIT_BAD_INPUT)


def write_crash_log(exc: BaseException, argv: Sequence[str]) -> Path:
    """The traceback and command line in a new file; under the data dir, else the temp dir."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    body = (f"ledgeragent crash at {stamp}\ncommand: {printable(' '.join(argv))}\n\n"
            + printable("".join(traceback.format_exception(exc))))
    for folder in (data_root() / "crashes", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"ledgeragent-crash-{stamp}-{os.getpid()}.log"
            path.write_text(body, encoding="utf-8")
            return path
        except OSError:
            continue
    raise OSError("no writable folder for the crash log")


def run_handler(handler: Callable[[argparse.Namespace], Any], args: argparse.Namespace,
                argv: Sequence[str] | None = None) -> int:
    """Run a command's handler (sync or async) and turn every failure into one line and an exit status."""
    try:
        if inspect.iscoroutinefunction(handler):
            return int(asyncio.run(handler(args)))
        return int(handler(args))
    except USER_ERRORS as exc:
        print_error(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - a bug: one line and a crash log, not a traceback
        try:
            where = f"details: {write_crash_log(exc, list(sys.argv if argv is None else argv))}"
        except OSError:
            where = "no crash log could be written"
        print_error(f"unexpected {type(exc).__name__}: {one_line(str(exc), 300)} ({where})")
        return EXIT_CRASH
