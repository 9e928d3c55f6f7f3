"""Drive the real `ledgeragent` binary in tmux, as a person would: keys in, screen text out."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


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
        done = subprocess.run(["tmux", "capture-pane", "-t", self.name, "-p"], capture_output=True, text=True)
        return done.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait(self, condition: Callable[[str], bool], timeout: float = 20.0) -> str:
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


def test_retail_demo_in_a_real_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} --pace 0 --operator tester; sleep 30"
    term = Tmux(command)
    try:
        ready = term.wait(lambda s: "press space" in s and "─ Transcript" in s and "─ Gate" in s
                          and "Return a tablet" in s)
        assert "─ Ledger" in ready
        assert "Return a tablet" in ready  # the scenario's title, shown before it starts
        term.keys("space")
        done = term.wait(lambda s: "session ended: the customer ended the conversation" in s)
        assert "REVISE" in done and "ALLOW" in done
        assert "#W4821001" in done  # the ledger pane shows the order
        term.keys("a")  # the audit screen
        term.wait(lambda s: "Audit: 0 operator decision(s)" in s)
        term.keys("Escape")
        term.keys("q")
        term.wait(lambda s: "LedgerAgent Console" not in s, timeout=10)
    finally:
        term.kill()
    traces = list((home / "sessions").glob("*/trace.jsonl"))
    assert len(traces) == 1 and '"type":"session_ended"' in traces[0].read_text()


def test_approval_with_keys_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    command = (f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} --scenario other-customers-order --mode "
               f"'approve non-ALLOW' --pace 0 --operator tester; sleep 30")
    term = Tmux(command)
    try:
        term.wait(lambda s: "press space" in s)
        term.keys("space")
        modal = term.wait(lambda s: "Review write" in s)
        assert "BLOCK" in modal and "retail.order_owned_by_customer" in modal
        term.keys("a")  # accept the BLOCK: nothing runs
        term.wait(lambda s: "session ended: the customer ended the conversation" in s)
    finally:
        term.kill()
    trace = next((home / "sessions").glob("*/trace.jsonl")).read_text()
    # accepting the gate's BLOCK is its own decision, not an approval of the call (issue 10 item 12)
    assert '"decision":"accept_verdict"' in trace and '"who":"tester"' in trace
