"""A readable, colourful transcript of session events for the terminal (headless runs, CI logs), and `shown`:
any value with its text made inert, before it is drawn anywhere.

Untrusted text (a customer's message, a tool result, an MCP client's log, a model endpoint's error, a trace
someone handed over) is drawn by every pane, the desk, the browser console and the commands' output. Each of
them takes what it shows through `shown` (events, desk snapshots: every string in them, however deep) or
`core.strict_json.inert` (one string) where the text enters what it draws, and builds `rich.text.Text` from it,
never markup: an ESC sequence in it is shown as `␛…` and does nothing, and `[red]` is shown as `[red]`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from core.gate import RefusalKind
from core.strict_json import inert

T = TypeVar("T")
_MAX_DEPTH = 80  # deeper than any event or snapshot (strict JSON stops at 64 levels)


def shown(value: T) -> T:
    """`value` with every string in it (in lists, tuples, mappings' keys and values, pydantic models, dataclasses)
    passed through `inert(..., lines=True)`; the same object when nothing in it needed it, else a copy where
    something did. Enum members and other types are kept: only text that came from outside can hold a control
    character. What a session records is never changed: this is for what is drawn."""
    return _shown(value, 0)  # type: ignore[no-any-return]


_LEAF, _SEQUENCE, _MODEL, _MAPPING, _DATACLASS = range(5)
_KINDS: dict[type, tuple[int, tuple[str, ...]]] = {}  # a type's walk, decided once (isinstance on an ABC is slow)


def _kind_of(kind: type) -> tuple[int, tuple[str, ...]]:
    """How `_shown` walks values of this type, and (models, dataclasses) the names of the fields it reads."""
    known = _KINDS.get(kind)
    if known is None:
        if kind is list or kind is tuple:
            known = (_SEQUENCE, ())
        elif issubclass(kind, BaseModel):
            known = (_MODEL, tuple(kind.model_fields))
        elif issubclass(kind, Mapping):
            known = (_MAPPING, ())
        elif dataclasses.is_dataclass(kind):
            known = (_DATACLASS, tuple(f.name for f in dataclasses.fields(kind) if f.init))
        else:
            known = (_LEAF, ())
        _KINDS[kind] = known
    return known


def _shown(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind is str:
        return inert(value, lines=True)
    if kind is int or kind is float or kind is bool or value is None or depth > _MAX_DEPTH:
        return value
    walk, names = _kind_of(kind)
    if walk == _LEAF:
        return value
    if walk == _SEQUENCE:
        items = [_shown(item, depth + 1) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else kind(items)
    if walk == _MAPPING:
        pairs = [(_shown(k, depth + 1), _shown(v, depth + 1)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    changes = {}
    for name in names:
        old = getattr(value, name)
        new = _shown(old, depth + 1)
        if new is not old:
            changes[name] = new
    if not changes:
        return value
    return value.model_copy(update=changes) if walk == _MODEL else dataclasses.replace(value, **changes)


VERDICT_STYLE = {"ALLOW": "bold green", "REVISE": "bold yellow", "BLOCK": "bold red", "ERROR": "bold magenta"}


def format_call(name: str, arguments: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return f"{name}({args})"


def shorten(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class TranscriptPrinter:
    """Subscribe it to an EventBus; it prints each event as it happens."""

    def __init__(self, console: Console | None = None, show_ledger: bool = True) -> None:
        self.console = console or Console(highlight=False)
        self.show_ledger = show_ledger
        self._unshown: dict[str, Any] = {}  # proposed calls not printed yet, so each prints next to its outcome

    def __call__(self, event: Any) -> None:
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(shown(event))  # its text inert: printed to a terminal

    def _print(self, text: str | Text) -> None:
        self.console.print(text, soft_wrap=False, overflow="fold")

    def _on_session_started(self, e: Any) -> None:
        title = f"{e.domain} · {e.scenario or 'free chat'} · agent={e.agent} · model={e.model} · user={e.user}"
        self.console.rule(f"[bold]{escape(title)}")

    def _on_message(self, e: Any) -> None:
        who = "[bold cyan]user [/]" if e.role == "user" else "[bold blue]agent[/]"
        self._print(f"{who}  {escape(e.text)}")

    def _on_assistant_turn(self, e: Any) -> None:
        if e.text and e.tool_calls:
            self._print(f"[bold blue]agent[/]  [dim](with tool calls)[/] {escape(e.text)}")
        elif e.text:
            self._print(f"[bold blue]agent[/]  {escape(e.text)}")
        self._unshown = {call.id: call for call in e.tool_calls}

    def _show_call(self, call: Any) -> None:
        if self._unshown.pop(call.id, None) is None:
            return
        shown = format_call(call.name, call.arguments) if call.parse_error is None else (
            f"{call.name}({call.raw_arguments})")
        self._print(f"  [bold]→ {escape(shown)}[/]")

    def _on_gate_decision(self, e: Any) -> None:
        self._show_call(e.call)
        style = VERDICT_STYLE[e.verdict]
        line = Text("    gate ")
        line.append(f"{e.verdict:<6}", style=style)
        if getattr(e, "refusal", None):
            line.append(f" ({RefusalKind(e.refusal).label})", style=style)
        failed = [r for r in e.results if r.status not in ("pass", "disabled")]
        if not failed:
            line.append(f" {len(e.results)} rule(s) passed", style="dim")
        if e.repeated:
            line.append(" (repeated call)", style="dim")
        if e.escalated:
            line.append(" (escalated after repeated REVISE)", style=style)
        self._print(line)
        for read in getattr(e, "gate_reads", []):
            how = {"ok": "", "gate_only": " (not the customer's record: for the gate only)"}.get(
                read.outcome, f" (failed: {read.detail})")
            self._print(f"      [dim]the gate read {escape(read.text)} itself{escape(how)}[/]")
        for r in failed:
            self._print(f"      [{style}]{escape(r.predicate_id)}[/]: {escape(r.reason)}")
            if r.evidence:
                self._print(f"        [dim]evidence: {escape(', '.join(r.evidence))}[/]")

    def _on_supervisor_decision(self, e: Any) -> None:
        self._print(f"    [bold magenta]operator {escape(e.who)}[/]: {e.decision} {escape(e.reason)} [dim]{e.when}[/]")

    def _on_tool_result(self, e: Any) -> None:
        if e.call.requestor == "user":
            self._print(f"  [bold cyan]📱 customer's phone:[/] {escape(format_call(e.call.name, e.call.arguments))}")
        if getattr(e, "by", "") == "gate":
            write = self._unshown.get(e.for_call or "")
            if write is not None:  # the write the gate reads for, first: the read belongs to its judgement
                self._show_call(write)
            shown = "(another customer's record: not shown to the model)" if e.gate_only else shorten(e.content, 90)
            self._print(f"    [dim]⤷ read by the gate: {escape(format_call(e.call.name, e.call.arguments))}[/]")
            failed = f"    [red]✗ {escape(shorten(e.content, 200))}[/]"
            self._print(f"    [green]←[/] {escape(shown)}" if e.ok else failed)
            return
        self._show_call(e.call)
        if e.outcome == "ok":
            self._print(f"    [green]←[/] {escape(shorten(e.content, 110))}")
        elif e.outcome == "rejected":
            self._print("    [yellow]✗ not executed[/]")
        else:
            self._print(f"    [red]✗ {escape(shorten(e.content, 200))}[/]")

    def _on_ledger_updated(self, e: Any) -> None:
        if not self.show_ledger:
            return
        parts = [f"+{p}" for p in e.added] + [f"~{p}" for p in e.changed] + [f"={p}" for p in e.refreshed]
        self._print(f"    [dim]ledger {escape(' '.join(parts))}[/]")

    def _on_ledger_staled(self, e: Any) -> None:
        if self.show_ledger:
            fields = getattr(e, "fields", {})
            shown = ", ".join(f"{p} ({', '.join(fields[p])})" if p in fields else p for p in e.paths)
            self._print(f"    [dim]ledger stale (re-read before relying on): {escape(shown)}[/]")

    def _on_environment_synced(self, e: Any) -> None:
        self._print(f"    [dim]sync (line ↔ phone): {escape('; '.join(e.changes))}[/]")

    def _on_model_retry(self, e: Any) -> None:
        self._print(f"  [yellow]model {e.kind}, retry {e.attempt} in {e.delay:.1f}s: {escape(e.message)}[/]")

    def _on_model_error(self, e: Any) -> None:
        self._print(f"  [bold red]model error ({e.kind}, {e.attempts} attempt(s)):[/] {escape(e.message)}")

    def _on_session_ended(self, e: Any) -> None:
        tail = f"ended: {e.reason} after {e.steps} steps"
        if e.db_hash:
            tail += f" · db {e.db_hash[:12]}"
        tokens = e.prompt_tokens + e.completion_tokens
        if tokens:
            tail += f" · {tokens:,} tokens ({e.prompt_tokens:,} prompt)"
        self.console.rule(escape(tail))
        if e.detail:
            self._print(f"[red]{escape(e.detail)}[/]")
