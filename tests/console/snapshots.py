"""A small snapshot helper (harlequin-style): compare `app.export_screenshot()` to a committed SVG.

Set UPDATE_SNAPSHOTS=1 to (re)write the baselines after looking at them. Textual is pinned, so the SVG is
stable; the per-run `terminal-<n>` class ids are normalised away.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from textual.app import App

SNAPSHOTS = Path(__file__).parent / "__snapshots__"
_VOLATILE = re.compile(r"terminal-\d+")


def normalise(svg: str) -> str:
    return _VOLATILE.sub("terminal", svg)


def assert_snapshot(app: App[object], name: str) -> None:
    svg = normalise(app.export_screenshot())
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
