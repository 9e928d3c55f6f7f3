"""`trace.jsonl`: one event per line, flushed as it happens, loadable back into typed events.

Flushed (not fsynced) per event: after a crash of our process every emitted event is in the OS page
cache and therefore in the file; fsync per event would cost milliseconds per step for a guarantee
(surviving a kernel crash) a mock-DB session does not need.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from core import strict_json
from core.events import EVENT_ADAPTER, Event


class TraceWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def __call__(self, event: Any) -> None:
        if self._file is None:
            raise RuntimeError(f"trace {self.path} is closed")
        self._file.write(event.model_dump_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(frozen=True)
class TraceProblem:
    line: int
    message: str


def iter_trace(path: Path) -> Iterator[Event | TraceProblem]:
    """Yield each event, or a TraceProblem naming the line for anything unreadable (never raise)."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:  # strict JSON first: pydantic's own parser would take NaN and 1e999 for numbers
                yield EVENT_ADAPTER.validate_python(strict_json.loads(line))
            except strict_json.StrictJSONError as exc:
                yield TraceProblem(number, exc.message)
            except ValidationError as exc:
                first = exc.errors()[0]
                yield TraceProblem(number, f"{first.get('msg', 'invalid event')} at {first.get('loc', ())}")


def load_trace(path: Path) -> list[Event]:
    """All events of a trace; raises ValueError naming the first unreadable line."""
    events: list[Event] = []
    for item in iter_trace(path):
        if isinstance(item, TraceProblem):
            raise ValueError(f"{path}:{item.line}: {item.message}")
        events.append(item)
    return events
