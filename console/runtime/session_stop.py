"""How the console says why a session stopped when it ended on an exception rather than with its own ending.

A full disk is no bug: "The session stopped: no space left on device while writing …/trace.jsonl; the trace
keeps every event before this one" (`core.disk_full.DiskFull`, whatever wrote: the trace or the database).
Anything else is an internal error, said as one. Kept out of the screen, which only shows the sentence.
"""

from __future__ import annotations

from core.disk_full import DiskFull


def stopped_words(error: BaseException | None) -> str:
    if isinstance(error, DiskFull):
        detail = f"; {error.detail}" if error.detail else ""
        return f"The session stopped: {error.reason} while writing {error.path}{detail}"
    return f"The session stopped on an internal error: {error}"
