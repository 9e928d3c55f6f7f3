"""Where every event of a trace is, without holding the events: the index replay reads a big trace through.

Why: a 50 MB trace (47,008 events) read whole took 4 s and 300 MB before anything was drawn, and its
rebuilt ledger a gigabyte more. The index is one pass over the file's bytes that keeps, per event line, its
byte offset and length, seq, step, type and (for the events the gate pane links: decisions, overrides and
tool results) its call id: a few bytes per event, read in a fraction of a second. An event is parsed only
when something asks for it (`read`), strictly as always (`core.trace.parse_event_line`).

How the fields are found without parsing: the trace writer dumps every event with the same leading fields,
`{"seq":N,"step":M,"type":"T"` (and `,"call":{"id":"…"` next for the three linked types). A line that does
not start that way (written by another tool, reordered by hand) is parsed whole instead, so any valid event
is indexed; an unreadable line is a `TraceProblem`, reported and skipped as `iter_trace` does. A line whose
header reads but whose body does not is found when it is read, and reported then.

The same index can be built over events already in memory (`of_events`, e.g. a trial from a results file), so
replay has one code path for both.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from core.events import EVENT_TYPES, Event
from core.trace import TraceProblem, parse_event_line

_HEAD = re.compile(rb'\{"seq":(-?\d{1,18}),"step":(-?\d{1,18}),"type":"([a-z_]{1,40})"')
_CALL_ID = re.compile(rb',"call":\{"id":"((?:[^"\\]|\\.){0,1000})"')
_CODE = {name: code for code, name in enumerate(EVENT_TYPES)}
UNKNOWN = 255
LINKED = frozenset({"gate_decision", "supervisor_decision", "tool_result"})  # carry the call id in the index


class TraceIndex:
    """Per event, in file order: position `i` has `seq(i)`, `step(i)`, `kind(i)`, `call_id(i)`; `read(i)` parses
    it. Seqs strictly increase (ValueError otherwise, as `LedgerTimeline.build` requires)."""

    def __init__(self, reader: Callable[[Sequence[int]], list[Event | TraceProblem]], source: Path | None) -> None:
        self._reader = reader
        self.source = source
        self.offsets: array[int] = array("q")
        self.lengths: array[int] = array("q")
        self.lines: array[int] = array("q")  # 1-based line number in the file
        self.seqs: array[int] = array("q")
        self.step_numbers: array[int] = array("q")
        self.kinds = bytearray()
        self.call_ids: dict[int, str] = {}
        self.problems: list[TraceProblem] = []  # lines no event could be read from (more may turn up in `read`)
        self.escalated: list[int] = []  # gate decisions whose bytes say "escalated":true (read to confirm)
        self._by_kind: dict[int, array[int]] = {}
        self._step_first: dict[int, int] = {}
        self._step_last: dict[int, int] = {}
        self.size = 0

    # ------------------------------------------------------------------------------------------- building

    def _add(self, offset: int, length: int, line: int, seq: int, step: int, kind: str, call_id: str | None) -> None:
        if self.seqs and seq <= self.seqs[-1]:
            raise ValueError(f"events must have strictly increasing seq (as numbered by EventBus); seq {seq} "
                             f"({kind}) at line {line} follows seq {self.seqs[-1]}")
        position = len(self.seqs)
        code = _CODE.get(kind, UNKNOWN)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.lines.append(line)
        self.seqs.append(seq)
        self.step_numbers.append(step)
        self.kinds.append(code)
        self._by_kind.setdefault(code, array("q")).append(position)
        self._step_first.setdefault(step, position)
        self._step_last[step] = position
        if call_id is not None:
            self.call_ids[position] = call_id

    @classmethod
    def of_file(cls, path: Path) -> TraceIndex:
        """Index the trace at `path` (one pass over its bytes; nothing of it is kept but the index)."""

        def read(positions: Sequence[int]) -> list[Event | TraceProblem]:
            found: list[Event | TraceProblem] = []
            with path.open("rb") as handle:
                for i in positions:
                    handle.seek(index.offsets[i])
                    raw = handle.read(index.lengths[i])
                    try:
                        found.append(parse_event_line(raw.decode("utf-8"), index.lines[i]))
                    except UnicodeDecodeError as exc:
                        found.append(TraceProblem(index.lines[i], f"not UTF-8 text (byte at column {exc.start + 1})"))
            return found

        index = cls(read, path)
        offset = 0
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                length = len(raw)
                if raw[:1] == b"{" or raw.strip():
                    index._index_line(raw, offset, length, number)
                offset += length
        index.size = offset
        return index

    def _index_line(self, raw: bytes, offset: int, length: int, number: int) -> None:
        head = _HEAD.match(raw)
        if head is not None:
            kind = head.group(3).decode("ascii")
            call_id = None
            if kind in LINKED:
                found = _CALL_ID.match(raw, head.end())
                if found is not None:
                    try:
                        call_id = json.loads(b'"' + found.group(1) + b'"')
                    except ValueError:
                        call_id = None
                if call_id is None:  # an unusual layout: let the full parse say what the call is
                    head = None
            if head is not None:
                if kind == "gate_decision" and b'"escalated":true' in raw:
                    self.escalated.append(len(self.seqs))
                self._add(offset, length, number, int(head.group(1)), int(head.group(2)), kind, call_id)
                return
        try:
            item = parse_event_line(raw.decode("utf-8"), number)
        except UnicodeDecodeError as exc:
            item = TraceProblem(number, f"not UTF-8 text (byte at column {exc.start + 1})")
        if isinstance(item, TraceProblem):
            self.problems.append(item)
            return
        self._add_event(item, offset, length, number)

    def _add_event(self, event: Event, offset: int, length: int, number: int) -> None:
        linked = getattr(event, "call", None) if event.type in LINKED else None
        if getattr(event, "escalated", False):
            self.escalated.append(len(self.seqs))
        self._add(offset, length, number, event.seq, event.step, event.type, None if linked is None else linked.id)

    @classmethod
    def of_events(cls, events: Sequence[Event]) -> TraceIndex:
        """An index over events already in memory (read returns them as they are)."""
        index = cls(lambda positions: [events[i] for i in positions], None)
        for position, event in enumerate(events):
            index._add_event(event, position, 0, position + 1)
        return index

    # ------------------------------------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self.seqs)

    def read(self, positions: Iterable[int]) -> list[Event | TraceProblem]:
        """The events at `positions` (in the order given); an unreadable one is a TraceProblem naming its line."""
        return self._reader(list(positions))

    def kind(self, position: int) -> str:
        code = self.kinds[position]
        return EVENT_TYPES[code] if code < len(EVENT_TYPES) else "unknown"

    def positions(self, kind: str, start: int = 0, stop: int | None = None) -> Sequence[int]:
        """Positions of `kind` events in [start, stop), in order."""
        found = self._by_kind.get(_CODE.get(kind, UNKNOWN), array("q"))
        lo = bisect_left(found, start)
        hi = len(found) if stop is None else bisect_left(found, stop)
        return found[lo:hi]

    def steps(self) -> list[int]:
        """The step numbers present, ascending."""
        return sorted(self._step_last)

    def last_of_step(self, step: int) -> int | None:
        return self._step_last.get(step)

    def first_of_step(self, step: int) -> int | None:
        return self._step_first.get(step)

    def position_of_seq(self, seq: int) -> int:
        """The position of the last event with seq <= `seq` (-1 before the first)."""
        return bisect_right(self.seqs, seq) - 1
