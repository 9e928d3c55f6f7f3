"""Play the agent: write to the customer, or compose a tool call from a form and see the verdict first."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Select, Static

from console.runtime.live import LiveSession
from console.tui.theme import palette_of
from console.tui.widgets.dialog import DialogActions, DialogFrame
from console.tui.widgets.schema_form import SchemaForm


class ComposeScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("ctrl+d", "dry_run", "Dry-run", priority=True),
                Binding("ctrl+s", "send_call", "Send call"), Binding("question_mark", "app.help", "Keys")]

    def __init__(self, live: LiveSession) -> None:
        super().__init__()
        self.live = live
        self.tools = {t.name: t for t in live.domain.agent_tools()}

    def compose(self) -> ComposeResult:
        # DialogFrame: the title on top, the dry-run result and the buttons at the bottom (always on screen), the
        # fields in between in the order Tab visits them; the form is a plain column, not a second Tab stop.
        with DialogFrame(id="compose-dialog"):
            yield Static("You are the agent", classes="screen-title dialog-top")
            yield Label("Message to the customer:")
            with Horizontal(classes="row"):
                yield Input(placeholder="Type a message and press Enter", id="compose-message")
            yield Label("…or a tool call:")
            yield Select([(name, name) for name in self.tools], id="compose-tool", prompt="choose a tool")
            yield Static("", id="compose-description")
            yield Vertical(id="compose-form")
            with DialogActions(id="compose-actions"):
                yield Static("", id="compose-verdict")
                with Horizontal(id="compose-buttons"):
                    yield Button(Text("Dry-run [ctrl+d]"), id="dry-run")
                    yield Button(Text("Send call [ctrl+s]"), id="send-call", variant="primary")
                    yield Button(Text("Close [esc]"), id="close")
        yield Footer()

    @property
    def form(self) -> SchemaForm | None:
        forms = self.query(SchemaForm)
        return forms.first() if forms else None

    @on(Select.Changed, "#compose-tool")
    async def _tool(self, event: Select.Changed) -> None:
        container = self.query_one("#compose-form", Vertical)
        await container.remove_children()
        self.query_one("#compose-verdict", Static).update("")
        if event.value is Select.BLANK:
            return
        spec = self.tools[str(event.value)]
        self.query_one("#compose-description", Static).update(
            Text(f"{spec.kind.value.upper()} · {spec.description}", "dim"))
        await container.mount(SchemaForm(spec))

    def _show(self, text: Text) -> None:
        self.query_one("#compose-verdict", Static).update(text)

    def action_dry_run(self) -> bool:
        form = self.form
        if form is None:
            self._show(Text("Choose a tool first.", palette_of(self).text("error", "bold")))
            return False
        arguments, problems = form.values()
        if problems:
            self._show(Text("; ".join(problems), palette_of(self).text("error", "bold")))
            return False
        summary, decision = self.live.dry_run(form.spec.name, arguments)
        if decision is None:
            self._show(Text(summary, palette_of(self).text("error", "bold") if summary.startswith("invalid") else ""))
            return not summary.startswith("invalid")
        text = Text.assemble(("dry-run: ", "bold"), (f" {summary} ", palette_of(self).badge(summary)))
        text.append("\n" + (decision.feedback or "All rules passed: it would run."))
        if decision.evidence:
            text.append("\nevidence: " + ", ".join(decision.evidence), "dim")
        self._show(text)
        return True

    def action_send_call(self) -> None:
        form = self.form
        if form is None or not self.action_dry_run():
            return
        agent = self.live.operator_agent
        assert agent is not None
        arguments, _ = form.values()
        agent.call(form.spec.name, arguments)
        self.dismiss()

    @on(Input.Submitted, "#compose-message")
    def _message(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text and self.live.operator_agent is not None:
            self.live.operator_agent.say(text)
            self.dismiss()

    @on(Button.Pressed)
    def _button(self, event: Button.Pressed) -> None:
        if event.button.id == "dry-run":
            self.action_dry_run()
        elif event.button.id == "send-call":
            self.action_send_call()
        elif event.button.id == "close":
            self.dismiss()
