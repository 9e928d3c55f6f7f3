"""The title bar: Textual's `Header`, minus a crash when the app quits while it is still starting.

Textual 8.2.8's `Header._on_mount` watches the app's and screen's titles with a callback that does
`query_one(HeaderTitle)`; when the app exits during start-up (a browser tab closed while its console starts, a
`q` pressed at once) the callback can run after `HeaderTitle` is gone and the console dies with `NoMatches`
instead of quitting. This subclass registers the same watches with a callback that updates whatever title
widget is still there. textual is pinned exactly in pyproject.toml; re-read `textual/widgets/_header.py`
before bumping it.
"""

from __future__ import annotations

from textual.content import Content
from textual.events import Mount
from textual.widget import Widget
from textual.widgets import Header
from textual.widgets._header import HeaderTitle

from core.strict_json import inert


class SessionHeader(Header):
    """`Header` whose title watchers tolerate a teardown under way."""

    def _on_mount(self, event: Mount) -> None:
        # Textual calls `_on_mount` of every class in the MRO: stop before Header's own, run Widget's ourselves.
        event.prevent_default()
        Widget._on_mount(self, event)

        async def set_title() -> None:
            for title in self.query(HeaderTitle):  # empty once the app tears the screen down
                title.update(self.format_title())

        self.watch(self.app, "title", set_title)
        self.watch(self.app, "sub_title", set_title)
        self.watch(self.screen, "title", set_title)
        self.watch(self.screen, "sub_title", set_title)

    def format_title(self) -> Content:
        """The titles as Textual shows them, their text inert (a scenario's or a trace's name could hold an ESC)."""
        return self.app.format_title(inert(self.screen_title), inert(self.screen_sub_title))
