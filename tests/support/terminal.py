"""Run the real `ledgeragent` in a pseudo-terminal of a given width, and read what it printed there.

For tests of what a person sees in a terminal: output that knows it goes to a terminal (Rich asks the tty for
its width) behaves differently from output captured by pytest, which is a pipe."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_terminal(argv: Sequence[str], *, columns: int, env: Mapping[str, str], rows: int = 50,
                    timeout: float = 120.0) -> tuple[int, list[str]]:
    """`python -m console.cli.main ARGV` with stdout on a terminal `columns` wide (stderr is not read); its exit
    code and the lines it printed, colours and other escapes removed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "console.cli.main", *argv], cwd=REPO, stdin=subprocess.DEVNULL,
                               stdout=follower, stderr=subprocess.DEVNULL, env={**env, "COLUMNS": str(columns)})
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError as exc:  # the terminal's other side closed: the process is done writing
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    code = process.wait(timeout)
    text = ESCAPES.sub("", b"".join(chunks).decode("utf-8", errors="replace")).replace("\r\n", "\n")
    return code, text.splitlines()
