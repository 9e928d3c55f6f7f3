"""A yes/no question (quit a running session? approve these calls?): y confirms, n / escape cancels; Enter presses
the focused button (No, at first).

Its keys are taken in the order typed (console/tui/key_order.py): a `y` (or Enter on Yes) typed before the
question was on screen, in the same burst as the key that asked it, answers nothing: the question says to press
it again. No is always taken: it changes nothing.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.tui.key_order import InOrderApp, KeyInterpreter
from console.tui.widgets.dialog import DialogActions, DialogFrame
from console.tui.widgets.footer import ConsoleFooter


class ConfirmScreen(KeyInterpreter, ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question
        self.answered = False

    def compose(self) -> ComposeResult:
        with DialogFrame(id="confirm-dialog"):  # a long question scrolls; the buttons stay on screen
            yield Static(self.question, id="confirm-question")
            with DialogActions(id="confirm-actions"), Horizontal(id="confirm-buttons"):
                yield Button("Yes [y]", id="yes", variant="error")
                yield Button("No [n]", id="no", variant="primary")
        yield ConsoleFooter()  # as every decision dialog's: its keys wrap into rows, never cut at the edge

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()
        self.keys_ready(self.app)

    async def interpret(self, event: events.Key) -> bool:
        if self.answered:
            return True
        key = event.key
        if key in ("tab", "shift+tab"):
            self.focus_next() if key == "tab" else self.focus_previous()
            self.changed()
            return True
        focused = self.focused
        yes = key == "y" or (key == "enter" and isinstance(focused, Button) and focused.id == "yes")
        if yes:
            if self.stale(event):
                self.notify("Typed before this question was shown, so not taken: press y again to answer yes.",
                            severity="warning")
                self.changed()
            else:
                self.action_answer(True)
            return True
        if key in ("n", "escape") or key == "enter":
            self.action_answer(False)
            return True
        return event.is_printable  # a letter that answers nothing; other keys (scrolling) as Textual routes them

    def action_answer(self, yes: bool) -> None:
        if not self.answered:
            self.answered = True
            if isinstance(self.app, InOrderApp):
                self.app.dialog_closed()
            self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")
