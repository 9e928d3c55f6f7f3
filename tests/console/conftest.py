"""Hermetic, deterministic console apps: temp data dir, no cursor blink, no flash timers in snapshots.

Only fixtures live here; helpers tests import (waiting on the app) are tests/support/pilot.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from benchmarks.browser import Chromium, DevToolsError, find_chromium
from console.tui.app import OperatorConsole, make_app


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(Input, "_toggle_cursor", lambda _self: None)
    return tmp_path / "home"


@pytest.fixture
def console_app(tmp_path: Path) -> Callable[..., OperatorConsole]:
    def build(**kwargs: Any) -> OperatorConsole:
        kwargs.setdefault("root", tmp_path / "home")
        return make_app(**kwargs)

    return build


@pytest.fixture
async def browser() -> AsyncIterator[Chromium]:
    """A headless Chromium with a throwaway profile (tests that use it skip when none is installed)."""
    executable = find_chromium()
    if executable is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`)")
    try:
        chromium = await Chromium(executable).start()
    except DevToolsError as exc:  # e.g. Ubuntu's snap shim in a container: an environment problem
        pytest.skip(f"Chromium at {executable} cannot start here: {exc}")
    try:
        yield chromium
    finally:
        await chromium.close()
