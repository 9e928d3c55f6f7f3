"""Keys reach the console at once, in the browser and in the terminal.

In the browser: after the page loads, the terminal has the keyboard focus, so the space a person presses
(a real key event from Chromium's input pipeline, not a focus() call from the test) starts the demo. In both:
space is Start/Pause whichever pane has the focus; before, a focused ledger Tree took space to expand a node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input

from benchmarks.browser import Chromium, find_chromium
from benchmarks.serve import ServedConsole
from console.tui.app import OperatorConsole
from tests.support.xterm import CATCH_TERMINAL, showing

CHROMIUM = find_chromium()
NO_CHROMIUM = ("Chromium is not installed (Debian package `chromium`; .ci/run installs it, or set "
               "LEDGERAGENT_CHROMIUM to a Chromium/Chrome binary)")
FIRST_BYTE = "!!document.body && document.body.classList.contains('-first-byte')"
SIZE = (160, 45)


def traces(home: Path) -> list[Path]:
    return sorted((home / "sessions").glob("*/trace.jsonl"))


def ended(trace: Path) -> bool:
    return trace.exists() and '"type":"session_ended"' in trace.read_text()


# ------------------------------------------------------------------------------------------ terminal (Pilot)


async def test_space_starts_the_demo_with_the_ledger_tree_focused(console_app: Callable[..., OperatorConsole]) \
        -> None:
    app = console_app(pace=60.0)  # slow: the session is still running at the second space
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click("#ledger-tree")
        assert app.focused is not None and app.focused.id == "ledger-tree"
        await pilot.press("space")
        assert app.started  # before: the Tree took the space (toggle node) and nothing started
        await pilot.press("space")
        assert app.live is not None and app.live.pacer.paused  # and the next one pauses, still from the tree


async def test_space_is_still_typed_into_the_customer_box(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(seat="customer")
    async with app.run_test(size=SIZE) as pilot:
        box = app.query_one("#customer-input", Input)
        box.focus()
        await pilot.press("a", "space", "b")
        assert box.value == "a b" and not app.started


# ------------------------------------------------------------------------------------------ real browser


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
async def test_in_the_browser_keys_work_at_once_and_from_any_pane(browser: Chromium, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", "--max-sessions", "2", home=home) as server, server.log_on_failure():
        try:
            # 1. No click: the page has given the terminal the focus, a real space key starts the demo.
            page = await browser.new_page(1600, 900)
            await page.goto(server.open_url)
            await page.wait_for(FIRST_BYTE, timeout=60)
            await page.wait_for("document.activeElement && "
                                "document.activeElement.classList.contains('xterm-helper-textarea')", timeout=10)
            await page.press(" ", "Space", 32, text=" ")
            await wait_until(lambda: len(traces(home)) == 1 and ended(traces(home)[0]), "the demo's end")
            await page.close()

            # 2. A click into the ledger pane (the middle column) focuses its tree; space still starts the demo.
            page = await browser.new_page(1600, 900)
            await page.goto(server.open_url)
            await page.wait_for(FIRST_BYTE, timeout=60)
            await wait_until(lambda: len(traces(home)) == 2, "the second tab's session folder")
            await page.click(1600 * 6.5 / 12, 300)
            await page.press(" ", "Space", 32, text=" ")
            second = traces(home)[1]
            await wait_until(lambda: ended(second), "the demo's end after a click on the ledger pane")
        finally:
            await browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
async def test_in_the_browser_f3_takes_the_announced_review(browser: Chromium, tmp_path: Path) -> None:
    """The review is announced, not opened; F3 from the browser's keyboard (xterm.js's own key translation, as
    a person's F3) opens it, and `a` there accepts the BLOCK."""
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", "--scenario", "other-customers-order", "--mode", "approve non-ALLOW",
                       "--operator", "tester", home=home) as server, server.log_on_failure():
        try:
            page = await browser.new_page(1600, 900)
            await page.add_init_script(CATCH_TERMINAL)  # the screen is read from xterm.js's buffer
            await page.goto(server.open_url)
            await page.wait_for(FIRST_BYTE, timeout=60)
            await page.wait_for("document.activeElement && "
                                "document.activeElement.classList.contains('xterm-helper-textarea')", timeout=10)
            await page.press(" ", "Space", 32, text=" ")
            await wait_until(lambda: len(traces(home)) == 1 and '"type":"gate_decision"' in traces(home)[0].read_text(),
                             "the BLOCK")
            trace = traces(home)[0]
            # The announcement follows the gate's event: F3 once the tab shows it, `a` once the review is open.
            await page.wait_for(showing("A write waits for your review"), timeout=60)
            await page.press("F3", "F3", 114)
            await page.wait_for(showing("Review write"), timeout=60)
            await page.press("a", "KeyA", 65, text="a")
            await wait_until(lambda: '"type":"supervisor_decision"' in trace.read_text(), "the operator's decision")
        finally:
            await browser.close()
    decisions = [line for line in trace.read_text().splitlines() if '"type":"supervisor_decision"' in line]
    assert len(decisions) == 1 and '"decision":"accept_verdict"' in decisions[0] and '"who":"tester"' in decisions[0]


async def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        await asyncio.sleep(0.05)
