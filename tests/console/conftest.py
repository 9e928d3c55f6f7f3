"""Hermetic, deterministic console apps: temp data dir, no cursor blink, no flash timers in snapshots.

Only fixtures live here; helpers tests import (waiting on the app) are tests/support/pilot.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, TextArea

from benchmarks.browser import BrowserProcess, Chromium, DevToolsError, find_chromium
from console.tui.app import OperatorConsole, make_app


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(Input, "_toggle_cursor", lambda _self: None)
    monkeypatch.setattr(TextArea, "_toggle_cursor_blink_visible", lambda _self: None)  # the arguments box's cursor
    return tmp_path / "home"


@pytest.fixture
def console_app(tmp_path: Path) -> Callable[..., OperatorConsole]:
    def build(**kwargs: Any) -> OperatorConsole:
        kwargs.setdefault("root", tmp_path / "home")
        return make_app(**kwargs)

    return build


@pytest.fixture(scope="module")
def browser_process() -> Iterator[BrowserProcess]:
    """One headless Chromium for the module's tests (tests that use it skip when none is installed): starting a
    browser costs more than most tests that drive it."""
    executable = find_chromium()
    if executable is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`; .ci/run installs it, or set "
                    "LEDGERAGENT_CHROMIUM to a Chromium/Chrome binary)")
    try:
        process = BrowserProcess(executable).start()
    except DevToolsError as exc:  # e.g. Ubuntu's snap shim in a container: an environment problem
        pytest.skip(f"Chromium at {executable} cannot start here: {exc}")
    try:
        yield process
    finally:
        process.close()


@pytest.fixture
async def browser(browser_process: BrowserProcess) -> AsyncIterator[Chromium]:
    """The module's Chromium, seen through a browser context of this test's own: its cookies, storage and cache
    start empty, as in a throwaway profile, and its tabs are closed with it."""
    chromium = await Chromium.attach(browser_process)
    try:
        yield chromium
    finally:
        await chromium.close()
