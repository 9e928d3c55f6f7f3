"""The override modal on a proposed write: approve, veto with a message, edit (re-gated), force-allow."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static, TextArea

from console.facts import refusal_words
from console.theme import palette_of
from core.domain import Domain
from core.gate import GateDecision
from core.supervisor import Decision, Resolution
from core.tools import ToolCall, validate_arguments

EDITING_HINT = "editing: letters are text here; Tab leaves, then e re-gates"


class ReasonInput(Input):
    """The reason box: Enter moves on to the decision buttons, keeping the reason.

    A priority binding, so the App runs it while it routes the Enter key itself, before it routes the next
    key: focus has moved when that key is dispatched, and it goes where the footer says (a button's screen
    keys). Input's own Enter (a `Submitted` message handled later, hops up the tree) let a key typed right
    after Enter land in the box."""

    BINDINGS = [Binding("enter", "leave", "To the buttons", priority=True, show=False)]

    def action_leave(self) -> None:
        screen = self.screen
        if isinstance(screen, ReviewScreen):
            screen.to_buttons()


class ReviewScreen(ModalScreen[Resolution]):
    """Shown when the supervision mode wants a human on this write. Always ends with a Resolution."""

    BINDINGS = [
        Binding("a", "approve", "Approve"),
        Binding("v", "veto", "Veto"),
        Binding("e", "edit", "Edit & re-gate"),
        Binding("f", "force", "Force-allow"),
        Binding("question_mark", "app.help", "Keys"),  # a modal hides the App's keys: its own `?`
    ]

    def __init__(self, call: ToolCall, decision: GateDecision | None, domain: Domain, who: str) -> None:
        super().__init__()
        self.call = call
        self.decision = decision
        self.domain = domain
        self.who = who

    @property
    def verdict(self) -> str | None:
        return None if self.decision is None else self.decision.verdict.value

    def compose(self) -> ComposeResult:
        verdict = self.verdict
        with Vertical(id="review-dialog"):
            title = Text.assemble(("Review write  ", "bold"), (self.call.name, "bold"))
            if verdict is not None:
                title.append("   gate: ")
                title.append(f" {verdict} ", palette_of(self).badge(verdict))
                title.append(f" {refusal_words(self.decision.refusal if self.decision else None)}")
            else:
                title.append("   (no gate in this agent configuration)", "dim")
            yield Static(title, id="review-title")
            with VerticalScroll(id="review-body"):
                yield Static(self._feedback(), id="review-feedback")
                yield Label("Arguments (edit, then press Edit & re-gate):")
                yield TextArea(json.dumps(dict(self.call.arguments), indent=2, ensure_ascii=False),
                               language="json", id="review-arguments", soft_wrap=True)
                yield Label("Reason / message to the model (required to veto or force-allow; Enter: to the buttons):")
                yield ReasonInput(placeholder="why?", id="review-reason")
                yield Static("", id="review-error")
            with Horizontal(id="review-buttons"):
                approve = "Approve: run it" if verdict in (None, "ALLOW") else f"Accept {verdict}: don't run"
                yield Button(Text(f"{approve} [a]"), id="approve", variant="success" if verdict in (None, "ALLOW")
                             else "primary")
                yield Button(Text("Veto [v]"), id="veto", variant="error")
                yield Button(Text("Edit & re-gate [e]"), id="edit")
                if verdict in ("REVISE", "BLOCK"):
                    yield Button(Text("Force-allow [f]"), id="force", variant="warning")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#approve", Button).focus()

    def on_resize(self, event: events.Resize) -> None:
        """Keep the buttons on screen in a small terminal: the scrolling body gives up the rows."""
        compact = event.size.width < 110 or event.size.height < 30
        self.set_class(compact, "-compact")
        self.query_one("#review-body").styles.max_height = max(3, min(30, event.size.height - (13 if compact
                                                                                             else 12)))

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Say when the arguments box has the keys: inside it `e` and `a` are text, not decisions."""
        self._editing(event.widget.id == "review-arguments")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if event.widget.id == "review-arguments":
            self._editing(False)

    def _editing(self, editing: bool) -> None:
        """On the box's own border, so it shows wherever the body is scrolled to."""
        self.query_one("#review-arguments", TextArea).border_title = EDITING_HINT if editing else None

    def to_buttons(self) -> None:
        """From the reason box to the decision it is needed for: veto on an ALLOW, force-allow otherwise."""
        target = "#veto" if self.verdict in (None, "ALLOW") else "#force"
        self.set_focus(self.query_one(target, Button))

    def _feedback(self) -> Text:
        if self.decision is None:
            return Text("No predicates were evaluated.")
        if not self.decision.failed:
            ids = ", ".join(r.predicate_id for r in self.decision.results) or "no rule guards this tool"
            return Text(f"All rules passed ({ids}).", palette_of(self).text("success"))
        return Text(self.decision.feedback)

    def _reason(self) -> str:
        return self.query_one("#review-reason", Input).value.strip()

    def _error(self, message: str) -> None:
        self.query_one("#review-error", Static).update(Text(message, palette_of(self).text("error", "bold")))

    def action_approve(self) -> None:
        """Approve an ALLOW (it runs); for a REVISE/BLOCK this accepts the refusal, recorded under its own name."""
        kind = Decision.APPROVE if self.verdict in (None, "ALLOW") else Decision.ACCEPT_VERDICT
        self.dismiss(Resolution(kind, who=self.who, reason=self._reason()))

    def action_veto(self) -> None:
        reason = self._reason()
        if not reason:
            self._error("Write the message for the model in the reason box to veto.")
            self.query_one("#review-reason", Input).focus()
            return
        self.dismiss(Resolution(Decision.VETO, who=self.who, reason=reason))

    def action_force(self) -> None:
        if self.verdict not in ("REVISE", "BLOCK"):
            return
        reason = self._reason()
        if not reason:
            self._error("A force-allow needs a reason: it is recorded with your name and the time.")
            self.query_one("#review-reason", Input).focus()
            return
        self.dismiss(Resolution(Decision.FORCE_ALLOW, who=self.who, reason=reason))

    def action_edit(self) -> None:
        text = self.query_one("#review-arguments", TextArea).text
        try:
            arguments: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            self._error(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
            return
        if not isinstance(arguments, dict):
            self._error("The arguments must be a JSON object.")
            return
        spec = self.domain.tool(self.call.name)
        problems = validate_arguments(spec, arguments) if spec is not None else []
        if problems:
            self._error("; ".join(problems))
            return
        self.dismiss(Resolution(Decision.EDIT, who=self.who, reason=self._reason() or "edited arguments",
                                arguments=arguments))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        actions = {"approve": self.action_approve, "veto": self.action_veto, "edit": self.action_edit,
                   "force": self.action_force}
        if event.button.id in actions:
            actions[event.button.id]()
