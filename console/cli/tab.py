"""One browser tab's console process: `python -m console.cli.tab <console options>`, what `ledgeragent serve` runs
(`python -m console.cli.tab desk-connect SOCKET --operator NAME` under `serve --supervise`: an operator at the desk,
that is `ledgeragent supervise --connect SOCKET --operator NAME`).

It is `ledgeragent console <options>`, with stderr kept out of the web server. textual-serve pipes a console's
stderr to the server (and its own code copied whatever came to the server's stdout), so a crash traceback, with
the customer data in its locals' reprs, ended up in the server's output. Here stderr is captured from the
first line on; when the console ends, whatever it wrote goes into the session folder the console made
(`console.log`, next to its trace), and the one line the server sees says where it is. A console that ends
before it made a folder leaves its log under `$LEDGERAGENT_HOME/logs/`.

Then the process ends at once (`os._exit`), without the interpreter's own shutdown. That shutdown is what kept
a crashed console alive under the server: it tears down every module and object of a Textual app (about half a
CPU-second here, which became 5 to 16 s of wall time on a loaded machine, past the server's 20 s grace: killed,
its log line lost) and it waits for every non-daemon thread, which a crash can leave behind (Textual's input
thread, an aiosqlite worker whose connection was never closed), forever. By then nothing is left to finish: the
trace is flushed per event, the database is SQLite (a commit is on disk when it returns), the log is filed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from datetime import datetime

LOG_NAME = "console.log"
MAX_LOG = 1024 * 1024  # bytes of stderr kept: a traceback is a few KB, a runaway loop is not worth more


def main(argv: Sequence[str] | None = None) -> int:
    """Run the console with fd 2 into a pipe we read; file it away and say where, in one line, at the end.

    A pipe read by a thread rather than a temporary file: a console killed while starting (a tab closed at
    once) leaves nothing behind, and a runaway writer is bounded at MAX_LOG bytes.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    sys.stderr.flush()
    real_stderr = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    captured = _Capture(read_end)
    captured.start()
    status = 1
    try:
        from console.cli.main import main as console_main

        if argv[:1] == ["desk-connect"]:  # serve --supervise: this tab is an operator at the one desk
            # Started before its tab exists (as its page was served): join the desk only once a tab has taken
            # this process, so a page nobody opened never connects, claims or holds an item.
            from console.web.driver import wait_for_tab_size

            wait_for_tab_size()
            status = console_main(["supervise", "--connect", *argv[1:]])
        else:
            status = console_main(["console", *argv])
    except SystemExit as exc:  # argparse: its message is already in the log
        status = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # noqa: BLE001 - whatever escapes, its traceback belongs in the log, not on a screen
        traceback.print_exc()
        status = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(real_stderr, 2)  # closes the pipe's last write end: the reader sees its end
        os.close(real_stderr)
        captured.join(2.0)
        line = file_log(captured.text(), status)
        if line:
            print(line, file=sys.stderr, flush=True)
    return status


class _Capture(threading.Thread):
    """Reads the stderr pipe to its end, keeping the first MAX_LOG bytes."""

    def __init__(self, fd: int) -> None:
        super().__init__(name="stderr-capture", daemon=True)
        self.fd = fd
        self.chunks: list[bytes] = []
        self.size = 0

    def run(self) -> None:
        with contextlib.suppress(OSError):
            while data := os.read(self.fd, 65536):
                if self.size < MAX_LOG:
                    self.chunks.append(data[: MAX_LOG - self.size])
                    self.size += len(self.chunks[-1])
        os.close(self.fd)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


def file_log(text: str, status: int) -> str:
    """Write a non-empty stderr log next to the session's trace; the one line for the server ("" if empty)."""
    from console.runtime.storage import data_root, latest_session_dir
    from core.private_files import append_text, make_dirs

    if not text.strip():
        return ""
    folder = latest_session_dir()
    if folder is None or not folder.is_dir():
        folder = data_root() / "logs"
        make_dirs(folder)
        target = folder / f"console-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
    else:
        target = folder / LOG_NAME
    with append_text(target) as out:  # 0600: a traceback holds the session's data
        out.write(text)
    crashed = "Traceback (most recent call last)" in text
    what = f"crashed (exit {status})" if crashed or status not in (0, 130) else "wrote to stderr"
    last = next((part for part in reversed(text.strip().splitlines()) if part.strip()), "")[:200]
    return f"console {what}: {last} - the full log is in {target}"


def exit_now(status: int) -> None:
    """End the process with `status` now: flush what Python buffers, skip the interpreter's shutdown (see the
    module's docstring: it can take seconds, or wait forever for a thread a crash left running)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()  # file handlers, if any, get their last lines
    os._exit(status if 0 <= status <= 255 else 1)


if __name__ == "__main__":
    exit_now(main())
