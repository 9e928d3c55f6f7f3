"""The HTTP connections of `ledgeragent mcp --transport http` before their requests reach the app: deadlines for a
request's head, and a bound on connections that have sent none.

uvicorn (h11) has no deadline before a request's head has arrived, and counts every open connection against
its concurrency limit: some hundreds of connections that send nothing, opened by anyone who can reach the
port and without a token, answered every real client 503 for as long as they stayed open. h11 leaves
timeouts to the server; uvicorn's only one is the keep-alive's (between requests, cancelled by the first
byte of the next). So here, as uvicorn's own `H11Protocol` with three additions (its `http` setting takes the
class):

- a head deadline: a request's head (request line and headers) must be whole within `head_timeout` seconds
  of the connection's opening, or of its first byte on a kept-alive connection. Past it the connection gets
  `408 Request Timeout` (a JSON-RPC error body saying so) and is closed: a client that sends its bytes one by
  one is closed as surely as a silent one;
- at most `max_waiting` connections that have not yet sent a whole head at once: past it, the oldest of them
  is closed (`503`, saying why) to make room, so a flood of silent connections costs its sender its own
  oldest ones and never a real client its place (a client sends its head as soon as it has connected);
- no connection counts towards a concurrency limit before its head has arrived: uvicorn's limit (which counts
  every open connection) is off, and the app's (`console.mcp.http.Guard`) counts requests in flight.

What happens after the head (the body's deadline, the token, the sessions) is the app's. Every closed
connection is counted; the log says how many, at most once every `LOG_EVERY` seconds per reason, so a flood
is one line, not one per connection.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

LOG_EVERY = 10.0


@dataclass(frozen=True)
class ConnectionLimits:
    head_timeout: float  # seconds a request's head may take to arrive whole
    max_waiting: int  # connections with no whole head yet, at once


def raw_refusal(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP response, written before h11 has a request to answer (it refuses to answer none)."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode("ascii")
    return head + body


@dataclass
class Tally:
    """Connections closed for one reason, said in one log line at most every LOG_EVERY seconds."""

    what: str
    log: Callable[[str], None]
    count: int = 0
    scheduled: bool = False

    def add(self, loop: asyncio.AbstractEventLoop) -> None:
        self.count += 1
        if not self.scheduled:
            if self.count == 1:  # the first at once; the rest summed up after a while
                self.flush()
            self.scheduled = True
            loop.call_later(LOG_EVERY, self._later)

    def _later(self) -> None:
        self.scheduled = False
        if self.count:
            self.flush()

    def flush(self) -> None:
        count, self.count = self.count, 0
        self.log(f"mcp: closed {count} connection{'s' if count != 1 else ''} {self.what}")


@dataclass
class ConnectionTable:
    """The connections of one server that have not yet sent a whole head, oldest first."""

    limits: ConnectionLimits
    log: Callable[[str], None]
    waiting: OrderedDict[GuardedH11Protocol, None] = field(default_factory=OrderedDict)
    tallies: dict[str, Tally] = field(default_factory=dict)

    def closed(self, why: str, loop: asyncio.AbstractEventLoop) -> None:
        tally = self.tallies.get(why)
        if tally is None:
            tally = self.tallies[why] = Tally(why, self.log)
        tally.add(loop)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the head deadline and the bound on waiting connections (module docstring).
    `table` is set on the subclass `protocol_class` makes, one per server."""

    table: ConnectionTable

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        table = self.table
        table.waiting[self] = None
        while len(table.waiting) > table.limits.max_waiting:
            oldest, _ = table.waiting.popitem(last=False)
            oldest._refuse(503, "Service Unavailable",
                           f"too many connections are waiting to send a request (more than {table.limits.max_waiting}"
                           "): the oldest is closed", "that sent no request, to make room for newer ones")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.table.waiting.pop(self, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_deadline is None and self._between_requests():
            self._arm()  # the first byte of a kept-alive connection's next request: its head has a deadline too
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:
            self._head_arrived()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        super().on_response_complete()
        if self.cycle is not cycle:  # a pipelined request's head was already here
            self._head_arrived()

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _head_arrived(self) -> None:
        self._disarm()
        self.table.waiting.pop(self, None)

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self.table.limits.head_timeout, self._head_late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        self.table.waiting.pop(self, None)
        self._refuse(408, "Request Timeout",
                     f"the request's head did not arrive within {self.table.limits.head_timeout:g} s",
                     f"whose request head did not arrive within {self.table.limits.head_timeout:g} s")

    def _refuse(self, status: int, reason: str, message: str, logged: str) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(raw_refusal(status, reason, message))
        self.transport.close()
        self.table.closed(logged, self.loop)


def protocol_class(limits: ConnectionLimits, log: Callable[[str], None]) -> type[GuardedH11Protocol]:
    """A `GuardedH11Protocol` of its own for one server (uvicorn's `http` setting), its table shared by its
    connections."""
    table = ConnectionTable(limits, log)
    return type("ServerH11Protocol", (GuardedH11Protocol,), {"table": table})
