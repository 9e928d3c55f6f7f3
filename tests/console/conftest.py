"""Hermetic, deterministic console apps: temp data dir, no cursor blink, no flash timers in snapshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from console.app import OperatorConsole, make_app


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


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until `condition` holds (never a fixed sleep)."""
    waited = 0.0
    while not condition():
        if waited >= timeout:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)
        waited += 0.02


async def wait_for_screen(pilot: Any, app: Any, kind: type[Any], timeout: float = 10.0) -> Any:
    """Wait until a screen of `kind` is in front *and mounted* (its widgets exist): pushing a screen from an
    action returns before it is composed, and on a busy machine a query right after the key press fails."""
    await wait_for(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted, timeout)
    return app.screen
