"""The override modal on a proposed write: approve or accept the verdict, veto with a message, edit (re-gated),
force-allow.

A decision comes only from an act that names it: its key (`a`, `v`, `e`, `f`: the footer says what each does
for the verdict on screen, and a key that does nothing for it is not there) or its button (clicked, or Enter on
the button that has the focus). Focus moving, and Enter in a text box, never choose a decision by themselves:

- an act that needs more than the key is *started*: a veto needs the message to the model, a force-allow its
  reason, an edit arguments that are valid and differ from the proposal (an "edit" that changes nothing is
  not one: nothing is re-gated, nothing recorded). The modal says what is missing and puts the cursor where it
  goes; every key is then text there, and Enter in the reason box completes the decision that was started,
  with the reason as typed.
- with nothing started, Enter in the reason box (and escape in a text box) goes to the *safe* button: accept the
  gate's refusal on a REVISE/BLOCK, veto on an ALLOW. Never to Force-allow, which stays two deliberate acts
  (`f` or its button, and a reason) and names what it overrides on its button (`Force-allow despite BLOCK`).
- escape on the buttons leaves the modal undecided (the call keeps waiting).

The modal reads its keys itself, one at a time in the order they were typed, however fast they come
(console/tui/key_order.py): each key is applied to the modal as the keys before it left it. A key typed in the
same burst as one that changed the modal (it opened, a decision started, the cursor moved, a note appeared) was
typed before the operator could see that change: it may still be text in the box that has the cursor, but it
takes no decision, and the modal says to press it again.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static, TextArea

from console.runtime.facts import customer_words, refusal_words
from console.tui.key_order import InOrderApp, KeyInterpreter
from console.tui.theme import palette_of
from console.tui.widgets.dialog import DialogActions, DialogFrame
from console.tui.widgets.footer import ConsoleFooter
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


STALE = "typed before the dialog changed, so not taken as a decision: press {key} again{what}."
DECISION_KEYS = {"a": "approve", "v": "veto", "e": "edit", "f": "force"}
WHAT = {Decision.VETO: "veto", Decision.FORCE_ALLOW: "force-allow", Decision.EDIT: "re-gate the edit"}


class ReasonInput(Input):
    """The reason box. Its keys are read by the modal (`ReviewScreen.interpret`): text goes in as typed, and
    Enter completes the decision the operator started, or goes to the safe button."""


class ArgumentsArea(TextArea):
    """The arguments box (JSON): its keys are read by the modal, text as typed, Enter a new line."""


class ReviewScreen(KeyInterpreter, ModalScreen[Resolution | None]):
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
            yield ArgumentsArea(inert_json(json.dumps(dict(self.call.arguments), indent=2, ensure_ascii=False)),
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
        yield ConsoleFooter()  # its keys wrap into rows: each decision key whole with what it does at 80 columns

    def on_mount(self) -> None:
        self.opening()
        self.keys_ready(self.app)

    def opening(self) -> None:
        """Where the modal opens: on the safe button (the desk's modal starts the decision its key named)."""
        self.to_safe()

    def on_screen_resume(self) -> None:
        """Back in front (the keys' help was over it): what the operator sees changed."""
        self.changed()

    def on_resize(self, event: events.Resize) -> None:
        """A small terminal: the dialog takes the whole screen and the buttons go two by two (the middle
        scrolls; the reason box and the buttons stay, DialogFrame). The footer packs its keys closer, so that
        they take as few rows as they can (they wrap, never cut) and leave the rows to the dialog. The box with
        the cursor stays in view: the layout changes under it."""
        self.set_class(event.size.width < 130 or event.size.height < 30, "-compact")
        self.query_one(ConsoleFooter).compact = event.size.width < 120
        self._into_view()

    def _into_view(self) -> None:
        focused = self.focused
        if isinstance(focused, ArgumentsArea):
            frame = self.query_one(DialogFrame)
            self.call_after_refresh(frame.scroll_to_widget, focused, animate=False, top=False)

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

    async def interpret(self, event: events.Key) -> bool:
        """One key, applied to the modal as the keys before it left it (see the module docstring)."""
        if self.closed:
            return True  # typed for this modal after the key that decided: nothing more
        key, focused = event.key, self.focused
        if key in ("tab", "shift+tab"):
            self.focus_next() if key == "tab" else self.focus_previous()
            self.changed()
            return True
        if isinstance(focused, ReasonInput | ArgumentsArea):
            if key == "escape":
                self.to_safe()
            elif key == "enter" and isinstance(focused, ReasonInput):
                self.reason_entered(stale=self.stale(event))
            elif not type_into(focused, event):
                await self._binding(event)  # its editing keys: backspace, arrows, select all ...
            return True  # a box takes every key while it has the cursor
        if key == "escape":
            self._close(None)
            return True
        decision = DECISION_KEYS.get(key)
        if key == "enter" and isinstance(focused, Button):
            decision = focused.id
        if decision in ("approve", "veto", "edit") or (decision == "force" and self.refused):
            assert decision is not None
            if self.stale(event):
                self._note(STALE.format(key="Enter" if key == "enter" else key, what=""))
            else:
                self.act(decision)
            return True
        if await self._binding(event):  # `?`, scrolling
            return True
        return event.is_printable  # a letter that decides nothing here is used for nothing

    async def _binding(self, event: events.Key) -> bool:
        """The key's binding where the cursor is (a box's editing keys; `?`, scrolling), run now, in order."""
        active = self.active_bindings.get(event.key)
        if active is None or not active.enabled:
            return False
        await self.app.run_action(active.binding.action, active.node)
        return True

    def act(self, decision: str) -> None:
        """The operator's act for `decision` (its key or its button)."""
        if decision == "approve":
            self._accept(self.verdict or "") if self.refused else self._approve()
        elif decision == "veto":
            self._veto()
        elif decision == "edit":
            self._edit()
        elif decision == "force":
            self._force(self.verdict or "")

    def _focus(self, widget: Widget) -> None:
        self.set_focus(widget)
        self.changed()
        self._into_view()

    def safe_button(self) -> Button:
        """Accept the refusal on a REVISE/BLOCK; veto (which asks for its message) on an ALLOW."""
        return self.query_one("#approve" if self.refused else "#veto", Button)

    def to_safe(self) -> None:
        self._focus(self.safe_button())

    def reason_entered(self, stale: bool = False) -> None:
        """Enter in the reason box: the decision the operator started, with this reason; else the safe button.
        An Enter typed before the decision was started (or before its note was shown) completes nothing."""
        started = self.started
        if started is None:
            self.to_safe()
        elif stale:
            self._note(STALE.format(key="Enter", what=f" to {WHAT.get(started, started.value)}"))
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
        self._focus(self.query_one(into))

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
        self.query_one("#review-error", Static).update(Text(message[:1].upper() + message[1:], style))
        self.changed()

    def _close(self, resolution: Resolution | None) -> None:
        """Dismiss once. The keys typed on after the deciding one are for this modal, never for the screen
        under it (the App uses them for nothing)."""
        if not self.closed:
            self.closed = True
            if isinstance(self.app, InOrderApp):
                self.app.dialog_closed()
            self.dismiss(resolution)

    # The keys and buttons: each names its decision.

    def action_approve(self) -> None:
        self.act("approve")

    def action_accept(self, verdict: str) -> None:
        self._accept(verdict)

    def action_veto(self) -> None:
        self.act("veto")

    def action_force(self, verdict: str) -> None:
        self._force(verdict)

    def action_edit(self) -> None:
        self.act("edit")

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
        """Re-gate the edited arguments: only a real change is an edit. Arguments that are not valid, or that
        are the proposal's own, leave the modal open with the cursor in the box and say why."""
        problem, arguments = self._edited()
        if not problem and arguments == dict(self.call.arguments):
            problem = ("The arguments are unchanged: nothing to re-gate. Change an argument in the box (escape "
                       "leaves it, then e re-gates), or choose another decision.")
        if problem:
            self.begin(Decision.EDIT, problem, into="#review-arguments")
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
        """A button (clicked) is its decision's act, as its key is."""
        if event.button.id in ("approve", "veto", "edit", "force"):
            self.act(str(event.button.id))


def type_into(box: Input | TextArea, event: events.Key) -> bool:
    """Type the key's character into `box` at its cursor (over its selection), as the box itself would; Enter is
    a new line in the arguments. False for a key that is no text."""
    if isinstance(box, TextArea):
        text = "\n" if event.key == "enter" else event.character if event.is_printable else None
        if text is None:
            return False
        if not box.read_only:
            box.replace(text, *box.selection, maintain_selection_offset=False)
        return True
    if not event.is_printable or event.character is None:
        return False
    selection = box.selection
    if selection.is_empty:
        box.insert_text_at_cursor(event.character)
    else:
        box.replace(event.character, *selection)
    return True
