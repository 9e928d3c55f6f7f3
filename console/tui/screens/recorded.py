"""A recorded conversation opened in the console (a tau2 results file, OpenAI chat messages): the as-recorded audit.

The file is audited (`core.recorded`, no database: the recorded results are what the agent saw) and each
conversation becomes the events of a replay. The replay is the ordinary one with one difference, said on
screen: its gate verdicts are what the gate *would have said*, each write judged in its recorded context,
while every outcome is the recording's (a write the gate would have refused reads "ran" when the recording ran
it). A file of several conversations opens as a list of them with their counts; Enter replays one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from console.runtime.errors import CliError
from console.runtime.lookup import recording_domain
from core.domain import Domain
from core.recorded.audit import CATEGORIES, HYPOTHETICAL, ConversationAudit, RecordedAudit
from core.recorded.formats import read_auditable
from core.recorded.model import FORMAT_WORDS, Recording, RecordingError


@dataclass
class RecordingAudited(Message):
    """A recording read and audited: one `ConversationAudit` per conversation (posted by the opener's worker)."""

    path: Path
    recording: Recording
    domain: Domain
    audits: list[ConversationAudit]

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


def audit_recording(path: Path) -> RecordingAudited:
    """Read and audit `path` (blocking: the console calls it from a thread worker). Raises ValueError with one
    line for a file that cannot be audited here."""
    try:
        recording = read_auditable(path)
    except RecordingError as exc:
        raise ValueError(str(exc)) from None
    if not recording.results_recorded:
        raise ValueError(f"{path} holds check lines, which record no results: audit them with `ledgeragent check "
                         "--as-recorded FILE` (it runs them on a database)")
    domain = _domain_of(recording)

    async def run() -> list[ConversationAudit]:
        return [audit async for audit in RecordedAudit(domain).run(recording)]

    return RecordingAudited(path, recording, domain, asyncio.run(run()))


def counts_text(audit: ConversationAudit) -> str:
    counts = audit.counts()
    return f"{sum(counts.values())} write(s): " + ", ".join(f"{counts[c]} {c}" for c in CATEGORIES)


def hypothetical_label(audit: ConversationAudit, recording: Recording) -> str:
    """The replay's banner: whose verdicts these are, and what the outcomes are."""
    return (f"{HYPOTHETICAL.capitalize()} ({FORMAT_WORDS[recording.format]}): every write judged in its recorded "
            f"context, outcomes as recorded · {counts_text(audit)}")


def replay_of(audited: RecordingAudited, audit: ConversationAudit) -> Screen[None]:
    from console.tui.screens.replay import ReplayScreen

    name = f"{audited.path} · {audit.label}" if audit.label else str(audited.path)
    return ReplayScreen(audit.events, audited.domain, Path(name),
                        hypothetical=hypothetical_label(audit, audited.recording))


class RecordedConversationsScreen(Screen[None]):
    """The conversations of one recording with what the gate would have said of their writes."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Close"), Binding("enter", "open", "Replay")]

    def __init__(self, audited: RecordingAudited) -> None:
        super().__init__()
        self.audited = audited

    def compose(self) -> ComposeResult:
        recording = self.audited.recording
        yield Static(f"{recording.source}: {FORMAT_WORDS[recording.format]}, {len(self.audited.audits)} "
                     f"conversation(s), domain {self.audited.domain.name} · {HYPOTHETICAL}", classes="screen-title")
        table: DataTable[Any] = DataTable(id="recorded-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("conversation", "writes", *CATEGORIES, "problems")
        for index, audit in enumerate(self.audited.audits):
            counts = audit.counts()
            table.add_row(audit.label, str(sum(counts.values())), *(str(counts[c]) for c in CATEGORIES),
                          str(len(audit.problems)), key=str(index))
        yield table
        yield Footer()

    def action_open(self) -> None:
        table = self.query_one("#recorded-table", DataTable)
        if table.row_count:
            self.app.push_screen(replay_of(self.audited, self.audited.audits[table.cursor_row]))

    @on(DataTable.RowSelected, "#recorded-table")
    def _picked(self, _event: DataTable.RowSelected) -> None:
        self.action_open()


def screen_for(audited: RecordingAudited) -> Screen[None]:
    """The replay of a file's only conversation, else the list of its conversations."""
    if len(audited.audits) == 1:
        return replay_of(audited, audited.audits[0])
    return RecordedConversationsScreen(audited)
