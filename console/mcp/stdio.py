"""The server over stdio (what a desktop client launches): one client, one session, until its input ends.

The SDK's stdio transport is not used: our own ends of the pipe are the two streams its `Server.run` reads and
writes (`Wire.incoming`, `Wire.outgoing`), for reasons it has no options for:
- a line is read with a bound (`max_line` bytes, the command's `--max-request-bytes`): a longer one is skipped
  to its end, never held in memory;
- a line that is not a JSON-RPC message gets the error JSON-RPC asks for (parse error with id null, or
  invalid request: `console.mcp.jsonrpc`, the same answers as over HTTP) instead of being dropped unanswered,
  so a client that sent it is not left waiting;
- each line is parsed once, into the message the server is handed, and each answer is written by the task
  that made it: the SDK's transport parses a line again after our check, and hands every message in and out
  through a task of its own (two task switches and a parse per call, for nothing);
- the end of input ends the session at once (a held write is given up, the trace ends), rather than when
  the requests in flight have finished, which for a held write can be minutes;
- what `console.mcp.handshake.answer_early` read before the SDK was imported is read first, and the SDK's
  answer to the `initialize` already answered there is not written a second time.

As the SDK does by itself, the process's own stdin and stdout are moved off the pipe while serving (stdin
reads the null device, stdout goes to stderr), so nothing printed by accident can corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import IO, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from console.mcp.handshake import Early
from console.mcp.jsonrpc import PARSE_ERROR, Refusal, invalid_refusal, shape_refusal

OVERLONG = object()  # what `_line` returns for a line over the bound (skipped to its end)


class Wire:
    """The two ends of the pipe: bounded lines in, whole lines out (one writer at a time).

    On pipes and sockets (what a client gives its server) both ends are asyncio transports, so a message
    costs no thread hop; on anything else (a regular file as input, say) they fall back to blocking reads and
    writes in a worker thread."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes], *, max_line: int,
                 on_eof: Callable[[], Awaitable[None]] | None = None, early: Early | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self.max_line = max_line
        self.on_eof = on_eof
        self.incoming = Incoming(self)
        self.outgoing = Outgoing(self)
        self._lock = asyncio.Lock()
        self._stream: asyncio.StreamReader | None = None
        self._out: asyncio.StreamWriter | None = None
        self._ended = False
        self._prefix = bytearray(early.pending if early is not None else b"")  # read before: read first
        self.answered = early.answered if early is not None else None  # its answer is written already

    async def open(self) -> None:
        """Attach the asyncio transports when both ends allow it (else the thread fallback stays, for both: a
        read transport attached alone would read the client's lines into a stream nobody reads)."""
        if not (_pipe_like(self.reader) and _pipe_like(self.writer)):
            return
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=self.max_line + 1)
        if self._prefix:  # ahead of anything the pipe brings
            stream.feed_data(bytes(self._prefix))
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), self.reader)
        except (ValueError, OSError):
            return
        try:
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, self.writer)
        except (ValueError, OSError):
            return
        self._stream = stream
        self._out = asyncio.StreamWriter(transport, protocol, None, loop)
        self._prefix.clear()

    # ------------------------------------------------------------------------------------------ out

    async def write(self, data: bytes) -> None:
        """A whole line, never torn by another; anyio.BrokenResourceError once the client's end is closed."""
        async with self._lock:
            try:
                if self._out is not None:
                    self._out.write(data)
                    await self._out.drain()
                else:
                    await anyio.to_thread.run_sync(self._send, data)
            except (BrokenPipeError, ConnectionResetError) as gone:
                raise anyio.BrokenResourceError from gone

    def _send(self, data: bytes) -> None:
        self.writer.write(data)
        self.writer.flush()

    async def _answer(self, refusal: Refusal) -> None:
        with contextlib.suppress(anyio.BrokenResourceError):  # nobody left to tell
            await self.write(refusal.line())

    # ------------------------------------------------------------------------------------------ in

    async def receive(self) -> SessionMessage:
        """The client's next message, parsed once; anyio.EndOfStream at the end of its input (after `on_eof`).
        A line that is no message is answered here (see `_refuse`) and never handed on."""
        while True:
            if self._ended:
                raise anyio.EndOfStream
            raw = await self._line()
            if raw is OVERLONG:
                await self._answer(Refusal(PARSE_ERROR, None,
                                           f"message too large (more than {self.max_line} bytes): not read"))
                continue
            assert isinstance(raw, bytes)
            if not raw:
                self._ended = True
                if self.on_eof is not None:
                    await self.on_eof()
                raise anyio.EndOfStream
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValidationError as exc:
                await self._refuse(line, exc)
                continue
            if isinstance(message, types.JSONRPCNotification) and '"id"' in line:
                refusal = shape_refusal(json.loads(line))  # an id the SDK took for no id (console.mcp.jsonrpc)
                if refusal is not None:
                    await self._answer(refusal)
                    continue
            return SessionMessage(message)

    async def _line(self) -> bytes | object:
        """The next line with its newline, b"" at the end of input, or OVERLONG (and skipped to its end)."""
        if self._stream is None:
            raw = bytes(self._prefix)
            end = raw.find(b"\n")
            if end >= 0:
                del self._prefix[:end + 1]
                raw = raw[:end + 1]
            else:
                self._prefix.clear()
                if len(raw) <= self.max_line:
                    raw += await anyio.to_thread.run_sync(self.reader.readline, self.max_line + 1 - len(raw),
                                                          abandon_on_cancel=True)
            if len(raw) > self.max_line and not raw.endswith(b"\n"):
                while (chunk := await anyio.to_thread.run_sync(self.reader.readline, 65536,
                                                               abandon_on_cancel=True)) and not chunk.endswith(b"\n"):
                    pass
                return OVERLONG
            return raw
        try:
            return await self._stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            return end.partial  # the last line had no newline (b"" when there was nothing left)
        except asyncio.LimitOverrunError as over:
            await self._stream.readexactly(over.consumed)
        while True:  # skip the rest of the overlong line, a buffer-full at a time
            try:
                await self._stream.readuntil(b"\n")
                return OVERLONG
            except asyncio.IncompleteReadError:
                return OVERLONG
            except asyncio.LimitOverrunError as over:
                await self._stream.readexactly(over.consumed)

    async def _refuse(self, line: str, exc: ValidationError) -> None:
        """Answer a line that is not a JSON-RPC message as JSON-RPC asks: a parse error (id null) for what is not
        JSON, an invalid request for anything else but a client's response, which is never answered."""
        reason = exc.errors()[0].get("msg", "invalid message") if exc.errors() else "invalid message"
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            await self._answer(Refusal(PARSE_ERROR, None, f"Parse error: {reason}"))
            return
        refusal = shape_refusal(value) or invalid_refusal(value, str(reason))
        if refusal is not None:
            await self._answer(refusal)


def _pipe_like(end: IO[bytes]) -> bool:
    """A pipe, a socket or a terminal: what asyncio's pipe transports take (a regular file is none)."""
    try:
        mode = os.fstat(end.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class Incoming:
    """The client's messages as the stream `Server.run` reads (`ReadStream`): each one straight off the wire."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    async def receive(self) -> SessionMessage:
        return await self.wire.receive()

    def __aiter__(self) -> Incoming:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.wire.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """The pipe is `claimed_pipe`'s to close."""

    async def __aenter__(self) -> Incoming:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class Outgoing:
    """The server's messages as the stream `Server.run` writes (`WriteStream`): each one written as a line by
    the task that sends it (the wire's lock keeps lines whole)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        message = item.message
        answered = self.wire.answered
        if answered is not None and isinstance(message, types.JSONRPCResponse | types.JSONRPCError) \
                and message.id == answered:
            self.wire.answered = None  # the handshake's answer, written early (console.mcp.handshake)
            return
        line = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        await self.wire.write(line.encode("utf-8"))

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> Outgoing:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.contextmanager
def claimed_pipe() -> Any:
    """(reader, writer) on the process's stdin/stdout, which meanwhile point at the null device / stderr and
    point back at the pipe afterwards (as the SDK's own stdio transport leaves them)."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    reader = os.fdopen(wire_in, "rb", buffering=1 << 16)
    writer = os.fdopen(wire_out, "wb", buffering=0)
    try:
        yield reader, writer
    finally:
        sys.stdout.flush()  # what was printed meanwhile goes where stdout pointed meanwhile: stderr
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        with contextlib.suppress(OSError):
            writer.close()


async def serve_stdio(server: Server[Any], *, on_eof: Callable[[], Awaitable[None]], max_line: int,
                      early: Early | None = None) -> None:
    """Serve `server` on this process's stdin/stdout until the client closes its end (`early`: what
    `console.mcp.handshake.answer_early` read and answered before)."""
    with claimed_pipe() as (reader, writer):
        wire = Wire(reader, writer, max_line=max_line, on_eof=on_eof, early=early)
        await wire.open()
        await server.run(wire.incoming, wire.outgoing, server.create_initialization_options())
