"""The desk-wide audit log: one JSON line per operator decision and per outcome, on disk before it is shown.

Every session's trace already records its own decisions (`supervisor_decision`, with who, when and how long
the call waited); this log puts the decisions of every session of one desk in one file an auditor can
filter by operator, gate verdict and decision (`read_audit`, `ledgeragent audit`). Outcomes are separate
lines, written when the session's `tool_result` for the decided call arrives: a decision is never read as
an outcome (a force-allowed write may still fail in the backend). A session that ends before a decided call
ran (its edited call waits on a second decision) writes that as the outcome (`not_run`), so an outcome is
"not known yet" only while the session runs. An edit is followed by a `regate` line: the gate's verdict on
the edited arguments, and the item that asked about it again, if one did.

A resume (a step-mode session let run on) is a decision line on no call (`call_id` null): it has no
outcome line.

Lines are flushed and fsynced one by one, so a `kill -9` loses at most a line being written; a torn last line
is skipped (and counted) when reading, never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from core import strict_json
from core.private_files import append_text, make_dirs

MAX_LINE = 1_000_000  # bytes: a longer line is not an audit record this desk wrote


class AuditLog:
    """Appends records to `path` (created with its folder), one line each, durable before `write` returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        make_dirs(path.parent)  # new folders 0700, a new log 0600 (core.private_files)
        self._file: IO[str] | None = append_text(path)

    def write(self, record: Mapping[str, Any]) -> None:
        if self._file is None:
            raise ValueError("the audit log is closed")
        self._file.write(strict_json.dumps(dict(record), ensure_ascii=False, sort_keys=True) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(frozen=True)
class AuditFilter:
    """Which records to keep; None means any. Outcome lines follow the decision they belong to."""

    operator: str | None = None
    verdict: str | None = None
    decision: str | None = None

    def keeps(self, record: Mapping[str, Any]) -> bool:
        if record.get("type") != "decision":
            return False
        if self.operator is not None and record.get("operator") != self.operator:
            return False
        if self.verdict is not None and str(record.get("gate_verdict")) != self.verdict:
            return False
        return self.decision is None or record.get("decision") == self.decision


@dataclass
class AuditRead:
    decisions: list[dict[str, Any]]
    outcomes: dict[str, dict[str, Any]]  # by "<session>/<call id>": what happened to the call in the end
    skipped: int = 0  # lines that were not complete records (a torn last line after a crash)
    regates: dict[str, dict[str, Any]] = field(default_factory=dict)  # by call: the gate on its edited arguments


def iter_records(path: Path) -> Iterator[dict[str, Any] | None]:
    """Each line's record, or None for a line that is not one (torn, too long, not strict JSON)."""
    with path.open("rb") as handle:
        for raw in handle:
            if len(raw) > MAX_LINE:
                yield None
                continue
            try:
                value = strict_json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                yield None
                continue
            yield value if isinstance(value, dict) else None


def read_audit(path: Path, keep: AuditFilter | None = None) -> AuditRead:
    """The decisions `keep` selects, oldest first, with the outcome of each decided call when it is known."""
    keep = keep or AuditFilter()
    read = AuditRead([], {})
    for record in iter_records(path):
        if record is None:
            read.skipped += 1
        elif record.get("type") == "outcome":
            read.outcomes[call_key(record)] = record
        elif record.get("type") == "regate":
            read.regates[call_key(record)] = record
        elif keep.keeps(record):
            read.decisions.append(record)
            if record.get("call_id") is None:  # a step or a resume: no call, so no outcome line will ever come
                read.outcomes[call_key(record)] = {**NO_CALL, "decision": record.get("decision")}
    return read


NO_CALL: dict[str, Any] = {"type": "outcome", "no_call": True}  # the outcome of a decision on no call
NO_CALL_WORDS = {"step": "no call (the session took one more step)",
                 "resume": "no call (the session's supervision mode changed)"}


def call_key(record: Mapping[str, Any]) -> str:
    """Which call a decision or outcome line is about: every decision of one call shares its outcome. A
    decision on no call (a step, a resume) is its own: keyed by its item and time, not by a call id."""
    if record.get("type") == "decision" and record.get("call_id") is None:
        return f"{record.get('session')}/-/{record.get('decision')}/{record.get('item')}/{record.get('when')}"
    return f"{record.get('session')}/{record.get('call_id')}"


def describe_outcome(outcome: Mapping[str, Any] | None) -> str:
    """An outcome line in words; "not known yet" when the session has not reported it (it still runs)."""
    if outcome is None:
        return "not known yet"
    if outcome.get("no_call"):
        return NO_CALL_WORDS.get(str(outcome.get("decision")), "no call")
    if outcome.get("outcome") == "not_run":
        return f"not executed: {outcome.get('content', 'the session ended')}"
    if outcome.get("executed"):
        return "executed" if outcome.get("ok") else f"executed, failed: {outcome.get('content', '')}"[:200]
    return f"not executed ({outcome.get('outcome')})"


def describe_regate(regate: Mapping[str, Any] | None) -> str:
    """What the gate said of an edit's arguments ("re-gated REVISE (telecom.refuel_cap), asked again as i2"),
    or "" for a decision that was not an edit."""
    if regate is None:
        return ""
    rules = regate.get("failing_rules") or []
    text = f"re-gated {regate.get('gate_verdict')}" + (f" ({', '.join(rules)})" if rules else "")
    if regate.get("regated_item"):
        text += f", asked again as {regate['regated_item']}"
    return text
