"""The offline default agent: a deterministic `ChatModel` that follows a plan while the world agrees, and acts
from what it has observed when it does not.

Why. The console's offline demo used to replay a scenario's agent steps and stop with "scenario diverged" as
soon as anything differed: any operator override (veto, edit, force-allow) ended the session in an error, and
a human typing in the customer seat was ignored. This agent keeps the scenario's steps as its *plan* (so the
default run is exactly the scripted demo, byte for byte) but reads every tool result it gets back and reacts:

- A step's `expect_tool_results_contain` is a branch condition, not an assertion: when it holds the plan goes
  on; when it does not, or a result carries an operator's mark (a veto, an edit), the agent has *deviated*.
- Deviation, by what really came back from the write it proposed:
  * vetoed by a supervisor: it tells the customer the action was not done, why, that nothing changed, and asks
    how to go on; the plan resumes after its own answer to that write (the plan's next `say`), so an
    accepting customer gets the plan's corrected call;
  * REVISE from the gate naming reads (`name(key=value)`): it makes those reads and proposes the same call
    again, with an operator's edited arguments if there were any (at most MAX_RETRIES times); when that runs
    unedited the plan goes on;
  * BLOCK, a REVISE it cannot act on, a tool error: it tells the customer plainly, in the gate's or the tool's
    own reasons, and asks how to go on (the plan resumes as after a veto);
  * the write ran although the plan expected a refusal (a force-allow), or ran with arguments a supervisor
    edited: it reads the record back (the domain's `verify` reads) and tells the customer what the tools now
    show. The rest of the plan assumed a different world, so it is dropped; from then on the agent answers
    from observation only.
- The customer's words. While every customer message is the scenario's own line (as written, or one of its
  variants: the scripted customer answering what really happened, see core/scenario.py), the plan stands. As soon as
  one differs (a human typed in the customer seat), the plan is dropped and each message is read by the
  domain's `CustomerReader`: the ids, emails, order / reservation numbers, names and zip codes it recognises
  become reads (and the reads those results call for); a request the reader recognises ("cancel it") becomes
  a proposed write, confirmed with the customer first and then gated like any call. Text it cannot use gets
  a plain "I did not understand" with what it can work with.

Everything is a pure function of the messages it is given, the plan and the reader: same input, same turns.
Call ids are `call_<turn>_<n>`; token usage is estimated exactly as `ScriptedChatModel` does, so a default
run's trace is the scripted demo's trace.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from core.gate import GATE_READ_NOTES
from core.llm.base import AssistantTurn, Message, Usage, estimate_tokens
from core.llm.scripted import ScriptedStep
from core.tools import ToolCall

VETO_MARK = "NOT EXECUTED: a human supervisor vetoed"
EDIT_MARK = "NOTE: a human supervisor changed the arguments to "
REFUSED_PREFIXES = ("REVISE", "BLOCK", "Error", "NOT EXECUTED", "NOT executed")
MAX_RETRIES = 2


@dataclass(frozen=True)
class Proposal:
    """A call the agent means to make: a tool name and its arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None  # sent verbatim when set (a scenario step scripting malformed JSON)


@dataclass(frozen=True)
class Observation:
    """One read that succeeded: what was called and what it returned (parsed JSON when the result is JSON)."""

    name: str
    arguments: Mapping[str, Any]
    result: Any


@dataclass(frozen=True)
class Question:
    """A request the reader cannot pin down ("return the tablet" when the order holds two): the agent asks
    `text` and reads the customer's answer with the request it answers (`CustomerReader.request(..., earlier=)`),
    instead of guessing more than was named."""

    text: str


@dataclass(frozen=True)
class Reads:
    """A request that needs records nobody has read yet (a product's variants, for an exchange): the agent
    makes these reads and then reads the same request again."""

    proposals: tuple[Proposal, ...]


Request = Proposal | Question | Reads | None


class CustomerReader(Protocol):
    """Per domain (domains/<d>/offline.py `READER`): what customers' words name, and how to talk about records.

    Everything here is deterministic text and data handling; nothing calls a backend.
    """

    writes: frozenset[str]  # the domain's write tools (the agent checks what came back from each)
    hint: str  # what the agent can work with, said when it did not understand a message

    def reads_for(self, text: str, observed: Sequence[Observation]) -> list[Proposal]:
        """The reads a customer's message asks for: ids, emails, names with zip codes, ... it recognises."""
        ...

    def follow_up(self, seen: Observation, observed: Sequence[Observation]) -> list[Proposal]:
        """The reads a careful agent makes after this one (a found user id -> that user's details)."""
        ...

    def describe(self, seen: Observation) -> str | None:
        """One plain sentence about what a read showed, for the customer; None to say nothing."""
        ...

    def request(self, text: str, observed: Sequence[Observation], earlier: str = "") -> Request:
        """The write a customer's message asks for, built from observed records only and touching only what
        the customer named; a `Question` when several records fit, `Reads` when records are missing, None if
        the message asks for no write. `earlier`: the request a `Question` asked about, when `text` answers it."""
        ...

    def action(self, proposal: Proposal, observed: Sequence[Observation] = ()) -> str:
        """A write in words, as the agent says it: "cancel order #W4821002"; `observed` lets it name what the
        ids stand for ("return the Tablet (black, 64GB, $549.99) from order #W4821001")."""
        ...

    def verify(self, proposal: Proposal) -> list[Proposal]:
        """The reads that show what a write changed (observe, don't assume)."""
        ...


class BaseReader:
    """Defaults for a domain's `CustomerReader`, and the text patterns every domain shares (emails, names,
    dates, zip codes). A domain subclasses it and fills in what its tools need."""

    writes: frozenset[str] = frozenset()
    hint = "I can look things up from the ids and details you give me."

    def reads_for(self, text: str, observed: Sequence[Observation]) -> list[Proposal]:
        return []

    def follow_up(self, seen: Observation, observed: Sequence[Observation]) -> list[Proposal]:
        return []

    def describe(self, seen: Observation) -> str | None:
        return None

    def request(self, text: str, observed: Sequence[Observation], earlier: str = "") -> Request:
        return None

    def action(self, proposal: Proposal, observed: Sequence[Observation] = ()) -> str:
        arguments = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in proposal.arguments.items())
        return f"run {proposal.name}({arguments})"

    def verify(self, proposal: Proposal) -> list[Proposal]:
        return []


EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
ZIP = re.compile(r"(?<![\d-])\d{5}(?![\d-])")
PERSON_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{4}\b")  # jane_doe_1234: retail / airline users, telehealth patients
_INTRO = re.compile(r"(?:I'm|I am|my name is|this is|name is|it's|[Nn]ame:)\s+([A-Z][a-z'-]+)\s+([A-Z][a-z'-]+)")
_CAPITALISED_PAIR = re.compile(r"\b([A-Z][a-z'-]+)\s+([A-Z][a-z'-]+)\b")
_NOT_NAMES = frozenset({"hi", "hello", "hey", "dear", "please", "thanks", "thank", "yes", "no", "my", "the", "i",
                        "this", "it", "i'm", "it's", "i'd", "i'll", "good", "dr", "doctor", "mr", "mrs", "ms",
                        "order", "reservation"})
_MONTHS = {m: n for n, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY_YEAR = re.compile(r"\b([A-Za-z]+)\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]+),?\s+(\d{4})\b")


def find_emails(text: str) -> list[str]:
    return list(dict.fromkeys(m.lower() for m in EMAIL.findall(text)))


def find_names(text: str) -> list[tuple[str, str]]:
    """First and last names a customer introduces themselves with ("I'm Mia Garcia"), else capitalised word
    pairs that are not greetings or titles, in order."""
    found = [(a, b) for a, b in _INTRO.findall(text)]
    found += [(a, b) for a, b in _CAPITALISED_PAIR.findall(EMAIL.sub(" ", text))
              if a.lower() not in _NOT_NAMES and b.lower() not in _NOT_NAMES and b.lower() not in _MONTHS]
    return list(dict.fromkeys(found))


def find_dates(text: str) -> list[str]:
    """Dates written as 2025-05-29, May 29, 2025 or 29 May 2025, as ISO dates, in order."""
    found: list[tuple[int, str]] = [(m.start(), f"{m[1]}-{m[2]}-{m[3]}") for m in _ISO_DATE.finditer(text)]
    for m in _MONTH_DAY_YEAR.finditer(text):
        if m[1].lower() in _MONTHS:
            found.append((m.start(), f"{m[3]}-{_MONTHS[m[1].lower()]:02d}-{int(m[2]):02d}"))
    for m in _DAY_MONTH_YEAR.finditer(text):
        if m[2].lower() in _MONTHS:
            found.append((m.start(), f"{m[3]}-{_MONTHS[m[2].lower()]:02d}-{int(m[1]):02d}"))
    return list(dict.fromkeys(d for _, d in sorted(found)))


def latest(observed: Sequence[Observation], *names: str) -> Observation | None:
    """The most recent successful read by one of these tools."""
    return next((o for o in reversed(observed) if o.name in names), None)


def named_record(ids: Sequence[str], observed: Sequence[Observation], tool: str, key: str,
                 ) -> Observation | Sequence[Observation] | None:
    """The record a request is about: the one whose id the customer named, if it was read; several named ids
    give every one of them (the caller asks which); none named gives the record read last ("cancel it")."""
    found: dict[str, Observation] = {}
    for seen in observed:
        if seen.name == tool and isinstance(seen.result, dict) and str(seen.result.get(key)) in ids:
            found[str(seen.result[key])] = seen  # the latest read of each
    named = [found[i] for i in dict.fromkeys(ids) if i in found]
    if len(named) > 1:
        return named
    return named[0] if named else latest(observed, tool)


def record_to_change(ids: Sequence[str], observed: Sequence[Observation], tool: str, key: str, noun: str,
                     ) -> Observation | Question | None:
    """`named_record` for a write on one record: a question when the customer named several."""
    found = named_record(ids, observed, tool, key)
    if found is None or isinstance(found, Observation):
        return found
    return Question(f"Which {noun} do you mean: {one_of([str(o.result[key]) for o in found])}?")


def one_of(words: Sequence[str]) -> str:
    """`a`, `a or b`, `a, b or c`: choices as said in a question."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


# -- which items a customer named ------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """Something a customer may name in a request: by its id, its name ("tablet"), its options ("black")."""

    id: str
    name: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class ItemMatch:
    """The items a text names, as indexes into the items it was matched against.

    `ambiguous`: several fit where the customer said one ("the tablet" with two tablets, "the black one"
    with a black tablet and a black shirt), so the agent must ask; `named`: the text named anything at all."""

    chosen: tuple[int, ...]
    ambiguous: bool
    named: bool


_WORD = re.compile(r"[a-z0-9%]+(?:['-][a-z0-9%]+)*")
_EVERY = re.compile(r" (?:both|all|every|everything|each|entire|whole) ")
_NUMBER_UNIT = re.compile(r"(\d)[\s-]+(?=[a-z])")  # "64 GB", "4-cup": written as the options are ("64GB")
_VAGUE_VALUES = frozenset({"yes", "no", "none", "true", "false", "one"})  # option values that are everyday words


def spoken(text: str) -> str:
    """Lower-case words separated and surrounded by single spaces, numbers joined to their units."""
    return " " + " ".join(_WORD.findall(_NUMBER_UNIT.sub(r"\1", text.lower()))) + " "


def mentions(words: str, phrase: str) -> bool:
    """`phrase` (a name or an option value) is said in `words` (from `spoken`), singular or plural."""
    said = spoken(phrase).strip()
    forms = (said, f"{said}s", f"{said}es", said[:-1] if said.endswith("s") else said)  # "4 cups" / "4-cup"
    return bool(said) and any(f" {form} " in words for form in forms)


def match_items(text: str, items: Sequence[Item], within: Sequence[int] | None = None) -> ItemMatch:
    """The items of `items` (restricted to the indexes `within`) that `text` names.

    An item id said names that item. Otherwise names narrow the items to those products, and option values to
    the variants with the most of them said; "both" / "all" / "everything" takes every item that fits. With
    nothing named, a single item is the one meant ("return it") and several are ambiguous."""
    words = spoken(text)
    pool = list(range(len(items))) if within is None else list(within)
    by_id = [i for i in pool if f" {items[i].id.lower()} " in words]
    if by_id:
        return ItemMatch(tuple(by_id), False, True)
    every = _EVERY.search(words) is not None
    names = [n for n in dict.fromkeys(items[i].name for i in pool) if mentions(words, n)]
    groups: dict[str, list[int]] = {}
    for i in pool:
        if not names or items[i].name in names:
            groups.setdefault(items[i].name, []).append(i)
    chosen: list[int] = []
    several = False
    for group in groups.values():
        said = {i: sum(mentions(words, v) for v in items[i].options if v.lower() not in _VAGUE_VALUES)
                for i in group}
        best = max(said.values())
        if not best and not names:
            continue  # nothing of this product was said
        keep = [i for i in group if said[i] == best]
        several = several or len(keep) > 1
        chosen += keep
    if not chosen:
        return ItemMatch(tuple(pool), ambiguous=len(pool) > 1 and not every, named=False)
    several = several or (not names and len(chosen) > 1)
    return ItemMatch(tuple(sorted(chosen)), ambiguous=several and not every, named=True)


# -- reading the conversation ------------------------------------------------------------------------------


def _parse(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return content


def _strip_edit_note(content: str) -> tuple[str, Mapping[str, Any] | None]:
    """A result the agent loop prefixed with a supervisor's edit: the plain result and the edited arguments."""
    if not content.startswith(EDIT_MARK):
        return content, None
    head, _, rest = content.partition("\n")
    arguments_text = head[len(EDIT_MARK):].rsplit(" before this call was handled.", 1)[0]
    try:
        edited = json.loads(arguments_text)
    except ValueError:
        edited = None
    return rest, edited if isinstance(edited, dict) else None


def _strip_gate_notes(content: str) -> str:
    """A write's result without the lines that tell the model which reads the gate made itself: those are the
    agent's to know, never the customer's to read (and a refusal after them is still a refusal)."""
    while content.startswith(_GATE_NOTES):
        content = content.partition("\n")[2]
    return content


_GATE_NOTES = tuple(GATE_READ_NOTES.values())


def _refused(content: str) -> bool:
    return content.startswith(REFUSED_PREFIXES)


def _reasons(feedback: str) -> str:
    """The gate's reasons in plain words: each failed rule's reason, without rule ids or evidence lists."""
    reasons: list[str] = []
    for line in feedback.splitlines():
        if not line.startswith("- rule"):
            continue
        text = line.split("): ", 1)[1] if "): " in line else line.split(": ", 1)[-1]
        text = plain(text.split(" [state read:", 1)[0].strip())
        if text and text not in reasons:
            reasons.append(text.rstrip("."))
    return "; ".join(reasons)


# -- a gate reason as the customer reads it -----------------------------------------------------------------
# A predicate's reason is written for the operator and the model: it cites ledger paths, Python values and exact
# spans, and the gate pane shows it so. The customer gets the same facts in words: no paths, no list reprs,
# durations and times as people say them. Pure text handling, so the same reason always reads the same.

_PATH = re.compile(r"(?<![\w@./:#-])[a-z_]+(?:\.#?[\w-]+|\[\d+\])+(?![\w@#-])")
_INNER_PARENTHESES = re.compile(r"\s*\(([^()]*)\)")
_SPAN = re.compile(r"\b(?:(\d+) days )?(\d+) h (\d+) min (\d+) s\b")
_AT_TIME = re.compile(r"\bat (\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2})?\b")
_TIME = re.compile(r"\b(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2})?\b")
_STRING = r"'[^'\\\n]*'"
_SCALAR = rf"(?:{_STRING}|-?\d+(?:\.\d+)?|True|False|None)"
_LIST = re.compile(rf"\[\s*(?:{_SCALAR}\s*(?:,\s*{_SCALAR}\s*)*)?\]")
_DICT = re.compile(rf"\{{\s*(?:{_STRING}\s*:\s*{_SCALAR}\s*(?:,\s*{_STRING}\s*:\s*{_SCALAR}\s*)*)?\}}")
_QUOTED = re.compile(r"(?<![\w'])'([^'\n]+?)'(?![\w'])")


def _is_path(text: str) -> bool:
    """A ledger path (`orders.#W1.status`, `user.payment_methods`), not an abbreviation ("e.g") or a number."""
    return "_" in text or "#" in text or "[" in text or text.count(".") >= 2


def _paths_in(text: str) -> bool:
    return any(_is_path(m[0]) for m in _PATH.finditer(text))


def _span_words(match: re.Match[str]) -> str:
    parts = [(int(n), unit) for n, unit in zip((match[1] or "0", match[2], match[3], match[4]),
                                               ("day", "hour", "minute", "second"), strict=True) if int(n)]
    words = [f"{n} {unit}{'' if n == 1 else 's'}" for n, unit in parts] or ["0 seconds"]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _value(literal: str) -> str:
    return literal[1:-1] if literal.startswith("'") else literal


def _list_words(match: re.Match[str]) -> str:
    values = [_value(v) for v in re.findall(_SCALAR, match[0])]
    text = match.string
    alternatives = match.start() > 0 and text[match.start() - 1] == "(" and text[match.end():match.end() + 1] == ")"
    if not values:
        return "none"
    if len(values) == 1:
        return values[0]
    return f"{', '.join(values[:-1])} {'or' if alternatives else 'and'} {values[-1]}"


def _dict_words(match: re.Match[str]) -> str:
    pairs = re.findall(rf"({_STRING})\s*:\s*({_SCALAR})", match[0])
    words = ", ".join(f"{_value(k)}: {_value(v)}" for k, v in pairs)
    text = match.string
    inside = match.start() > 0 and text[match.start() - 1] == "(" and text[match.end():match.end() + 1] == ")"
    return words if inside else f"({words})"


def _quoted_words(match: re.Match[str]) -> str:
    value = match[1]
    return value if any(c.isdigit() or c in "_#" for c in value) else f'"{value}"'


def plain(reason: str) -> str:
    """A gate reason in the customer's words: parentheses citing ledger paths dropped, other paths said as words,
    times and exact spans as people say them ("5 days, 5 hours and 48 minutes"), Python lists and dicts as
    lists, quoted ids bare. The facts stay; only the machine notation goes."""
    text = reason
    while True:
        shorter = _INNER_PARENTHESES.sub(lambda m: "" if _paths_in(m[1]) else m[0], text)
        if shorter == text:
            break
        text = shorter
    text = _PATH.sub(lambda m: m[0].replace("_", " ").replace(".", " ") if _is_path(m[0]) else m[0], text)
    text = _SPAN.sub(_span_words, text)
    text = _TIME.sub(r"\1 at \2", _AT_TIME.sub(r"on \1 at \2", text))
    text = _DICT.sub(_dict_words, text)
    text = _LIST.sub(_list_words, text)
    text = _QUOTED.sub(_quoted_words, text)
    return re.sub(r"\s+([,;.])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


@dataclass(frozen=True)
class _Result:
    """What came back for one call the agent proposed."""

    call: ToolCall
    content: str  # without any edit note or gate-read note
    edited: Mapping[str, Any] | None

    @property
    def vetoed(self) -> bool:
        return self.content.startswith(VETO_MARK)

    @property
    def refused(self) -> bool:
        return _refused(self.content)


def _results(messages: Sequence[Message]) -> list[_Result]:
    """The results of the calls of the last assistant message, in call order."""
    tail: list[Message] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        tail.append(message)
    tail.reverse()
    if not tail:
        return []
    index = len(messages) - len(tail) - 1
    calls: dict[str, ToolCall] = {}
    if index >= 0:
        for raw in messages[index].get("tool_calls") or ():
            function = raw.get("function", {})
            call = ToolCall.from_json_text(str(raw.get("id", "")), str(function.get("name", "")),
                                           function.get("arguments"))
            calls[call.id] = call
    found: list[_Result] = []
    for message in tail:
        call_id = str(message.get("tool_call_id", ""))
        content, edited = _strip_edit_note(str(message.get("content", "")))
        found.append(_Result(calls.get(call_id, ToolCall(call_id, "")), _strip_gate_notes(content), edited))
    return found


def _customer_lines(messages: Sequence[Message]) -> list[str]:
    return [str(m.get("content") or "") for m in messages if m.get("role") == "user"]


_YES = re.compile(r"^\s*(?:yes|yeah|yep|sure|ok|okay|please do|please go ahead|go ahead|do it|confirm(?:ed)?)\b",
                  re.IGNORECASE)
_NO = re.compile(r"^\s*(?:no|nope|don't|do not|stop|cancel that)\b", re.IGNORECASE)


def _same_line(said: str, scripted: str) -> bool:
    """A customer message the plan was written for: the script's line, or a plain yes where the script says yes
    (a human in the customer seat typing "yes" instead of "Yes, please go ahead." is still on the plan)."""
    return said == scripted or (_YES.search(said) is not None and _YES.search(scripted) is not None
                                and _NO.search(said) is None and len(said.split()) <= 4)


# -- the agent -------------------------------------------------------------------------------------------

Mode = Literal["plan", "free"]
Turn = tuple[str | None, list[Proposal]]


@dataclass(frozen=True)
class _Pending:
    """A write the agent proposed on its own (a retry, a confirmed request) and has not heard back about."""

    proposal: Proposal
    retries: int = 0
    planned: bool = True  # a retry of a plan write: when it runs, the plan goes on
    edited: bool = False  # its arguments are a supervisor's edit of the agent's call


def _key(proposal: Proposal | Observation) -> str:
    return f"{proposal.name}:{json.dumps(dict(proposal.arguments), sort_keys=True, ensure_ascii=False)}"


class OfflineAgent:
    """See the module docstring. `plan`: the scenario's agent steps; `script`: the customer's scripted lines, each
    a text or the texts it may be said with (a scenario line and its variants: a scripted customer answering what
    really happened is still the script's customer); None: nothing to compare with, the plan is followed
    whatever the customer says; `reader`: the domain's
    `CustomerReader` (None: plan and generic reactions only, and typed text is never understood)."""

    def __init__(self, plan: Sequence[ScriptedStep], *, script: Sequence[str | Sequence[str]] | None = None,
                 reader: CustomerReader | None = None, name: str = "scripted-demo") -> None:
        self.plan = list(plan)
        # per customer line, the texts the plan was written for: the line, or the line and its variants
        self.script = None if script is None else [(line,) if isinstance(line, str) else tuple(line)
                                                   for line in script]
        self.reader = reader
        self.name = name
        self.position = 0  # the next plan step
        self.mode: Mode = "plan" if self.plan else "free"
        self.turns = 0
        self._tools: set[str] = set()
        self._queue: deque[Proposal] = deque()  # reads to make before speaking again, one per turn
        self._retry: _Pending | None = None  # a write to propose again once the queued reads are done
        self._pending: _Pending | None = None  # the write proposed last turn by the agent itself
        self._confirm: Proposal | None = None  # a write the agent asked the customer to confirm
        self._earlier = ""  # the request a question of the agent's is about: the next message answers it
        self._requested = ""  # the customer's words behind the write confirmed last (a refusal's "how to go on?")
        self._asked: str | None = None  # the customer message whose reads are being made
        self._notes: list[str] = []  # writes that did not happen, for the next message (which then asks how to go on)
        self._done: list[str] = []  # writes that did happen, for the next message
        self._found: list[str] = []  # what reads showed, for the next message
        self._observed: list[Observation] = []
        self._heard = 0  # customer messages already answered

    # ---------------------------------------------------------------------------------------------- api

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        self.turns += 1
        self._tools = {str(t.get("function", {}).get("name", "")) for t in tools}
        results = _results(messages)
        self._absorb(results)
        said = _customer_lines(messages)
        if self.mode == "plan" and self.script is not None and not self._on_script(said):
            self._drop_plan()  # the customer is not the script's customer: listen to what they say
        turn = self._plan_turn(results) if self.mode == "plan" else None
        if turn is not None:
            self._heard = len(said)
        else:
            turn = self._free_turn(said, results)
        return self._emit(turn, messages, tools)

    # ------------------------------------------------------------------------------------------ helpers

    def _emit(self, turn: Turn, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        say, calls = turn
        tool_calls = tuple(ToolCall.from_json_text(f"call_{self.turns}_{n + 1}", p.name,
                                                   p.raw_arguments if p.raw_arguments is not None
                                                   else json.dumps(dict(p.arguments), sort_keys=True))
                           for n, p in enumerate(calls))
        prompt_text = json.dumps(list(messages), sort_keys=True, default=str) + json.dumps(list(tools))
        completion_text = (say or "") + "".join(c.arguments_json() + c.name for c in tool_calls)
        usage = Usage(estimate_tokens(prompt_text), estimate_tokens(completion_text), estimated=True)
        return AssistantTurn(text=say, tool_calls=tool_calls, usage=usage, model=self.name,
                             finish_reason="tool_calls" if tool_calls else "stop")

    def _on_script(self, said: Sequence[str]) -> bool:
        """Every customer message so far is the script's line at its place, said as written or as a variant."""
        assert self.script is not None
        return len(said) <= len(self.script) and all(
            any(_same_line(line, text) for text in texts) for line, texts in zip(said, self.script[:len(said)],
                                                                                  strict=True))

    def _is_write(self, name: str) -> bool:
        return self.reader is not None and name in self.reader.writes

    def _absorb(self, results: Sequence[_Result]) -> None:
        """Keep every successful read's result: the free mode answers from these."""
        for result in results:
            if result.refused or not result.call.name or self._is_write(result.call.name):
                continue
            self._observed.append(Observation(result.call.name, dict(result.call.arguments), _parse(result.content)))

    def _drop_plan(self) -> None:
        self.mode = "free"
        self.position = len(self.plan)

    def _action(self, proposal: Proposal) -> str:
        return self.reader.action(proposal, self._observed) if self.reader is not None else f"run {proposal.name}"

    def _speak(self, closing: str | None = None) -> Turn:
        """A message to the customer: what did not happen, what did, what the reads showed, then `closing`
        (default: ask how to go on after a refusal, else offer more help)."""
        if closing is None:
            closing = "How would you like to go on?" if self._notes else "Is there anything else I can help with?"
        text = " ".join([*self._notes, *self._done, *self._found, closing])
        self._notes.clear()
        self._done.clear()
        self._found.clear()
        return text, []

    def _next_queued(self) -> Turn:
        """One queued read per turn (its result may call for more), then the retry, then a message."""
        if self._queue:
            return None, [self._queue.popleft()]
        if self._retry is not None:
            self._pending, self._retry = self._retry, None
            return None, [self._pending.proposal]
        return self._speak()

    def _suggested(self, feedback: str) -> list[Proposal]:
        """The reads a REVISE names (`get_order_details(order_id="#W1")`), never a write."""
        # Imported here: `core.evaluation` loads the whole harness, which the console does not need to start.
        from core.evaluation.offline import suggested_calls

        return [Proposal(p.name, dict(p.arguments)) for p in suggested_calls(feedback, self._tools)
                if not self._is_write(p.name)]

    # --------------------------------------------------------------------------------------------- plan

    def _plan_turn(self, results: Sequence[_Result]) -> Turn | None:
        """The plan's next step, or a reaction when what came back is not what the plan expected.
        None hands over to the free mode (the plan is finished or dropped)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return self._react(pending, results)
        if self._queue or self._retry is not None:
            return self._next_queued()
        if self.position >= len(self.plan):
            self.mode = "free"
            return None
        step = self.plan[self.position]
        observed = "\n".join(r.content for r in results)
        holds = all(needle in observed for needle in step.expect_tool_results_contain)
        overridden = [r for r in results if r.vetoed or r.edited is not None]
        unexpected = [r for r in results if r.refused] if not step.expect_tool_results_contain else []
        if results and (not holds or overridden or unexpected):
            ran = [r for r in results if self._is_write(r.call.name) and not r.refused]
            return self._deviate((overridden or unexpected or ran or list(results))[0])
        self.position += 1
        return step.say, [Proposal(c.name, dict(c.arguments), c.raw_arguments) for c in step.calls]

    def _deviate(self, result: _Result) -> Turn | None:
        """What came back is not what the plan expected: react to what really came back."""
        return self._react(_Pending(Proposal(result.call.name, dict(result.call.arguments))), [result])

    def _skip_plan_answer(self) -> None:
        """The agent has answered the customer itself: skip the plan's own answer (through its next `say`)."""
        while self.position < len(self.plan):
            step = self.plan[self.position]
            self.position += 1
            if step.say is not None:
                break

    # ---------------------------------------------------------------------------------------- reactions

    def _react(self, pending: _Pending, results: Sequence[_Result]) -> Turn | None:
        """What a proposed write really did: retry after the reads a REVISE names, tell the customer about a
        refusal, or (it ran) read back what it changed and say so."""
        result = next((r for r in results if r.call.name == pending.proposal.name), None)
        if result is None:  # nothing came back for it (cannot happen with the agent loop); carry on
            return self._plan_turn(results) if self.mode == "plan" else None
        proposal = Proposal(pending.proposal.name,
                            dict(result.edited if result.edited is not None else pending.proposal.arguments))
        if (result.content.startswith("REVISE") and pending.retries < MAX_RETRIES
                and (reads := self._suggested(result.content))):
            self._queue.extend(reads)
            self._retry = _Pending(proposal, pending.retries + 1, pending.planned,
                                   pending.edited or result.edited is not None)
            return self._next_queued()
        if result.refused:
            self._notes.append(self._refusal(proposal, result))
            if self.mode == "plan":
                self._skip_plan_answer()
            elif not pending.planned:  # the answer may amend the customer's own request ("to the gift card then")
                self._earlier = self._requested
            return self._speak("How would you like to go on?")
        edited = pending.edited or result.edited is not None
        if self.mode == "plan" and pending.retries > 0 and not edited and pending.planned:
            return self._plan_turn(results)  # the retried plan write went through: the plan goes on
        # It ran, and the rest of the plan (if any) assumed another outcome: answer from observation from now on.
        self._drop_plan()
        if self.reader is not None and not self._is_write(result.call.name):
            return self._speak("Is there anything else I can help with?")
        self._done.append(self._ran(proposal, result, edited))
        if self.reader is not None:
            self._queue.extend(self.reader.verify(proposal))
        return self._next_queued()

    def _refusal(self, proposal: Proposal, result: _Result) -> str:
        action = self._action(proposal)
        content = result.content
        if result.vetoed:
            reason = content.split(":", 2)[2].strip() if content.count(":") >= 2 else ""
            why = f" ({reason})" if reason and reason != "no reason given" else ""
            return f"I have not gone ahead to {action}: a supervisor stopped it{why}. Nothing was changed."
        edited = " with the changes a supervisor made" if result.edited is not None else ""
        reasons = _reasons(content)
        if content.startswith("BLOCK"):
            because = f" {reasons[0].upper()}{reasons[1:]}." if reasons else ""
            return f"I'm sorry, I can't {action}{edited}: our policy does not allow it.{because} Nothing was changed."
        if content.startswith("REVISE"):
            return f"I could not {action}{edited}: {reasons or 'it conflicts with our policy'}. Nothing was changed."
        first = content.splitlines()[0].removeprefix("Error: ").rstrip(".") if content else "it was refused"
        return f"I could not {action}{edited}: {first}. Nothing was changed."

    def _ran(self, proposal: Proposal, result: _Result, edited_by_supervisor: bool) -> str:
        edited = "a supervisor changed my request, and " if edited_by_supervisor else ""
        answer = "" if isinstance(_parse(result.content), dict | list) else f" The system answered: {result.content}."
        return f"Done: {edited}I went ahead to {self._action(proposal)}.{answer}"

    # --------------------------------------------------------------------------------------------- free

    def _free_turn(self, said: Sequence[str], results: Sequence[_Result]) -> Turn:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            reaction = self._react(pending, results)
            if reaction is not None:
                return reaction
        if self.reader is not None:
            done = {_key(o) for o in self._observed}
            for result in results:
                if result.refused or not result.call.name or self._is_write(result.call.name):
                    continue
                seen = Observation(result.call.name, dict(result.call.arguments), _parse(result.content))
                words = self.reader.describe(seen)
                if words and words not in self._found:
                    self._found.append(words)
                for more in self.reader.follow_up(seen, self._observed):
                    if _key(more) not in done | {_key(q) for q in self._queue}:
                        self._queue.append(more)
        if self._queue or self._retry is not None:
            return self._next_queued()
        if len(said) > self._heard:
            self._heard = len(said)
            return self._understand(said[-1])
        return self._closing()

    def _closing(self) -> Turn:
        """After a round of reads: propose the write the customer asked for, or say what was found."""
        asked, self._asked = self._asked, None
        if self.reader is not None and asked is not None:
            turn = self._answer_request(asked)
            return turn if turn is not None else self._speak("What would you like me to do?")
        return self._speak()

    def _answer_request(self, text: str) -> Turn | None:
        """The reader's answer to a request: confirm the write it names, ask its question (and read the next
        message as the answer), or make the reads it needs and read the request again. None: no request."""
        assert self.reader is not None
        earlier, self._earlier = self._earlier, ""
        request = self.reader.request(text, self._observed, earlier=earlier)
        if isinstance(request, Proposal):
            self._confirm = request
            self._requested = f"{earlier} {text}".strip()
            return self._speak(f"To confirm: shall I {self._action(request)}?")
        if isinstance(request, Question):
            self._earlier = f"{earlier} {text}".strip()
            return self._speak(request.text)
        if isinstance(request, Reads):
            done = {_key(o) for o in self._observed} | {_key(q) for q in self._queue}
            reads = [p for p in request.proposals if _key(p) not in done and not self._is_write(p.name)]
            if reads:  # each round reads something new, so this ends
                self._queue.extend(reads)
                self._asked, self._earlier = text, earlier
                return self._next_queued()
        return None

    def _understand(self, text: str) -> Turn:
        """A customer message in free mode: an answer to a confirmation, else what the domain reader finds."""
        confirm, self._confirm = self._confirm, None
        if confirm is not None and _YES.search(text):
            self._earlier = ""
            self._pending = _Pending(confirm, planned=False)
            return None, [confirm]
        if confirm is not None and _NO.search(text):
            self._earlier = ""
            return self._speak(f"All right, I won't {self._action(confirm)}. Is there anything else I can help with?")
        if self.reader is None:
            return self._speak("I'm sorry, I did not understand that: offline, I can only follow this demo's script.")
        done = {_key(o) for o in self._observed}
        reads = [p for p in self.reader.reads_for(text, self._observed) if _key(p) not in done]
        self._asked = text
        if reads:
            self._queue.extend({_key(p): p for p in reads}.values())
            return self._next_queued()
        return self._closing_without_reads(text)

    def _closing_without_reads(self, text: str) -> Turn:
        assert self.reader is not None
        self._asked = None
        turn = self._answer_request(text)
        if turn is not None:
            return turn
        if _THANKS.search(text):
            return self._speak("You're welcome. Is there anything else I can help with?")
        return self._speak(f"I'm sorry, I did not understand that. {self.reader.hint}")


_THANKS = re.compile(r"\b(?:thanks|thank you)\b", re.IGNORECASE)
