"""One desk, many operator processes: a `Desk` served on a Unix-domain socket, and the `DeskAPI` client for it.

Why: `ledgeragent serve` runs one console process per browser tab, but several operators must work ONE
desk (one inbox, one set of claims, one audit log). So the sessions run in one process (`DeskHost`) and each
tab's process talks to it (`RemoteDesk`), which the desk screens use exactly as they use a `Desk` in-process.

The socket is the only way in: a file of mode 0600 in a folder of mode 0700 owned by this user (checked, not
assumed), never a TCP port, so only this user's processes reach it; the web server's token, Origin and Host
checks stay the only doors from the network. The protocol is JSON lines, read strictly (`core.strict_json`:
no NaN, no lone surrogates, bounded depth) with a bounded line size; a bad line gets a one-line error and the
connection, and every other one, goes on.

Client -> host: `{"id": <int>, "op": <name>, ...fields}`; the first must be `hello`, which makes the connection
an operator for its whole life (a request cannot act for someone else). At a desk that knows its operators
(`DeskHost(operators=...)`: `supervise --listen --operators/--operators-file`, and always under `serve
--supervise`) the hello carries a `token` and the connection is the operator it belongs to (an `operator` name
sent along must be that one); the name is never the client's word. Elsewhere the hello names the operator,
and the socket's permissions (this user's processes only) are the whole lock. Host -> client: the
answer `{"id": <id>, "ok": true, "result": ...}` or `{"id": <id>, "ok": false, "error": "<one line>"}`
(the text of the `DeskRefused` the desk raised), and pushes `{"push": "snapshot", "snapshot": {...}}`
(`DeskSnapshot.to_json`). Pushes are coalesced per connection: at most one is being written at a time and
the next one is built from the desk as it is then (the latest wins, a slow reader never queues a backlog);
with nothing to push for BEAT_S seconds the host sends `{"push": "beat"}`, so a client tells a quiet desk
from a hung one. A change an operator's request made is pushed to that operator before the answer, so when `await
remote.decide(...)` returns, `remote.snapshot()` already shows its effect.

When a connection closes (a browser tab closed, its process killed), the claims its operator holds are
released, unless another live connection has the same operator (the same person in two tabs).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from console.runtime.desk.desk import Desk, check_operator
from console.runtime.desk.view import DeskListener, DeskRefused, DeskSnapshot, ItemView
from console.runtime.operators import DESK_TOKEN_ENV, MAX_TOKEN_LENGTH, Operators, TokenChecks, TooManyTries
from core import strict_json
from core.private_files import make_dirs

log = logging.getLogger("ledgeragent.desk")

MAX_REQUEST = 256 * 1024  # bytes in one request line: an edit's arguments are a few KB
MAX_PUSH = 32 * 1024 * 1024  # bytes in one line from the host: a 50-session snapshot is ~100 KB
MAX_CONNECTIONS = 64  # operator processes at once (one per browser tab)
EVENTS_PAGE = 500  # events in one `session_events` answer; the client asks again for the rest
MAX_SOCKET_PATH = 107  # bytes of an AF_UNIX path on Linux (108 with the terminating NUL)
GONE = "the desk is gone"
# The host says it is alive at least every BEAT_S seconds (a snapshot, an answer, or a beat line when there is
# nothing else to say); a client that has heard nothing for SILENT_S seconds says the desk is not answering.
# A host that dies is noticed at once: its socket closes. So a screen says either within SILENT_S + BEAT_S / 2.
BEAT_S = 0.5
SILENT_S = 1.5
GONE_SAID = ("the desk is gone: its host closed the connection (it stopped or was killed). Nothing can be decided "
             "here; the sessions' traces and the audit log are on disk")
BEAT_LINE = b'{"push":"beat"}\n'
OPS = ("hello", "claim", "release", "release_all", "decide", "bulk_approve", "step", "resume", "session_events")


class SocketPathError(ValueError):
    """A socket path that cannot be served or reached; the message is one line, for the command line."""


# -------------------------------------------------------------------------------------------------- paths


def private_folder(folder: Path) -> Path:
    """`folder`, made if missing with mode 0700; an existing one must be ours and closed to others.

    The folder, not the socket's own mode, is the lock: a Unix socket's permissions are not honoured by every
    system, a folder's are. Raises SocketPathError.
    """
    try:
        make_dirs(folder)  # each folder made here 0700, whatever the umask
        info = folder.stat()
    except OSError as exc:
        raise SocketPathError(f"cannot use folder {folder}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SocketPathError(f"{folder} is not a folder")
    if info.st_uid != os.getuid():
        raise SocketPathError(f"folder {folder} belongs to another user: serve the desk from a folder of yours")
    if info.st_mode & 0o077:
        raise SocketPathError(f"folder {folder} is open to other users (mode {stat.S_IMODE(info.st_mode):o}): "
                              "use a private one (chmod 700)")
    return folder


def check_socket_path(path: Path) -> Path:
    """An absolute socket path short enough for AF_UNIX (SocketPathError otherwise)."""
    path = path.absolute()
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise SocketPathError(f"socket path is too long ({len(os.fsencode(path))} bytes, at most "
                              f"{MAX_SOCKET_PATH}): {str(path)[:80]}...")
    return path


def _listening(path: Path) -> bool:
    """Whether something accepts connections on the socket at `path` (a stale file from a crash does not)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(os.fspath(path))
    except OSError:
        return False
    else:
        return True
    finally:
        probe.close()


def _make_room(path: Path) -> None:
    """Remove a stale socket left by a desk that died; refuse a live one or any other file."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise SocketPathError(f"{path} exists and is not a socket: choose another path")
    if _listening(path):
        raise SocketPathError(f"a desk is already served at {path}")
    path.unlink()


# -------------------------------------------------------------------------------------------------- lines


class _Lines:
    """Lines from a stream, each at most `limit` bytes; a longer one is skipped to its end and reported once.

    asyncio's own `readline` clears its buffer on an overlong line and then hands out the line's tail as if it
    were the next line (a second, misleading error); this keeps the stream in step.
    """

    def __init__(self, reader: asyncio.StreamReader, limit: int) -> None:
        self.reader = reader
        self.limit = limit
        self.buffer = bytearray()
        self.skipping = False

    async def next(self) -> bytes | None:
        """The next line without its newline, `None` at the end; `_Overlong` once for a line over the limit."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                if self.skipping:
                    self.skipping = False
                    continue
                if len(line) > self.limit:
                    raise _Overlong(len(line))
                return line
            if len(self.buffer) > self.limit:
                self.buffer.clear()
                if not self.skipping:
                    self.skipping = True
                    raise _Overlong(self.limit)
            chunk = await self.reader.read(65536)
            if not chunk:
                return None
            self.buffer += chunk


class _Overlong(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _line(message: Mapping[str, Any]) -> bytes:
    return strict_json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


# -------------------------------------------------------------------------------------------------- host


_CONNECTION_NUMBERS = itertools.count(1)


class _Connection:
    """One operator process at the host: its writer, its operator (after hello), its pending push."""

    def __init__(self, host: DeskHost, writer: asyncio.StreamWriter) -> None:
        self.host = host
        self.writer = writer
        self.operator: str | None = None
        self.dirty = asyncio.Event()
        self.pushed = -1  # the desk version this connection last got
        self.name = f"connection {next(_CONNECTION_NUMBERS)}"  # whose wrong hellos are counted (TokenChecks)

    def write(self, message: Mapping[str, Any]) -> None:
        if not self.writer.is_closing():
            self.writer.write(_line(message))

    def push_now(self) -> None:
        """The snapshot as it is now, if this connection has not seen it yet."""
        if self.operator is None or self.pushed == self.host.version:
            return
        self.dirty.clear()
        self.pushed = self.host.version
        self.writer.write(self.host.snapshot_line())

    async def pusher(self) -> None:
        """Coalesced pushes: wait for a change, write the latest snapshot, wait until it left, again; a beat
        line when BEAT_S passed without a change (so the client can tell a quiet desk from a dead one)."""
        while not self.writer.is_closing():
            try:
                await asyncio.wait_for(self.dirty.wait(), BEAT_S)
            except TimeoutError:
                if self.operator is not None:
                    self.writer.write(BEAT_LINE)
                    await self.writer.drain()
                continue
            self.push_now()
            await self.writer.drain()


class DeskHost:
    """Serves `desk` on the Unix socket at `path` (see the module docstring for the protocol)."""

    def __init__(self, desk: Desk, path: Path, *, max_connections: int = MAX_CONNECTIONS,
                 max_request: int = MAX_REQUEST, log: Callable[[str], None] | None = None,
                 operators: Operators | None = None) -> None:
        self.desk = desk
        self.path = check_socket_path(path)
        # Who may say hello as whom: with operators, a connection is the operator whose token it presents;
        # without, the name it states (the socket's permissions, this user's processes only, are the lock).
        self.operators = operators
        # Tokens checked at a bounded cost (a couple of scrypt checks at a time, a connection's wrong hellos
        # slowed down), a known one at none: a flood of bad hellos cannot stall the operators' own.
        self._checks = TokenChecks(operators) if operators is not None else None
        self.max_connections = max_connections
        self.max_request = max_request
        self.log = log or (lambda _line: None)
        self.version = 0  # bumped on every desk change
        self._line_version = -1
        self._line = b""
        self._connections: set[_Connection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._inode: tuple[int, int] | None = None

    # ------------------------------------------------------------------------------------------ life

    async def start(self) -> None:
        """Bind: the folder made private (or checked to be), a stale socket replaced, the socket 0600."""
        private_folder(self.path.parent)
        _make_room(self.path)
        self.desk.subscribe(self._changed)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=os.fspath(self.path),
                                                           limit=self.max_request)
        except OSError as exc:
            self.desk.unsubscribe(self._changed)
            raise SocketPathError(f"cannot serve the desk at {self.path}: {exc.strerror or exc}") from None
        os.chmod(self.path, 0o600)
        info = self.path.stat()
        self._inode = (info.st_dev, info.st_ino)

    async def close(self) -> None:
        """Stop accepting, close every connection, remove the socket file (if it is still ours)."""
        self.desk.unsubscribe(self._changed)
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.writer.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None
        with contextlib.suppress(OSError):
            info = self.path.lstat()
            if (info.st_dev, info.st_ino) == self._inode:
                self.path.unlink()

    @property
    def connected(self) -> list[str]:
        """The operators connected now, one name per connection, sorted."""
        return sorted(c.operator for c in self._connections if c.operator is not None)

    # ------------------------------------------------------------------------------------------ pushes

    def _changed(self) -> None:
        self.version += 1
        for connection in self._connections:
            if connection.operator is not None:
                connection.dirty.set()

    async def _who(self, fields: Mapping[str, Any], client: str) -> str:
        """The operator a hello makes this connection: its token's, at a desk that knows its operators (the
        name it states, if any, must be that one); else the name it states."""
        named = fields.get("operator")
        if self.operators is None:
            return check_operator(_text(fields, "operator", 200))
        token = _text(fields, "token", MAX_TOKEN_LENGTH, optional=True)
        if not token:
            raise DeskRefused(f"this desk knows its operators: say hello with your token (${DESK_TOKEN_ENV})")
        assert self._checks is not None
        try:
            who = await self._checks.identify(token, client)
        except TooManyTries as exc:
            self.log(f"desk: refused a hello: {exc.message}")
            raise DeskRefused(exc.message) from None
        if who is None:
            self.log("desk: refused a hello: a token this desk does not know")
            raise DeskRefused("this desk does not know that token")
        if named not in (None, "") and named != who:
            raise DeskRefused(f"this token is {who}'s, not {str(named)[:64]}'s")
        return who

    def snapshot_line(self) -> bytes:
        """The push line of the desk's current snapshot, built once per change whatever the connections."""
        if self._line_version != self.version:
            self._line = _line({"push": "snapshot", "snapshot": snapshot_json(self.desk.snapshot())})
            self._line_version = self.version
        return self._line

    # ------------------------------------------------------------------------------------------ a connection

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self, writer)
        if len(self._connections) >= self.max_connections:
            connection.write({"id": None, "ok": False,
                              "error": f"the desk has {self.max_connections} connections already"})
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()
            return
        self._connections.add(connection)
        pusher = asyncio.create_task(connection.pusher())
        lines = _Lines(reader, self.max_request)
        try:
            while True:
                try:
                    line = await lines.next()
                except _Overlong:
                    connection.write({"id": None, "ok": False,
                                      "error": f"request line too long (more than {self.max_request} bytes)"})
                    await writer.drain()
                    continue
                if line is None:
                    break
                await self._answer(connection, line)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            pusher.cancel()
            with contextlib.suppress(BaseException):
                await pusher
            self._connections.discard(connection)
            writer.close()
            await self._gone(connection)

    async def _gone(self, connection: _Connection) -> None:
        """The connection closed: release its operator's claims unless that operator is still connected."""
        operator = connection.operator
        if operator is None:
            return
        if any(c.operator == operator for c in self._connections):
            self.log(f"desk: {operator} disconnected (still connected elsewhere: claims kept)")
            return
        held = [i.id for i in self.desk.snapshot().items if i.claimed_by == operator]
        await self.desk.release_all(operator)
        self.log(f"desk: {operator} disconnected; released {len(held)} claim(s)")

    async def _answer(self, connection: _Connection, line: bytes) -> None:
        request_id: object = None
        request: object = None
        try:
            request = strict_json.loads(line)
            if not isinstance(request, dict):
                raise DeskRefused("a request is a JSON object")
            request_id = request.get("id")
            if isinstance(request_id, bool) or not isinstance(request_id, int) or request_id < 0:
                request_id = None
                raise DeskRefused("every request needs an id (a whole number of 0 or more)")
            result = await self._run(connection, request)
        except strict_json.StrictJSONError as exc:
            connection.write({"id": None, "ok": False, "error": f"bad request: {exc.message}"})
        except DeskRefused as exc:
            self._say_refused(connection, request, exc)
            connection.push_now()
            connection.write({"id": request_id, "ok": False, "error": _one_line(str(exc))})
        except Exception as exc:  # noqa: BLE001 - a desk bug refuses this request (nothing is allowed by it)
            self.log(f"desk: {type(exc).__name__} answering {str(line[:80])}: {exc}")
            connection.push_now()
            connection.write({"id": request_id, "ok": False,
                              "error": _one_line(f"the desk failed: {type(exc).__name__}: {exc}")})
        else:
            connection.push_now()  # the change this request made, before its answer (read your own writes)
            connection.write({"id": request_id, "ok": True, "result": result})

    def _say_refused(self, connection: _Connection, request: object, exc: DeskRefused) -> None:
        """A decision the desk refused (most often: another operator holds the call) goes into the host's log,
        so that who tried to decide what, and why it did not happen, is on record beside the audit log's
        decisions. Claims are not logged: a screen asks for one whenever its cursor moves."""
        if connection.operator is None or not isinstance(request, dict):
            return
        op = request.get("op")
        if op in ("decide", "bulk_approve", "step", "resume"):
            target = request.get("item", request.get("session", ""))
            what = f"{op} of {str(target)[:80]}" if isinstance(target, str) and target else str(op)
            self.log(f"desk: refused {connection.operator}'s {what}: {_one_line(str(exc), 200)}")

    async def _run(self, connection: _Connection, request: dict[str, Any]) -> object:
        op = request.get("op")
        if not isinstance(op, str) or op not in OPS:
            raise DeskRefused(f"unknown op {str(op)[:40]!r} (one of {', '.join(OPS)})")
        fields = {k: v for k, v in request.items() if k not in ("id", "op")}
        if op == "hello":
            if connection.operator is not None:
                raise DeskRefused(f"this connection is {connection.operator}'s already")
            connection.operator = await self._who(fields, connection.name)
            connection.dirty.set()
            how = " (by token)" if self.operators is not None else ""
            self.log(f"desk: {connection.operator} connected{how} ({len(self.connected)} connection(s))")
            return {"operator": connection.operator}
        operator = connection.operator
        if operator is None:
            raise DeskRefused("say hello first (with your operator name)")
        desk = self.desk
        if op == "claim":
            await desk.claim(_text(fields, "item"), operator)
        elif op == "release":
            await desk.release(_text(fields, "item"), operator)
        elif op == "release_all":
            await desk.release_all(operator)
        elif op == "decide":
            arguments = fields.get("arguments")
            if arguments is not None and not isinstance(arguments, dict):
                raise DeskRefused("arguments must be a JSON object")
            await desk.decide(_text(fields, "item"), operator, _text(fields, "decision"),
                              reason=_text(fields, "reason", optional=True, limit=10_000), arguments=arguments)
        elif op == "bulk_approve":
            items = fields.get("items")
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items) or len(items) > 1000:
                raise DeskRefused("items must be a list of item ids")
            return await desk.bulk_approve(items, operator)
        elif op == "step":
            await desk.step(_text(fields, "session"), operator)
        elif op == "resume":
            await desk.resume(_text(fields, "session"), operator)
        elif op == "session_events":
            since = fields.get("since", 0)
            if isinstance(since, bool) or not isinstance(since, int) or since < 0:
                raise DeskRefused("since must be a whole number of 0 or more")
            return await desk.session_events(_text(fields, "session"), since, limit=EVENTS_PAGE)
        return None


def snapshot_json(snapshot: DeskSnapshot) -> dict[str, Any]:
    """`snapshot.to_json()`, built shallowly: `dataclasses.asdict` deep-copies every value, which took 24 ms
    of a 50-session push's 32 (this takes ~3); the values are only serialised, never kept or changed."""
    return {
        "now": snapshot.now,
        "rows": [dict(vars(row)) for row in snapshot.rows],
        "items": [{**vars(item), "arguments": dict(item.arguments), "rules": [dict(vars(r)) for r in item.rules]}
                  for item in snapshot.items],
        "stats": dict(vars(snapshot.stats)),
        "amber_s": snapshot.amber_s,
        "red_s": snapshot.red_s,
        "audit_path": snapshot.audit_path,
        "lost": snapshot.lost,
    }


def _text(fields: Mapping[str, Any], name: str, limit: int = 200, *, optional: bool = False) -> str:
    value = fields.get(name, "" if optional else None)
    if not isinstance(value, str):
        raise DeskRefused(f"{name} must be a string")
    if len(value) > limit:
        raise DeskRefused(f"{name} is longer than {limit} characters")
    return value


def _one_line(text: str, limit: int = 500) -> str:
    """One line for an answer or the host's log: it may quote what a client sent, so its text is inert."""
    text = strict_json.inert(" ".join(strict_json.printable(text).split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -------------------------------------------------------------------------------------------------- client


class RemoteDesk:
    """`console.runtime.desk.view.DeskAPI` over a `DeskHost`'s socket: what a browser tab's desk screens use.

    `snapshot()` is the latest pushed snapshot, with `now` moved on by the local time since it arrived (so
    waits and service levels keep counting between pushes) and claims that ran out by then shown as free.
    Listeners are called on each push, and once more when the host is lost; from then on every method raises
    `DeskRefused("the desk is gone")`. The host beats every BEAT_S seconds when it has nothing else to send:
    after SILENT_S seconds without a line the desk is `silent` (listeners are told, and told again when a line
    comes). Gone or silent, `snapshot()` stands still and its `lost` says so in plain words, for the screens.
    Open with `await RemoteDesk.connect(path, operator)`.
    """

    def __init__(self, path: Path, operator: str, *, clock: Callable[[], float] = time.monotonic,
                 token: str | None = None) -> None:
        self.path = path
        self.operator = operator
        self.token = token  # for a desk that knows its operators: whose this connection is
        self.clock = clock
        self.gone = False
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._snapshot: DeskSnapshot | None = None
        self._received = 0.0
        self._listeners: list[DeskListener] = []
        self._answers: dict[int, asyncio.Future[Any]] = {}
        self._ids = 0
        self._task: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._first = asyncio.Event()
        # When the host was last heard from (any line), on the real monotonic clock: `clock` may be a test's,
        # moved by hand, and silence is real time passing.
        self._heard = time.monotonic()
        self.silent = False  # nothing heard for SILENT_S seconds (the host may be hung, or gone)
        self._stopped_at: float | None = None  # `clock()` when the link was lost or went silent: waits stop there

    @classmethod
    async def connect(cls, path: Path, operator: str, *, clock: Callable[[], float] = time.monotonic,
                      timeout: float = 10.0, token: str | None = None) -> RemoteDesk:
        """Connect, say hello as `operator` (with `token`, at a desk that knows its operators: it decides who
        this is, and `operator` must be that name), wait for the first snapshot. DeskRefused with the reason
        if not."""
        remote = cls(path, operator, clock=clock, token=token)
        await remote._open(timeout)
        return remote

    async def _open(self, timeout: float) -> None:
        path = self.path
        try:
            info = path.stat()
        except FileNotFoundError:
            raise DeskRefused(f"no desk at {path} (no such file)") from None
        except OSError as exc:
            raise DeskRefused(f"cannot reach the desk at {path}: {exc.strerror or exc}") from None
        if not stat.S_ISSOCK(info.st_mode):
            raise DeskRefused(f"{path} is not a desk socket")
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_unix_connection(os.fspath(path), limit=MAX_PUSH), timeout)
        except ConnectionRefusedError:
            raise DeskRefused(f"no desk is listening at {path}") from None
        except TimeoutError:
            raise DeskRefused(f"the desk at {path} did not answer within {timeout:.0f} s") from None
        except OSError as exc:
            raise DeskRefused(f"cannot reach the desk at {path}: {exc.strerror or exc}") from None
        self._task = asyncio.create_task(self._read(), name="remote desk")
        self._watch = asyncio.create_task(self._watch_silence(), name="remote desk heartbeat")
        try:
            hello = {"operator": self.operator} | ({"token": self.token} if self.token else {})
            answer = await asyncio.wait_for(self._request("hello", **hello), timeout)
            if isinstance(answer, dict) and isinstance(answer.get("operator"), str):
                self.operator = answer["operator"]  # who the host says this connection is
            await asyncio.wait_for(self._first.wait(), timeout)
        except TimeoutError:
            await self.close()
            raise DeskRefused(f"the desk at {path} did not answer within {timeout:.0f} s") from None
        except DeskRefused:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the connection (the host releases this operator's claims if no other connection has them)."""
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        for task in (self._task, self._watch):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._lost()

    # ------------------------------------------------------------------------------------------ reading

    async def _read(self) -> None:
        assert self._reader is not None
        lines = _Lines(self._reader, MAX_PUSH)
        try:
            while (line := await lines.next()) is not None:
                self._heard = time.monotonic()
                if self.silent:  # heard again: the desk can be worked again
                    self.silent = False
                    self._stopped_at = None
                    self._tell()
                message = strict_json.loads(line)
                if not isinstance(message, dict):
                    break
                if message.get("push") == "snapshot":
                    self._snapshot = DeskSnapshot.from_json(message["snapshot"])
                    self._received = self.clock()
                    self._first.set()
                    self._tell()
                    continue
                key = message.get("id")
                answer = self._answers.pop(key, None) if isinstance(key, int) else None
                if answer is not None and not answer.done():
                    if message.get("ok") is True:
                        answer.set_result(message.get("result"))
                    else:
                        answer.set_exception(DeskRefused(_one_line(str(message.get("error", "refused")))))
                elif message.get("ok") is False and message.get("id") is None:  # e.g. "too many connections"
                    for waiting in self._answers.values():
                        if not waiting.done():
                            waiting.set_exception(DeskRefused(_one_line(str(message.get("error")))))
        except (ConnectionError, OSError, _Overlong, strict_json.StrictJSONError, KeyError, TypeError, ValueError):
            pass  # a broken or garbled stream: the host is as good as gone
        finally:
            self._lost()

    async def _watch_silence(self) -> None:
        """Say when the host has been silent for SILENT_S seconds (it beats every BEAT_S): checked every
        BEAT_S / 2, so a hung host is said within SILENT_S + BEAT_S / 2 of its last line."""
        while not self.gone:
            await asyncio.sleep(BEAT_S / 2)
            if not self.silent and not self.gone and time.monotonic() - self._heard > SILENT_S:
                self.silent = True
                self._stopped_at = self.clock()
                self._tell()

    def _lost(self) -> None:
        if self.gone:
            return
        self.gone = True
        if self._stopped_at is None:
            self._stopped_at = self.clock()
        if self._watch is not None and self._watch is not asyncio.current_task():
            self._watch.cancel()
        for answer in self._answers.values():
            if not answer.done():
                answer.set_exception(DeskRefused(GONE))
        self._answers.clear()
        if self._writer is not None:
            self._writer.close()
        self._tell()

    def _tell(self) -> None:
        """Call every listener; one that raises is logged, and neither the others nor the desk are lost to it."""
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # noqa: BLE001 - a screen's bug must not read as "the desk is gone"
                log.exception("a desk listener failed")

    async def _request(self, op: str, **fields: Any) -> Any:
        if self.gone or self._writer is None:
            raise DeskRefused(GONE)
        self._ids += 1
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[self._ids] = answer
        try:
            self._writer.write(_line({"id": self._ids, "op": op, **fields}))
            await self._writer.drain()
        except (ConnectionError, OSError):
            self._lost()
        except strict_json.StrictJSONError as exc:
            self._answers.pop(self._ids, None)
            raise DeskRefused(f"invalid value: {exc.message}") from None
        return await answer

    def _as_me(self, operator: str) -> None:
        if operator != self.operator:
            raise DeskRefused(f"this desk connection is {self.operator}'s, not {operator}'s")

    # ------------------------------------------------------------------------------------------ DeskAPI

    def snapshot(self) -> DeskSnapshot:
        """The latest pushed snapshot, its `now` moved on by the local time since it arrived; once the host is
        gone or silent, `now` stands at that moment (waits stop counting) and `lost` says what happened."""
        snap = self._snapshot
        if snap is None:
            raise DeskRefused(GONE)
        until = self.clock() if self._stopped_at is None else self._stopped_at
        now = snap.now + max(0.0, until - self._received)
        items = tuple(_expire(item, now) for item in snap.items)
        lost = GONE_SAID if self.gone else (
            f"the desk is not answering (nothing from its host for over {SILENT_S:g} s; it may be stuck or "
            "gone): nothing can be decided until it answers again" if self.silent else "")
        return replace(snap, now=now, items=items, lost=lost)

    def subscribe(self, listener: DeskListener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: DeskListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    async def claim(self, item_id: str, operator: str) -> None:
        self._as_me(operator)
        await self._request("claim", item=item_id)

    async def release(self, item_id: str, operator: str) -> None:
        self._as_me(operator)
        await self._request("release", item=item_id)

    async def release_all(self, operator: str) -> None:
        self._as_me(operator)
        await self._request("release_all")

    async def decide(self, item_id: str, operator: str, decision: str, *, reason: str = "",
                     arguments: Mapping[str, Any] | None = None) -> None:
        self._as_me(operator)
        fields: dict[str, Any] = {"item": item_id, "decision": decision, "reason": reason}
        if arguments is not None:
            fields["arguments"] = dict(arguments)
        await self._request("decide", **fields)

    async def bulk_approve(self, item_ids: Sequence[str], operator: str) -> list[str]:
        self._as_me(operator)
        result = await self._request("bulk_approve", items=list(item_ids))
        return [str(i) for i in result] if isinstance(result, list) else []

    async def step(self, session_id: str, operator: str) -> None:
        self._as_me(operator)
        await self._request("step", session=session_id)

    async def resume(self, session_id: str, operator: str) -> None:
        self._as_me(operator)
        await self._request("resume", session=session_id)

    async def session_events(self, session_id: str, since: int = 0) -> list[dict[str, Any]]:
        """Every event from `since` on, fetched a page (EVENTS_PAGE) at a time."""
        events: list[dict[str, Any]] = []
        while True:
            page = await self._request("session_events", session=session_id, since=since + len(events))
            if not isinstance(page, list):
                raise DeskRefused("the desk sent something that is not a list of events")
            events.extend(page)
            if len(page) < EVENTS_PAGE:
                return events


def _expire(item: ItemView, now: float) -> ItemView:
    """A claim that has run out by `now` shows as free (the host decides; this keeps the view honest)."""
    if item.claimed_by is not None and item.claim_until is not None and item.claim_until <= now:
        return replace(item, claimed_by=None, claim_until=None)
    return item
