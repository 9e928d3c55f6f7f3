"""A small snapshot helper (harlequin-style): compare `app.export_screenshot()` to a committed SVG.

Run pytest with `--snapshot-update` (or set UPDATE_SNAPSHOTS=1) to (re)write the baselines after looking at
them. Textual is pinned, so the SVG is stable; the per-run `terminal-<n>` class ids are normalised away.

When a screen differs, the test fails naming two files beside the baseline: `<name>.actual.svg` and
`<name>.diff.html`, a page showing the baseline and the actual screen side by side (open it in a browser), so
a reviewer sees what changed instead of diffing SVG markup. Neither is committed (.gitignore).

No picture depends on frame timing: `stable_screenshot` lets the app run until two screenshots in a row
are identical (a cursor scrolled into view after a refresh, a scrollbar that appears one frame late, a
layout class set on resize), and only then compares. A busy machine makes it wait longer, never differ.
"""

from __future__ import annotations

import base64
import html
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


def resized(app: App[Any]) -> bool:
    """Whether the screen has been laid out at its terminal's size. A resize reaches the App at once but its
    screen only when a timer fires (Textual debounces resizes, 1/120 s): on a busy machine two pauses can pass
    before it does, and two equal screenshots of the old layout at the new size were taken for a settled screen.
    `Screen.size` reads the App's size, so it is the screen's compositor (what the screenshot draws, modal and
    the screens under it) that says whether the new size has been laid out."""
    return app.screen._compositor.size == app.size


async def stable_screenshot(pilot: Any, app: App[Any]) -> str:
    """The screen once it has stopped changing (two equal screenshots with app work in between, both taken
    after the screen has its terminal's size)."""
    await pilot.wait_for_scheduled_animations()
    previous = normalise(app.export_screenshot()) if resized(app) else None
    for _ in range(STABLE_ROUNDS):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        if not resized(app):
            previous = None
            continue
        current = normalise(app.export_screenshot())
        if current == previous:
            return current
        previous = current
    raise AssertionError("the screen never stopped changing")


def updating() -> bool:
    """Whether this run rewrites the baselines: `--snapshot-update` (tests/conftest.py) or UPDATE_SNAPSHOTS=1."""
    return os.environ.get("UPDATE_SNAPSHOTS") == "1"


def _image(svg: str) -> str:
    return f'<img alt="" src="data:image/svg+xml;base64,{base64.b64encode(svg.encode("utf-8")).decode("ascii")}">'


def side_by_side(name: str, expected: str, actual: str) -> str:
    """One self-contained HTML page (no network, no script): the baseline and the actual screen side by side."""
    title = html.escape(name)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>snapshot {title} differs"
            "</title><style>body{font-family:sans-serif;margin:1em}main{display:flex;gap:1em;align-items:flex-start}"
            "figure{flex:1;margin:0}img{width:100%;border:1px solid #888}</style></head><body>"
            f"<h1>snapshot <code>{title}</code> differs</h1><main>"
            f"<figure><figcaption>baseline ({title}.svg)</figcaption>{_image(expected)}</figure>"
            f"<figure><figcaption>actual ({title}.actual.svg)</figcaption>{_image(actual)}</figure>"
            "</main><p>If the actual screen is right, run pytest with <code>--snapshot-update</code>.</p>"
            "</body></html>\n")


def compare(svg: str, name: str, directory: Path = SNAPSHOTS) -> None:
    path = directory / f"{name}.svg"
    if updating():
        directory.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"no baseline {path}; run pytest with --snapshot-update after checking the screen")
    expected = path.read_text(encoding="utf-8")
    if svg != expected:
        actual = path.with_suffix(".actual.svg")
        actual.write_text(svg, encoding="utf-8")
        page = path.with_suffix(".diff.html")
        page.write_text(side_by_side(name, expected, svg), encoding="utf-8")
        raise AssertionError(f"screen differs from {path}; see {page} (side by side) and {actual}")


def assert_snapshot(app: App[object], name: str) -> None:
    """Compare the screen as it is now (callers must have let it settle; prefer `assert_stable_snapshot`)."""
    compare(normalise(app.export_screenshot()), name)


async def assert_stable_snapshot(pilot: Any, app: App[Any], name: str) -> None:
    compare(await stable_screenshot(pilot, app), name)
