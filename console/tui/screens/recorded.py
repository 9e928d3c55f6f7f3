"""A recorded conversation opened in the console (a tau2 results file, OpenAI chat messages): the as-recorded audit.

The file is audited (`core.recorded`, no database: the recorded results are what the agent saw) and each
conversation becomes the events of a replay. The replay is the ordinary one with one difference, said on
screen: its gate verdicts are what the gate *would have said*, each write judged in its recorded context,
while every outcome is the recording's (a write the gate would have refused reads "ran" when the recording ran
it). A file of several conversations opens as a list of them with their counts, and under it the writes of the
highlighted one: Enter replays a conversation, `o` opens the highlighted write's conversation at that write.

`ledgeragent console --recorded FILE [--db DB] --at C:I` (the command `ledgeragent audit`'s report prints beside
each finding) opens the same way, straight at write I of conversation C. With a database the audit is the
report's: every call re-executed on a copy of it and the gate reading what a write lacks (evidence assist), so
the verdicts on screen are the ones the report lists.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.runtime.audit_replay import At
from console.runtime.errors import CliError
from console.runtime.lookup import recording_domain
from console.tui.widgets.cells import literal
from core.domain import Domain
from core.evidence import EvidenceMode
from core.recorded.audit import CATEGORIES, HYPOTHETICAL, AuditedCall, ConversationAudit, RecordedAudit
from core.recorded.formats import read_auditable
from core.recorded.model import FORMAT_WORDS, Recording, RecordingError
from core.strict_json import inert
from core.tools import Requestor
from mock_backends.registry import BackendSourceError, open_backend


@dataclass
class RecordingAudited(Message):
    """A recording read and audited: one `ConversationAudit` per conversation (posted by the opener's worker)."""

    path: Path
    recording: Recording
    domain: Domain
    audits: list[ConversationAudit]
    at: At | None = None  # the write to open at (`--at`), checked to be one of the recording's writes
    database: Path | None = None

    @property
    def problems(self) -> list[str]:
        source = self.recording.source
        return [p.at(source) for p in self.recording.problems] + [
            p.at(source) for audit in self.audits for p in audit.problems]


def _domain_of(recording: Recording) -> Domain:
    try:
        return recording_domain(recording, None)
    except CliError as exc:
        raise ValueError(f"{recording.source}: {exc}") from None


def audit_recording(path: Path, database: Path | None = None, at: At | None = None) -> RecordingAudited:
    """Read and audit `path` (blocking: the console calls it from a thread worker), with `database` re-executing
    every call on a copy of it (evidence assist, as `check --as-recorded --db` and `ledgeragent audit` judge).
    Raises ValueError with one line for a file that cannot be audited here, or an `at` that names no write."""
    try:
        recording = read_auditable(path)
    except RecordingError as exc:
        raise ValueError(str(exc)) from None
    if not recording.results_recorded:
        raise ValueError(f"{path} holds check lines, which record no results: audit them with `ledgeragent check "
                         "--as-recorded FILE` (it runs them on a database)")
    domain = _domain_of(recording)
    if at is not None:
        _check_at(recording, at)

    async def run() -> list[ConversationAudit]:
        if database is None:
            return [audit async for audit in RecordedAudit(domain).run(recording)]
        with tempfile.TemporaryDirectory(prefix="ledgeragent-recorded-") as scratch:
            try:
                backend = await open_backend(domain.name, Path(scratch) / "db.sqlite", source=database)
            except BackendSourceError as exc:
                raise ValueError(str(exc)) from None
            try:
                audit = RecordedAudit(domain, backend, evidence=EvidenceMode.ASSIST)
                return [conversation async for conversation in audit.run(recording)]
            finally:
                await backend.close()

    audited = RecordingAudited(path, recording, domain, asyncio.run(run()), at, database)
    if at is not None:
        write_at(audited, at)  # the call exists (checked above); that it is an agent's write is checked here
    return audited


def check_at(path: Path, at: At) -> None:
    """That `at` names a call of the recording in `path` (read, not audited: the command line checks it before
    the console opens); ValueError with one line otherwise."""
    try:
        recording = read_auditable(path)
    except RecordingError as exc:
        raise ValueError(str(exc)) from None
    _check_at(recording, at)


def _check_at(recording: Recording, at: At) -> None:
    count = len(recording.conversations)
    if at.conversation >= count:
        raise ValueError(f"--at {at}: {recording.source} has {count} conversation(s), numbered from 0")
    calls = len(recording.conversations[at.conversation].calls())
    if at.call >= calls:
        raise ValueError(f"--at {at}: conversation {at.conversation} of {recording.source} has {calls} call(s), "
                         "numbered from 0")


def is_agent_write(call: AuditedCall) -> bool:
    return call.kind == "write" and call.call.requestor is Requestor.ASSISTANT


def write_at(audited: RecordingAudited, at: At) -> AuditedCall:
    """The audited write `at` names; ValueError when that call is no write of the agent's."""
    call = next((c for c in audited.audits[at.conversation].calls if c.index == at.call), None)
    if call is None or not is_agent_write(call):
        what = "no call" if call is None else f"{call.call.name}, not a write of the agent's"
        raise ValueError(f"--at {at}: call {at.call} of conversation {at.conversation} is {what}")
    return call


def counts_text(audit: ConversationAudit) -> str:
    counts = audit.counts()
    return f"{sum(counts.values())} write(s): " + ", ".join(f"{counts[c]} {c}" for c in CATEGORIES)


def hypothetical_label(audit: ConversationAudit, recording: Recording) -> str:
    """The replay's banner: whose verdicts these are, and what the outcomes are."""
    return (f"{HYPOTHETICAL.capitalize()} ({FORMAT_WORDS[recording.format]}): every write judged in its recorded "
            f"context, outcomes as recorded · {counts_text(audit)}")


def replay_of(audited: RecordingAudited, audit: ConversationAudit, write: AuditedCall | None = None) -> Screen[None]:
    """The conversation's replay; at `write` (its step shown, its row in the gate pane highlighted) when given."""
    from console.tui.screens.replay import ReplayScreen

    name = f"{audited.path} · {audit.label}" if audit.label else str(audited.path)
    banner = hypothetical_label(audit, audited.recording)
    if write is not None:
        banner += f" · opened at call {write.index} ({write.call.name}, {write.category}) of {write.where.short()}"
    return ReplayScreen(audit.events, audited.domain, Path(name), hypothetical=banner,
                        focus_call=None if write is None else write.call.id)


def _write_rows(audit: ConversationAudit) -> list[AuditedCall]:
    return [c for c in audit.calls if is_agent_write(c)]


class RecordedConversationsScreen(Screen[None]):
    """The conversations of one recording with what the gate would have said of their writes, and the writes of
    the highlighted conversation: Enter replays a conversation, `o` opens it at the highlighted write."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close"), Binding("enter", "open", "Replay"),
                Binding("o", "open_write", "Open at the write"),
                Binding("tab", "app.focus_next", "Conversations / writes", show=False)]

    def __init__(self, audited: RecordingAudited, start: int = 0) -> None:
        super().__init__()
        self.audited = audited
        self.start = start
        self.shown: int | None = None  # the conversation whose writes the writes table lists

    def compose(self) -> ComposeResult:
        recording = self.audited.recording
        where = f", every call re-executed on {self.audited.database}" if self.audited.database else ""
        yield Static(inert(f"{recording.source}: {FORMAT_WORDS[recording.format]}, {len(self.audited.audits)} "
                           f"conversation(s), domain {self.audited.domain.name}{where} · {HYPOTHETICAL}"),
                     classes="screen-title", markup=False)
        table: DataTable[Any] = DataTable(id="recorded-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("conversation", "writes", *CATEGORIES, "problems")
        for index, audit in enumerate(self.audited.audits):
            counts = audit.counts()
            table.add_row(literal(audit.label), str(sum(counts.values())), *(str(counts[c]) for c in CATEGORIES),
                          str(len(audit.problems)), key=str(index))  # literal: a recorded label is never markup
        yield table
        yield Static("", id="recorded-writes-title", classes="screen-title", markup=False)
        writes: DataTable[Any] = DataTable(id="recorded-writes", cursor_type="row", zebra_stripes=True)
        writes.add_columns("call", "position", "tool", "verdict", "rules")
        yield writes
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#recorded-table", DataTable)
        if table.row_count:
            table.move_cursor(row=min(self.start, table.row_count - 1))
        table.focus()
        self._show_writes(table.cursor_row)

    def _show_writes(self, index: int) -> None:
        if index == self.shown or not 0 <= index < len(self.audited.audits):
            return
        self.shown = index
        audit = self.audited.audits[index]
        writes = self.query_one("#recorded-writes", DataTable)
        writes.clear()
        for call in _write_rows(audit):
            rules = ", ".join(r.predicate_id for r in call.decision.failed) if call.decision is not None else ""
            writes.add_row(str(call.index), literal(call.where.short()), literal(call.call.name),
                           call.category or "not judged", literal(rules), key=str(call.index))
        self.query_one("#recorded-writes-title", Static).update(
            inert(f"writes of {audit.label or 'the conversation'}: {len(_write_rows(audit))} · o opens the "
                  "highlighted one in its conversation"))

    @on(DataTable.RowHighlighted, "#recorded-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_writes(event.cursor_row)

    def action_open(self) -> None:
        table = self.query_one("#recorded-table", DataTable)
        if table.row_count:
            self.app.push_screen(replay_of(self.audited, self.audited.audits[table.cursor_row]))

    def action_open_write(self) -> None:
        """`o`: the highlighted write's conversation, opened at that write."""
        writes = self.query_one("#recorded-writes", DataTable)
        if self.shown is None or not writes.row_count:
            self.app.notify("this conversation has no write of the agent's to open", severity="warning")
            return
        audit = self.audited.audits[self.shown]
        self.app.push_screen(replay_of(self.audited, audit, _write_rows(audit)[writes.cursor_row]))

    @on(DataTable.RowSelected, "#recorded-table")
    def _picked(self, _event: DataTable.RowSelected) -> None:
        self.action_open()

    @on(DataTable.RowSelected, "#recorded-writes")
    def _picked_write(self, _event: DataTable.RowSelected) -> None:
        self.action_open_write()


def screens_for(audited: RecordingAudited) -> list[Screen[None]]:
    """The screens to push, bottom first: the replay of a file's only conversation, else the list of its
    conversations; with `at`, the replay of that conversation at that write on top of the list."""
    if audited.at is None:
        if len(audited.audits) == 1:
            return [replay_of(audited, audited.audits[0])]
        return [RecordedConversationsScreen(audited)]
    audit = audited.audits[audited.at.conversation]
    replay = replay_of(audited, audit, write_at(audited, audited.at))
    if len(audited.audits) == 1:
        return [replay]
    return [RecordedConversationsScreen(audited, start=audited.at.conversation), replay]


def screen_for(audited: RecordingAudited) -> Screen[None]:
    """The replay of a file's only conversation, else the list of its conversations (the bottom screen of
    `screens_for`: with `at`, the replay at the write goes on top of it)."""
    return screens_for(audited)[0]
