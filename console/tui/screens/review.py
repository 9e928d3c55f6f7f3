"""The override modal on a proposed write: approve or accept the verdict, veto with a message, edit (re-gated),
force-allow.

A decision comes only from an act that names it: its key (`a`, `v`, `e`, `f`: the footer says what each does
for the verdict on screen, and a key that does nothing for it is not there) or its button (clicked, or Enter on
the button that has the focus). Focus moving, and Enter in a text box, never choose a decision by themselves:

- an act that needs more than the key is *started*: a veto needs the message to the model, a force-allow its
  reason, an edit valid arguments. The modal says what is missing and puts the cursor where it goes; Enter in
  the reason box then completes the decision that was started, with the reason as typed.
- with nothing started, Enter in the reason box (and escape in a text box) goes to the *safe* button: accept the
  gate's refusal on a REVISE/BLOCK, veto on an ALLOW. Never to Force-allow, which stays two deliberate acts
  (`f` or its button, and a reason) and names what it overrides on its button (`Force-allow despite BLOCK`).
- escape on the buttons leaves the modal undecided (the call keeps waiting).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static, TextArea

from console.runtime.facts import customer_words, refusal_words
from console.tui.theme import palette_of
from console.tui.widgets.dialog import DialogActions, DialogFrame
from core.domain import Domain
from core.gate import GateDecision
from core.strict_json import inert, inert_json
from core.supervisor import Decision, Resolution
from core.tools import ToolCall, validate_arguments

EDITING_HINT = "editing: keys are text here; escape leaves the box, then e re-gates"
REFUSALS = ("REVISE", "BLOCK")


def approve_label(verdict: str | None) -> str:
    """What `a` does for this verdict: an ALLOW runs; a REVISE/BLOCK is accepted, and nothing runs."""
    return "Approve (run it)" if verdict not in REFUSALS else f"Accept {verdict} (don't run)"


def force_label(verdict: str) -> str:
    return f"Force-allow despite {verdict}"


class ReasonInput(Input):
    """The reason box: Enter completes the decision the operator started, or goes to the safe button.

    A priority binding, so the App runs it while it routes the Enter key itself, before it routes the next
    key. With nothing started the focus moves at once, so a key typed right after Enter goes where the footer
    then says (the buttons' keys), not into the box. A started decision is completed from this box's own queue
    instead, behind the keys typed before Enter that the box has not inserted yet: its reason is exactly what
    was typed, even when the keys came in one burst."""

    BINDINGS = [Binding("enter", "entered", "Finish the decision", priority=True, show=False)]

    def action_entered(self) -> None:
        screen = self.screen
        if not isinstance(screen, ReviewScreen):
            return
        if screen.started is None:
            screen.to_safe()
        else:
            self.call_later(screen.reason_entered)


class ReviewScreen(ModalScreen[Resolution | None]):
    """Shown when the supervision mode wants a human on this write. Ends with the Resolution the operator chose,
    or None when they left it undecided (escape): the caller keeps the call waiting, it never picks one."""

    AUTO_FOCUS = ""  # on_mount focuses the safe button; Textual's default would focus the first field
    # Per verdict, `check_action` keeps the one `a` and the one `f` (none on an ALLOW) that say what the key does
    # here: the others are not run, not shown in the footer, and not listed by `?`.
    BINDINGS = [
        Binding("a", "approve", approve_label("ALLOW")),
        *(Binding("a", f"accept('{v}')", approve_label(v)) for v in REFUSALS),
        Binding("v", "veto", "Veto"),
        Binding("e", "edit", "Edit & re-gate"),
        *(Binding("f", f"force('{v}')", force_label(v)) for v in REFUSALS),
        Binding("escape", "leave_box", "Leave the box"),
        Binding("escape", "back", "Back, undecided"),
        Binding("question_mark", "app.help", "Keys"),  # a modal hides the App's keys: its own `?`
    ]

    def __init__(self, call: ToolCall, decision: GateDecision | None, domain: Domain, who: str) -> None:
        super().__init__()
        self.call = call
        self.decision = decision
        self.domain = domain
        self.who = who
        self.started: Decision | None = None  # the act that waits for its reason / valid arguments
        self.closed = False  # dismissed: keys still queued for it (a burst) decide nothing more

    @property
    def verdict(self) -> str | None:
        return None if self.decision is None else self.decision.verdict.value

    @property
    def refused(self) -> bool:
        """The gate refused the call (REVISE/BLOCK): `a` accepts that, `f` is the one door around it."""
        return self.verdict in REFUSALS

    def compose(self) -> ComposeResult:
        verdict = self.verdict
        with DialogFrame(id="review-dialog"):
            title = Text.assemble(("Review write  ", "bold"), (inert(self.call.name), "bold"))
            if verdict is not None:
                title.append("   gate: ")
                title.append(f" {verdict} ", palette_of(self).badge(verdict))
                title.append(f" {refusal_words(self.decision.refusal if self.decision else None)}")
            else:
                title.append("   (no gate in this agent configuration)", "dim")
            yield Static(title, id="review-title", classes="dialog-top")
            yield Static(self._feedback(), id="review-feedback")
            yield Label("Arguments (edit them, then escape and e to re-gate):")
            yield TextArea(inert_json(json.dumps(dict(self.call.arguments), indent=2, ensure_ascii=False)),
                           language="json", id="review-arguments", soft_wrap=True)
            with DialogActions(id="review-actions"):
                yield Label("Reason / message to the model (needed to veto or to force-allow):",
                            id="review-reason-label")
                # Coming back to the box continues the reason: with Input's select-on-focus the next letter typed
                # replaced everything written so far.
                yield ReasonInput(placeholder="why?", id="review-reason", select_on_focus=False)
                yield Static("", id="review-error")
                with Horizontal(id="review-buttons"):
                    yield Button(Text(f"{approve_label(verdict)} [a]"), id="approve",
                                 variant="primary" if self.refused else "success")
                    yield Button(Text("Veto [v]"), id="veto", variant="error")
                    yield Button(Text("Edit & re-gate [e]"), id="edit")
                    if verdict is not None and self.refused:
                        yield Button(Text(f"{force_label(verdict)} [f]"), id="force", variant="warning")
        yield Footer()

    def on_mount(self) -> None:
        self.to_safe()

    def on_resize(self, event: events.Resize) -> None:
        """A small terminal: the dialog takes the whole screen and the buttons go two by two (the middle
        scrolls; the reason box and the buttons stay, DialogFrame). The footer packs its keys closer, so that
        every decision key with what it does fits in 80 columns."""
        self.set_class(event.size.width < 130 or event.size.height < 30, "-compact")
        self.query_one(Footer).compact = event.size.width < 120

    # ------------------------------------------------------------------------------------------ keys

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "approve":
            return not self.refused
        if action in ("accept", "force"):
            return self.refused and parameters == (self.verdict,)
        if action == "leave_box":
            return self._in_text_box()
        if action == "back":
            return not self._in_text_box()
        return True

    def _in_text_box(self) -> bool:
        return isinstance(self.focused, Input | TextArea)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Say when the arguments box has the keys: inside it `e` and `a` are text, not decisions."""
        self._editing(event.widget.id == "review-arguments")
        self.refresh_bindings()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if event.widget.id == "review-arguments":
            self._editing(False)
        self.refresh_bindings()

    def _editing(self, editing: bool) -> None:
        """On the box's own border, so it shows wherever the body is scrolled to."""
        self.query_one("#review-arguments", TextArea).border_title = EDITING_HINT if editing else None

    def safe_button(self) -> Button:
        """Accept the refusal on a REVISE/BLOCK; veto (which asks for its message) on an ALLOW."""
        return self.query_one("#approve" if self.refused else "#veto", Button)

    def to_safe(self) -> None:
        self.set_focus(self.safe_button())

    def reason_entered(self) -> None:
        """Enter in the reason box: the decision the operator started, with this reason; else the safe button."""
        started = self.started
        if started is None:
            self.to_safe()
        elif started is Decision.VETO:
            self._veto()
        elif started is Decision.FORCE_ALLOW:
            self._force(self.verdict or "")
        elif started is Decision.EDIT:
            self._edit()

    def begin(self, decision: Decision, note: str, *, into: str = "#review-reason") -> None:
        """Start `decision`: it waits for what `note` asks for, typed into `into` (which gets the cursor)."""
        self.started = decision
        self._note(note, error=False)
        target = self.query_one(into)
        self.set_focus(target)

    # ------------------------------------------------------------------------------------------ decisions

    def _feedback(self) -> Text:
        if self.decision is None:
            return Text("No predicates were evaluated.")
        said = customer_words(self.decision.results)
        if not self.decision.failed:
            ids = ", ".join(r.predicate_id for r in self.decision.results) or "no rule guards this tool"
            text = Text(f"All rules passed ({ids}).", palette_of(self).text("success"))
        else:
            text = Text(inert(self.decision.feedback, lines=True))
        if said:  # what the customer said, quoted beside the verdict (their yes, their reason): never judged
            text.append("\ncustomer: ", "bold")
            text.append(inert(said))
        return text

    def _reason(self) -> str:
        return self.query_one("#review-reason", Input).value.strip()

    def _note(self, message: str, *, error: bool = True) -> None:
        style = palette_of(self).text("error", "bold") if error else palette_of(self).text("warning", "bold")
        self.query_one("#review-error", Static).update(Text(message, style))

    def _close(self, resolution: Resolution | None) -> None:
        """Dismiss once. Keys sent in the same burst as the deciding one are still routed here until the screen is
        gone: they must neither decide again nor pop the screen under this one."""
        if not self.closed:
            self.closed = True
            self.dismiss(resolution)

    def _when_typed(self, act: Callable[[], None]) -> None:
        """Run a decision once both text boxes have taken every key sent to them before its key. A key goes to
        a box's own queue, and a decision key (routed by the App) can overtake the letters typed just before
        it, in one burst from a terminal: the reason and arguments decided on are exactly what was typed."""
        box = self.query_one(ReasonInput)
        self.query_one("#review-arguments", TextArea).call_later(box.call_later, act)

    # The keys and buttons: each names its decision, run once what was typed has landed.

    def action_approve(self) -> None:
        self._when_typed(self._approve)

    def action_accept(self, verdict: str) -> None:
        self._when_typed(lambda: self._accept(verdict))

    def action_veto(self) -> None:
        self._when_typed(self._veto)

    def action_force(self, verdict: str) -> None:
        self._when_typed(lambda: self._force(verdict))

    def action_edit(self) -> None:
        self._when_typed(self._edit)

    def _approve(self) -> None:
        """An ALLOW runs."""
        if not self.refused:
            self._close(Resolution(Decision.APPROVE, who=self.who, reason=self._reason()))

    def _accept(self, verdict: str) -> None:
        """A REVISE/BLOCK is accepted: it does not run, recorded under its own name (not as an approval)."""
        if self.refused and verdict == self.verdict:
            self._close(Resolution(Decision.ACCEPT_VERDICT, who=self.who, reason=self._reason()))

    def _veto(self) -> None:
        reason = self._reason()
        if not reason:
            self.begin(Decision.VETO, "To veto, write the message for the model here, then press Enter.")
            return
        self._close(Resolution(Decision.VETO, who=self.who, reason=reason))

    def _force(self, verdict: str) -> None:
        if not self.refused or verdict != self.verdict:
            return
        reason = self._reason()
        if not reason:
            self.begin(Decision.FORCE_ALLOW, f"A force-allow despite the {verdict} needs a reason (recorded with "
                       "your name and the time): write it here, then press Enter.")
            return
        self._close(Resolution(Decision.FORCE_ALLOW, who=self.who, reason=reason))

    def _edit(self) -> None:
        problem, arguments = self._edited()
        if problem:
            self.started = Decision.EDIT
            self._note(problem)
            return
        self._close(Resolution(Decision.EDIT, who=self.who, reason=self._reason(), arguments=arguments))

    def _edited(self) -> tuple[str, dict[str, Any]]:
        """The edited arguments, or what is wrong with them."""
        text = self.query_one("#review-arguments", TextArea).text
        try:
            arguments: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            return f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", {}
        if not isinstance(arguments, dict):
            return "The arguments must be a JSON object.", {}
        spec = self.domain.tool(self.call.name)
        problems = validate_arguments(spec, arguments) if spec is not None else []
        return "; ".join(problems), arguments

    def action_leave_box(self) -> None:
        self.to_safe()

    def action_back(self) -> None:
        self._close(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        """A button is its decision's act, as its key is."""
        button, verdict = event.button.id, self.verdict or ""
        if button == "approve":
            self.action_accept(verdict) if self.refused else self.action_approve()
        elif button == "veto":
            self.action_veto()
        elif button == "edit":
            self.action_edit()
        elif button == "force":
            self.action_force(verdict)
