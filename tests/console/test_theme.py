"""Colours come from the theme (issue 16.5): one verdict colour map, resolved from the App's theme variables,
so the light and the dark theme each get colours made for their own background."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style

from console.app import OperatorConsole
from console.theme import VERDICT_ROLE, palette_of
from tests.support.pilot import wait_for


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
