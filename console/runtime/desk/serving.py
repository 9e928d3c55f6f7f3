"""`ledgeragent serve --supervise`: the one headless desk every browser tab's process joins.

Why a child process: the web server runs one console process per tab, and the desk's sessions must run in
one place all of them reach. So the server starts `python -m console supervise --listen SOCKET <session
options>` once (the one way to host a desk, with supervise's own options), with the same clean environment
as the tabs, its socket in a folder of its own (mode 0700, made with `mkdtemp`), and each tab runs
`python -m console.cli.tab desk-connect SOCKET --operator NAME` (`supervise --connect`: the desk screens on a
`RemoteDesk`, through `console.cli.tab`, which keeps its stderr out of the server's log). The socket is a file,
never a port: the server's token, Origin and Host checks remain the only way in from the network. The host
knows the desk's operators (`--operators-file`, next to the socket: the hashes of the operators' own tokens,
or of the shared one as its one operator), and each tab presents the token its operator presented to the
server (in its environment): a connection is the operator whose token it holds, not a name it states. The host's
stderr lines become server log lines; when the server stops, the host gets SIGTERM (its sessions end with
their traces complete) and the folder is removed.

Pure argv building is in `console.cli.serve` (`desk_serving`, `desk_host_options`) and `console.web.policy`
(`DeskServing`); this module only runs the process, with asyncio and nothing from aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from console.runtime.errors import CliError
from core.strict_json import inert

START_TIMEOUT = 60.0  # seconds the host gets to say where it serves (importing the domains on a loaded machine)
STOP_GRACE = 10.0  # seconds it gets to end its sessions after SIGTERM, before it is killed
SOCKET_NAME = "desk.sock"
OPERATORS_NAME = "operators"  # the host's --operators-file, next to the socket
LOG_LINES = 200  # host stderr lines logged; a runaway host does not flood the server's log
LOG_LINE_CHARS = 500


class DeskProcess:
    """The headless desk host as a child of the web server."""

    def __init__(self, argv_for: Callable[[Path], Sequence[str]], environment: Mapping[str, str], *,
                 log: Callable[[str], None], operators: str | None = None) -> None:
        self.argv_for = argv_for  # the host's argv, given its socket path
        self.environment = dict(environment)
        # The desk's operators as an --operators-file (console.runtime.operators): each tab presents its operator's
        # token for the socket, and the host knows whose it is. Written into the private folder, mode 0600.
        self.operators = operators
        self.log = log
        self.folder: Path | None = None
        self.socket: Path | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stderr: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    async def start(self) -> Path:
        """Start the host and wait for its one line; the socket path. CliError (one line) if it does not come."""
        self.folder = Path(tempfile.mkdtemp(prefix="ledgeragent-desk-"))  # 0700, ours: the socket's lock
        self.socket = self.folder / SOCKET_NAME
        argv = list(self.argv_for(self.socket))
        if self.operators is not None:
            known = self.folder / OPERATORS_NAME
            descriptor = os.open(known, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            os.fchmod(descriptor, 0o600)  # exactly 0600, whatever the umask
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write(self.operators)
            argv += ["--operators-file", str(known)]
        self._process = await asyncio.create_subprocess_exec(
            *argv, env=self.environment, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert self._process.stdout is not None and self._process.stderr is not None
        errors: list[str] = []
        self._stderr = asyncio.create_task(self._relay(self._process.stderr, errors))
        try:
            line = await asyncio.wait_for(self._process.stdout.readline(), START_TIMEOUT)
        except TimeoutError:
            line = b""
        if not line.startswith(b"desk: ") or not self.socket.exists():
            await self.stop()
            why = errors[-1] if errors else f"it did not say where it serves within {START_TIMEOUT:.0f} s"
            raise CliError(f"the desk host did not start: {why}")
        self.log(f"desk host pid {self._process.pid}: {line.decode('utf-8', 'replace').strip()}")
        self._watch = asyncio.create_task(self._watch_exit(self._process))
        return self.socket

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        """A host that ends by itself (a crash, a kill) is said in the log: every tab now says the desk is gone."""
        status = await process.wait()
        if not self._stopping:
            self.log(f"desk host pid {process.pid} exited by itself (status {status}): the tabs cannot reach the "
                     "desk any more; restart the server")

    async def _relay(self, stream: asyncio.StreamReader, keep: list[str]) -> None:
        logged = 0
        while raw := await stream.readline():
            text = inert(raw.decode("utf-8", "replace").rstrip())  # into the server's log, on a terminal
            if not text:
                continue
            keep[:] = [text[:LOG_LINE_CHARS]]
            if logged < LOG_LINES:
                self.log(f"desk host: {text[:LOG_LINE_CHARS]}")
                logged += 1

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_GRACE; remove the folder. The exit status."""
        self._stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE)
            except TimeoutError:
                self.log(f"desk host pid {process.pid} did not stop within {STOP_GRACE:.0f} s: killing it")
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self._stderr is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr, 2.0)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        return None if process is None else process.returncode
