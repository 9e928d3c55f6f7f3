"""`trace.jsonl`: one event per line, written as it happens, loadable back into typed events.

Written (not fsynced) per event: after a crash of our process every emitted event is in the OS page
cache and therefore in the file; fsync per event would cost milliseconds per step for a guarantee
(surviving a kernel crash) a mock-DB session does not need.

Whole lines or nothing: a line the disk cannot take completely (full, over quota, over the file size limit)
is cut back off, so the file ends with the last event that was written whole, and the writer raises
`DiskFull` naming the file. A torn last line would make every reader report the trace as damaged.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core import strict_json
from core.disk_full import DiskFull, is_disk_full, write_all
from core.events import EVENT_ADAPTER, Event, SessionStarted
from core.private_files import make_dirs, open_fd


class TraceWriter:
    def __init__(self, path: Path) -> None:
        make_dirs(path.parent)
        self.path = path
        try:  # a new trace is 0600 (its user's alone: it holds the customers' data), whatever the umask
            self._fd: int | None = open_fd(path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            if is_disk_full(exc):
                raise DiskFull(path, exc.errno or 0) from exc
            raise
        self._end = os.fstat(self._fd).st_size  # where the last whole line ends

    def __call__(self, event: Any) -> None:
        if self._fd is None:
            raise RuntimeError(f"trace {self.path} is closed")
        data = (event.model_dump_json() + "\n").encode("utf-8")
        try:
            write_all(self._fd, data)
        except OSError as exc:
            with contextlib.suppress(OSError):  # cut the torn line off: the file ends on a whole event
                os.ftruncate(self._fd, self._end)
            if is_disk_full(exc):
                raise DiskFull(self.path, exc.errno or 0, "the trace keeps every event before this one") \
                    from exc
            raise
        self._end += len(data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass(frozen=True)
class TraceProblem:
    line: int
    message: str


def numbered_events(lines: Iterable[str]) -> Iterator[tuple[int, Event | TraceProblem]]:
    """(line number, event) for each line, or a TraceProblem naming the line for anything unreadable (never
    raises); blank lines are skipped. Reads one line at a time: a trace of any size in bounded memory."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        yield number, parse_event_line(line, number)


def parse_event_line(line: str, number: int) -> Event | TraceProblem:
    try:  # strict JSON first: pydantic's own parser would take NaN and 1e999 for numbers
        return EVENT_ADAPTER.validate_python(strict_json.loads(line))
    except strict_json.StrictJSONError as exc:
        return TraceProblem(number, exc.message)
    except ValidationError as exc:
        first = exc.errors()[0]
        return TraceProblem(number, f"{first.get('msg', 'invalid event')} at {first.get('loc', ())}")


def iter_trace(path: Path) -> Iterator[Event | TraceProblem]:
    """Yield each event, or a TraceProblem naming the line for anything unreadable (never raise)."""
    with path.open(encoding="utf-8") as handle:
        for _number, item in numbered_events(handle):
            yield item


SESSION_START_BYTES = 1 << 20  # a session_started line names the domain, agent and predicates: far less


def read_session_start(path: Path) -> SessionStarted | None:
    """The trace's `session_started` when `path` is a session's own trace (its first non-blank line is that
    event, whole and valid), else None: a trajectory of calls, a results file, anything else. The one test for
    "this is a session trace": `check` reads the calls the session recorded and its domain and gate from it, and
    the console replays such a file (and audits any other as recorded, a damaged trace included). Reads one
    line of at most SESSION_START_BYTES, however big the file."""
    try:
        with path.open("rb") as handle:
            while handle.tell() <= SESSION_START_BYTES:
                raw = handle.readline(SESSION_START_BYTES + 1)
                if not raw or len(raw) > SESSION_START_BYTES:
                    return None
                if raw.strip():
                    item = parse_event_line(raw.decode("utf-8"), 1)
                    return item if isinstance(item, SessionStarted) else None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def load_trace(path: Path) -> list[Event]:
    """All events of a trace; raises ValueError naming the first unreadable line."""
    events: list[Event] = []
    for item in iter_trace(path):
        if isinstance(item, TraceProblem):
            raise ValueError(f"{path}:{item.line}: {item.message}")
        events.append(item)
    return events
