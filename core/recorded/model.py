"""The one shape every recording is read into, whatever file it came from.

A recording is conversations; a conversation is turns (a customer's message or phone actions, an agent's
message and the tool calls it made); each call carries the result the agent saw, as the recording has it.
The result is the point: the agent acted on what the tools told it, so an audit judges each write against a
ledger built from those results, not from a database that may say something else today.

Positions (`Where`) name a line of a JSON-lines file or a JSON path inside a document
(`simulations[2].messages[7]`), so every problem and every verdict can be found in the file with an editor or
`jq`. Nothing here knows a domain: which tools exist is the audit's business.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from core import strict_json
from core.tools import ToolCall

Format = Literal["trajectory", "trace", "tau2", "tau-bench", "messages"]
FORMAT_WORDS: dict[str, str] = {
    "trajectory": "check trajectory lines",
    "trace": "a LedgerAgent session trace",
    "tau2": "a tau2-bench results file",
    "tau-bench": "a tau-bench results list (task, trial, reward and OpenAI messages per conversation)",
    "messages": "OpenAI chat messages",
}

# Tools a recorded agent may have had that only think or compute and touch no data: tau-bench's and tau-Trait's
# `think` (returns "", "will not obtain new information or change the database") and `calculate` (an
# arithmetic expression). A domain without them passes their calls over (core.recorded.audit), and they name
# no domain when one is inferred from a recording's tools.
INTERNAL_TOOLS: frozenset[str] = frozenset({"think", "calculate"})

# What the recording says became of a call. "unreadable": it ran, but what it returned is no strict JSON (a NaN,
# a lone surrogate), so nothing may be taken from it.
ResultOutcome = Literal["ok", "error", "rejected", "vetoed", "undecided", "invalid", "unreadable"]
NOT_RUN: frozenset[str] = frozenset({"rejected", "vetoed", "undecided", "invalid"})


class _Skipped:
    """The stand-in for an item of a document that could not be read at all (cut short, nested too deep): the
    reader that found it reported it with its position already, so every later reader passes over it in
    silence, and the items after it keep their own positions."""

    def __repr__(self) -> str:
        return "SKIPPED"


SKIPPED: Final = _Skipped()


class RecordingError(ValueError):
    """Input no reader can use at all (not JSON, no known format, nothing to judge): one line, exit 2."""


@dataclass(frozen=True)
class Where:
    """A position in the source: `line` of a JSON-lines file and/or a JSON `path` inside a document or line."""

    line: int | None = None
    path: str = ""

    def child(self, suffix: str) -> Where:
        """A position inside this one (`[3]`, `.tool_calls[0]`)."""
        if not self.path and suffix.startswith("."):
            suffix = suffix[1:]
        return Where(self.line, self.path + suffix)

    def short(self) -> str:
        """Without the file name: `line 12`, `line 3 [4]`, `simulations[2].messages[7]`."""
        if self.line is None:
            return self.path or "(the file)"
        return f"line {self.line}" + (f" {self.path}" if self.path else "")

    def at(self, source: str) -> str:
        """With the file name, as editors and compilers write it: `f.jsonl:12`, `f.json: simulations[2]`."""
        if self.line is None:
            return f"{source}: {self.path}" if self.path else source
        return f"{source}:{self.line}" + (f" {self.path}" if self.path else "")


@dataclass(frozen=True)
class Problem:
    where: Where
    message: str

    def at(self, source: str) -> str:
        return f"{self.where.at(source)}: {self.message}"


@dataclass(frozen=True)
class RecordedResult:
    """What the call gave back in the recording: the text the agent read, and that text as a value."""

    where: Where
    content: str
    value: Any  # the JSON object or array the content holds, else the content text itself
    outcome: ResultOutcome = "ok"

    @property
    def ran(self) -> bool:
        return self.outcome not in NOT_RUN


@dataclass(frozen=True)
class RecordedCall:
    """One call as recorded. `call.id` is unique within its conversation (a recording's own id may be empty or
    used twice; `recorded_id` keeps it as written). `result` is None when the recording holds none."""

    where: Where
    call: ToolCall
    result: RecordedResult | None
    recorded_id: str = ""


@dataclass(frozen=True)
class RecordedTurn:
    where: Where
    role: Literal["user", "assistant"]
    text: str | None
    calls: tuple[RecordedCall, ...] = ()


@dataclass
class RecordedConversation:
    """One conversation, with what its benchmark said of it where the file keeps that: the task it ran, its trial,
    and its reward (1.0: the benchmark accepted the end state; that proves no write legal, see the audit)."""

    label: str  # "" for a file's only conversation; else where it sits, e.g. "simulations[2] (task 14, trial 0)"
    turns: list[RecordedTurn] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    termination: str | None = None
    task_id: str | None = None
    trial: int | None = None
    reward: float | None = None  # finite, as recorded; None where the file gives none (or no number)

    def calls(self) -> list[RecordedCall]:
        return [call for turn in self.turns for call in turn.calls]


@dataclass
class Recording:
    source: str
    format: Format
    conversations: list[RecordedConversation]
    problems: list[Problem] = field(default_factory=list)  # of the file itself (a broken line), in file order
    domain: str | None = None  # the domain the file names (a trace's session_started, a tau2 file's info)
    model: str | None = None
    # False for check trajectory lines: they hold calls only, so their results come from the database.
    results_recorded: bool = True

    def tool_names(self) -> set[str]:
        return {call.call.name for conversation in self.conversations for call in conversation.calls()}


def result_value(content: str) -> tuple[Any, str | None]:
    """The value a recorded result text holds, and why it cannot be used (None: it can).

    A JSON object or array (what tau2's tools return for records) is parsed strictly; any other text is kept as
    text, so a user id such as "12345" stays the string the tool returned instead of turning into a number.
    Text that is JSON but not strict JSON (NaN, Infinity, a lone surrogate) is unusable: a predicate must never
    see a value that no comparison can order."""
    head = content.lstrip()[:1]
    if head not in ("{", "["):
        return content, None
    try:
        value = strict_json.loads(content)
    except strict_json.StrictJSONError as exc:
        try:
            json.loads(content)
        except (ValueError, RecursionError):
            return content, None  # text that merely starts with a bracket
        return None, exc.message
    if isinstance(value, dict | list):
        return value, None
    return content, None
