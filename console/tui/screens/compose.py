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
from core.gate import GateReadRecord


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

    async def action_dry_run(self) -> bool:
        """Show what sending the composed call now would get: the verdict exactly as the send would judge it
        (the session's executor, its evidence mode, the reads the gate would make itself, listed), recorded
        nowhere. False when there is no valid call to judge."""
        form = self.form
        if form is None:
            self._show(Text("Choose a tool first.", palette_of(self).text("error", "bold")))
            return False
        arguments, problems = form.values()
        if problems:
            self._show(Text("; ".join(problems), palette_of(self).text("error", "bold")))
            return False
        summary, decision = await self.live.dry_run(form.spec.name, arguments)
        if decision is None:
            self._show(Text(summary, palette_of(self).text("error", "bold") if summary.startswith("invalid") else ""))
            return not summary.startswith("invalid")
        text = Text.assemble(("dry-run: ", "bold"), (f" {summary} ", palette_of(self).badge(summary)))
        text.append("\n" + (decision.feedback or "All rules passed: it would run."))
        if decision.gate_reads:
            text.append("\nreads the gate would make: " + "; ".join(_read_text(r) for r in decision.gate_reads))
        if decision.evidence:
            text.append("\nevidence: " + ", ".join(decision.evidence), "dim")
        self._show(text)
        return True

    async def action_send_call(self) -> None:
        form = self.form
        if form is None or not await self.action_dry_run():
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
    async def _button(self, event: Button.Pressed) -> None:
        if event.button.id == "dry-run":
            await self.action_dry_run()
        elif event.button.id == "send-call":
            await self.action_send_call()
        elif event.button.id == "close":
            self.dismiss()


def _read_text(read: GateReadRecord) -> str:
    """A read the gate would make, as the dry-run lists it: the call, and what became of it unless absorbed."""
    if read.outcome == "ok":
        return read.text
    if read.outcome == "gate_only":
        return f"{read.text} (not the customer's: for the gate only, not shown to the model)"
    return f"{read.text} (would fail: {read.detail})"
