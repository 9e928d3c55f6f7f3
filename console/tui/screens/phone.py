"""The customer's phone, for an operator playing the customer in a dual-control domain (telecom).

Actions run on the customer's side, never gated (the gate guards the agent's writes), and their results
appear in the transcript like every call. Half duplex as in tau2: an action taken while the agent is working
runs at the start of the customer's next turn.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Select, Static

from console.runtime.live import LiveSession
from console.tui.theme import palette_of
from console.tui.widgets.schema_form import SchemaForm


class PhoneScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("ctrl+s", "run_action", "Run on the phone"),
                Binding("question_mark", "app.help", "Keys")]

    def __init__(self, live: LiveSession) -> None:
        super().__init__()
        self.live = live
        self.tools = {t.name: t for t in live.domain.user_tools()}

    def compose(self) -> ComposeResult:
        with Vertical(id="phone-dialog"):
            yield Static("The customer's phone", classes="screen-title")
            yield Select([(name, name) for name in self.tools], id="phone-tool", prompt="choose an action")
            yield Static("", id="phone-description")
            yield VerticalScroll(id="phone-form")
            yield Static("", id="phone-message")
            with Horizontal(id="phone-buttons"):
                yield Button(Text("Run on the phone [ctrl+s]"), id="phone-run", variant="primary")
                yield Button(Text("Close [esc]"), id="phone-close")
        yield Footer()

    @property
    def form(self) -> SchemaForm | None:
        forms = self.query(SchemaForm)
        return forms.first() if forms else None

    @on(Select.Changed, "#phone-tool")
    async def _tool(self, event: Select.Changed) -> None:
        container = self.query_one("#phone-form", VerticalScroll)
        await container.remove_children()
        if event.value is Select.BLANK:
            return
        spec = self.tools[str(event.value)]
        self.query_one("#phone-description", Static).update(Text(spec.description, "dim"))
        await container.mount(SchemaForm(spec))

    def action_run_action(self) -> None:
        form = self.form
        message = self.query_one("#phone-message", Static)
        if form is None:
            message.update(Text("Choose an action first.", palette_of(self).text("error", "bold")))
            return
        arguments, problems = form.values()
        if problems:
            message.update(Text("; ".join(problems), palette_of(self).text("error", "bold")))
            return
        human = self.live.human
        assert human is not None
        human.act(form.spec.name, arguments)
        when = "now" if human.waiting else "at the start of your next turn"
        self.app.notify(f"{form.spec.name} runs on the phone {when}; its result shows in the transcript.",
                        timeout=4)
        self.dismiss()

    @on(Button.Pressed)
    def _button(self, event: Button.Pressed) -> None:
        if event.button.id == "phone-run":
            self.action_run_action()
        else:
            self.dismiss()
