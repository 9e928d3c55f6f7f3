"""The snapshot helper itself (tests/console/snapshots.py): a differing screen leaves a side-by-side page, and
`pytest --snapshot-update` rewrites the baseline instead of comparing, like UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.tui.app import OperatorConsole
from tests.console.snapshots import compare, stable_screenshot

REPO = Path(__file__).resolve().parents[3]
OLD = '<svg xmlns="http://www.w3.org/2000/svg"><text>old</text></svg>'
NEW = '<svg xmlns="http://www.w3.org/2000/svg"><text>new &amp; "quoted"</text></svg>'


def _embedded(svg: str) -> str:
    return base64.b64encode(svg.encode("utf-8")).decode("ascii")


def test_a_differing_screen_fails_with_a_side_by_side_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPDATE_SNAPSHOTS", raising=False)
    (tmp_path / "screen.svg").write_text(OLD, encoding="utf-8")
    with pytest.raises(AssertionError, match=r"screen\.diff\.html"):
        compare(NEW, "screen", tmp_path)
    assert (tmp_path / "screen.svg").read_text(encoding="utf-8") == OLD  # the baseline is never touched
    assert (tmp_path / "screen.actual.svg").read_text(encoding="utf-8") == NEW
    page = (tmp_path / "screen.diff.html").read_text(encoding="utf-8")
    assert page.index(_embedded(OLD)) < page.index(_embedded(NEW))  # baseline left, actual right
    assert "<script" not in page and "http" not in page.replace("http://www.w3.org", "")  # self-contained
    compare(OLD, "screen", tmp_path)  # an equal screen passes


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("UPDATE_SNAPSHOTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_the_snapshot_update_option_rewrites_the_baseline(tmp_path: Path) -> None:
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / "screen.svg").write_text(OLD, encoding="utf-8")
    (tmp_path / "test_screen.py").write_text(
        "from pathlib import Path\n\nfrom tests.console.snapshots import compare\n\n\n"
        f"def test_screen() -> None:\n    compare({NEW!r}, 'screen', Path({str(baselines)!r}))\n", encoding="utf-8")

    compared = _pytest(tmp_path)
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "screen.diff.html" in compared.stdout
    assert (baselines / "screen.svg").read_text(encoding="utf-8") == OLD

    updated = _pytest(tmp_path, "--snapshot-update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert (baselines / "screen.svg").read_text(encoding="utf-8") == NEW


async def test_a_screenshot_waits_for_a_resize_the_screen_has_not_had_yet(
        console_app: Callable[..., OperatorConsole]) -> None:
    """On a busy machine the App's resize timer (Textual debounces resizes) can fire after two pauses: the
    helper must not take the old layout at the new size for a settled screen. Here the timer is held back for
    a few rounds, as such a machine would, and the picture must still be the stacked 80x24 layout."""
    app = console_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        check_resize, export = app._check_resize, app.export_screenshot
        taken = {"shots": 0, "rounds": 0}

        def counted(*args: Any, **kwargs: Any) -> str:
            taken["shots"] += 1
            return export(*args, **kwargs)

        def late() -> None:
            """Held until two screenshots were taken meanwhile (or 50 timer rounds): a machine that busy."""
            taken["rounds"] += 1
            if taken["shots"] < 2 and taken["rounds"] < 50:
                app._resize_timer = app.set_timer(1 / 120, late)
                return
            check_resize()

        app._check_resize = late  # type: ignore[method-assign]
        app.export_screenshot = counted  # type: ignore[method-assign]
        await pilot.resize_terminal(80, 24)
        svg = await stable_screenshot(pilot, app)
        assert app.main.panes.narrow
        fresh = console_app()
        async with fresh.run_test(size=(80, 24)) as other:
            assert fresh.main.panes.narrow
            assert svg == await stable_screenshot(other, fresh)
