"""Open a recorded session (trace.jsonl) or an eval run (results.json / run folder): one `open_path` for both.

Reading runs in a thread worker (harlequin's `@work(thread=True, exclusive=True)`): a long trace or a big
results file never freezes the UI; completion comes back as a typed message. This module sits above both
the replay and the results screens, so neither imports the other's opener (no import circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, Static

from console.tui.screens.recorded import RecordingAudited, audit_recording, screen_for
from console.tui.screens.replay import ReplayScreen, open_replay, recent_traces, trace_ending
from console.tui.screens.results import ResultsScreen
from console.tui.theme import palette_of
from console.tui.widgets.cells import literal
from core.domain import Domain
from core.evaluation.loading import load_results
from core.evaluation.results import EvalResults, ResultsError
from core.timeline import TraceTimeline
from core.trace import read_session_start


def is_results(path: Path) -> bool:
    """An eval run (results.json, or a run folder) rather than a session trace."""
    return path.name == "results.json" or (path.is_dir() and (path / "run.json").is_file())


@dataclass
class TraceLoaded(Message):
    path: Path
    timeline: TraceTimeline  # indexed, not read: a step's events are read when it is shown
    domain: Domain
    problems: list[str]


@dataclass
class ResultsLoaded(Message):
    path: Path
    results: EvalResults


@dataclass
class OpenFailed(Message):
    path: Path
    error: str


@dataclass
class EndingsRead(Message):
    endings: dict[str, str]  # trace path -> how its session ended


def read_path(path: Path) -> TraceLoaded | ResultsLoaded | RecordingAudited | OpenFailed:
    """Read a trace or a results file, or audit any other recording (a tau2 results file under another name, OpenAI
    chat messages, a trace without its whole `session_started`: the replay needs that line for the domain, the
    audit reads the calls without it); never raises for bad input (the answer says what was wrong)."""
    try:
        if is_results(path):
            return ResultsLoaded(path, load_results(path))
        if path.is_file() and read_session_start(path) is None:
            return audit_recording(path)
        timeline, domain, problems = open_replay(path)
        return TraceLoaded(path, timeline, domain, problems)
    except (OSError, ValueError, ResultsError) as exc:
        return OpenFailed(path, str(exc))


class OpenTraceScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, domain: Domain | None = None) -> None:
        super().__init__()
        self.traces = recent_traces()

    def compose(self) -> ComposeResult:
        with Widget(id="open-dialog"):
            yield Static("Open a recorded session", classes="screen-title")
            yield Input(placeholder="a session's trace.jsonl, or an eval results.json / run folder (Enter); "
                        "or pick a recent session below",
                        id="open-path")
            table: DataTable[Text] = DataTable(id="open-recent", cursor_type="row")
            table.add_column("session", key="session")
            table.add_column("ending", key="ending")
            table.add_column("folder", key="folder")
            for path in self.traces:
                # literal: a folder's name is whatever made the folder, never markup for the table
                table.add_row(literal(path.parent.name), Text("…"), literal(str(path.parent)), key=str(path))
            yield table
            yield Static("", id="open-error")
        yield Footer()

    def on_mount(self) -> None:
        self._read_endings(list(self.traces))

    @work(thread=True, exclusive=True, group="endings", exit_on_error=False)
    def _read_endings(self, traces: list[Path]) -> None:
        """Each listed session's ending, read from its trace's last line in a thread (fifty files)."""
        self.post_message(EndingsRead({str(path): trace_ending(path) for path in traces}))

    @on(EndingsRead)
    def _endings(self, message: EndingsRead) -> None:
        table = self.query_one("#open-recent", DataTable)
        colours = palette_of(self)
        for key, ending in message.endings.items():
            if key in table.rows:
                style = "" if ending.startswith("ended") else colours.text(
                    "error" if ending.startswith("failed") else "warning", "bold")
                table.update_cell(key, "ending", literal(ending, style), update_width=True)  # read from the trace

    def open(self, path: Path) -> None:
        """Start reading `path` in a worker; the screen to show it is pushed when it arrives."""
        self.query_one("#open-error", Static).update(Text(f"opening {path} …", "dim"))
        self._read(path)

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def _read(self, path: Path) -> None:
        self.post_message(read_path(path))

    @on(OpenFailed)
    def _failed(self, message: OpenFailed) -> None:
        self.query_one("#open-error", Static).update(Text(message.error, palette_of(self).text("error", "bold")))

    @on(TraceLoaded)
    def _trace(self, message: TraceLoaded) -> None:
        self.dismiss()
        if message.problems:
            self.app.notify(f"{len(message.problems)} unreadable line(s) skipped: {message.problems[0]}",
                            severity="warning")
        self.app.push_screen(ReplayScreen(message.timeline, message.domain, message.path))

    @on(RecordingAudited)
    def _recording(self, message: RecordingAudited) -> None:
        self.dismiss()
        if message.problems:
            self.app.notify(f"{len(message.problems)} problem(s) in the recording: {message.problems[0]}",
                            severity="warning")
        self.app.push_screen(screen_for(message))

    @on(ResultsLoaded)
    def _results(self, message: ResultsLoaded) -> None:
        self.dismiss()
        self.app.push_screen(ResultsScreen(message.results, message.path))

    @on(Input.Submitted, "#open-path")
    def _typed(self, event: Input.Submitted) -> None:
        self.open(Path(event.value.strip()).expanduser())

    @on(DataTable.RowSelected, "#open-recent")
    def _picked(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.open(Path(event.row_key.value))


__all__ = ["OpenTraceScreen", "is_results", "read_path"]
