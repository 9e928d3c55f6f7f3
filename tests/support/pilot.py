"""Waiting on a Textual app under test without fixed sleeps: poll a condition between app steps.

A pilot test that sleeps a fixed time is flaky on a busy machine and slow on an idle one; these helpers let the
app run in small steps until what the test needs has happened, and fail with a message after a generous bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

POLL = 0.02  # seconds the app runs between two looks at the condition


async def wait_for(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until `condition` holds (never a fixed sleep)."""
    waited = 0.0
    while not condition():
        if waited >= timeout:
            raise AssertionError("condition not reached in time")
        await pilot.pause(POLL)
        waited += POLL


async def wait_for_screen(pilot: Any, app: Any, kind: type[Any], timeout: float = 10.0) -> Any:
    """Wait until a screen of `kind` is in front *and mounted* (its widgets exist): pushing a screen from an
    action returns before it is composed, and on a busy machine a query right after the key press fails."""
    await wait_for(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted, timeout)
    return app.screen


async def press_at_once(pilot: Any, *keys: str) -> None:
    """Send `keys` to the app as one burst: every key event is queued before the app handles the first, as
    when a terminal delivers keys typed fast or sent together (tmux send-keys). `pilot.press` lets the app go
    idle between keys, which hides any key routed by a focus that only moves once a message has been handled;
    here each key is routed by whatever its predecessors did synchronously, the order the app promises.

    Only single printable characters and key names (`enter`, `tab`, ...) as `pilot.press` takes them."""
    from textual import events

    app = pilot.app
    for key in keys:
        char = key if len(key) == 1 else {"enter": "\r", "tab": "\t", "space": " "}.get(key)
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause()


async def open_review(pilot: Any, app: Any, timeout: float = 10.0) -> Any:
    """Take the review the console announced, as the operator does: wait for the announcement, press F3, and
    return the review modal once it is in front and mounted. The modal never opens by itself."""
    from console.tui.screens.review import ReviewScreen

    await wait_for(pilot, lambda: app.main.review_waiting, timeout)
    await pilot.press("f3")
    return await wait_for_screen(pilot, app, ReviewScreen, timeout)


async def open_file(pilot: Any, app: Any, path: Any, timeout: float = 10.0) -> Any:
    """Open `path` as the operator does: `o`, the path typed into the open dialog's box, Enter. Returns the open
    dialog (what opens next is read in a worker: wait for that screen, or for the dialog's error)."""
    from textual.widgets import Input

    from console.tui.screens.open_trace import OpenTraceScreen

    await pilot.press("o")
    opener = await wait_for_screen(pilot, app, OpenTraceScreen, timeout)
    box = opener.query_one("#open-path", Input)
    box.value = str(path)
    box.focus()
    await pilot.press("enter")
    return opener


async def compose_tool_call(pilot: Any, app: Any, tool: str, timeout: float = 10.0) -> Any:
    """In the agent seat (`model="operator"`): start, open the compose form (`c`) and choose `tool` in it; the
    form once its fields are mounted, the tool select focused."""
    from textual.widgets import Select

    from console.tui.screens.compose import ComposeScreen

    await pilot.press("space")
    await wait_for(pilot, lambda: app.live is not None and app.live.operator_agent is not None
                   and app.live.operator_agent.waiting, timeout)
    await pilot.press("c")
    screen = await wait_for_screen(pilot, app, ComposeScreen, timeout)
    select = screen.query_one("#compose-tool", Select)
    select.focus()
    select.value = tool
    await wait_for(pilot, lambda: screen.form is not None and screen.form.spec.name == tool, timeout)
    await pilot.pause()
    return screen
