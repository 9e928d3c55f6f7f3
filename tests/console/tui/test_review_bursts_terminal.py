"""Bursts in a real terminal: the real binary in tmux, each burst sent with ONE `tmux send-keys -l` (one write to
the terminal, as a fast typist, a paste or a terminal that batches its input delivers it), and the decisions the
session recorded are what the review model says (tests/support/review_model.py, the model the property test
checks the dialog against through Pilot; the cases: tests/support/review_bursts.py)."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.review_bursts import ANNOUNCED, CASES, OPEN, BurstCase, Driven, drive
from tests.support.review_model import CLOSE
from tests.support.tmux import Tmux, binary

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_burst_in_a_real_terminal_records_what_the_operator_chose(case: BurstCase, tmp_path: Path) -> None:
    home = tmp_path / "home"
    argv = " ".join(shlex.quote(word) for word in case.argv)
    term = Tmux(f"env -u COLUMNS -u LINES LEDGERAGENT_HOME={home} {binary()} {argv}; sleep 600", *case.size)

    async def write(data: str) -> None:  # one write: send-keys -l sends the bytes as they are
        subprocess.run(["tmux", "send-keys", "-t", term.name, "-l", data], check=True)

    try:
        run = Driven(write, term.screen, home)
        recorded, expected, prediction = asyncio.run(drive(case, run))
        assert recorded == expected, (case.name, recorded, expected)
        if prediction.after_burst == CLOSE and not case.after:
            # the keys typed on after the deciding one were for the dialog: the console behind it never sees
            # them (a `q` there would ask to quit)
            screen = term.wait(lambda s: ANNOUNCED in s or "session ended" in s, timeout=60)
            assert "Quit and end it?" not in screen and OPEN not in screen, screen
    finally:
        term.kill()
