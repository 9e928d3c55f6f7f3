"""The data every MCP session starts from, loaded once per server rather than once per session.

`--db` (a tau2 `db.json`, a folder of JSON files, a `.sqlite` file) or the domain's shipped seed data is made into
one database, the template, in a private temporary folder; each session's database is a copy of it (SQLite's
backup API, `mock_backends.registry.open_backend` given a `.sqlite` source), page for page the database a
load of the same data makes. Loading tau2's airline `db.json` (3 MB, every record validated by the domain's
models) takes a quarter of a second or more; a copy, milliseconds.

The template is made once the server serves (its start waits for no data: `console.mcp.handshake`), in a
thread of its own, so a client's listing of the tools is not held up by it; the first session waits for it
if it is not ready yet. Data that cannot be used fails it (the command then stops, in one line, as it would
have before serving). A temp dir with no room for the template is no reason to stop: each session then loads
the data itself, as without a template, and a session whose own disk is full is told so.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from pathlib import Path

from core.disk_full import is_disk_full
from mock_backends.registry import open_backend


class SessionData:
    """The template database of one server's sessions (module docstring); `close()` removes it."""

    def __init__(self, domain: str, source: Path | None) -> None:
        self.domain = domain
        self.source = source
        self._folder = Path(tempfile.mkdtemp(prefix="ledgeragent-mcp-"))
        self._made: asyncio.Future[Path | None] | None = None

    def start(self) -> asyncio.Future[Path | None]:
        """Begin making the template (once); the task ends with its path (None: no room for it), or the error
        that stopped it."""
        if self._made is None:
            self._made = asyncio.ensure_future(asyncio.to_thread(asyncio.run, self._make()))
            self._made.add_done_callback(lambda task: task.cancelled() or task.exception())
        return self._made

    async def template(self) -> Path | None:
        """The template's path once made, None when there is no room for it (then each session loads
        `source` itself); BackendSourceError or StoreError when the data cannot be used."""
        return await asyncio.shield(self.start())

    async def _make(self) -> Path | None:
        path = self._folder / "template.sqlite"
        try:
            backend = await open_backend(self.domain, path, self.source)
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            shutil.rmtree(self._folder, ignore_errors=True)
            return None
        await backend.close()
        return path

    def close(self) -> None:
        made = self._made
        if made is not None and not made.done():  # its thread finishes on its own; the folder goes after it
            made.add_done_callback(lambda _task: shutil.rmtree(self._folder, ignore_errors=True))
            return
        with contextlib.suppress(OSError):
            shutil.rmtree(self._folder)
