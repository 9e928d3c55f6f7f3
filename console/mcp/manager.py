"""One LedgerAgent session per MCP client, each a session of one supervision desk.

A client is known by a key its transport gives: over stdio the process is the connection (one client, key
"stdio"); over streamable HTTP the `Mcp-Session-Id` header the SDK's session manager minted for it at the
handshake (an unguessable id the SDK checks on every request). The session is made on the client's first call
or read that needs it (listing the tools needs none), so a probe or a health check leaves no folder behind,
and ended when the client goes (stdio's end of input, HTTP's DELETE or its idle timeout) or the server stops.

A session its disk stopped (`DiskFullStop`), and a start the disk could not take, are one log line each and a
`SessionGone` naming the disk: the server goes on, and a session made later (a new client) starts afresh.

An ended session leaves nothing here: its folder and trace are on disk (where replay, `check` and the audit read
them) and its desk row is compact (`Desk` drops the session's events and `LiveSession` when it ends). Only its
key is remembered, with why it ended, among the last MAX_ENDED_KEYS: a late request naming it is told the session
ended instead of getting a fresh one under the same id.

The desk is the console's `Desk`: with `--listen` it is also served on a Unix socket, so operators see every
MCP session in the sessions table and decide its held writes in the inbox (`ledgeragent supervise --connect`).
Without a socket nobody can decide anything, which is why a mode that asks a human needs one (the command
refuses the combination).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from console.mcp.data import SessionData
from console.mcp.session import DiskFullStop, McpLiveSession, McpSessionSpec, SessionGone
from console.runtime.desk.desk import Desk
from core.disk_full import DiskFull
from core.strict_json import inert, printable

MAX_CLIENT_NAME = 64
MAX_ENDED_KEYS = 4096  # ended sessions whose key is still known (a few dozen bytes each)


def client_label(name: str | None, version: str | None) -> str:
    """How a client is named on the desk and in the server's log: its `clientInfo` name and version, inert (a
    control sequence in it is shown, never acted on by the operator's terminal) and short."""
    text = " ".join(part for part in (name, version) if part) or "client"
    text = " ".join(inert(printable(text)).split())
    return text[:MAX_CLIENT_NAME] or "client"


class Turns:
    """The requests of one client session, each served once those that arrived before it are done.

    A ticket is taken when a request arrives (synchronously, so in arrival order: the SDK starts each request's
    handler in the order the requests came); the session's calls then run, and are answered, in that order.
    A pipelined read and the write after it are therefore judged as a client that waited for each answer
    would have them judged (the write on the read's ledger), the same every time."""

    def __init__(self) -> None:
        self._next = 0
        self._serving = 0
        self._finished: set[int] = set()
        self._waiters: dict[int, asyncio.Future[None]] = {}

    def take(self) -> int:
        ticket, self._next = self._next, self._next + 1
        return ticket

    async def wait(self, ticket: int) -> None:
        if ticket == self._serving:
            return
        waiter = self._waiters[ticket] = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiters.pop(ticket, None)

    def release(self, ticket: int) -> None:
        """`ticket` is done (served, failed, or given up while waiting): the next one goes on."""
        self._finished.add(ticket)
        while self._serving in self._finished:
            self._finished.discard(self._serving)
            self._serving += 1
        waiter = self._waiters.get(self._serving)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


@contextlib.asynccontextmanager
async def _serving(turns: Turns, ticket: int) -> AsyncIterator[None]:
    try:
        await turns.wait(ticket)
        yield
    finally:
        turns.release(ticket)


class McpSessions:
    """The sessions of one MCP server, by client key, on `desk`."""

    def __init__(self, desk: Desk, spec: McpSessionSpec, *, decision_timeout: float | None,
                 on_opened: Callable[[str, McpLiveSession], object] = lambda _key, _live: None,
                 log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
                 data: SessionData | None = None) -> None:
        self.desk = desk
        self.log = log
        self.data = data  # what every session starts from, loaded once (None: each session loads `spec.db`)
        self.spec = spec
        self.decision_timeout = decision_timeout
        self.on_opened = on_opened
        self._live: dict[str, McpLiveSession] = {}
        self._desk_ids: dict[str, str] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._turns: dict[str, Turns] = {}
        self._ended: OrderedDict[str, SessionGone] = OrderedDict()  # key -> why its session ended, the newest last
        self._closing = False

    @property
    def keys(self) -> list[str]:
        return list(self._live)

    def in_turn(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """`async with sessions.in_turn(key):` around a request of the client's session that reads or changes
        it: its ticket is taken now (call this where the request arrives, before any await), its turn waited
        for on entry (see `Turns`)."""
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = Turns()
        return _serving(turns, turns.take())

    def desk_id(self, key: str) -> str | None:
        return self._desk_ids.get(key)

    async def session(self, key: str, client: str) -> McpLiveSession:
        """The client's session, made and started on first use. SessionGone if it ended (or cannot start)."""
        live = self._live.get(key)
        if live is not None:
            if live.ended:
                raise live.gone("ended")
            return live
        if key in self._ended:
            raise self._ended[key]
        lock = self._opening.setdefault(key, asyncio.Lock())
        async with lock:  # two first calls at once make one session
            live = self._live.get(key)
            if live is not None or key in self._ended:
                return await self.session(key, client)
            if self._closing:
                raise SessionGone("server_stopped")
            try:
                return await self._open(key, client)
            except SessionGone:
                self._desk_ids.pop(key, None)  # (its desk row says why it could not start)
                raise

    async def _open(self, key: str, client: str) -> McpLiveSession:
        spec = replace(self.spec, client=client)
        if self.data is not None:
            try:
                template = await self.data.template()
            except Exception as exc:  # noqa: BLE001 - the command stops on it too (console.cli.mcp)
                raise SessionGone(f"its data cannot be used: {exc}") from None
            if template is not None:
                spec = replace(spec, db=template)
        made: asyncio.Future[McpLiveSession] = asyncio.get_running_loop().create_future()

        def make(spec: Any, **callbacks: Any) -> McpLiveSession:
            callbacks.pop("model_factory", None)  # the client is the agent: no model is built
            live = McpLiveSession(spec, decision_timeout=self.decision_timeout, **callbacks)
            made.set_result(live)
            return live

        desk_id = self.desk.add_session(spec, make=make, bounded=False)
        task = self.desk.task_of(desk_id)
        assert task is not None
        await asyncio.wait((made, task), return_when=asyncio.FIRST_COMPLETED)
        if not made.done():
            raise SessionGone(self._failure(desk_id))
        live = made.result()
        self._desk_ids[key] = desk_id
        await asyncio.wait((live.opened, task), return_when=asyncio.FIRST_COMPLETED)
        failed = live.opened.exception() if live.opened.done() else None
        if isinstance(failed, DiskFull):
            self.log(f"mcp: a session for {live.spec.label} could not start: {failed}; nothing was kept")
            raise SessionGone("disk_full", failed)
        if not live.opened.done() or failed is not None:
            raise SessionGone(self._failure(desk_id))
        self._live[key] = live  # only once it serves: a call arriving meanwhile waits on the lock above
        self.on_opened(key, live)
        return live

    def _failure(self, desk_id: str) -> str:
        row = self.desk.snapshot().row(desk_id)
        return (row.failure or row.end_reason or "could not start") if row is not None else "could not start"

    async def stopped(self, key: str, stop: DiskFullStop) -> None:
        """The client's session stopped on a full disk (`stop` was its call's answer): said once, and ended."""
        live = self._live.get(key)
        where = f" {live.folder}" if live is not None and live.folder is not None else ""
        self.log(f"mcp: session{where} stopped: {stop.disk}"
                 + ("; the write whose result it could not record ran" if stop.ran else ""))
        await self.end(key, "disk_full", SessionGone("disk_full", stop.disk))

    async def end(self, key: str, reason: str, gone: SessionGone | None = None) -> None:
        """End the client's session (if it has one), wait until its trace is complete, and forget it."""
        lock = self._opening.get(key)
        if lock is not None:
            async with lock:  # one being opened ends once it serves
                live = self._live.get(key)
        else:
            live = self._live.get(key)
        desk_id = self._desk_ids.get(key)
        try:
            if live is None or desk_id is None:
                return
            live.end(reason)
            task = self.desk.task_of(desk_id)
            if task is not None:
                await asyncio.wait({task})  # (its own failure is the desk's to show, not ours to raise)
            self._ended[key] = gone or SessionGone(reason)
            while len(self._ended) > MAX_ENDED_KEYS:
                self._ended.popitem(last=False)
        finally:
            self._turns.pop(key, None)
            if self._live.get(key) is live:
                self._live.pop(key, None)
                self._desk_ids.pop(key, None)
                self._opening.pop(key, None)

    async def end_all(self, reason: str) -> None:
        """The server stops: no new session, every open one ended with `reason`."""
        self._closing = True
        await asyncio.gather(*(self.end(key, reason) for key in list(self._live)), return_exceptions=True)
