"""What every command-line test needs: a private data dir to run in, and the one-line error rule."""

from __future__ import annotations

from pathlib import Path

import pytest


def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in `tmp_path` with `$LEDGERAGENT_HOME` under it and a wide terminal (no wrapped lines); returns it."""
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def one_error_line(err: str) -> str:
    """The error a CLI printed: exactly one line, starting `error: `, never a traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]
