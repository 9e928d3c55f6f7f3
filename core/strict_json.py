"""Strict JSON in, finite numbers everywhere: the one guard between hostile text and the gate.

Why a module of its own: Python's `json` accepts `NaN`, `Infinity` and `1e999` (as inf), and keeps lone
surrogates (`"\\ud800"`) in strings. A NaN amount makes every `<=`/`>` comparison False, so a predicate such
as "amount must not exceed the cap" passes it; a lone surrogate cannot be encoded as UTF-8, so it crashes
the trace writer and SQLite later. Deep nesting raises `RecursionError` in the parser and in every recursive
walk after it. So every place that turns outside text into values (the model's tool arguments, `check`'s
trajectory lines, a tau2 `db.json`) parses through `loads`, and every place that accepts values that did
not come through it (an operator's edited arguments, the agent-seat form, the gate itself) runs
`value_problem`. Both give one message naming where the problem is, written for a model or an operator.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 64  # tool arguments and trajectory lines are shallow; tau2's deepest are 4 levels
JSON = Any


class StrictJSONError(ValueError):
    """Text that is not strict JSON, or a value no JSON document may hold. `message` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _reject_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not a JSON number (only finite numbers are allowed)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"number {text[:40]} is out of range (only finite numbers are allowed)")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _lone_surrogate(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(text[exc.start]):04x}"
    return None


def _where(path: str) -> str:
    if len(path) > 80:
        path = path[:77] + "..."
    return f" at {path}" if path else ""


def _plainly_fit(value: JSON, depth_left: int) -> bool:
    """True only when `value` is certainly fit: exact JSON types, finite floats, text without surrogates,
    containers within `depth_left` levels. False means "let the full walk decide" (it names the problem).

    Why it exists: the gate runs `value_problem` on every write's arguments, and the full walk pays for
    the paths it may have to name (a string per element) even though valid arguments are the rule. This
    check builds nothing and recurses only into containers; it is stricter than the walk (subclasses fall
    through to it), so whenever it says True the walk would have answered None. Recursion is bounded by
    `depth_left` (see `_FAST_MAX_DEPTH`)."""
    kind = type(value)
    if kind is dict:
        for key in value:
            if type(key) is not str or not (key.isascii() or _lone_surrogate(key) is None):
                return False
        items: Any = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return _plainly_fit_scalar(value)
    if depth_left <= 0:
        return False
    for sub in items:
        sub_kind = type(sub)
        if sub_kind is str:
            if not sub.isascii() and _lone_surrogate(sub) is not None:
                return False
        elif sub_kind is int or sub_kind is bool or sub is None:
            continue
        elif sub_kind is float:
            if not math.isfinite(sub):
                return False
        elif not _plainly_fit(sub, depth_left - 1):
            return False
    return True


def _plainly_fit_scalar(value: JSON) -> bool:
    kind = type(value)
    if kind is str:
        return value.isascii() or _lone_surrogate(value) is None
    if kind is float:
        return math.isfinite(value)
    return kind is int or kind is bool or value is None


_FAST_MAX_DEPTH = 200  # the recursive fast check is used up to this max_depth; beyond, only the iterative walk


def value_problem(value: JSON, *, max_depth: int = MAX_DEPTH, root: str = "") -> str | None:
    """What makes `value` unfit to be a JSON document, or None: a non-finite number, a lone surrogate in a
    string or key, nesting deeper than `max_depth`, or a non-JSON type. Iterative, so any depth is safe.

    `root` prefixes the reported path (`amount`, `items[2].price`), so messages name the argument.
    """
    if max_depth <= _FAST_MAX_DEPTH and _plainly_fit(value, max_depth):
        return None
    stack: list[tuple[JSON, str, int]] = [(value, root, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, bool) or item is None or isinstance(item, int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{item!r} is not a finite number{_where(path)}"
            continue
        if isinstance(item, str):
            bad = _lone_surrogate(item)
            if bad is not None:
                return f"a lone surrogate {bad} is not valid text{_where(path)}"
            continue
        if isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels{_where(path)}"
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        return f"object key {key!r} is not a string{_where(path)}"
                    bad = _lone_surrogate(key)
                    if bad is not None:
                        return f"a lone surrogate {bad} is not valid text in a key{_where(path)}"
                    stack.append((sub, f"{path}.{key}" if path else key, depth + 1))
            else:
                for index, sub in enumerate(item):
                    stack.append((sub, f"{path}[{index}]", depth + 1))
            continue
        return f"a {type(item).__name__} is not a JSON value{_where(path)}"
    return None


def check_value(value: JSON, *, max_depth: int = MAX_DEPTH, root: str = "") -> JSON:
    """`value` itself when `value_problem` finds nothing; else StrictJSONError with its message."""
    problem = value_problem(value, max_depth=max_depth, root=root)
    if problem is not None:
        raise StrictJSONError(problem)
    return value


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> JSON:
    """Parse one JSON document strictly: no NaN/Infinity/out-of-range numbers, no lone surrogates, at most
    `max_depth` levels of nesting, UTF-8 only. Raises StrictJSONError with a one-line message."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StrictJSONError(f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                                  f"{exc.start})") from None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # json's messages may end in "at" ("Unterminated string starting at"): don't say "at at".
        where = "column" if exc.msg.endswith(" at") else "at column"
        raise StrictJSONError(f"not valid JSON ({exc.msg} {where} {exc.colno})") from None
    except RecursionError:  # the C scanner's own guard: far deeper than max_depth
        raise StrictJSONError(f"nested deeper than {max_depth} levels") from None
    return check_value(value, max_depth=max_depth)


def dumps(value: JSON, **kwargs: Any) -> str:
    """`json.dumps` that refuses NaN/Infinity instead of writing them (`allow_nan=False`)."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError as exc:
        raise StrictJSONError(str(exc)) from None


def safe_dumps(value: JSON, limit: int = 2000) -> str:
    """`value` as ASCII JSON text for the record, whatever it holds: NaN stays `NaN`, a lone surrogate
    stays `\\ud800` (escaped), nesting too deep for `json` becomes a short note. Never raises."""
    try:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    except (RecursionError, ValueError, TypeError):
        text = f"<{type(value).__name__} nested too deep to write>"
    return text if len(text) <= limit else text[:limit] + "..."


def printable(text: str) -> str:
    """`text` with lone surrogates written as `\\udxxx`, so it can be shown, logged and stored as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# Characters a terminal acts on instead of showing: C0 controls, DEL, C1 controls (U+0080-U+009F, among them
# CSI and OSC: a UTF-8 terminal may honour them as the ESC sequences they stand for) and the bidirectional
# formatting characters (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069), which reorder what is shown around
# them. Newline and tab are kept where the text is shown on several lines (`lines=True`).
_UNSAFE_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown_as(match: re.Match[str]) -> str:
    """How a control character is shown: C0 and DEL as their Unicode Control Pictures (`␛` for ESC, `␊` for a
    newline), the others as `\\x9b` / `\\u202e`, so that what was there is visible, and does nothing."""
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: str, *, lines: bool = False) -> str:
    """`text` as it may be shown on a terminal, a screen or a log whatever it holds: every control character
    (C0, DEL, C1, ESC and so every escape sequence, the bidi overrides) replaced by a visible stand-in
    (`␛`, `\\x9b`, `\\u202e`), lone surrogates escaped (`printable`). With `lines=True` newlines and tabs stay
    (a widget that shows text over several lines). Text with none of them comes back as it is.

    Why one function: text from outside (a customer's message, an MCP client's log, a tool result, a model
    endpoint's error, a trace file someone handed over) reaches the operator's terminal through every pane
    and every command's output; each place that turns such text into something drawn passes it through here,
    so an ESC in it cannot set the window title, move the cursor or wipe the screen, and the operator sees
    that it was there."""
    if text.isprintable():
        return text
    shown = (_UNSAFE_LINES if lines else _UNSAFE_LINE).sub(_shown_as, text)  # the same object if nothing matched
    return shown if _lone_surrogate(shown) is None else printable(shown)


def inert_json(text: str) -> str:
    """JSON text (`json.dumps(..., ensure_ascii=False)`) with what `inert` guards against written as `\\u`
    escapes: the same JSON value, safe on a terminal (C0 controls are escaped by `json` itself, and a JSON
    document has these characters only inside its strings, where any character may be an escape)."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
