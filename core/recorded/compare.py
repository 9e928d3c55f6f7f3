"""How a database's result differs from the recorded one, in one line an operator can act on.

Used when an audit re-executes a recording (`--db`): the recorded result is what the agent saw and what the
ledger takes; the database's is what our mock backend gives for the same call today. They differ when the
recording was made on other data, when a tool behaves otherwise than tau2's, or when an earlier write of the
recording failed here. Formatting is no difference: keys in another order, 100 and 100.0, and a field that is
null on one side and absent on the other are the same result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from core.recorded.model import RecordedResult
from core.tools import format_tool_result

MAX_SHOWN = 3
ERROR_PREFIX = "Error:"


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _comparable(value: Any) -> Any:
    """A record as plain JSON values; anything else as the text the agent would have read."""
    if isinstance(value, dict | list | tuple):
        return _plain(json.loads(json.dumps(value, default=str)))
    return format_tool_result(value).strip()


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _paths(recorded: Any, database: Any, at: str = "") -> Iterator[str]:
    if isinstance(recorded, dict) and isinstance(database, dict):
        for key in sorted(set(recorded) | set(database)):
            sub = f"{at}.{key}" if at else key
            if key not in recorded:
                yield f"{sub}: only in the database ({_shown(database[key])})"
            elif key not in database:
                yield f"{sub}: only in the recording ({_shown(recorded[key])})"
            else:
                yield from _paths(recorded[key], database[key], sub)
    elif isinstance(recorded, list) and isinstance(database, list) and len(recorded) == len(database):
        for index, (a, b) in enumerate(zip(recorded, database, strict=True)):
            yield from _paths(a, b, f"{at}[{index}]")
    elif isinstance(recorded, list) and isinstance(database, list):
        yield f"{at or 'the result'}: {len(recorded)} item(s) recorded, {len(database)} in the database"
    elif isinstance(recorded, str) and isinstance(database, str) and "\n" in recorded + database:
        yield from _lines(recorded, database, at)
    elif recorded != database:
        yield f"{at or 'the result'}: recorded {_shown(recorded)}, database {_shown(database)}"


def _lines(recorded: str, database: str, at: str) -> Iterator[str]:
    """Text over several lines (a phone's status screen): the first line that differs, not the common start."""
    mine, theirs = recorded.splitlines(), database.splitlines()
    for number, (a, b) in enumerate(zip(mine, theirs, strict=False), start=1):
        if a != b:
            yield f"{at or 'the result'} line {number}: recorded {_shown(a)}, database {_shown(b)}"
            return
    if len(mine) != len(theirs):
        yield f"{at or 'the result'}: {len(mine)} line(s) recorded, {len(theirs)} in the database"


def _message(text: str) -> str:
    return text.removeprefix(ERROR_PREFIX).strip()


def result_difference(recorded: RecordedResult, database: Any, *, failed: bool, undone: bool = False) -> str | None:
    """None when the database's result (`database`: its value, or its error message when `failed`) is the
    recorded one; else what differs. `undone`: the database ran a write the recording says failed, and it was
    rolled back so the database stays where the recording is."""
    if recorded.outcome == "error":
        if failed:
            mine, theirs = _message(recorded.content), _message(str(database))
            return None if mine == theirs else f"both failed, with other messages: recorded {_shown(mine)}, " \
                                               f"database {_shown(theirs)}"
        note = " (rolled back, as the recording has it)" if undone else ""
        return f"the recording has an error ({_shown(_message(recorded.content))}), the database ran it{note}"
    if failed:
        return f"the database refused it ({_shown(str(database))}); the recording has a result"
    shown: Any = recorded.value if isinstance(recorded.value, dict | list) else recorded.content.strip()
    found = list(_paths(_plain(shown), _comparable(database)))
    if not found:
        return None
    more = f" (and {len(found) - MAX_SHOWN} more)" if len(found) > MAX_SHOWN else ""
    return "; ".join(found[:MAX_SHOWN]) + more
