"""The compare screen: the function-calling baseline (left) and LedgerAgent (right) on one scenario, the same
customer lines, stepped together, with the difference strip below.

Each side is a `CompactPanes`: the console's own panes (`SessionPanes`, fed by `add_event` exactly as the main
screen feeds them), laid out compactly: the transcript always, the ledger and gate panes on the LedgerAgent side
only (the baseline has neither). Below `STACK_WIDTH` columns the two sides stack: one side at a time, `s`
switches. Keys: space starts / pauses both, `n` steps both (one model call each), `1` / `2` step the baseline
or LedgerAgent alone, `e` exports the run (Markdown and HTML, console/runtime/compare_export.py), `d` gives the
difference strip the whole screen below the banner and the focus (its arrows scroll it), `d` or esc again gives
the sides back. The strip shows every line the export's "What differs" has: both read
`ComparePair.difference_lines()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from console.runtime.compare_run import SIDE_NAMES, SIDES, SIMULATED, ComparePair
from console.runtime.live import SessionSpec
from console.tui.theme import palette_of
from console.tui.widgets.difference_strip import DifferenceStrip
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.session_panes import SessionPanes
from core.events import Event, GateDecided, SessionEnded, ToolResultEvent
from core.llm.base import ChatModel

STACK_WIDTH = 140  # below this many columns the two sides stack, one at a time


class CompactPanes(SessionPanes):
    """A side's panes: the transcript on top, and (LedgerAgent) the ledger and gate panes below it side by side.
    The stacked single-pane layout of the main screen does not apply: a side is already one column."""

    def __init__(self, side: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.side = side

    def _apply_layout(self) -> None:
        for name, pane in zip(("transcript", "ledger", "gate"), self._pane_refs, strict=True):
            pane.styles.display = "block" if name == "transcript" or self.side == "ledger" else "none"

    def fit(self, width: int) -> bool:
        return False


@dataclass
class SideEvent(Message):
    side: str
    event: Event


@dataclass
class SideState(Message):
    side: str


class CompareScreen(Screen[None]):
    BINDINGS = [
        Binding("space", "start_or_pause", "Start/Pause", id="compare-start"),
        Binding("d", "differences", "What differs", id="compare-differences"),  # early: shown at 80 columns
        Binding("escape", "differences_back", "Back to the sides", show=False, id="compare-differences-back"),
        Binding("n", "step", "Step both", id="compare-step"),
        Binding("s", "switch_side", "Side", id="compare-switch"),
        Binding("1", "step_side('fc')", "Step baseline", id="compare-step-fc"),
        Binding("2", "step_side('ledger')", "Step LedgerAgent", id="compare-step-ledger"),
        Binding("e", "export", "Export", id="compare-export"),
    ]

    def __init__(self, spec: SessionSpec, *, operator: str = "operator", root: Path | None = None,
                 autostart: bool = False, model_factory: Callable[[SessionSpec], ChatModel] | None = None) -> None:
        super().__init__()
        self.spec = spec
        self.operator = operator
        self.root = root
        self.autostart = autostart
        self.model_factory = model_factory
        self.pair: ComparePair | None = None
        self.started = False
        self.front = "fc"
        self.stacked = False
        self.panes: dict[str, CompactPanes] = {}
        self.exported: list[Path] = []
        self.differences_open = False  # `d`: the strip has the screen below the banner
        self._focus_before: Widget | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="compare-banner")
        with Horizontal(id="compare-sides"):
            for side in SIDES:
                with Vertical(id=f"side-{side}", classes="compare-side"):
                    yield Static(SIDE_NAMES[side], classes="side-title", id=f"title-{side}")
                    yield CompactPanes(side, id=f"panes-{side}")
        yield DifferenceStrip(id="difference-strip")
        yield ConsoleFooter()  # its keys wrap into rows: every key whole at 80 columns

    async def on_mount(self) -> None:
        self.panes = {side: self.query_one(f"#panes-{side}", CompactPanes) for side in SIDES}
        self.strip = self.query_one(DifferenceStrip)
        self.pair = ComparePair(self.spec, operator=self.operator, root=self.root, model_factory=self.model_factory,
                                on_event=lambda side, e: self.post_message(SideEvent(side, e)),
                                on_state=lambda side: self.post_message(SideState(side)))
        await self.pair.open()
        scenario = self.pair.scenario
        title = scenario.title if scenario is not None else self.spec.scenario or ""
        mistake = scenario.baseline_mistake if scenario is not None else None
        banner = Text()
        banner.append(SIMULATED, palette_of(self).text("warning", "bold"))
        banner.append(f"\n{self.spec.domain} · {title}")
        banner.append(f"\nThe baseline's mistake here: it {mistake.says} ({mistake.kind})" if mistake else
                      "\nThis scenario declares no baseline mistake.")
        self.query_one("#compare-banner", Static).update(banner)
        for side in SIDES:
            live = self.pair[side]
            panes = self.panes[side]
            if side == "fc":
                panes.ledger.show_no_ledger()
            else:
                panes.ledger.sync(live.agent.ledger)
            panes.transcript.show_intro(SIDE_NAMES[side], "", "space: start / pause both · n: step both · 1 / 2: "
                                                              "step one side · s: switch side · d: what differs, "
                                                              "whole · e: export")
        self.strip.show(self.pair.difference_lines())
        self._fit(self.size.width)
        if self.autostart:
            self.action_start_or_pause()

    # ------------------------------------------------------------------------------------------ events

    @on(SideEvent)
    def _event(self, message: SideEvent) -> None:
        pair = self.pair
        if pair is None or not self.panes or not self.panes[message.side].is_attached:
            return
        live = pair[message.side]
        ledger = live.agent.ledger if live.session is not None else None
        self.panes[message.side].add_event(message.event, ledger)
        if isinstance(message.event, GateDecided | ToolResultEvent | SessionEnded):
            lines = pair.difference_lines()
            if lines != self.strip.lines:  # most events change nothing the strip says: no redraw for them
                self.strip.show(lines)
        if isinstance(message.event, SessionEnded) and pair.ended_traces():
            self._finish()

    @on(SideState)
    def _state(self, message: SideState) -> None:
        self.refresh_bindings()

    @work(group="compare-end", exit_on_error=False)
    async def _finish(self) -> None:
        assert self.pair is not None
        for worker in [w for w in self.workers if w.group == "session"]:
            try:
                await worker.wait()  # each session has closed its database: its file is complete
            except Exception:  # noqa: BLE001 - a failed side still has a trace; its database is what it is
                pass
        if self.pair.end is None:
            await self.pair.end_states()
        self.strip.show(self.pair.difference_lines())

    # ------------------------------------------------------------------------------------------ layout

    def _fit(self, width: int) -> None:
        self.stacked = width < STACK_WIDTH
        self.set_class(self.stacked, "-stacked")
        for number, side in enumerate(SIDES, start=1):
            column = self.query_one(f"#side-{side}")
            column.styles.display = "block" if not self.stacked or side == self.front else "none"
            title = SIDE_NAMES[side] + (f"  [side {number} of 2 · s switches]" if self.stacked else "")
            self.query_one(f"#title-{side}", Static).update(title)
        self.refresh_bindings()

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "switch_side":
            return self.stacked and not self.differences_open
        if action == "differences_back":
            return self.differences_open
        return True

    # ------------------------------------------------------------------------------------------ actions

    def _start(self) -> None:
        if not self.started and self.pair is not None:
            self.started = True
            for side in SIDES:
                self._run_side(side)

    def action_start_or_pause(self) -> None:
        if self.pair is None:
            return
        if not self.started:
            self._start()
            return
        self.pair.toggle()

    def action_step(self) -> None:
        if self.pair is None:
            return
        if not self.started:
            self.pair.start_paused()
            self._start()
        self.pair.step()

    def action_step_side(self, side: str) -> None:
        if self.pair is None:
            return
        if not self.started:
            self.pair.start_paused()
            self._start()
        self.pair.step(side)

    def action_differences(self) -> None:
        """Give the strip the screen below the banner and the focus (its arrows scroll it), or give it back."""
        if self.differences_open:
            self.action_differences_back()
            return
        self.differences_open = True
        self._focus_before = self.focused
        self.set_class(True, "-differences")
        self.strip.opened(True)
        self.strip.focus()
        self.refresh_bindings()

    def action_differences_back(self) -> None:
        self.differences_open = False
        self.set_class(False, "-differences")
        self.strip.opened(False)
        before, self._focus_before = self._focus_before, None
        if before is not None and before.is_attached and before.display:
            before.focus()
        else:
            self.set_focus(None)
        self.refresh_bindings()

    def action_switch_side(self) -> None:
        self.front = "ledger" if self.front == "fc" else "fc"
        self._fit(self.size.width)

    def action_export(self) -> None:
        from console.runtime.compare_export import write_exports

        if self.pair is None:
            return
        self.exported = write_exports(self.pair)
        self.notify("Compare run written to " + ", ".join(str(p) for p in self.exported), timeout=6)

    @work(group="session", exit_on_error=False)
    async def _run_side(self, side: str) -> None:
        assert self.pair is not None
        await self.pair[side].run()

    async def close_pair(self, reason: str = "quit") -> None:
        pair = self.pair
        if pair is None:
            return
        for side in SIDES:
            pair[side].cancel_reason = reason
        running = [w for w in self.workers if w.group == "session" and not w.is_finished]
        for worker in running:
            worker.cancel()
        for worker in running:
            try:
                await worker.wait()
            except Exception:  # noqa: BLE001 - a cancelled session's worker: its trace is already ended
                pass
        await pair.close()

    async def on_unmount(self) -> None:
        await self.close_pair()

    def bindings_help(self) -> list[tuple[str, str]]:
        return [(b.key, b.description) for b in self.BINDINGS if isinstance(b, Binding) and b.description]
