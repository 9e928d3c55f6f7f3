"""New session dialog: domain, scenario or free chat, agent, model endpoint, seat and supervision mode."""

from __future__ import annotations

import os
from dataclasses import replace

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Select, Static

from console.runtime.live import SessionSpec, SupervisionMode
from console.tui.theme import palette_of
from console.tui.widgets.dialog import DialogActions, DialogFrame
from core.agent import AGENTS
from core.scenario import list_scenarios
from domains.registry import DOMAINS, load_domain

FREE_CHAT = "(free chat)"
MODELS = [("scripted demo (the scenario's script)", "scripted"), ("you play the agent", "operator"),
          ("OpenAI-compatible endpoint", "endpoint")]


class NewSessionScreen(ModalScreen[SessionSpec]):
    BINDINGS = [Binding("escape", "dismiss", "Cancel"), Binding("ctrl+s", "start", "Start"),
                Binding("question_mark", "app.help", "Keys")]

    def __init__(self, current: SessionSpec) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        c = self.current
        endpoint = c.model not in ("scripted", "operator")
        # DialogFrame: the title on top, the error and the buttons at the bottom, the fields scroll in between.
        with DialogFrame(id="new-session-dialog"):
            yield Static("New session", classes="screen-title dialog-top")
            yield Label("Domain")
            yield Select([(d, d) for d in DOMAINS], value=c.domain, id="ns-domain", allow_blank=False)
            yield Label("Scenario")
            yield Select(self._scenarios(c.domain), value=c.scenario or FREE_CHAT, id="ns-scenario",
                         allow_blank=False)
            yield Label("Agent")
            yield Select([("LedgerAgent (ledger + gate)", "ledger"), ("plain function calling", "fc"),
                          ("ledger without gate", "ledger-no-gate")], value=c.agent, id="ns-agent",
                         allow_blank=False)
            yield Label("Model")
            yield Select(MODELS, value="endpoint" if endpoint else c.model, id="ns-model", allow_blank=False)
            yield Label("Model name and base URL (OpenAI-compatible: OpenAI, vLLM, Ollama, llama.cpp)")
            with Horizontal(classes="row"):
                yield Input(value=c.model if endpoint else "", placeholder="e.g. gpt-4.1 or qwen3",
                            id="ns-model-name")
                yield Input(value=c.base_url or "", placeholder="e.g. http://127.0.0.1:11434/v1",
                            id="ns-base-url")
            key = "OPENAI_API_KEY is set" if os.environ.get("OPENAI_API_KEY") else (
                "OPENAI_API_KEY is not set (fine for local servers)")
            yield Static(Text(f"The API key comes from the environment: {key}.", "dim"))
            yield Label("Your seat")
            yield Select([("watch (scripted or LLM customer)", "watch"), ("play the customer", "customer")],
                         value=c.seat, id="ns-seat", allow_blank=False)
            yield Label("Supervision")
            yield Select([(m.value, m.value) for m in SupervisionMode], value=c.mode.value, id="ns-mode",
                         allow_blank=False)
            with DialogActions(id="ns-actions"):
                yield Static("", id="ns-error")
                with Horizontal(id="ns-buttons"):
                    yield Button(Text("Start [ctrl+s]"), id="ns-start", variant="primary")
                    yield Button(Text("Cancel [esc]"), id="ns-cancel")
        yield Footer()

    @staticmethod
    def _scenarios(domain: str) -> list[tuple[str, str]]:
        names = list(list_scenarios(load_domain(domain).scenarios_dir))
        return [(n, n) for n in names] + [(FREE_CHAT, FREE_CHAT)]

    @on(Select.Changed, "#ns-domain")
    def _domain(self, event: Select.Changed) -> None:
        scenario = self.query_one("#ns-scenario", Select)
        options = self._scenarios(str(event.value))
        keep = scenario.value
        scenario.set_options(options)
        # The current scenario stays selected (Select announces its first value too); another domain's
        # list starts at its first scenario.
        values = [value for _label, value in options]
        scenario.value = keep if keep in values else options[0][1]

    def spec(self) -> SessionSpec:
        def value(widget_id: str) -> str:
            return str(self.query_one(widget_id, Select).value)

        model = value("#ns-model")
        if model == "endpoint":
            model = self.query_one("#ns-model-name", Input).value.strip()
        scenario = value("#ns-scenario")
        base_url = self.query_one("#ns-base-url", Input).value.strip() or None
        return replace(self.current, domain=value("#ns-domain"),
                       scenario=None if scenario == FREE_CHAT else scenario, agent=value("#ns-agent"),
                       model=model, base_url=base_url, seat=value("#ns-seat"),
                       mode=SupervisionMode(value("#ns-mode")))

    def action_start(self) -> None:
        spec = self.spec()
        problems = spec.problems()
        if spec.agent not in AGENTS:
            problems.append("choose an agent")
        if problems:
            error = palette_of(self).text("error", "bold")
            self.query_one("#ns-error", Static).update(Text("; ".join(problems), error))
            return
        self.dismiss(spec)

    @on(Button.Pressed)
    def _button(self, event: Button.Pressed) -> None:
        if event.button.id == "ns-start":
            self.action_start()
        else:
            self.dismiss()
