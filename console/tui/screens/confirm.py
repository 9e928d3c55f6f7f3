"""A yes/no question (quit a running session?): y confirms, n / escape cancels; Enter presses the focused button
(No, at first)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from console.tui.widgets.dialog import DialogActions, DialogFrame


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with DialogFrame(id="confirm-dialog"):  # a long question scrolls; the buttons stay on screen
            yield Static(self.question, id="confirm-question")
            with DialogActions(id="confirm-actions"), Horizontal(id="confirm-buttons"):
                yield Button("Yes [y]", id="yes", variant="error")
                yield Button("No [n]", id="no", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
