"""What a JSON document that does not parse whole still holds, item by item.

Python's parser refuses a whole document for one bad part: a download cut short, one item nested deeper than
it can go, one item that is no JSON. A recording is many conversations (a tau-bench list, tau2's
`simulations`, one conversation's messages), each judged on its own, so a reader asks here for the parts that
do parse:

- a top-level list, item by item;
- a top-level object, member by member, and one level down a member that is a list (tau2's `simulations`, a
  conversation's `messages`) item by item.

Every part that does not parse is one `Problem` with its position (the line of the file where it starts, and
its JSON path) and stands in the value as `SKIPPED`, so the parts after it keep their own positions and every
later reader passes over it in silence. An item cut off by the end of the file is said to be cut short. The
parts that parse are parsed exactly as a whole document would be (the same leniency: the readers check every
value they use with `core.strict_json`).

The scan finds the parts' boundaries with one regular expression over strings, brackets, commas and colons
(the C regex engine, not a Python loop over characters), so a document of many megabytes is split in one pass,
and nesting however deep costs no recursion.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from core.recorded.model import SKIPPED, Problem, Where

# a whole string (escapes included), or one structural character; anything else sits between them
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_OPENERS = frozenset("[{")
_CLOSERS = frozenset("]}")
_IN_LISTS_BELOW = 1  # a top-level object's members that are lists are read item by item; nothing deeper


@dataclass(frozen=True)
class _Part:
    start: int
    end: int
    colon: int | None  # an object member's key/value separator
    cut: bool  # the file ended inside it


def _parts(text: str, opened_at: int) -> tuple[list[_Part], bool]:
    """The parts (list items, object members) of the container whose bracket is at `opened_at`, and whether
    the container closes before the end of the text."""
    parts: list[_Part] = []
    depth = 0
    start = opened_at + 1
    colon: int | None = None
    for token in _TOKEN.finditer(text, opened_at + 1):
        char = token.group()
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            if depth == 0:
                parts.append(_Part(start, token.start(), colon, cut=False))
                return [p for p in parts if text[p.start:p.end].strip()], True
            depth -= 1
        elif depth == 0 and char == ",":
            parts.append(_Part(start, token.start(), colon, cut=False))
            start, colon = token.end(), None
        elif depth == 0 and char == ":" and colon is None:
            colon = token.start()
    parts.append(_Part(start, len(text), colon, cut=True))
    return [p for p in parts if text[p.start:p.end].strip()], False


class _Salvage:
    def __init__(self, text: str) -> None:
        self.text = text
        self.problems: list[Problem] = []
        self.kept = 0

    def line(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def problem(self, offset: int, path: str, message: str) -> None:
        self.problems.append(Problem(Where(self.line(offset), path), message))

    def value(self, part_start: int, part_end: int, path: str, *, cut: bool, lists_below: int) -> Any:
        """The part's value, SKIPPED (and one problem) when it cannot be read; a list member of a top-level
        object is read item by item instead of skipped whole."""
        raw = self.text[part_start:part_end]
        start = part_start + (len(raw) - len(raw.lstrip()))
        if lists_below > 0 and self.text.startswith("[", start):
            found = self.container(start, path, lists_below=lists_below - 1)
            if found is not None:
                return found
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            if cut:
                self.problem(start, path, "the file ends inside this item (cut short?); skipped")
            else:
                self.problem(start, path, f"not valid JSON ({exc.msg} at line {self.line(start + exc.pos)}); "
                             "skipped")
            return SKIPPED
        except RecursionError:
            self.problem(start, path, "nested deeper than Python can read; skipped")
            return SKIPPED
        self.kept += 1
        return value

    def container(self, opened_at: int, path: str, *, lists_below: int) -> Any:
        """The list or object whose bracket is at `opened_at`, with every unreadable part SKIPPED; None when the
        text there is no container this scan can split."""
        bracket = self.text[opened_at]
        parts, closed = _parts(self.text, opened_at)
        if bracket == "[":
            before = len(self.problems)
            items = [self.value(p.start, p.end, f"{path}[{i}]", cut=p.cut, lists_below=0)
                     for i, p in enumerate(parts)]
            if not closed and len(self.problems) == before:  # every item whole, the closing bracket lost
                self.problem(len(self.text), path, "the file ends before this list is closed (cut short?)")
            return items
        members: dict[str, Any] = {}
        before = len(self.problems)
        for part in parts:
            if part.colon is None:
                self.problem(part.start, path, "an object member without a key (cut short?); skipped")
                continue
            try:
                key = json.loads(self.text[part.start:part.colon])
            except json.JSONDecodeError:
                key = None
            if not isinstance(key, str):
                self.problem(part.start, path, "an object member whose key is no string; skipped")
                continue
            child = f"{path}.{key}" if path else key
            value = self.value(part.colon + 1, part.end, child, cut=part.cut, lists_below=lists_below)
            if value is not SKIPPED:
                members[key] = value
        if not closed and len(self.problems) == before:
            self.problem(len(self.text), path, "the file ends before this object is closed (cut short?)")
        return members


def salvage(text: str) -> tuple[Any, list[Problem]] | None:
    """The parts of a document that do parse (see the module docstring) and a problem for each that does not;
    None when the text is no list or object, or not one part of it could be read."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in _OPENERS:
        return None
    reader = _Salvage(text)
    value = reader.container(len(text) - len(stripped), "", lists_below=_IN_LISTS_BELOW)
    if reader.kept == 0:
        return None
    return value, reader.problems
