"""A small snapshot helper (harlequin-style): compare `app.export_screenshot()` to a committed SVG.

Set UPDATE_SNAPSHOTS=1 to (re)write the baselines after looking at them. Textual is pinned, so the SVG is
stable; the per-run `terminal-<n>` class ids are normalised away.

No picture depends on frame timing: `stable_screenshot` lets the app run until two screenshots in a row
are identical (a cursor scrolled into view after a refresh, a scrollbar that appears one frame late, a
layout class set on resize), and only then compares. A busy machine makes it wait longer, never differ.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from textual.app import App

SNAPSHOTS = Path(__file__).parent / "__snapshots__"
_VOLATILE = re.compile(r"terminal-\d+")
STABLE_ROUNDS = 200  # at most this many pauses waiting for the screen to stop changing


def normalise(svg: str) -> str:
    return _VOLATILE.sub("terminal", svg)


async def stable_screenshot(pilot: Any, app: App[Any]) -> str:
    """The screen once it has stopped changing (two equal screenshots with app work in between)."""
    await pilot.wait_for_scheduled_animations()
    previous = normalise(app.export_screenshot())
    for _ in range(STABLE_ROUNDS):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        current = normalise(app.export_screenshot())
        if current == previous:
            return current
        previous = current
    raise AssertionError("the screen never stopped changing")


def compare(svg: str, name: str) -> None:
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"no baseline {path}; run with UPDATE_SNAPSHOTS=1 after checking the screen")
    expected = path.read_text(encoding="utf-8")
    if svg != expected:
        actual = path.with_suffix(".actual.svg")
        actual.write_text(svg, encoding="utf-8")
        raise AssertionError(f"screen differs from {path}; see {actual}")


def assert_snapshot(app: App[object], name: str) -> None:
    """Compare the screen as it is now (callers must have let it settle; prefer `assert_stable_snapshot`)."""
    compare(normalise(app.export_screenshot()), name)


async def assert_stable_snapshot(pilot: Any, app: App[Any], name: str) -> None:
    compare(await stable_screenshot(pilot, app), name)
