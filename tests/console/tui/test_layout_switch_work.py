"""A layout switch redraws what changed and nothing else (its figure, < 50 ms, is in benchmarks/console.py).

Crossing the 110-column breakpoint changes the panes and one footer key ("Next pane", stacked only). What is
checked is which widgets draw again, counted through the lines they draw again, never how long it took.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.widgets._footer import FooterKey

from console.tui.app import OperatorConsole
from console.tui.widgets.footer import ConsoleFooter
from tests.support.pilot import wait_for


def count_redraws(widgets: list[Any]) -> dict[Any, list[int]]:
    """Wrap each widget's `render_line`: Textual calls it only for lines it draws again (not for the lines its
    styles cache still holds, and not to measure an auto width, as `render` is): widget -> [line numbers]."""
    counts: dict[Any, list[int]] = {}
    for widget in widgets:
        lines: list[int] = []
        counts[widget] = lines

        def render_line(y: int, original: Callable[[int], Any] = widget.render_line, lines: list[int] = lines) -> Any:
            lines.append(y)
            return original(y)

        widget.render_line = render_line
    return counts


async def test_footer_keys_that_stay_are_not_redrawn_when_the_layout_switches(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        footer = app.main.query_one(ConsoleFooter)
        for width, stacked in ((100, True), (120, False)):
            before = list(footer.query(FooterKey))
            counts = count_redraws(before)
            await pilot.resize_terminal(width, 35)
            await wait_for(pilot, lambda stacked=stacked: app.main.panes.narrow == stacked)
            await pilot.pause()
            kept = [key for key in footer.query(FooterKey) if key in counts]
            assert any(key.action == "cycle_pane" for key in footer.query(FooterKey)) == stacked
            assert len(kept) >= 10, [key.action for key in kept]
            assert [key.action for key in kept if counts[key]] == []


async def footer_settled(pilot: Any, footer: ConsoleFooter) -> None:
    """Let the start-up finish drawing the footer (its first keys mounted, then the same key widgets across two
    pauses): on a busy machine the first focus change can rebuild the keys after the first pause."""
    await wait_for(pilot, lambda: len(footer.query(FooterKey)) >= 10)
    previous: list[FooterKey] = []
    for _ in range(200):
        current = list(footer.query(FooterKey))
        if current == previous:
            return
        previous = current
        await pilot.pause()
        await pilot.pause()
    raise AssertionError("the footer never stopped changing")


async def test_a_bindings_signal_during_the_footer_patch_does_not_rebuild_every_key(
        console_app: Callable[..., OperatorConsole]) -> None:
    """A resize that changes the keys patches the footer (awaiting the mount of "Next pane"); a bindings signal
    that comes meanwhile (the same resize moved the focus) used to see the old keys as still shown, and
    queued a rebuild of all of them behind the patch. Here the signal is sent at that very await."""
    app = console_app()
    async with app.run_test(size=(120, 35)) as pilot:
        footer = app.main.query_one(ConsoleFooter)
        await footer_settled(pilot, footer)
        mount_all = footer.mount_all

        def signalled(*args: Any, **kwargs: Any) -> Any:
            footer.bindings_changed(footer.screen)
            return mount_all(*args, **kwargs)

        footer.mount_all = signalled  # type: ignore[method-assign]
        before = set(footer.query(FooterKey))
        await pilot.resize_terminal(100, 35)
        await wait_for(pilot, lambda: app.main.panes.narrow)
        for _ in range(5):
            await pilot.pause()
        after = list(footer.query(FooterKey))
        assert any(key.action == "cycle_pane" for key in after)
        assert len([key for key in after if key in before]) == len(after) - 1  # only "Next pane" is new
