"""docs/console.md's demo transcript is what its first example (`ledgeragent run` on the retail demo, at 120
columns) prints, line for line, so the page cannot show a session the code no longer plays."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli.main import main
from tests.support.cli import cli_home
from tests.support.doc_blocks import DOCS, fenced_blocks

PAGE = DOCS / "console.md"


def test_the_console_page_shows_what_its_first_example_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    blocks = fenced_blocks(PAGE)
    example, shown = blocks[0], blocks[1]
    assert example.runnable and \
        "COLUMNS=120 ledgeragent run --domain retail --scenario refund-to-original-payment" in example.code
    assert shown.info == ()  # the output, fenced plainly: not a command to run
    cli_home(tmp_path, monkeypatch)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment"]) == 0
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    ended = next(i for i, line in enumerate(printed) if line.startswith("─") and "ended:" in line)
    assert shown.code.splitlines() == printed[1:ended]  # between the header rule and the footer (this run's paths)
