"""A websocket tab of `ledgeragent serve` that keeps the screen it is sent: the console's output frames fed to a
terminal emulator (pyte), read as text, as a person reads the browser tab."""

from __future__ import annotations

import aiohttp
import pyte

from benchmarks.serve import FIRST_PAINT_BYTES, Tab


class ScreenTab(Tab):
    """`Tab` (benchmarks/serve.py) whose frames also draw a pyte screen of the tab's size."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse, width: int, height: int) -> None:
        self.terminal = pyte.Screen(width, height)
        self.stream = pyte.ByteStream(self.terminal)
        super().__init__(socket)

    @classmethod
    async def open_screen(cls, http: aiohttp.ClientSession, url: str, width: int, height: int,
                          token: str | None = None) -> ScreenTab:
        query = f"width={width}&height={height}" + (f"&token={token}" if token else "")
        socket = await http.ws_connect(f"{url}/ws?{query}", max_msg_size=0)
        return cls(socket, width, height)

    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self.terminal.display)

    async def _read(self) -> None:
        while True:
            message = await self.socket.receive()
            if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED,
                                aiohttp.WSMsgType.ERROR):
                break
            if message.type == aiohttp.WSMsgType.BINARY:
                self.frames += 1
                self.stream.feed(message.data)
                if len(message.data) > FIRST_PAINT_BYTES:
                    self.painted.set()
            elif message.type == aiohttp.WSMsgType.TEXT:
                await self.texts.put(message.data)
        self.closed.set()
