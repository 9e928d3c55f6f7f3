"""The compare view's "What differs" strip shows every line whole, at 80x24, 120x35 and 160x45.

Each run goes to its end (both sides, then both databases against the expected end state). The text checks read
the screen as the terminal shows it (tests/support/screen.py), not the strip's data: every line the export's
"What differs" holds is on screen, whole, in order. At 120x35 and 160x45 it fits in place; at 80x24 the strip
scrolls from the keyboard (Tab gives it the focus, End shows its last line) and `d` gives it the screen, whole.
A snapshot at each size shows the strip as it is then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import console.tui.widgets.ledger_tree as ledger_tree
from console.runtime.compare_export import compare_markdown
from console.runtime.live import SessionSpec
from console.tui.compare_app import CompareConsole
from console.tui.screens.help import HelpScreen
from console.tui.widgets.difference_strip import DifferenceStrip
from console.tui.widgets.footer import ConsoleFooter
from tests.console.snapshots import assert_stable_snapshot, stable_screenshot
from tests.support.pilot import wait_for, wait_for_screen
from tests.support.screen import region_lines, screen_lines

SIZES = [(80, 24), (120, 35), (160, 45)]
FRAME = str.maketrans("", "", "│╭╮╰╯─▁▂▃▄▅▆▇█▏▕●")  # the strip's border, scrollbar and bullets


@pytest.fixture(autouse=True)
def no_flash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_tree, "FLASH_SECONDS", 0.0)  # a changed ledger entry's highlight: no timer


def flat(text: str) -> str:
    """Text without its frame and whitespace: a line wrapped over three screen rows reads as one again, while a
    cut one (an edge, an ellipsis, a row out of view) does not."""
    return "".join(text.translate(FRAME).split())


def export_lines(markdown: str) -> list[str]:
    """The texts of the export's "What differs" bullets (`- **role**: text`)."""
    section = markdown.split("## What differs", 1)[1].split("\n## ", 1)[0]
    return [line.split("**: ", 1)[1] for line in section.splitlines() if line.startswith("- **")]


def shown(app: Any, strip: DifferenceStrip) -> str:
    return flat("".join(region_lines(app, strip)))


def missing(app: Any, strip: DifferenceStrip, lines: list[str]) -> list[str]:
    """The lines not on screen whole, in order."""
    text, at, absent = shown(app, strip), 0, []
    for line in lines:
        found = text.find(flat(line), at)
        if found < 0:
            absent.append(line)
        else:
            at = found + len(flat(line))
    return absent


async def finished(pilot: Any, app: CompareConsole) -> list[str]:
    """Run both sides to their end; the export's "What differs" lines, once the strip shows them."""
    screen = app.compare
    await wait_for(pilot, lambda: screen.pair is not None and bool(screen.panes))
    await pilot.press("space")
    pair = screen.pair
    assert pair is not None
    await wait_for(pilot, lambda: pair.end is not None and screen.strip.lines == pair.difference_lines(), 30)
    await stable_screenshot(pilot, app)
    for panes in screen.panes.values():  # the strip grew under the transcripts: each still shows its tail
        assert panes.transcript.scroll_y == panes.transcript.max_scroll_y > 0
    lines = export_lines(compare_markdown(pair))
    assert [text for _role, text in screen.strip.lines] == lines  # the strip and the export: one source
    assert any("LedgerAgent: no difference" in line for line in lines)
    return lines


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_strip_shows_every_line_of_the_export_whole(tmp_path: Path, size: tuple[int, int]) -> None:
    app = CompareConsole(SessionSpec(domain="airline", scenario="cancel-outside-window"), root=tmp_path)
    async with app.run_test(size=size) as pilot:
        lines = await finished(pilot, app)
        strip = app.compare.strip
        if size[0] >= 120:  # room enough: whole where it stands, beside the sides
            assert missing(app, strip, lines) == [], region_lines(app, strip)
            assert app.query_one("#compare-sides").display
            await assert_stable_snapshot(pilot, app, f"compare_{size[0]}x{size[1]}")
            return
        assert missing(app, strip, lines), "at 80x24 the strip in place holds fewer rows than its lines"
        assert "↑↓ scroll" in str(strip.border_subtitle)
        for _ in range(12):  # Tab reaches the strip; End scrolls it to its last line
            if strip.has_focus:
                break
            await pilot.press("tab")
        assert strip.has_focus
        await pilot.press("end")
        await wait_for(pilot, lambda: strip.scroll_y == strip.max_scroll_y > 0)
        await stable_screenshot(pilot, app)
        assert flat(lines[-1]) in shown(app, strip)
        await pilot.press("shift+tab")
        await pilot.press("d")  # the strip takes the screen below the banner: every line in view
        await stable_screenshot(pilot, app)
        assert strip.has_focus and not app.query_one("#compare-sides").display
        assert missing(app, strip, lines) == [], region_lines(app, strip)
        assert "SIMULATION" in screen_lines(app)[0]  # the banner stays
        await assert_stable_snapshot(pilot, app, "compare_80x24_what_differs")
        await pilot.press("escape")
        await stable_screenshot(pilot, app)
        assert app.query_one("#compare-sides").display and not strip.has_focus


async def test_the_strip_key_is_in_the_footer_and_in_help(tmp_path: Path) -> None:
    app = CompareConsole(SessionSpec(domain="airline", scenario="cancel-outside-window"), root=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.compare.pair is not None)
        await stable_screenshot(pilot, app)
        footer = region_lines(app, app.screen.query_one(ConsoleFooter))
        assert any("d What differs" in row for row in footer), footer  # visible in the footer at 80 columns
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, app, HelpScreen)
        assert ("d", "What differs") in help_screen.keys
