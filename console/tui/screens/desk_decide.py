"""The desk's decision keys, shared by the desk screen and the session view: one place turns a key on an
inbox item into a `DeskAPI` call, so both screens decide exactly alike.

`e`, `v` and `f` open the console's own review modal (`ReviewScreen`, the same decisions and the same
validation as in the one-session console) on the item as the gate recorded it, and turn the `Resolution`
it ends with into `api.decide(...)`. Every refusal (an item claimed by someone else, a decision the desk
does not take, an edit that is not valid) is shown; the item stays in the inbox.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from textual import events
from textual.screen import Screen
from textual.widgets import Input

from console.runtime.desk.view import DeskAPI, DeskRefused, DeskSnapshot, ItemKind, ItemView
from console.tui.key_order import KeyInterpreter
from console.tui.screens.review import ReviewScreen
from core.domain import Domain
from core.gate import GateDecision, PredicateResult, Status, Verdict
from core.strict_json import inert
from core.supervisor import Decision, Resolution
from core.tools import ToolCall
from domains.registry import load_domain

DESK_DECISION = {Decision.APPROVE: "approve", Decision.ACCEPT_VERDICT: "accept_verdict", Decision.VETO: "veto",
                 Decision.EDIT: "edit", Decision.FORCE_ALLOW: "force_allow"}


@cache
def domain_of(name: str) -> Domain:
    return load_domain(name)


def call_of(item: ItemView) -> ToolCall:
    return ToolCall(id=item.id, name=item.tool, arguments=dict(item.arguments))


def gate_decision_of(item: ItemView) -> GateDecision | None:
    """The gate's decision as the item recorded it, in the shape the review modal reads."""
    if item.verdict is None:
        return None
    results = tuple(PredicateResult(r.id, Status(r.status), Verdict(r.verdict), r.reason, tuple(r.evidence), r.policy)
                    for r in item.rules)
    return GateDecision(call=call_of(item), verdict=Verdict(item.verdict), results=results, feedback=item.feedback,
                        ledger_version=0)


class DeskReviewScreen(ReviewScreen):
    """The review modal on an inbox item, opened by the operator's own key on it (`e`, `v` or `f`): that key is
    the act that starts its decision. `v` and `f` put the cursor in the reason box (Enter then vetoes or
    force-allows with the reason as typed), `e` in the arguments. Escape goes back to the desk undecided (the
    item stays)."""

    def __init__(self, item: ItemView, domain: Domain, who: str, start: str = "") -> None:
        super().__init__(call_of(item), gate_decision_of(item), domain, who)
        self.item = item
        self.start = start

    def opening(self) -> None:
        """The decision the key named, started as the modal opens: the keys typed right after that key (a
        burst) are text in the box it puts the cursor in, never a decision (they came before the modal)."""
        if self.start == "veto":
            self.begin(Decision.VETO, "Write the message for the model, then press Enter to veto.")
        elif self.start == "force" and self.verdict is not None and self.refused:
            self.begin(Decision.FORCE_ALLOW, f"Write why you force-allow despite the {self.verdict} (recorded with "
                       "your name and the time), then press Enter.")
        elif self.start == "edit":
            self.begin(Decision.EDIT, "Edit the arguments; escape leaves the box, then e re-gates.",
                       into="#review-arguments")
        else:
            self.to_safe()


class DeskDecisions:
    """Keys on inbox items -> DeskAPI calls, for one operator, shown on one screen."""

    def __init__(self, screen: Screen[Any], api: DeskAPI, operator: str) -> None:
        self.screen = screen
        self.api = api
        self.operator = operator
        self.said: list[str] = []  # every notification this made, in order (what the operator was told)

    def say(self, message: str, *, error: bool = False) -> None:
        """Tell the operator; what they see changed (a key typed before they could read it decides nothing)."""
        self.said.append(message)
        self.screen.notify(inert(message), severity="error" if error else "information", timeout=6 if error else 3,
                           markup=False)  # a refusal quotes what the desk was sent: shown as it is, inert
        if isinstance(self.screen, KeyInterpreter):
            self.screen.changed()

    async def take_key(self, screen: KeyInterpreter, event: events.Key, deciding: frozenset[str]) -> bool:
        """A desk screen's key, in the order typed: its decision keys act on the item the screen shows now,
        unless they were typed before it showed that item (or said something): then they are refused, said so.
        Its other keys (the tables' cursor, focus) run now too, so a decision key after them acts where they
        left the cursor; a text box (the filter) takes its keys as Textual gives them."""
        if isinstance(self.screen.focused, Input):
            return False
        active = self.screen.active_bindings.get(event.key)
        if active is None or not active.enabled:
            return False
        action = active.binding.action
        if active.node is self.screen and action in deciding and screen.stale(event):
            self.say(f"Not taken: `{event.key}` was typed before the desk showed what it now shows; press it again "
                     "if you mean it.", error=True)
            return True
        await self.screen.app.run_action(action, active.node)
        if not (active.node is self.screen and action in deciding):
            screen.changed()  # the cursor moved, a box or a view opened: a key typed on saw none of it
        return True

    def selected(self, item: ItemView | None) -> ItemView | None:
        """The item, or None (said) when nothing is selected. A one-key decision goes to the desk even when this
        screen shows the item as someone else's: the desk is what holds the claims (this screen's copy may be a
        push behind), and its refusal, with who holds the item, is what the operator is shown and the host logs."""
        if item is None:
            self.say("Nothing selected: the inbox is empty.")
        return item

    def usable(self, item: ItemView | None) -> ItemView | None:
        """The item if this operator may act on it now; otherwise say why and return None (before a review
        modal opens, so that no one types a reason for a call another operator is deciding)."""
        if item is None:
            self.say("Nothing selected: the inbox is empty.")
            return None
        if item.claimed_by not in (None, self.operator):
            self.say(f"{item.id} is claimed by {item.claimed_by}: they are deciding it.", error=True)
            return None
        return item

    async def decide(self, item: ItemView, decision: str, *, reason: str = "",
                     arguments: dict[str, Any] | None = None) -> bool:
        try:
            await self.api.decide(item.id, self.operator, decision, reason=reason, arguments=arguments)
        except DeskRefused as exc:
            self.say(f"Refused: {exc}", error=True)
            return False
        return True

    async def approve(self, item: ItemView | None) -> None:
        """`a`: an ALLOW runs; a REVISE/BLOCK is accepted (not run), and said so; a step is taken."""
        chosen = self.selected(item)
        if chosen is None:
            return
        if chosen.kind is ItemKind.STEP:
            await self.step(chosen)
            return
        allowed = chosen.verdict in (None, "ALLOW")
        if await self.decide(chosen, "approve" if allowed else "accept_verdict"):
            self.say(f"Approved {chosen.tool} ({chosen.session_id}): it runs." if allowed else
                     f"Accepted the {chosen.verdict} of {chosen.tool} ({chosen.session_id}): not run.")

    async def step(self, item: ItemView | None) -> None:
        chosen = self.selected(item)
        if chosen is None:
            return
        if chosen.kind is not ItemKind.STEP:
            self.say(f"{chosen.id} is a write, not a step: a, v, e or f decide it.", error=True)
            return
        if await self.decide(chosen, "step"):
            self.say(f"{chosen.session_id}: one more model call.")

    async def resume(self, session_id: str | None) -> None:
        """`r`: the session leaves step mode and runs on (asking for non-ALLOW writes); its step item goes."""
        if session_id is None:
            self.say("No session selected.")
            return
        try:
            await self.api.resume(session_id, self.operator)
        except DeskRefused as exc:
            self.say(f"Refused: {exc}", error=True)
            return
        self.say(f"{session_id}: out of step mode, it runs on (non-ALLOW writes still come to the inbox).")

    def review(self, item: ItemView | None, start: str, domain: str) -> None:
        """`e`, `v`, `f`: the review modal on this item, its Resolution sent to the desk."""
        chosen = self.usable(item)
        if chosen is None:
            return
        if chosen.kind is ItemKind.STEP:
            self.say(f"{chosen.id} is a step: n lets the session go on.", error=True)
            return
        if start == "force" and chosen.verdict not in ("REVISE", "BLOCK"):
            self.say("Only a REVISE or BLOCK can be force-allowed.", error=True)
            return

        async def resolved(resolution: Resolution | None) -> None:
            if resolution is None:
                return
            decision = DESK_DECISION[resolution.decision]
            arguments = dict(resolution.arguments) if resolution.arguments is not None else None
            if await self.decide(chosen, decision, reason=resolution.reason, arguments=arguments):
                what = {"edit": "Edited and re-gated", "veto": "Vetoed", "force_allow": "Force-allowed",
                        "approve": "Approved", "accept_verdict": f"Accepted the {chosen.verdict} of"}[decision]
                self.say(f"{what} {chosen.tool} ({chosen.session_id}).")

        self.screen.app.push_screen(DeskReviewScreen(chosen, domain_of(domain), self.operator, start), resolved)

    def bulk(self, item: ItemView | None, snapshot: DeskSnapshot) -> None:
        """`A`: every rule-free ALLOW of the highlighted item's tool, after a confirmation that lists them."""
        from console.tui.screens.confirm import ConfirmScreen

        chosen = self.usable(item)
        if chosen is None:
            return
        if not chosen.rule_free:
            self.say("Bulk approval takes only ALLOWs every rule passed; decide this one by itself.", error=True)
            return
        group = [i for i in snapshot.bulk_groups().get(chosen.tool, ())
                 if i.claimed_by in (None, self.operator)]
        lines = "\n".join(f"  {i.id} {i.session_id} {json.dumps(dict(i.arguments), sort_keys=True)[:60]}"
                          for i in group[:12])
        more = f"\n  … and {len(group) - 12} more" if len(group) > 12 else ""
        question = (f"Approve {len(group)} rule-free ALLOW call(s) of {chosen.tool}? Each runs.\n{lines}{more}")

        async def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                done = await self.api.bulk_approve([i.id for i in group], self.operator)
            except DeskRefused as exc:
                self.say(f"Refused: {exc}", error=True)
                return
            self.say(f"Approved {len(done)} call(s) of {chosen.tool}.")

        self.screen.app.push_screen(ConfirmScreen(question), answered)
