"""Nothing that carries meaning is cut at 120 and 160 columns: the gate pane's rule ids and outcome labels, the
ledger's values and the status bar's fields wrap instead; at 80x24 the status bar names the pane in front and
the key that brings the others."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.widgets import Input

from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole
from console.tui.widgets.status_bar import StatusBar
from tests.support.pilot import open_review, wait_for
from tests.support.screen import region_lines, screen_lines


async def force_allowed_session(app: OperatorConsole, pilot: Any) -> None:
    """other-customers-order: the BLOCKed cancel force-allowed, then the session run to its end."""
    await pilot.press("space")
    screen = await open_review(pilot, app)
    screen.query_one("#review-reason", Input).value = "spouse, verified by phone"
    screen.query_one("#approve").focus()
    await pilot.press("f")
    await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended", timeout=20)
    await pilot.pause()


def joined(lines: list[str]) -> str:
    """Lines with their borders and padding dropped and joined without a separator: a value folded onto the
    next line reads whole again; one cut (an ellipsis, the pane's edge) does not."""
    return "".join(line.strip(" │╭╮╰╯─▏▕▁▂▃▄▅▆▇█") for line in lines)


@pytest.mark.parametrize("size", [(120, 35), (160, 45)])
async def test_the_gate_ledger_and_status_bar_cut_nothing(console_app: Callable[..., OperatorConsole],
                                                          size: tuple[int, int]) -> None:
    app = console_app(scenario="other-customers-order", mode=SupervisionMode.APPROVE_NON_ALLOW, operator="dana")
    async with app.run_test(size=size) as pilot:
        await force_allowed_session(app, pilot)
        table = app.gate_pane.table
        gate = region_lines(app, table)
        assert not any("…" in line for line in gate), gate
        call_column = sum(c.get_render_width(table) for c in table.ordered_columns[:2])
        cells = joined([line[call_column:] for line in gate])
        for fact in ("ran [force-allow]", "cancel_pending_order", "retail.order_owned_by_customer"):
            assert fact in cells, (fact, gate)
        assert "BLOCK 1" in str(app.gate_pane.border_subtitle) and "overridden 1" in " ".join(screen_lines(app))

        tree = region_lines(app, app.ledger_pane.ledger_tree)
        assert not any("…" in line for line in tree), tree
        flat = joined(tree)
        for value in ('"noah_kim_3107"', "status: cancelled", "name: Noah Kim"):
            assert value in flat, (value, tree)

        status = region_lines(app, app.query_one(StatusBar))
        assert not any("…" in line for line in status), status
        said = " ".join(" ".join(status).split())
        for field in ("mode approve non-ALLOW", "scenario other-customers-order", "agent ledger",
                      "model scripted-demo"):
            assert field in said, (field, status)


async def test_at_80x24_the_status_bar_names_the_pane_in_front_and_the_key(
        console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        status = " ".join(region_lines(app, app.query_one(StatusBar)))
        assert "Transcript" in status and "l: Ledger, Gate" in status, status
        await pilot.press("l")
        await pilot.pause()
        status = " ".join(region_lines(app, app.query_one(StatusBar)))
        assert "Ledger" in status and "l: Gate, Transcript" in status, status


async def test_a_long_tool_error_unfolds_in_full(console_app: Callable[..., OperatorConsole]) -> None:
    from console.tui.screens.main import SessionEvent
    from core.events import CallInfo, ToolResultEvent

    message = "Error: " + " ".join(f"item {n} of the order is not eligible for this change" for n in range(12))
    app = console_app()
    async with app.run_test(size=(160, 45)) as pilot:
        call = CallInfo(id="c1", name="modify_pending_order_items", arguments={})
        app.main.post_message(SessionEvent(ToolResultEvent(call=call, kind="write", executed=False, ok=False,
                                                           outcome="error", content=message)))
        await wait_for(pilot, lambda: any(e.kind == "error" for e in app.transcript.items))
        entry = next(e for e in app.transcript.items if e.kind == "error")
        assert entry.foldable  # the line is short; its end is one key (x) or click away, never gone
        assert "item 11 of the order" in str(entry.render(True))


async def test_a_resize_fits_every_ledger_entry_to_the_new_width(console_app: Callable[..., OperatorConsole]) -> None:
    """Hundreds of entries: after a resize each one's label fits the tree or its value goes on below it, the
    entries on view first and the rest over the next frames (a big ledger does not freeze the resize)."""
    from core.ledger import Ledger
    from core.tools import ToolCall
    from domains.retail import DOMAIN

    ledger = Ledger(DOMAIN.path_map)
    for n in range(450):
        order = f"#W{n:07d}"
        ledger.absorb(ToolCall(f"c{n}", "get_order_details", {"order_id": order}),
                      {"order_id": order, "status": "processed and waiting for the courier"}, n)
    app = console_app()
    async with app.run_test(size=(160, 45)) as pilot:
        app.ledger_pane.sync(ledger)
        await pilot.resize_terminal(120, 35)
        tree = app.ledger_pane.ledger_tree

        def fitted() -> bool:
            width = tree.wrap_width
            return width > 0 and all(
                node.children or 2 * path.count(".") + node.label.cell_len <= width
                for path, node in tree.nodes_by_path.items() if path in tree.shown_versions)

        await wait_for(pilot, fitted)
        node = tree.nodes_by_path["orders.#W0000449"]
        assert "processed and waiting for the courier" in " ".join(child.label.plain for child in node.children)
