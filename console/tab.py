"""One browser tab's console process: `python -m console.tab <console options>`, what `ledgeragent serve` runs.

It is `ledgeragent console <options>`, with stderr kept out of the web server. textual-serve pipes a console's
stderr to the server (and its own code copied whatever came to the server's stdout), so a crash traceback, with
the customer data in its locals' reprs, ended up in the server's output. Here stderr goes to a file from the
first line on; when the console ends, a non-empty file moves into the session folder the console made
(`console.log`, next to its trace), and the one line the server sees says where it is. A console that ends
before it made a folder leaves its log under `$LEDGERAGENT_HOME/logs/`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

LOG_NAME = "console.log"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the console with fd 2 in a temporary file; file it away and say where, in one line, at the end."""
    argv = list(sys.argv[1:] if argv is None else argv)
    sys.stderr.flush()
    real_stderr = os.dup(2)
    handle, name = tempfile.mkstemp(prefix="ledgeragent-console-", suffix=".log")
    os.dup2(handle, 2)
    os.close(handle)
    status = 1
    try:
        from console.cli import main as console_main

        status = console_main(["console", *argv])
    except SystemExit as exc:  # argparse: its message is already in the log
        status = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # noqa: BLE001 - whatever escapes, its traceback belongs in the log, not on a screen
        traceback.print_exc()
        status = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(real_stderr, 2)
        os.close(real_stderr)
        line = file_log(Path(name), status)
        if line:
            print(line, file=sys.stderr, flush=True)
    return status


def file_log(log: Path, status: int) -> str:
    """Move a non-empty stderr log next to the session's trace; the one line for the server ("" if empty)."""
    from console.storage import data_root, latest_session_dir

    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    if not text.strip():
        log.unlink(missing_ok=True)
        return ""
    folder = latest_session_dir()
    if folder is None or not folder.is_dir():
        folder = data_root() / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"console-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
    else:
        target = folder / LOG_NAME
    with target.open("a", encoding="utf-8") as out:
        out.write(text)
    log.unlink(missing_ok=True)
    crashed = "Traceback (most recent call last)" in text
    what = f"crashed (exit {status})" if crashed or status not in (0, 130) else "wrote to stderr"
    last = next((part for part in reversed(text.strip().splitlines()) if part.strip()), "")[:200]
    return f"console {what}: {last} - the full log is in {target}"


if __name__ == "__main__":
    sys.exit(main())
