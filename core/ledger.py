"""The ledger: observed state, stored at canonical paths by a fixed per-domain path map.

Only successful READ returns are absorbed (observe, don't assume). A successful WRITE marks stale exactly
what its declaration (`WriteEffect`, next to the domain's path map) says it can change: the paths, and,
where the write can change only part of a record (a gift card's balance in a profile, the bill list of a
customer), just those fields. A stale entry is still shown to the model but is never used as evidence by
the gate until it has been read again; a partly stale one still answers for every field the write could
not have changed. What a write cannot have changed simply stays fresh: its return is never taken as state.
Every entry remembers which call put it there (and whether the gate read it itself, `Provenance.by`), so
the console can show provenance and a verdict can cite exactly what it relied on.

Two records sit beside the current entries, because some rules are about the past, not the present:

- History: an entry replaced by a read that returned another value is kept (with its provenance) as a
  superseded observation of that path. After our own write changed a reservation, the flight it used to
  hold is still something we observed, and a rule may ask for it (`history`, `observations`).
- Effects (`effects.<tool>.<n>`): what this session's executed writes returned, in order. Fed only by a
  successful write's own return (`mark_stale(..., result=...)`), never by anything the model says, so a
  rule can count what was already done (refuels on a line, certificates given) and a per-call limit
  cannot be repeated around.

Neither is rendered into the prompt: `render()` shows the current entries only (the write results are in
the conversation already, and superseded values would only repeat what the model saw).

Conversation facts. What the customer said lands under `conversation.` (`hear`, see core.conversation): the
ids they stated, whether their latest message is an explicit yes to what the agent described, and the
reason they gave, each with the message as provenance (`Provenance.by` "customer"). They are entries like
any other for the gate and the console (versioned, kept in history), fed only by messages; no write marks
them stale, and a tool result never lands there. They are not rendered into the prompt either: the model
reads the conversation itself, so the block would only repeat it (at a cost every turn), and a write that
lacks a yes or a stated id is told so by the gate's feedback. The prompt block holds what tools returned.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any, Final

from core.conversation import (
    CONFIRMATION_PATH,
    CONVERSATION_NAMESPACE,
    CUSTOMER_MESSAGE,
    MAX_STATED,
    REASON_PATH,
    SAID_BY_CUSTOMER,
    ConversationForms,
    confirmation_of,
    quote_tail,
    said_id,
    stated_path,
)
from core.tools import ToolCall, call_text

JSON = Any
CONVERSATION_PREFIX: Final = f"{CONVERSATION_NAMESPACE}."  # what the customer said: never in the prompt block
_NO_RESULT: Any = object()  # mark_stale without a write result: stale the paths, record no effect
MAX_HISTORY = 8  # superseded observations kept per path (oldest dropped first)
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class TemplateError(ValueError):
    """A path template names a value the call or result does not have."""


READ_BY_GATE: Final = "gate"  # Provenance.by of a read the gate made itself (evidence assist)


@dataclass(frozen=True)
class Provenance:
    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    step: int
    # "" the agent's (or the customer's) own call; READ_BY_GATE a read the gate made itself; SAID_BY_CUSTOMER a
    # fact taken from the customer's message (`arguments["said"]` quotes it)
    by: str = ""
    shaped: tuple[str, ...] = ()  # how the result was put in the canonical shape (ResultShape), in words

    def describe(self) -> str:
        if self.by == SAID_BY_CUSTOMER:
            said = json.dumps(self.arguments.get("said", ""), ensure_ascii=False)
            return f"the customer's message at step {self.step}: {said}"
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(self.arguments.items()))
        who = ", read by the gate" if self.by == READ_BY_GATE else ""
        shaped = f" ({'; '.join(self.shaped)})" if self.shaped else ""
        return f"{self.tool}({args}) at step {self.step}{who}{shaped}"


@dataclass(frozen=True)
class Staleness:
    """Why an entry may no longer match the world: a write that ran after it was read.

    `fields`: the (dotted) fields of the record that write can have changed; None means the whole record.
    Later writes widen it; the first write after the read stays the one named ("stale since")."""

    tool: str
    call_id: str
    step: int
    fields: frozenset[str] | None = None

    def describe(self) -> str:
        where = "" if self.fields is None else f" ({', '.join(sorted(self.fields))})"
        return f"{self.tool} at step {self.step}{where}"

    def widened(self, fields: frozenset[str] | None) -> Staleness:
        """This staleness after another write that can change `fields` (None: the whole record)."""
        if self.fields is None:
            return self
        if fields is None:
            return replace(self, fields=None)
        return self if fields <= self.fields else replace(self, fields=self.fields | fields)


@dataclass(frozen=True)
class LedgerEntry:
    path: str
    value: JSON
    provenance: Provenance
    version: int
    stale: Staleness | None = None
    value_text: str = field(default="", compare=False, repr=False)  # canonical JSON of value, computed once
    rendered: str = field(default="", compare=False, repr=False)  # the entry's line in the prompt block

    @property
    def is_stale(self) -> bool:
        return self.stale is not None

    def fresh_at(self, field: str) -> bool:
        """Whether the (dotted) `field` of this record is as observed: the entry is fresh, or only other fields
        of it may have changed since it was read."""
        stale = self.stale
        if stale is None:
            return True
        if stale.fields is None:
            return False
        return not any(f == field or f.startswith(field + ".") or field.startswith(f + ".") for f in stale.fields)

    @cached_property
    def element_texts(self) -> tuple[str, ...] | None:
        """Canonical JSON of each element of a list of records (None otherwise): computed on the first render
        that asks, so the prompt block can name the paths holding those records instead of repeating them."""
        if not isinstance(self.value, list) or not self.value or not all(isinstance(v, dict) for v in self.value):
            return None
        return tuple(render_value(v) for v in self.value)


def _lookup(source: Any, dotted: str) -> Any:
    current = source
    for part in dotted.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            raise TemplateError(f"no value at '{dotted}'")
    return current


def fill_template(template: str, arguments: Mapping[str, Any], result: Any = None, item: Any = None) -> str:
    """Fill `{arg}`, `{result}`, `{result.field}` and `{item.field}` placeholders."""

    def value_for(name: str) -> str:
        if name == "result":
            value = result
        elif name.startswith("result."):
            value = _lookup(result, name[len("result."):])
        elif name == "item":
            value = item
        elif name.startswith("item."):
            value = _lookup(item, name[len("item."):])
        else:
            value = _lookup(arguments, name)
        if isinstance(value, dict | list) or value is None:
            raise TemplateError(f"'{name}' is not a scalar")
        return str(value)

    return _PLACEHOLDER.sub(lambda m: value_for(m.group(1)), template)


def path_matches(pattern: str, path: str) -> bool:
    """Segment-wise glob: `*` matches exactly one path segment (`orders.*` ≠ `orders.x.y`)."""
    pattern_parts = pattern.split(".")
    path_parts = path.split(".")
    if len(pattern_parts) != len(path_parts):
        return False
    return all(fnmatch.fnmatchcase(seg, pat) for pat, seg in zip(pattern_parts, path_parts, strict=True))


EFFECTS_NAMESPACE = "effects"


@dataclass(frozen=True)
class Effect:
    """What one executed write returned: this session's own record of a change it made."""

    tool: str
    arguments: Mapping[str, Any]
    result: JSON
    provenance: Provenance
    index: int  # 0-based position among this session's effects of the same tool

    @property
    def path(self) -> str:
        return f"{EFFECTS_NAMESPACE}.{self.tool}.{self.index}"


class LedgerReader:
    """Read-only access shared by the ledger and its snapshots."""

    _entries: Mapping[str, LedgerEntry]
    _history: Mapping[str, tuple[LedgerEntry, ...]] = MappingProxyType({})
    _effects: Sequence[Effect] = ()

    def history(self, path: str) -> tuple[LedgerEntry, ...]:
        """Superseded observations of `path`, oldest first (the current entry is not included)."""
        return self._history.get(path, ())

    def observations(self, path: str) -> tuple[LedgerEntry, ...]:
        """Every observation of `path`, oldest first: the superseded ones, then the current one (stale or not)."""
        current = self._entries.get(path)
        return self.history(path) + ((current,) if current is not None else ())

    def observed_paths(self, pattern: str) -> list[str]:
        """Paths matching `pattern` that were ever observed (current or superseded)."""
        return sorted(p for p in set(self._entries) | set(self._history) if path_matches(pattern, p))

    def effects(self, tool: str | None = None) -> tuple[Effect, ...]:
        """This session's executed writes (of `tool`, or all), in the order they ran."""
        return tuple(e for e in self._effects if tool is None or e.tool == tool)

    def get(self, path: str) -> JSON:
        entry = self._entries.get(path)
        return None if entry is None else entry.value

    def entry(self, path: str) -> LedgerEntry | None:
        return self._entries.get(path)

    def has(self, path: str) -> bool:
        return path in self._entries

    def paths(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[LedgerEntry]:
        return [self._entries[p] for p in sorted(self._entries)]

    def glob(self, pattern: str) -> dict[str, JSON]:
        return {p: self._entries[p].value for p in sorted(self._entries) if path_matches(pattern, p)}

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def to_dict(self) -> dict[str, JSON]:
        return {p: self._entries[p].value for p in sorted(self._entries)}


Condition = Callable[[ToolCall, JSON, LedgerReader], bool]


@dataclass(frozen=True)
class PathRule:
    """Where a successful return of `tool` lands. `each` fans a list (or dict values) out to many paths."""

    tool: str
    path: str
    when: Condition | None = None
    each: str | None = None
    note: str = ""


@dataclass(frozen=True)
class ResultShape:
    """How another release of a read tool returns the same record, so the ledger holds it in the canonical
    shape (the domain's own tools'), declared next to the path map that says where it lands.

    Recordings come from every release of a benchmark: tau-bench's `get_user_details(user_id)` returns the
    profile stored under that id without its `user_id`, and its first data release wrote `address.province`
    where the canonical profile has `address.state`. Two normalisations, and nothing else:

    - `key_from`: (result field, argument) pairs, for a tool that returns the record its argument named: the
      field is taken from the call's argument when the result lacks it (the call is what says whose record it
      is; the result's other fields are untouched);
    - `aliases`: (dotted field as the other release names it, canonical dotted field) pairs: the value moves to
      the canonical field when that one is absent and its parent is a record.

    Applied at absorb time (`Ledger.absorb`, `Ledger.preview`), so the path rules, their conditions and every
    predicate see one shape; the entry's provenance is still the call that returned it, and says what was
    done (`Provenance.shaped`). A result already in the canonical shape is stored as it came."""

    tool: str
    key_from: tuple[tuple[str, str], ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    note: str = ""

    def apply(self, call: ToolCall, result: JSON) -> tuple[JSON, tuple[str, ...]]:
        """The result in the canonical shape (a copy where anything changed), and what was done, in words."""
        if not isinstance(result, dict):
            return result, ()
        shaped: list[str] = []
        value = result
        for field_name, argument in self.key_from:
            given = call.arguments.get(argument)
            if field_name not in value and isinstance(given, str) and given:
                value = {**value, field_name: given}
                shaped.append(f"{field_name} from the call's {argument}")
        for old, new in self.aliases:
            moved = _moved(value, old, new)
            if moved is not None:
                value = moved
                shaped.append(f"{old} read as {new}")
        return value, tuple(shaped)


def _moved(record: dict[str, Any], old: str, new: str) -> dict[str, Any] | None:
    """`record` with the value at dotted `old` moved to dotted `new` (copies along both paths, the original
    untouched); None when `old` is absent, `new` is present, or a parent on the way is no record."""
    *old_parents, old_key = old.split(".")
    *new_parents, new_key = new.split(".")
    if old_parents != new_parents:
        return None  # a field renamed within its record; moving values between records is no rename
    copy = dict(record)
    parent = copy
    for key in old_parents:
        child = parent.get(key)
        if not isinstance(child, dict):
            return None
        parent[key] = dict(child)
        parent = parent[key]
    if old_key not in parent or new_key in parent:
        return None
    parent[new_key] = parent.pop(old_key)
    return copy


EffectCondition = Callable[[ToolCall, LedgerReader], bool]
EffectPaths = Callable[[ToolCall, LedgerReader], Iterable[str]]
EffectFields = Callable[[ToolCall, LedgerReader], Iterable[str] | None]  # None: the whole record


@dataclass(frozen=True)
class WriteEffect:
    """What a successful `tool` call can change, declared next to the path map that says where reads land.

    `paths`: ledger path templates over the write's arguments (globs allowed), or a function of the call and
    the ledger for paths only observed records can name (the owner of an order, a customer's Draft bill).
    `fields`: when given, only these dotted fields (templates over the arguments) of those records can
    change; a field that cannot be filled makes the whole record stale. `when`: the condition (on the
    arguments, and on what the ledger observed) under which the write changes them at all. A write's effects
    are the union of its rules whose condition holds. A condition that needs a record the ledger does not
    hold fresh must answer True: what cannot be ruled out may have changed. The declarations are guarded by
    a test that runs every write on the domain's data and compares the database diff with them."""

    tool: str
    paths: tuple[str, ...] | EffectPaths
    fields: tuple[str, ...] | EffectFields | None = None
    when: EffectCondition | None = None
    note: str = ""


StaleTarget = tuple[str, frozenset[str] | None]  # (path pattern, fields or None for the whole record)


@dataclass(frozen=True)
class PathMap:
    rules: tuple[PathRule, ...]
    write_effects: tuple[WriteEffect, ...] = ()
    # The writes whose effects a rule counts (`effects.<tool>`); None records every write. Naming them keeps a
    # long session (`check` replays 600k-call files as one) from holding every write's full return.
    effect_tools: frozenset[str] | None = None
    shapes: tuple[ResultShape, ...] = ()  # other releases' result shapes, read into the canonical one
    # What the ledger takes from the customer's messages (`Ledger.hear`): the domain's id forms and reason cues.
    # None: nothing (a path map that does not opt in hears no conversation).
    conversation: ConversationForms | None = None

    def rules_for(self, tool: str) -> list[PathRule]:
        return [r for r in self.rules if r.tool == tool]

    def canonical(self, call: ToolCall, result: JSON) -> tuple[JSON, tuple[str, ...]]:
        """A read's result in the canonical shape, and what was done to it (see `ResultShape`)."""
        shaped: tuple[str, ...] = ()
        for shape in self.shapes:
            if shape.tool == call.name:
                result, done = shape.apply(call, result)
                shaped += done
        return result, shaped

    def effects_for(self, tool: str) -> list[WriteEffect]:
        return [e for e in self.write_effects if e.tool == tool]

    def stale_targets(self, call: ToolCall, ledger: LedgerReader) -> list[StaleTarget]:
        """What a successful `call` can have changed, as the ledger knows it now (before the write runs or
        right after: the write's own return is never consulted)."""
        targets: list[StaleTarget] = []
        for effect in self.write_effects:
            if effect.tool != call.name or (effect.when is not None and not effect.when(call, ledger)):
                continue
            fields: frozenset[str] | None = None
            if callable(effect.fields):
                named = effect.fields(call, ledger)
                fields = None if named is None else frozenset(named)
            elif effect.fields is not None:
                try:
                    fields = frozenset(fill_template(f, call.arguments) for f in effect.fields)
                except TemplateError:
                    fields = None
            if fields is not None and not fields:
                continue  # the write changes none of these records' fields (a card payment leaves the profile)
            if callable(effect.paths):
                patterns = list(effect.paths(call, ledger))
            else:
                patterns = []
                for template in effect.paths:
                    try:
                        patterns.append(fill_template(template, call.arguments))
                    except TemplateError:
                        continue
            targets.extend((pattern, fields) for pattern in patterns)
        return targets

    def suggest_read(self, path: str) -> str | None:
        """The read call that would (re)fill `path`.

        Works when every placeholder of the rule is an argument, or a result field named like the
        argument that fetched it (`orders.{result.order_id}` ← `get_order_details(order_id=...)`), the
        convention every tau2 read tool follows.
        """
        for rule in self.rules:
            if rule.each is not None:
                continue
            parts = _PLACEHOLDER.split(rule.path)
            names = [n.removeprefix("result.") for n in parts[1::2]]
            if any(n in ("result", "item") or n.startswith("item.") or "." in n for n in names):
                continue
            regex = "".join(re.escape(p) if i % 2 == 0 else "([^.]+)" for i, p in enumerate(parts))
            match = re.fullmatch(regex, path)
            if match is None:
                continue
            return call_text(rule.tool, **dict(zip(names, match.groups(), strict=True)))
        for rule in self.rules:
            if "{" not in rule.path and rule.path == path:
                return f"{rule.tool}(...)"
        by_prefix = [r for r in self.rules if r.path.split(".")[0] == path.split(".")[0]]
        if by_prefix:
            return f"{by_prefix[0].tool}(...)"
        return None


@dataclass(frozen=True)
class AbsorbResult:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    refreshed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # rules that did not apply, with why (for debugging path maps)

    @property
    def touched(self) -> tuple[str, ...]:
        return self.added + self.changed + self.refreshed


@dataclass(frozen=True)
class LedgerDiff:
    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    staled: tuple[str, ...]
    refreshed: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed or self.staled or self.refreshed)


def render_value(value: JSON) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Hearing:
    """Where the ledger is in the conversation: the agent's last message to the customer (what a yes answers)
    and how many customer messages it has heard (each one's facts are `said_<n>`)."""

    agent_said: str | None = None
    customer_messages: int = 0


class LedgerSnapshot(LedgerReader):
    """An immutable view of the ledger at one moment (time travel, diffs, re-gating)."""

    def __init__(self, entries: Mapping[str, LedgerEntry], version: int,
                 history: Mapping[str, tuple[LedgerEntry, ...]] | None = None, effects: Iterable[Effect] = (),
                 hearing: Hearing = Hearing()) -> None:
        self._entries = MappingProxyType(dict(entries))
        self._history = MappingProxyType(dict(history or {}))
        self._effects = tuple(effects)
        self.version = version
        self.hearing = hearing

    def render(self) -> str:
        return render_entries(self._entries)

    def diff(self, older: LedgerReader) -> LedgerDiff:
        return diff_entries(older._entries, self._entries)


def render_entries(entries: Mapping[str, LedgerEntry]) -> str:
    """The prompt block: one `path = value` line per entry, in path order, each record written out once.

    A record held at several paths (retail's authenticated profile at `user` and `users.<id>`) is spelled out at
    its most specific path; the other paths say which one holds it. A list whose every element is a record held
    at its own path (airline's `flight_search.<o>.<d>.<date>`, whose flights also sit at `flights.<n>.<date>`)
    names those paths instead of repeating the records. Only the text changes: every path still resolves to its
    own entry for the gate and the console, and the same entries give the same block. What the customer said
    (`conversation.`) is left out: it is in the conversation the model reads."""
    entries = {path: entry for path, entry in entries.items() if not path.startswith(CONVERSATION_PREFIX)}
    if not entries:
        return "<ledger>\n(empty: nothing has been observed through read tools yet)\n</ledger>"
    holder: dict[str, str] = {}  # record text -> the path that spells it out
    for path in sorted(entries, key=lambda p: (-p.count("."), p)):
        if isinstance(entries[path].value, dict):  # records only: a repeated scalar is no duplicate record
            holder.setdefault(_value_text(entries[path]), path)
    lines = ["<ledger>"]
    for path in sorted(entries):
        entry = entries[path]
        owner = holder.get(_value_text(entry), path) if isinstance(entry.value, dict) else path
        if owner != path:
            lines.append(_render_reference(entry, f"(same record as {owner})"))
        elif (owners := _element_owners(entry, holder)) is not None:
            lines.append(_render_reference(entry, f"(list of the records at {', '.join(owners)})"))
        else:
            lines.append(entry.rendered or _render_entry(entry))
    lines.append("</ledger>")
    return "\n".join(lines)


def _value_text(entry: LedgerEntry) -> str:
    return entry.value_text or render_value(entry.value)


def _element_owners(entry: LedgerEntry, holder: Mapping[str, str]) -> list[str] | None:
    """The paths holding each element of a list entry, in list order; None unless every element is such a record."""
    texts = entry.element_texts
    if texts is None:
        return None
    owners: list[str] = []
    for text in texts:
        owner = holder.get(text)
        if owner is None or owner == entry.path:
            return None
        owners.append(owner)
    return owners


def _stale_note(entry: LedgerEntry) -> str:
    """What the prompt says of a stale entry; the instructions say what STALE asks of the model. A partly
    stale record names the fields the write can have changed (the rest of it still holds)."""
    stale = entry.stale
    if stale is None:
        return ""
    fields = "" if stale.fields is None else f" in {', '.join(sorted(stale.fields))}"
    return f"  # STALE since {stale.tool} (step {stale.step}){fields}"


def _render_reference(entry: LedgerEntry, reference: str) -> str:
    return f"{entry.path} = {reference}{_stale_note(entry)}"


def diff_entries(old: Mapping[str, LedgerEntry], new: Mapping[str, LedgerEntry]) -> LedgerDiff:
    added = tuple(sorted(p for p in new if p not in old))
    removed = tuple(sorted(p for p in old if p not in new))
    changed: list[str] = []
    staled: list[str] = []
    refreshed: list[str] = []
    for path in sorted(p for p in new if p in old):
        before, after = old[path], new[path]
        if before.value != after.value:
            changed.append(path)
        elif not before.is_stale and after.is_stale:
            staled.append(path)
        elif before.version != after.version:
            refreshed.append(path)
    return LedgerDiff(added, tuple(changed), removed, tuple(staled), tuple(refreshed))


def _render_entry(entry: LedgerEntry) -> str:
    return f"{entry.path} = {entry.value_text or render_value(entry.value)}{_stale_note(entry)}"


class Ledger(LedgerReader):
    """The live ledger of one session. Mutated only by `absorb` (reads) and `mark_stale` (writes)."""

    def __init__(self, path_map: PathMap) -> None:
        self.path_map = path_map
        self._entries: dict[str, LedgerEntry] = {}
        self._history: dict[str, tuple[LedgerEntry, ...]] = {}
        self._effects: list[Effect] = []  # appended in O(1): `check` replays 600k-call files as one session
        self._effect_counts: dict[str, int] = {}
        self.version = 0
        self.hearing = Hearing()

    def _store(self, path: str, value: JSON, provenance: Provenance) -> str:
        """Store `value` at `path`."""
        previous = self._entries.get(path)
        if previous is not None and previous.value != value:
            # the last MAX_HISTORY superseded values per path: what rules ask for ("the flight before our
            # change"), in bounded memory however long the session
            self._history[path] = (self._history.get(path, ()) + (previous,))[-MAX_HISTORY:]
        self.version += 1
        entry = LedgerEntry(path=path, value=value, provenance=provenance, version=self.version,
                            value_text=render_value(value))
        entry = replace(entry, rendered=_render_entry(entry))
        self._entries[path] = entry
        if previous is None:
            return "added"
        if previous.value != value:
            return "changed"
        return "refreshed"

    def absorb(self, call: ToolCall, result: JSON, step: int, by: str = "") -> AbsorbResult:
        """Store a successful READ return at every path its rules give. Never call this for writes.

        `by`: READ_BY_GATE for a read the gate made itself (the provenance says so wherever it is shown). The
        result is stored in the canonical shape (`PathMap.shapes`)."""
        result, shaped = self.path_map.canonical(call, result)
        provenance = Provenance(call.id, call.name, dict(call.arguments), step, by, shaped)
        outcome: dict[str, list[str]] = {"added": [], "changed": [], "refreshed": [], "skipped": []}
        for rule in self.path_map.rules_for(call.name):
            if rule.when is not None and not rule.when(call, result, self):
                outcome["skipped"].append(f"{rule.path}: condition not met")
                continue
            try:
                targets = list(self._targets(rule, call, result))
            except TemplateError as exc:
                outcome["skipped"].append(f"{rule.path}: {exc}")
                continue
            for path, value in targets:
                outcome[self._store(path, value, provenance)].append(path)
        return AbsorbResult(
            added=tuple(outcome["added"]),
            changed=tuple(outcome["changed"]),
            refreshed=tuple(outcome["refreshed"]),
            skipped=tuple(outcome["skipped"]),
        )

    def preview(self, call: ToolCall, result: JSON, step: int, by: str = "") -> dict[str, LedgerEntry]:
        """The entries `absorb` would store for this read, built against the ledger as it is, stored nowhere.

        For a record the gate may use but not show (another customer's): it judges with these entries laid
        over the ledger (core.evidence.PrivateOverlay) while the ledger the model sees stays as it was."""
        result, shaped = self.path_map.canonical(call, result)
        provenance = Provenance(call.id, call.name, dict(call.arguments), step, by, shaped)
        entries: dict[str, LedgerEntry] = {}
        for rule in self.path_map.rules_for(call.name):
            if rule.when is not None and not rule.when(call, result, self):
                continue
            try:
                targets = list(self._targets(rule, call, result))
            except TemplateError:
                continue
            for path, value in targets:
                entry = LedgerEntry(path=path, value=value, provenance=provenance, version=self.version,
                                    value_text=render_value(value))
                entries[path] = replace(entry, rendered=_render_entry(entry))
        return entries

    @staticmethod
    def _targets(rule: PathRule, call: ToolCall, result: JSON) -> Iterable[tuple[str, JSON]]:
        if rule.each is None:
            yield fill_template(rule.path, call.arguments, result), result
            return
        collection = result if rule.each == "result" else _lookup(result, rule.each.removeprefix("result."))
        items = collection.values() if isinstance(collection, Mapping) else collection
        if not isinstance(items, Iterable):
            raise TemplateError(f"'{rule.each}' is not a list")
        for item in items:
            yield fill_template(rule.path, call.arguments, result, item), item

    def hear(self, role: str, text: str | None, step: int) -> AbsorbResult:
        """Take what one conversation message says (core.conversation), in the order the messages were said.

        An agent's message ("assistant") changes no entry: it is what the customer's next message answers. A
        customer's message ("user") adds the ids of the domain's forms it states to `conversation.stated.<form>`,
        its sentence with a reason cue to `conversation.stated.reason`, and always replaces
        `conversation.confirmation`: whether it is an explicit yes, to which agent message. Each entry's
        provenance is the message (`said_<n>`, its step, the words quoted). Nothing when the path map hears no
        conversation or the message has no text."""
        forms = self.path_map.conversation
        if forms is None or not text or not text.strip():
            return AbsorbResult()
        if role != "user":
            self.hearing = replace(self.hearing, agent_said=text)
            return AbsorbResult()
        first = self.hearing.customer_messages == 0
        self.hearing = replace(self.hearing, customer_messages=self.hearing.customer_messages + 1)
        call_id = said_id(self.hearing.customer_messages)
        outcome: dict[str, list[str]] = {"added": [], "changed": [], "refreshed": []}

        def store(path: str, value: JSON, said: str) -> None:
            provenance = Provenance(call_id, CUSTOMER_MESSAGE, {"said": said}, step, SAID_BY_CUSTOMER)
            outcome[self._store(path, value, provenance)].append(path)

        for name, found in forms.stated_ids(text).items():
            path = stated_path(name)
            known = self.get(path)
            ids = list(known) if isinstance(known, list) else []
            new = [(value, said) for value, said in found if value not in ids]
            if new and len(ids) < MAX_STATED:
                store(path, (ids + [value for value, _ in new])[:MAX_STATED], new[0][1])
        reason = forms.stated_reason(text)
        if reason is not None:
            store(REASON_PATH, reason, reason)
        answers = self.hearing.agent_said
        said = confirmation_of(text, answers, first=first)
        value: dict[str, JSON] = {"confirmed": said.confirmed, "customer": said.words,
                                  "answers": None if answers is None else quote_tail(answers)}
        if not said.confirmed:
            value["why"] = said.why
        store(CONFIRMATION_PATH, value, said.words)
        return AbsorbResult(added=tuple(outcome["added"]), changed=tuple(outcome["changed"]),
                            refreshed=tuple(outcome["refreshed"]))

    def mark_stale(self, call: ToolCall, step: int, result: JSON = _NO_RESULT) -> list[str]:
        """After a successful write: what its declaration says it can change is stale until read again.

        Returns the paths that became stale, or staler (more fields). The targets are computed from the
        ledger as it is before the write's own effect is recorded; the write's return is not consulted.
        Pass the write's own `result` to record it among the session's effects (every caller that ran the
        write has it); a caller without it (a test staling paths by hand) records no effect."""
        targets = self.path_map.stale_targets(call, self)
        if result is not _NO_RESULT:
            self._record_effect(call, result, step)
        staled: list[str] = []
        for pattern, fields in targets:
            for path in self._matching(pattern):
                entry = self._entries[path]
                if entry.stale is None:
                    stale = Staleness(tool=call.name, call_id=call.id, step=step, fields=fields)
                else:
                    stale = entry.stale.widened(fields)
                    if stale == entry.stale:
                        continue
                self.version += 1
                updated = replace(entry, stale=stale, version=self.version)
                self._entries[path] = replace(updated, rendered=_render_entry(updated))
                if path not in staled:
                    staled.append(path)
        return staled

    def _record_effect(self, call: ToolCall, result: JSON, step: int) -> None:
        if self.path_map.effect_tools is not None and call.name not in self.path_map.effect_tools:
            return
        index = self._effect_counts.get(call.name, 0)
        self._effect_counts[call.name] = index + 1
        provenance = Provenance(call.id, call.name, dict(call.arguments), step)
        self._effects.append(Effect(call.name, dict(call.arguments), result, provenance, index))
        self.version += 1

    def _matching(self, pattern: str) -> list[str]:
        """Paths matching `pattern`: a dict lookup for exact paths, a prefix-limited scan for globs."""
        if not any(ch in pattern for ch in "*?["):
            return [pattern] if pattern in self._entries else []
        head = pattern.split(".", 1)[0]
        if any(ch in head for ch in "*?["):
            return sorted(p for p in self._entries if path_matches(pattern, p))
        return sorted(p for p in self._entries if p.startswith(head + ".") and path_matches(pattern, p))

    def render(self) -> str:
        return render_entries(self._entries)

    def snapshot(self) -> LedgerSnapshot:
        return LedgerSnapshot(self._entries, self.version, self._history, tuple(self._effects), self.hearing)

    def diff(self, older: LedgerReader) -> LedgerDiff:
        return diff_entries(older._entries, self._entries)

    def restore(self, snapshot: LedgerSnapshot) -> None:
        """Return to an earlier snapshot (used by replay and re-gating)."""
        self._entries = dict(snapshot._entries)
        self._history = dict(snapshot._history)
        self._effects = list(snapshot._effects)
        self._effect_counts = {}
        for effect in self._effects:
            self._effect_counts[effect.tool] = self._effect_counts.get(effect.tool, 0) + 1
        self.version = snapshot.version
        self.hearing = snapshot.hearing
