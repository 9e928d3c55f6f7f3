"""Which recording a file is, and reading it: check trajectory lines, session traces, tau2 results, tau-bench
results lists, chat messages.

Detection looks at the data, never at the file name:
- one JSON document: a tau2-bench results file (`info`, `tasks`, `simulations`); a tau-bench results list
  (tau-bench's and tau-Trait's published runs: objects with `task_id`, `trial`, `reward`, `info` and the
  conversation's OpenAI messages under `traj`); a conversation object (`messages`, or `traj`); a list of
  messages (objects with a `role`: one conversation); a list of conversations (lists of messages, or
  conversation objects). A list is told by its first item that is a message or a conversation, so one broken
  item at its head does not hide what the rest is;
- JSON lines, told apart by their first line that is one of these: trace events (`type`), check trajectory
  lines (`name`), one message per line (`role`: one conversation), or one conversation per line.
A gzip-compressed file is read as the text it holds (published runs are often kept compressed); a compressed
stream cut short is read as far as it goes, and said.

Bad input. A file that is none of these, or that holds nothing readable, is a `RecordingError` (unusable:
exit 2). Everything smaller is a `Problem` with its position and the rest is read: a broken line, a list item
or message that is no JSON object, a call without result, a reused call id (see `core.recorded.messages`), and,
in a document Python's parser refuses whole (cut short, one part nested too deep), each part that does not
parse (`core.recorded.salvage`): the parts that do are read as usual.

Strict JSON. JSON lines go through `core.strict_json` line by line, so a NaN makes its line a problem. A whole
document is parsed by Python's own parser (which would take NaN for a number) only to find its structure: every
value the audit uses (a call's arguments, a result) is checked by `strict_json` before use, so a NaN in a tau2
file refuses that one call or result, not the whole file, and never reaches a predicate.
"""

from __future__ import annotations

import codecs
import json
import math
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import ValidationError

from core import strict_json
from core.events import (
    EVENT_ADAPTER,
    EVENT_TYPES,
    AssistantTurnEvent,
    Event,
    MessageSent,
    SessionEnded,
    SessionStarted,
    ToolResultEvent,
)
from core.recorded.messages import ConversationReader, read_messages
from core.recorded.model import (
    NOT_RUN,
    SKIPPED,
    Format,
    Problem,
    RecordedCall,
    RecordedConversation,
    RecordedResult,
    RecordedTurn,
    Recording,
    RecordingError,
    ResultOutcome,
    Where,
)
from core.recorded.salvage import salvage
from core.replay import TrajectoryProblem, iter_trajectory
from core.strict_json import printable
from core.tools import Requestor, ToolCall

CONVERSATION_KEYS = ("messages", "traj")  # tau-bench publishes its trajectories under "traj"
MAX_FILE_BYTES = 512 * 1024 * 1024  # a recording is read whole; bigger than this is refused, not swapped in


GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    """Whether the file starts as gzip does (False for a file that cannot be read: its reader says why)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    except OSError:
        return False


def read_recording(path: Path) -> Recording:
    """The recording in `path`, whichever of the formats it is (see the module docstring)."""
    source = str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise RecordingError(f"{source} is larger than {MAX_FILE_BYTES >> 20} MiB; split it")
        data = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"cannot read {source}: {exc.strerror or exc}") from None
    problems: list[Problem] = []
    if data.startswith(GZIP_MAGIC):
        data, cut = _gunzip(data, source)
        if cut:
            problems.append(Problem(Where(), "the compressed file ends early (a download cut short?): what it holds "
                                    "is read"))
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=not problems)
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{source} is not UTF-8 text ({exc.reason} at offset {exc.start})") from None
    recording = parse_recording(text, source)
    recording.problems[:0] = problems
    return recording


def _gunzip(data: bytes, source: str) -> tuple[bytes, bool]:
    """The bytes a gzip file holds (every member of it), and whether its stream ends before its end marker
    (a download cut short: what came before is kept). Bounded like a plain file: a small file that inflates
    past MAX_FILE_BYTES is refused, not inflated."""
    out = bytearray()
    rest = data
    while rest:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(rest, MAX_FILE_BYTES + 1 - len(out))
        except zlib.error as exc:
            if out:
                return bytes(out), True
            raise RecordingError(f"{source} is gzip-compressed but cannot be inflated ({exc})") from None
        if len(out) > MAX_FILE_BYTES or inflater.unconsumed_tail:
            raise RecordingError(f"{source} holds more than {MAX_FILE_BYTES >> 20} MiB of text; split it")
        if not inflater.eof:
            return bytes(out), True
        rest = inflater.unused_data if inflater.unused_data.startswith(GZIP_MAGIC) else b""
    return bytes(out), False


def read_auditable(path: Path) -> Recording:
    """`read_recording`, refusing a file of which no conversation could be read (an audit of it would judge
    nothing): RecordingError naming how many problems were found and the first."""
    recording = read_recording(path)
    if not recording.conversations:
        first = recording.problems[0].at(recording.source) if recording.problems else "none"
        raise RecordingError(f"{recording.source}: no conversation could be read ({len(recording.problems)} "
                             f"problem(s), the first: {first})")
    return recording


def parse_recording(text: str, source: str) -> Recording:
    if not text.strip():
        raise RecordingError(f"{source} is empty: no conversation to judge")
    document, problems = _document(text, source)
    if document is _LINES:
        return _from_lines(text, source)
    recording = _from_document(document, source)
    recording.problems[:0] = problems
    return recording


# -- one document or JSON lines ---------------------------------------------------------------------------


_LINES: Any = object()


def _document(text: str, source: str) -> tuple[Any, list[Problem]]:
    """The file as one JSON document (with a problem for each part that could not be read), or `_LINES` when it
    is JSON lines. A document Python's parser refuses whole is read part by part (`core.recorded.salvage`);
    RecordingError when not one part of it parses, naming the line and column."""
    try:
        return json.loads(text), []
    except RecursionError:
        salvaged = salvage(text)
        if salvaged is None:
            raise RecordingError(f"{source}: nested deeper than Python can read") from None
        return salvaged
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" or _has_json_line(text):
            return _LINES, []
        salvaged = salvage(text)
        if salvaged is None:
            raise RecordingError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") \
                from None
        return salvaged


def _has_json_line(text: str) -> bool:
    """Whether some line alone is a non-empty JSON object or array (so the file is JSON lines with broken
    lines, not one broken document: a pretty-printed document's lines do not parse on their own)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    for line in lines:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict | list) and value:
            return True
    return False


def _is_conversation(value: Any) -> bool:
    return isinstance(value, list) or (isinstance(value, Mapping)
                                       and any(isinstance(value.get(k), list) for k in CONVERSATION_KEYS))


def _not_a_conversation(value: Any, skipped: str = "skipped") -> str:
    """Why an item of a list of conversations is none (it is `skipped`): what it is instead."""
    if isinstance(value, Mapping):
        key = next((k for k in CONVERSATION_KEYS if k in value), None)
        if key is not None:
            return f"its '{key}' is {_kind(value[key])}, not a list of messages ({skipped})"
        return f"an object without 'messages' or 'traj', not a conversation ({skipped})"
    return f"{_kind(value)}, not a conversation: a list of messages, or an object with 'messages' or 'traj' ({skipped})"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", int: "a number", float: "a number", dict: "an object",
            list: "a list"}.get(type(value), type(value).__name__)


def _conversation_messages(value: Any) -> tuple[str, list[Any]]:
    """(the key the messages sit under, the messages) of a conversation list or object."""
    if isinstance(value, list):
        return "", value
    key = next(k for k in CONVERSATION_KEYS if isinstance(value.get(k), list))
    return f".{key}", value[key]


def _conversation(value: Any, where: Where, label: str) -> RecordedConversation:
    key, messages = _conversation_messages(value)
    conversation = read_messages(((where.child(f"{key}[{i}]"), m) for i, m in enumerate(messages)), label)
    if isinstance(value, Mapping):
        _benchmark_facts(conversation, value, value.get("reward"))
    return conversation


def _is_tau_bench(conversations: Iterable[Any]) -> bool:
    """A list of conversations as tau-bench and tau-Trait publish them: objects holding their messages under
    'traj' (beside task_id, trial, reward and info)."""
    return any(isinstance(c, Mapping) and isinstance(c.get("traj"), list) for c in conversations)


def _labelled(base: str, item: Any) -> str:
    """`base` with the task and trial a benchmark recorded beside the conversation: `[3] (task 14, trial 0)`."""
    if not isinstance(item, Mapping):
        return base
    task, trial = item.get("task_id"), item.get("trial")
    about = [f"task {task}"] if isinstance(task, str | int) and not isinstance(task, bool) else []
    if isinstance(trial, int) and not isinstance(trial, bool):
        about.append(f"trial {trial}")
    return printable(base + (f" ({', '.join(about)})" if about else ""))


def _benchmark_facts(conversation: RecordedConversation, item: Mapping[str, Any], reward: Any) -> None:
    """The task, trial and reward a benchmark recorded beside a conversation (tau2's simulation, an item of a
    tau-bench list). A reward that is no finite number (a NaN, a string) is left out, never guessed."""
    task, trial = item.get("task_id"), item.get("trial")
    conversation.task_id = str(task) if isinstance(task, str | int) and not isinstance(task, bool) else None
    conversation.trial = trial if isinstance(trial, int) and not isinstance(trial, bool) else None
    if isinstance(reward, int | float) and not isinstance(reward, bool) and math.isfinite(reward):
        conversation.reward = float(reward)


def _from_document(document: Any, source: str) -> Recording:
    if isinstance(document, Mapping):
        if all(k in document for k in ("info", "tasks", "simulations")):
            return _from_tau2(document, source)
        if _is_conversation(document):
            kind: Format = "tau-bench" if _is_tau_bench([document]) else "messages"
            return Recording(source, kind, [_conversation(document, Where(), "")])
        return _from_lines(json.dumps(document), source)  # a file of one JSON line, written over several lines
    if not isinstance(document, list) or not any(item is not SKIPPED for item in document):
        raise RecordingError(f"{source}: holds no conversation (expected a list of messages or conversations, a "
                             "tau2-bench results file, or JSON lines)")
    first = next((item for item in document if _is_conversation(item)
                  or (isinstance(item, Mapping) and "role" in item)), None)
    if isinstance(first, Mapping) and "role" in first:  # one conversation; a stray item is that message's problem
        return Recording(source, "messages", [_conversation(document, Where(), "")])
    if first is not None:
        problems = [Problem(Where(path=f"[{i}]"), _not_a_conversation(item))
                    for i, item in enumerate(document) if item is not SKIPPED and not _is_conversation(item)]
        conversations = [_conversation(item, Where(path=f"[{i}]"), _labelled(f"[{i}]", item))
                         for i, item in enumerate(document) if _is_conversation(item)]
        return Recording(source, "tau-bench" if _is_tau_bench(document) else "messages", conversations, problems)
    raise RecordingError(f"{source}: a list, but not of messages (objects with a 'role') nor of conversations "
                         "(lists of messages, or objects with 'messages' or 'traj')")


def _from_lines(text: str, source: str) -> Recording:
    lines = text.splitlines()
    parsed: list[tuple[int, Any]] = []
    problems: list[Problem] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("//"):
            continue
        try:
            parsed.append((number, strict_json.loads(raw)))
        except strict_json.StrictJSONError as exc:
            problems.append(Problem(Where(number), f"{exc.message} (line skipped)"))
    kind = next((found for _, value in parsed if (found := _line_format(value)) is not None), None)
    if kind is None:
        raise RecordingError(f"{source}: cannot tell what recording this is: no line is a trace event ('type'), a "
                             "check line ('name'), a chat message ('role') or a conversation")
    if kind == "trajectory":
        return _from_trajectory(lines, source)
    if kind == "trace":
        return _from_trace(parsed, problems, source)
    if kind == "message":
        conversation = read_messages((Where(n), value) for n, value in parsed)
        return Recording(source, "messages", [conversation], problems)
    conversations = []
    for number, value in parsed:
        if _is_conversation(value):
            conversations.append(_conversation(value, Where(number), _labelled(f"line {number}", value)))
        else:
            problems.append(Problem(Where(number), _not_a_conversation(value, "line skipped")))
    listed: Format = "tau-bench" if _is_tau_bench(value for _, value in parsed) else "messages"
    return Recording(source, listed, conversations, problems)


def _line_format(first: Any) -> str | None:
    """The format of JSON lines by their first line that has one (so one broken line at the head does not
    hide what the rest is). Any event makes a trace, not only a whole
    `session_started`: a trace cut at its head, or whose first line is torn, still records every call and
    result, and auditing what it holds beats refusing it (`core.trace.read_session_start` is the strict test,
    for what needs the session's own start: its replay, and `check` of the calls it recorded)."""
    if isinstance(first, Mapping):
        if first.get("type") in EVENT_TYPES:  # before "role": a trace's message events have one too
            return "trace"
        if "role" in first:
            return "message"
        if "name" in first:
            return "trajectory"
    return "conversations" if _is_conversation(first) else None


# -- our own formats ----------------------------------------------------------------------------------------


def _from_trajectory(lines: Sequence[str], source: str) -> Recording:
    """`ledgeragent check` lines: calls without results (the database gives them), one per turn."""
    conversation = RecordedConversation("")
    problems: list[Problem] = []
    for item in iter_trajectory(lines):
        if isinstance(item, TrajectoryProblem):
            problems.append(Problem(Where(item.line), f"{item.message} (line skipped)"))
            continue
        requestor = Requestor(item.requestor)
        call_id = f"call_{item.index}"
        call = RecordedCall(Where(item.line), ToolCall(call_id, item.name, dict(item.arguments), requestor=requestor),
                            None, call_id)
        conversation.turns.append(RecordedTurn(Where(item.line), _role(requestor), None, (call,)))
    return Recording(source, "trajectory", [conversation], problems, results_recorded=False)


def _role(requestor: Requestor) -> Literal["user", "assistant"]:
    return "user" if requestor is Requestor.USER else "assistant"


def _events(parsed: Iterable[tuple[int, Any]], problems: list[Problem]) -> Iterator[tuple[int, Event]]:
    for number, value in parsed:
        try:
            yield number, EVENT_ADAPTER.validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            problems.append(Problem(Where(number), f"{first.get('msg', 'invalid event')} at {first.get('loc', ())} "
                                    "(line skipped)"))


def _trace_outcome(event: ToolResultEvent) -> ResultOutcome:
    """What the trace says became of the call: a call that did not run keeps its own reason (refused by the
    gate, stopped by the operator, decided by nobody in time, invalid), never another's."""
    if not event.executed and event.outcome in NOT_RUN:
        return cast(ResultOutcome, event.outcome)
    return "ok" if event.ok else "error"


def _from_trace(parsed: Sequence[tuple[int, Any]], problems: list[Problem], source: str) -> Recording:
    """A session's trace: each call as it ran (an operator's edit included) with the result it returned; a call
    the gate or the operator stopped is recorded as not run, so it changes nothing here either."""
    conversation = RecordedConversation("")
    domain = model = None
    open_turn: list[RecordedCall] | None = None
    turn_at = Where()
    turn_text: str | None = None
    asked: list[tuple[str, Where]] = []  # calls a turn proposed that no tool result has answered yet

    def close() -> None:
        nonlocal open_turn
        if open_turn is not None:
            conversation.turns.append(RecordedTurn(turn_at, "assistant", turn_text, tuple(open_turn)))
        open_turn = None

    for number, event in _events(parsed, problems):
        where = Where(number)
        if isinstance(event, SessionStarted):
            domain, model = event.domain, event.model
        elif isinstance(event, SessionEnded):
            conversation.termination = event.reason
        elif isinstance(event, MessageSent):
            close()
            conversation.turns.append(RecordedTurn(where, event.role, event.text))
        elif isinstance(event, AssistantTurnEvent):
            close()
            open_turn, turn_at, turn_text = [], where, event.text
            asked.extend((c.id, where) for c in event.tool_calls)
        elif isinstance(event, ToolResultEvent):
            outcome = _trace_outcome(event)
            value = event.result if outcome == "ok" else None
            result = RecordedResult(where, event.content, value, outcome)
            call = RecordedCall(where, event.call.to_call(), result, event.call.id)
            answered = next((a for a in asked if a[0] == event.call.id), None)
            if answered is not None:
                asked.remove(answered)
            if event.call.requestor == "user" or open_turn is None:
                close()
                conversation.turns.append(RecordedTurn(where, _role(call.call.requestor), None, (call,)))
            else:
                open_turn.append(call)
    close()
    for call_id, where in asked:
        conversation.problems.append(Problem(where, f"call {call_id!r} has no tool result: the session ended before "
                                             "it was handled (not judged)"))
    return Recording(source, "trace", [conversation], problems, domain=domain, model=model)


# -- tau2-bench ------------------------------------------------------------------------------------------------


def _from_tau2(document: Mapping[str, Any], source: str) -> Recording:
    """A tau2 `Results` file: each simulation's messages are one conversation. Read: `info.environment_info.
    domain_name`, `info.agent_info.llm`, and per simulation `task_id`, `trial`, `termination_reason`, `messages`
    (see `core.recorded.messages` for the message fields)."""
    info = document.get("info")
    environment = info.get("environment_info") if isinstance(info, Mapping) else None
    domain = environment.get("domain_name") if isinstance(environment, Mapping) else None
    agent = info.get("agent_info") if isinstance(info, Mapping) else None
    model = agent.get("llm") if isinstance(agent, Mapping) else None
    simulations = document.get("simulations")
    if not isinstance(simulations, list):
        raise RecordingError(f"{source}: a tau2 results file whose 'simulations' is not a list")
    conversations: list[RecordedConversation] = []
    problems: list[Problem] = []
    for i, simulation in enumerate(simulations):
        where = Where(path=f"simulations[{i}]")
        if simulation is SKIPPED:
            continue
        if not isinstance(simulation, Mapping):
            problems.append(Problem(where, "a simulation must be a JSON object (skipped)"))
            continue
        messages = simulation.get("messages")
        label = _labelled(f"simulations[{i}]", simulation)
        if not isinstance(messages, list):
            problems.append(Problem(where, "no 'messages' list (a full-duplex run keeps ticks instead; skipped)"))
            continue
        reader = ConversationReader(label)
        for j, message in enumerate(messages):
            reader.add(where.child(f".messages[{j}]"), message)
        conversation = reader.finish()
        termination = simulation.get("termination_reason")
        conversation.termination = termination if isinstance(termination, str) else None
        reward_info = simulation.get("reward_info")
        _benchmark_facts(conversation, simulation,
                         reward_info.get("reward") if isinstance(reward_info, Mapping) else None)
        conversations.append(conversation)
    return Recording(source, "tau2", conversations, problems, domain=domain if isinstance(domain, str) else None,
                     model=model if isinstance(model, str) else None)
