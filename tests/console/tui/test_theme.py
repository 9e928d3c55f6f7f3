"""Colours come from the theme: one verdict colour map, resolved from the App's theme variables,
so the light and the dark theme each get colours made for their own background."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole
from console.tui.theme import VERDICT_ROLE, palette_of
from tests.support.pilot import open_review, wait_for


def hex_of(style: str, part: str) -> str:
    color = getattr(Style.parse(style), part)
    assert color is not None and color.triplet is not None, style
    return color.triplet.hex.upper()


async def test_verdicts_are_coloured_by_the_theme_in_every_pane(console_app: Callable[..., OperatorConsole]) -> None:
    seen: dict[str, dict[str, str]] = {}
    for theme in ("textual-dark", "textual-light"):
        app = console_app()
        async with app.run_test(size=(160, 45)) as pilot:
            app.theme = theme
            await pilot.pause()
            variables = app.get_css_variables()
            await pilot.press("space")
            await wait_for(pilot, lambda a=app: a.live is not None and a.live.state.phase == "ended")
            # the gate table's badges: the verdict's theme colour as background, in the order the gate decided
            badges = [app.gate_pane.table.get_row_at(i)[1] for i in range(app.gate_pane.table.row_count)]
            assert [b.plain.strip() for b in badges] == ["REVISE", "ALLOW"]
            assert [hex_of(str(b.style), "bgcolor") for b in badges] == [variables["warning"].upper(),
                                                                         variables["success"].upper()]
            # the transcript's bar beside each gate entry: the theme's text tint for that verdict
            bars = {e.kind: hex_of(str(list(e.strips[-1])[0].style), "color") for e in app.transcript.items
                    if e.kind.startswith("gate-")}
            assert bars == {"gate-REVISE": variables["text-warning"].upper(),
                            "gate-ALLOW": variables["text-success"].upper()}
            palette = palette_of(app.gate_pane)
            seen[theme] = {v: hex_of(palette.verdict_text(v), "color") for v in VERDICT_ROLE}
    # text colours differ between the themes: each is the tint made for its own background
    assert all(seen["textual-dark"][v] != seen["textual-light"][v] for v in VERDICT_ROLE), seen


def unwalled(text: str) -> str:
    """The operator decision's wall-clock time (the one clock a trace records) left out of a comparison."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00", "<when>", text)


def drawn_panes(app: OperatorConsole) -> dict[str, Any]:
    """What the three panes show, with every style: transcript lines as segments, ledger labels with their
    spans, gate cells with theirs, and the gate's detail (Text equality ignores styles, so they are spelled out)."""

    def styled(text: Any) -> Any:
        if not isinstance(text, Text):
            return str(text)
        return unwalled(text.plain), str(text.style), [(s.start, s.end, str(s.style)) for s in text.spans]

    transcript = app.transcript
    transcript.catch_up()
    table = app.gate_pane.table
    tree = app.ledger_pane.ledger_tree
    return {
        "transcript": [[Segment(unwalled(s.text), s.style, s.control) for s in strip]
                       for entry in transcript.items for strip in entry.strips],
        "ledger": {path: styled(node.label) for path, node in tree.nodes_by_path.items()},
        "gate": [[styled(c) for c in table.get_row_at(i)] for i in range(table.row_count)],
        "gate detail": styled(app.gate_pane.query_one("#gate-detail", Static).render()),
    }


async def test_t_recolours_what_the_panes_already_show(console_app: Callable[..., OperatorConsole],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A session played in the dark theme, then `t`: the transcript, ledger tree and gate table show exactly
    what the same session played in the light theme from the start shows."""
    from console.tui.widgets import ledger_tree

    monkeypatch.setattr(ledger_tree, "FLASH_SECONDS", 0.0)  # no "new" marks coming and going with a timer
    shown: dict[str, dict[str, Any]] = {}
    for theme in ("textual-light", "textual-dark"):
        app = console_app(mode=SupervisionMode.APPROVE_NON_ALLOW)
        app.theme = theme  # from the start: the only switch is the `t` below
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("space")
            await open_review(pilot, app)
            await pilot.press("a")  # accept the REVISE: the gate row gets the operator's marker
            await wait_for(pilot, lambda a=app: a.live is not None and a.live.state.phase == "ended")
            await pilot.pause()
            if theme == "textual-dark":
                before = drawn_panes(app)
                for pane in ("transcript", "ledger", "gate"):  # the themes do differ in each
                    assert before[pane] != shown["textual-light"][pane], pane
                await pilot.press("t")
                await wait_for(pilot, lambda a=app: a.theme == "textual-light")
                await pilot.pause()
                await pilot.pause()
            shown[theme] = drawn_panes(app)
    for pane in ("transcript", "ledger", "gate", "gate detail"):
        assert shown["textual-dark"][pane] == shown["textual-light"][pane], pane
