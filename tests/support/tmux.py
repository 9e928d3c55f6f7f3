"""Drive the real `ledgeragent` binary in tmux, as a person would: keys in, screen text out.

Shared by every tmux test (tests/console/tui/test_tmux.py, test_desk_tmux.py): tests import them from
tests/support, never from a test module.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path


def binary() -> str:
    exe = Path(sys.executable).with_name("ledgeragent")
    return str(exe) if exe.exists() else f"{sys.executable} -m console"


class Tmux:
    def __init__(self, command: str, width: int = 160, height: int = 45) -> None:
        self.name = f"la-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), command],
                       check=True)
        # Detached sessions may still get the server's default size; make the window the size we asked for.
        subprocess.run(["tmux", "resize-window", "-t", self.name, "-x", str(width), "-y", str(height)], check=False)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-t", self.name, "-p"], capture_output=True, text=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait(self, condition: Callable[[str], bool], timeout: float = 20.0) -> str:
        """Poll the screen until `condition` holds (the deadline only bounds the wait; nothing is timed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if condition(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"screen never matched; last screen:\n{self.screen()}")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)
