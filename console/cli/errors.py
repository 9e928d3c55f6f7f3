"""How every `ledgeragent` command fails: one line on stderr and an exit status, never a traceback.

- Bad input (`CliError`, an unusable folder, a folder another process writes to, a damaged or foreign
  database) and a full disk (`DiskFull`: "no space left on device while writing …/trace.jsonl"): `error: <what>`,
  exit 2.
- Ctrl-C: exit 130.
- Anything else is a bug: `error: unexpected <Type>: <message> (details: <crash log>)`, exit 70. The log
  holds the traceback and the command line, so the report can be filed without re-running anything. It is
  written only under the data dir's `crashes/` (a 0700 folder, the file 0600: a traceback can quote customer
  data), never in the shared temp dir; a log that cannot be written whole is removed again, and the line says
  why there is none.

Kept out of `console/cli/main.py` so the commands stay about what they do, not about how they fail.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.markup import escape

from console.cli.arg_types import non_negative_float as non_negative_float  # (the number types live there)
from console.cli.arg_types import non_negative_int as non_negative_int
from console.cli.arg_types import positive_float as positive_float
from console.cli.arg_types import positive_int as positive_int
from console.cli.arg_types import tcp_port as tcp_port
from console.runtime.errors import CliError as CliError  # the runtime raises it; the contract prints it
from console.runtime.storage import StorageError, data_root
from core.disk_full import REASONS, DiskFull, write_all
from core.folder_lock import FolderBusy
from core.strict_json import inert, printable
from mock_backends.registry import BackendSourceError
from mock_backends.store import StoreError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_CRASH = 70  # EX_SOFTWARE


USER_ERRORS: tuple[type[BaseException], ...] = (CliError, StorageError, FolderBusy, DiskFull, BackendSourceError,
                                                StoreError)


def one_line(message: str, limit: int = 1000) -> str:
    """`message` as one printable line: newlines folded, control characters shown inert (`␛`), lone surrogates
    escaped, bounded length (an error often quotes the input that caused it)."""
    text = inert(" ".join(printable(str(message)).split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def print_error(message: str) -> None:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/] {escape(one_line(message))}")


def usage_error(prog: str, message: str) -> str:
    """argparse's usage `message` as the line to print. An option "expected one argument" also when its value
    was there but starts with `-` (a token, a negative number): the line says how to give such a value."""
    line = f"{prog}: {message}"
    missing = re.fullmatch(r"argument (?:\S+/)?(--?[\w-]+): expected one argument", message)
    if missing:
        line += f"; a value that starts with '-' is given as {missing.group(1)}=VALUE"
    return f"{line} (see {prog} --help)"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`error: ledgeragent run: argument --retries: ...`), exit 2."""

    def error(self, message: str) -> NoReturn:
        print_error(usage_error(self.prog, message))
        sys.exit(EXIT_BAD_INPUT)


def _private_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        folder.chmod(0o700)


def write_crash_log(exc: BaseException, argv: Sequence[str]) -> Path:
    """The traceback and command line in a new owner-only file under the data dir's `crashes/`. Raises OSError
    when it cannot be written whole (a full disk): nothing is left behind then, not even an empty file."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    body = (f"ledgeragent crash at {stamp}\ncommand: {printable(' '.join(argv))}\n\n"
            + printable("".join(traceback.format_exception(exc)))).encode("utf-8")
    folder = data_root() / "crashes"
    _private_folder(folder)
    for n in range(1, 100):
        path = folder / f"ledgeragent-crash-{stamp}-{os.getpid()}{'' if n == 1 else f'-{n}'}.log"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        try:
            write_all(fd, body)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        os.close(fd)
        return path
    raise FileExistsError(f"{folder}: too many crash logs this second")


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
        except OSError as failed:
            why = REASONS.get(failed.errno or 0) or failed.strerror or str(failed)
            where = f"no crash log could be written under {data_root() / 'crashes'}: {why}"
        print_error(f"unexpected {type(exc).__name__}: {one_line(str(exc), 300)} ({where})")
        return EXIT_CRASH
