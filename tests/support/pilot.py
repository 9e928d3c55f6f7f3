"""Waiting on a Textual app under test without fixed sleeps: poll a condition between app steps.

A pilot test that sleeps a fixed time is flaky on a busy machine and slow on an idle one; these helpers let the
app run in small steps until what the test needs has happened, and fail with a message after a generous bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

POLL = 0.02  # seconds the app runs between two looks at the condition


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until `condition` holds (never a fixed sleep)."""
    waited = 0.0
    while not condition():
        if waited >= timeout:
            raise AssertionError("condition not reached in time")
        await pilot.pause(POLL)
        waited += POLL


async def wait_for_screen(pilot: Any, app: Any, kind: type[Any], timeout: float = 10.0) -> Any:
    """Wait until a screen of `kind` is in front *and mounted* (its widgets exist): pushing a screen from an
    action returns before it is composed, and on a busy machine a query right after the key press fails."""
    await wait_for(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted, timeout)
    return app.screen
