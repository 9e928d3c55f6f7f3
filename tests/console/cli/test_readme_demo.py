"""The README's Quick start transcript is what `make demo-headless` prints (at 120 columns), line for line."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli.main import main
from tests.support.cli import cli_home

README = Path(__file__).parents[3] / "README.md"
INTRO = "`make demo-headless` prints the same session as a transcript:\n\n```\n"


def test_the_quick_start_transcript_is_the_demo_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    cli_home(tmp_path, monkeypatch)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--headless"]) == 0
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    ended = next(i for i, line in enumerate(printed) if line.startswith("─") and "ended:" in line)
    text = README.read_text(encoding="utf-8")
    start = text.index(INTRO) + len(INTRO)
    shown = text[start:text.index("```", start)].splitlines()
    assert shown == printed[1:ended]  # between the header rule and the footer (paths and hashes of this run)
