"""The three panes of a session (transcript | ledger | gate), fed one event at a time.

Live sessions and replay both build their screen from this widget and both call `add_event`, so a fact
looks the same whether it is happening or being replayed. In a narrow terminal the panes stack: one is
shown full-width and `cycle()` moves to the next (the layout switch is a CSS class, no re-compose).
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message

from console.runtime.textview import shown
from console.tui.widgets.gate_log import GatePane
from console.tui.widgets.ledger_tree import LedgerPane
from console.tui.widgets.transcript import TranscriptPane
from core.events import (
    Event,
    GateDecided,
    LedgerStaled,
    LedgerUpdated,
    SessionEnded,
    SessionStarted,
    SupervisorDecided,
    ToolResultEvent,
)
from core.ledger import LedgerReader

NARROW_WIDTH = 110  # below this many columns the panes stack, one full-width at a time
PANES = ("transcript", "ledger", "gate")


class SessionPanes(Horizontal):
    class Arranged(Message):
        """The pane in front or the layout changed (the status bar names the pane in front when stacked)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("id", "panes")
        super().__init__(**kwargs)
        self.front = "transcript"
        self._narrow = False

    def compose(self) -> ComposeResult:
        yield TranscriptPane(id="transcript")
        yield LedgerPane(id="ledger")
        yield GatePane(id="gate")

    def on_mount(self) -> None:
        self._pane_refs = (self.query_one(TranscriptPane), self.query_one(LedgerPane), self.query_one(GatePane))
        self.set_front(self.front)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.recolour())

    def recolour(self) -> None:
        """The theme changed: what the panes already show is drawn again in its colours (each pane colours by
        role when it renders, see console.tui.theme)."""
        self.transcript.recolour()
        self.ledger.recolour()
        self.gate.recolour()

    @property
    def transcript(self) -> TranscriptPane:
        return self._pane_refs[0]

    @property
    def ledger(self) -> LedgerPane:
        return self._pane_refs[1]

    @property
    def gate(self) -> GatePane:
        return self._pane_refs[2]

    def clear(self, ledger: bool = True) -> None:
        """Forget everything shown: entries, rows, counters, details, highlights.

        Replay keeps the ledger tree (`ledger=False`) when it moves between steps and syncs it to the
        step's ledger instead, so the operator's expanded groups survive the slider.
        """
        self.transcript.clear()
        self.gate.clear()
        if ledger:
            self.ledger.clear()

    def add_event(self, event: Event, ledger: LedgerReader | None = None) -> None:
        """Show one core event in every pane it concerns; `ledger` is the ledger as of this event. Its text is
        shown inert (`shown`: a control character in it is drawn as `␛`, never sent to the terminal)."""
        event = shown(event)
        self.transcript.add_event(event)
        self.add_gate_event(event)
        match event:
            case SessionStarted(agent="fc"):
                self.ledger.show_no_ledger()
            case LedgerUpdated() if ledger is not None:
                flash = list(event.added) + list(event.changed)
                self.ledger.sync(ledger, flash=flash, paths=flash + list(event.refreshed))
            case LedgerStaled() if ledger is not None:
                self.ledger.sync(ledger, flash=list(event.paths), paths=list(event.paths))
            case _:
                pass

    def add_gate_event(self, event: Event) -> None:
        """The gate pane's part of `add_event` alone: a decision, an operator's decision, a call's result (replay
        feeds the gate pane the decisions before the conversation's window this way)."""
        event = shown(event)  # (the same object when add_event made it inert already)
        match event:
            case GateDecided():
                self.gate.add_decision(event)
            case SupervisorDecided():
                self.gate.note_override(event)
            case ToolResultEvent():
                self.gate.note_result(event)
            case SessionEnded():
                self.gate.note_ended()
            case _:
                pass

    # ------------------------------------------------------------------------------------ layout

    @property
    def narrow(self) -> bool:
        return self._narrow

    def _apply_layout(self) -> None:
        """Stacked or side by side, by inline styles on the three panes only.

        A CSS class on this container would re-match the stylesheet for every descendant (thousands of
        lines' worth of DataTable, Tree and transcript styles) on each switch; inline rules touch three nodes.
        """
        for name, pane in zip(PANES, self._pane_refs, strict=True):
            styles = pane.styles
            if self._narrow:
                styles.display = "block" if name == self.front else "none"
                styles.width = "1fr"
                styles.min_width = 0
            else:
                # set, not cleared: clearing `display` leaves the parent's cache of displayed children stale,
                # and growing a real terminal past the breakpoint then kept one pane until the next resize
                styles.display = "block"
                for rule in ("width", "min_width"):
                    styles.clear_rule(rule)

    def set_front(self, pane: str) -> None:
        changed = pane != self.front
        self.front = pane
        self._apply_layout()
        if changed:
            self.post_message(self.Arranged())

    @property
    def stacked_front(self) -> str:
        """The pane shown in the stacked layout ("" side by side, where all three are)."""
        return self.front if self._narrow else ""

    @property
    def behind(self) -> tuple[str, ...]:
        """In the stacked layout, the panes `l` brings to the front, in the order it brings them."""
        if not self._narrow:
            return ()
        index = PANES.index(self.front)
        return (*PANES[index + 1:], *PANES[:index])

    def cycle(self) -> str:
        """Bring the next pane to the front (used in the stacked, narrow layout)."""
        self.set_front(PANES[(PANES.index(self.front) + 1) % len(PANES)])
        return self.front

    def on_descendant_focus(self, event: Any) -> None:
        """In the stacked layout the pane that gets the focus comes to the front."""
        for name, pane in zip(PANES, self._pane_refs, strict=True):
            if event.widget is pane or pane in event.widget.ancestors:
                if name != self.front:
                    self.set_front(name)
                return

    def fit(self, width: int) -> bool:
        """Stacked below NARROW_WIDTH columns; True if the layout changed.

        The screen calls this from its own Resize handler with the terminal's new width, which runs before
        Textual's (the handlers are dispatched from the subclass up): the screen's one layout pass and frame
        for the resize then already draw the new layout, instead of one frame in the old layout and a second
        full layout pass once this container heard of its own new size.
        """
        narrow = width < NARROW_WIDTH
        if narrow == self._narrow:
            return False
        self._narrow = narrow
        self._apply_layout()
        self.post_message(self.Arranged())
        return True

    def on_resize(self, event: events.Resize) -> None:
        """A screen that did not call `fit` first (or a container narrower than the screen): fit to our width."""
        self.fit(event.size.width)


def apply_filter(panes: SessionPanes, target: str, text: str) -> None:
    """Filter one pane: transcript entries and gate rows are narrowed; ledger paths that match are marked."""
    if target == "gate":
        panes.gate.set_filter(text)
    elif target == "ledger":
        tree = panes.ledger.ledger_tree
        needle = text.strip().lower()
        panes.ledger.highlight([p for p in tree.nodes_by_path if needle and needle in p.lower()])
    else:
        panes.transcript.set_filter(text)
