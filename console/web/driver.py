"""The Textual driver of a browser tab's console (`ledgeragent serve`): Textual's web driver, sized by its tab.

textual-serve runs each console with Textual's `WebDriver`, which gets its first size from COLUMNS/ROWS and
later ones as `resize` packets on stdin. Two things in it drew a tab's console at the wrong size:

- A console the server starts as its page is served (`console.web.server`, to overlap its start with the
  page's load) cannot know the tab's size: the page says it only once its websocket is open. Started with a
  guess, it drew its first frame at the guess. Such a console is started with `SIZE_ENV=wait`: it reads the
  tab's size from stdin (`wait_for_tab_size`, the first packet the server sends it once a tab takes it)
  before it draws anything, so its first frame has the tab's size.
- `WebDriver` posts its start-up size to the app through the event loop (`run_coroutine_threadsafe`), but a
  resize read from stdin straight into the app's queue from its input thread. A resize that was already
  waiting on stdin when the console started was applied first, then overwritten by the start-up size: the
  console kept the old size and redrew only the top-left cells, over a stale full-size frame. Here every
  resize goes the way the start-up size goes, so they are applied in the order they came.

Started through `TEXTUAL_DRIVER=console.web.driver:TabDriver` (the server sets it); only in a tab's process.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from textual import events
from textual.drivers.web_driver import WebDriver
from textual.geometry import Size

SIZE_ENV = "LEDGERAGENT_TAB_SIZE"  # "wait": read the tab's size from stdin before drawing (a pre-started console)
DRIVER = "console.web.driver:TabDriver"  # for TEXTUAL_DRIVER
MAX_PACKET = 64 * 1024  # bytes in the size packet: a resize is a few dozen


class TabDriver(WebDriver):
    """`WebDriver` whose first frame has the tab's size, and whose resizes are applied in order."""

    def start_application_mode(self) -> None:
        size = wait_for_tab_size()
        if size is not None:
            self._size = size
        super().start_application_mode()

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type != "resize":
            super().on_meta(packet_type, payload)
            return
        size = _size_of(payload)
        if size is None:
            return
        self._size = size
        resize = events.Resize(Size(*size), Size(*size))
        asyncio.run_coroutine_threadsafe(self._app._post_message(resize), loop=self._loop)


def wait_for_tab_size(fd: int = 0) -> tuple[int, int] | None:
    """With `SIZE_ENV=wait`: block until the server sends the tab's size (a `resize` meta packet on `fd`), set
    COLUMNS/ROWS to it and drop `SIZE_ENV` (later calls return None at once); the size, or None.

    Reads exactly one packet (a 1-byte kind, a 4-byte big-endian length, the payload), so whatever the server
    sends next is left on `fd` for the driver's input thread. Without the variable (not pre-started, or a
    terminal) it returns None at once. When the input ends first (the server ended this console, no tab
    took it) it raises SystemExit(0): there is nothing to draw for.
    """
    if os.environ.get(SIZE_ENV) != "wait":
        return None
    del os.environ[SIZE_ENV]
    while True:
        header = _read_exactly(fd, 5)
        length = int.from_bytes(header[1:], "big")
        if length > MAX_PACKET:
            raise SystemExit(0)  # not our server: nothing sane to draw for
        payload = _read_exactly(fd, length)
        if header[:1] != b"M":
            continue  # keys before the size: the server sends the size first, so none come
        try:
            meta = json.loads(payload)
        except ValueError:
            continue
        size = _size_of(meta) if isinstance(meta, dict) and meta.get("type") == "resize" else None
        if size is not None:
            os.environ["COLUMNS"], os.environ["ROWS"] = str(size[0]), str(size[1])
            return size


def _read_exactly(fd: int, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = os.read(fd, count - len(data))
        if not chunk:
            raise SystemExit(0)
        data += chunk
    return data


def _size_of(payload: dict[str, Any]) -> tuple[int, int] | None:
    """(width, height) of a resize packet; None unless both are positive integers (the server checked them)."""
    width, height = payload.get("width"), payload.get("height")
    if isinstance(width, bool) or isinstance(height, bool) or not isinstance(width, int) \
            or not isinstance(height, int) or width < 1 or height < 1:
        return None
    return width, height
