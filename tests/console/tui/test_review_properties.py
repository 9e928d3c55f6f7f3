"""Stateful property test of the review dialog, in the console and on the desk: random keys never record a
decision the operator did not choose.

Hypothesis drives the real apps through Pilot (a RuleBasedStateMachine per surface and verdict; its rules are
keys, run on one event loop kept across the rules): letters (the decision keys among them), Enter, Tab,
shift+Tab, escape, backspace, text typed into the reason and the arguments boxes, and, in the console's
customer seat, text typed into the customer's box right after the message that makes the agent propose the
write (one burst: the review is asked for while the keys are still coming) and on while it is announced.

A model follows the operator: before each key it looks where the cursor is, as a person does, and knows what
that key is there (text in a box, a decision key, Enter on a button, a focus move). The invariants, checked
after every key against what the session recorded (its SupervisorDecided events; on the desk, its audit log):
- every decision recorded is the one whose explicit act (its key, or Enter on its button) came last before
  that dialog closed, and its reason is exactly what was typed in the reason box;
- a force-allow is never recorded without a force act in that dialog;
- the text typed in the customer's box is never lost, and never taken by a dialog.

Small in `make test` (the `ci` profile); the `fuzz` profile (`make fuzz`) runs it long.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from textual.widgets import Button, Input, TextArea

from console.runtime.desk.audit import read_audit
from console.runtime.live import SupervisionMode
from console.tui.app import OperatorConsole, make_app
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk import DeskScreen
from console.tui.screens.desk_decide import DeskReviewScreen
from console.tui.screens.review import ReviewScreen
from core.tools import validate_arguments
from domains.registry import load_domain
from tests.support.budget import fuzzing
from tests.support.desk import ManualClock, make_desk, spec
from tests.support.pilot import press_at_once, wait_for

FUZZ = fuzzing()  # the Hypothesis profile (tests/conftest.py): `make fuzz` runs it long
pytestmark = pytest.mark.fuzz


def examples(default: int) -> settings:
    """`default` examples of up to 14 steps (`make test`); the fuzz profile runs fifty of 40 steps each."""
    return settings(max_examples=50 if FUZZ else default, stateful_step_count=40 if FUZZ else 14, deadline=None,
                    derandomize=not FUZZ, suppress_health_check=list(HealthCheck))



LOOP = asyncio.new_event_loop()
PATIENCE = 60.0  # seconds a wait may take on a busy machine (a bound, never a measurement)

# What the operator types: the decision keys, other letters, digits and a blank; keys with a name.
LETTERS = "aveftxyn1 "
KEYS = st.one_of(st.sampled_from(["enter", "tab", "shift+tab", "escape"]), st.sampled_from([*LETTERS, "backspace"]))
TEXT = st.text(alphabet="aevfxyz ,.", min_size=1, max_size=6)
W, N = SupervisionMode.APPROVE_WRITES, SupervisionMode.APPROVE_NON_ALLOW


def as_keys(text: str) -> list[str]:
    return ["space" if c == " " else c for c in text]


@dataclass
class Dialog:
    """What the operator knows of one open review dialog."""

    verdict: str | None
    arguments: str  # the arguments box's text as the dialog opened
    tool: str
    started: str | None = None  # the decision started (its key or button, still waiting for its reason)
    forced: bool = False  # a force act happened in this dialog
    reason: str = ""  # what the operator typed into the reason box (the cursor is always at its end)
    moved: bool = False  # the focus is where the operator put it (Tab, shift+Tab, a click), not the dialog

    @property
    def safe(self) -> str:
        """The button the dialog may focus by itself: accept the refusal, or (on an ALLOW) veto."""
        return "approve" if self.refused else "veto"

    @property
    def refused(self) -> bool:
        return self.verdict in ("REVISE", "BLOCK")


class ReviewModel(RuleBasedStateMachine):
    """The keys and the model; a subclass opens the dialog on its surface and reads what was recorded."""

    domain = "retail"
    screen_kind: type[ReviewScreen] = ReviewScreen

    def __init__(self) -> None:
        super().__init__()
        self.home = Path(tempfile.mkdtemp(prefix="la-review-"))
        self.expected: list[tuple[str, str]] = []  # (decision, reason) the model says were chosen, in order
        self.dialog: Dialog | None = None
        self.app: Any = None
        self.pilot: Any = None

    def start(self, app: Any, size: tuple[int, int]) -> None:
        """Run the app in one task for the whole example (Textual's test context sets context variables that
        must be reset in the task that set them); each rule hands that task a step and waits for it."""
        self.app = app
        self.steps: asyncio.Queue[tuple[Any, asyncio.Future[Any]] | None] = asyncio.Queue()
        ready: asyncio.Future[Any] = LOOP.create_future()
        self.driver = LOOP.create_task(self._drive(size, ready))
        self.pilot = LOOP.run_until_complete(ready)

    async def _drive(self, size: tuple[int, int], ready: asyncio.Future[Any]) -> None:
        async with self.app.run_test(size=size) as pilot:
            ready.set_result(pilot)
            while (step := await self.steps.get()) is not None:
                work, done = step
                try:
                    done.set_result(await work)
                except BaseException as exc:  # noqa: BLE001 - handed to the rule that sent the step
                    done.set_exception(exc)

    def teardown(self) -> None:
        try:
            if self.app is not None:
                self.steps.put_nowait(None)
                LOOP.run_until_complete(self.driver)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)

    def run(self, work: Any) -> Any:
        """Run a coroutine as a step of the app's task, and return its result (or raise its error)."""
        done: asyncio.Future[Any] = LOOP.create_future()
        self.steps.put_nowait((work, done))
        return LOOP.run_until_complete(done)

    # ------------------------------------------------------------------------------------ what is recorded

    def recorded(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def screen(self) -> ReviewScreen | None:
        screen = self.app.screen
        return screen if isinstance(screen, self.screen_kind) and screen.is_mounted else None

    # ------------------------------------------------------------------------------------ the model

    def opened(self, screen: ReviewScreen) -> None:
        self.dialog = Dialog(screen.verdict, screen.query_one("#review-arguments", TextArea).text, screen.call.name)

    def valid_arguments(self, text: str, tool: str) -> bool:
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError:
            return False
        spec_ = load_domain(self.domain).tool(tool)
        return isinstance(arguments, dict) and spec_ is not None and not validate_arguments(spec_, arguments)

    def act(self, dialog: Dialog, screen: ReviewScreen, decision: str) -> bool:
        """The operator's explicit act for `decision`: True when the dialog must close with it."""
        reason = dialog.reason.strip()
        if decision == "force":
            if not dialog.refused:
                return False
            dialog.forced = True
        if decision in ("veto", "force") and not reason:
            dialog.started = decision
            return False
        if decision == "edit" and not self.valid_arguments(screen.query_one("#review-arguments", TextArea).text,
                                                           dialog.tool):
            dialog.started = decision
            return False
        name = {"approve": "accept_verdict" if dialog.refused else "approve", "veto": "veto", "edit": "edit",
                "force": "force_allow"}[decision]
        self.expected.append((name, reason))
        return True

    def meaning(self, dialog: Dialog, screen: ReviewScreen, key: str) -> str:
        """What `key` does now, judged from where the cursor is: "close" (a decision or leaving undecided),
        "stay" (text, a focus move, a started act)."""
        focused = screen.focused
        letter = {"a": "approve", "v": "veto", "e": "edit", "f": "force"}
        if isinstance(focused, Input):  # the reason box: letters are text
            if len(key) == 1 or key == "space":
                dialog.reason += " " if key == "space" else key
            elif key == "backspace":
                dialog.reason = dialog.reason[:-1]
            elif key == "enter" and dialog.started is not None:
                return "close" if self.act(dialog, screen, dialog.started) else "stay"
            return "stay"  # escape leaves the box for the safe button; Enter with nothing started goes there too
        if isinstance(focused, TextArea):
            return "stay"  # text (Enter a new line); escape leaves the box; Tab moves on
        if key == "escape":
            return "undecided"
        if key in letter:
            return "close" if self.act(dialog, screen, letter[key]) else "stay"
        if key == "enter" and isinstance(focused, Button) and focused.id in letter.values():
            # Enter presses the focused button: its act when the operator chose it, or the safe one the dialog
            # focused. Any other button the dialog focused by itself is not a choice: nothing may happen.
            if dialog.moved or focused.id == dialog.safe:
                return "close" if self.act(dialog, screen, str(focused.id)) else "stay"
        return "stay"

    async def press(self, key: str) -> None:
        screen = self.screen()
        dialog = self.dialog
        assert screen is not None and dialog is not None
        what = self.meaning(dialog, screen, key)
        decided = len(self.recorded())
        before = screen.focused
        await self.pilot.press(key)
        if what == "close":
            await wait_for(self.pilot, lambda: self.app.screen is not screen and len(self.recorded()) > decided,
                           PATIENCE)
            self.dialog = None
            await self.after_close()
        elif what == "undecided":
            await wait_for(self.pilot, lambda: self.app.screen is not screen, PATIENCE)
            self.dialog = None
            await self.after_close()
        else:
            await self.pilot.pause()
            assert self.app.screen is screen, f"{key!r} closed the dialog: the model says it does not"
            assert screen.query_one("#review-reason", Input).value == dialog.reason
            if key in ("tab", "shift+tab"):
                dialog.moved = True
            elif screen.focused is not before:
                dialog.moved = False
            focused = screen.focused
            if not dialog.moved and isinstance(focused, Button):  # never Force-allow, never Approve of an ALLOW
                assert focused.id == dialog.safe, f"the dialog focused {focused.id} by itself (after {key!r})"
    async def after_close(self) -> None:
        """Let the app settle after the dialog closed (the next review may be announced)."""
        await self.pilot.pause()

    # ------------------------------------------------------------------------------------ rules

    @precondition(lambda self: self.dialog is not None)
    @rule(key=KEYS)
    def key(self, key: str) -> None:
        self.run(self.press(key))

    @precondition(lambda self: self.dialog is not None)
    @rule(text=TEXT, box=st.sampled_from(["#review-reason", "#review-arguments"]))
    def type_into(self, text: str, box: str) -> None:
        """Click into a box (the cursor goes to its end) and type."""
        screen = self.screen()
        assert screen is not None
        widget = screen.query_one(box)
        widget.focus()
        assert self.dialog is not None
        self.dialog.moved = True
        if isinstance(widget, TextArea):
            widget.move_cursor(widget.document.end)
        self.run(self._type(text))

    async def _type(self, text: str) -> None:
        for key in as_keys(text):
            await self.press(key)

    @precondition(lambda self: self.dialog is not None)
    @rule(text=TEXT, enters=st.integers(1, 2))
    def reason_and_enter(self, text: str, enters: int) -> None:
        """What an operator does most: write the reason, press Enter (and Enter again)."""
        self.type_into(text, "#review-reason")
        for _ in range(enters):
            if self.dialog is not None:
                self.run(self.press("enter"))

    # ------------------------------------------------------------------------------------ invariants

    @invariant()
    def decisions_are_the_operators(self) -> None:
        if self.app is None:
            return
        recorded = self.recorded()
        assert recorded == self.expected[:len(recorded)], (recorded, self.expected)
        assert len(recorded) == len(self.expected), (recorded, self.expected)


# ----------------------------------------------------------------------------------------------- console


class ConsoleReview(ReviewModel):
    """The console's customer seat in 'approve writes': the customer (the operator) asks to cancel an order,
    says yes, and types on; the review is announced, the operator takes it with F3 when they choose."""

    conversation: tuple[str, ...] = ()

    @initialize(burst=TEXT)
    def converse(self, burst: str) -> None:
        app = make_app(seat="customer", mode=W, root=self.home, operator="op")
        self.start(app, (120, 35))
        self.customer = ""
        self.run(self._converse(burst))

    async def _converse(self, burst: str) -> None:
        app: OperatorConsole = self.app
        live = app.live
        assert live is not None
        box = app.main.input_box
        await wait_for(self.pilot, lambda: box.has_focus, PATIENCE)
        for line in self.conversation:
            turns = sum(e.type == "assistant_turn" for e in live.bus.history)
            await press_at_once(self.pilot, *as_keys(line), "enter")
            await wait_for(self.pilot, lambda t=turns: live.human is not None and live.human.waiting
                           and sum(e.type == "assistant_turn" for e in live.bus.history) > t, PATIENCE)
        # "yes", and the next words typed on in the same burst: the review is asked for in the middle
        await press_at_once(self.pilot, *"yes", "enter", *as_keys(burst))
        self.customer = burst
        await wait_for(self.pilot, lambda: app.main.review_waiting, PATIENCE)

    def recorded(self) -> list[tuple[str, str]]:
        live = self.app.live
        return [(e.decision, e.reason) for e in live.bus.history if e.type == "supervisor_decision"]

    @precondition(lambda self: self.dialog is None)
    @rule(text=TEXT)
    def customer_types(self, text: str) -> None:
        """The customer types on while the review is announced (or after it was decided)."""
        self.run(self._customer_types(text))

    async def _customer_types(self, text: str) -> None:
        box = self.app.main.input_box
        await wait_for(self.pilot, lambda: self.app.screen is self.app.main, PATIENCE)
        box.focus()
        await self.pilot.press(*as_keys(text))
        self.customer += text

    @precondition(lambda self: self.dialog is None and self.app.main.review_waiting)
    @rule()
    def take(self) -> None:
        """F3: open the announced review (nothing happens when none is waiting)."""
        self.run(self._take())

    async def _take(self) -> None:
        waiting = self.app.main.review_waiting
        await self.pilot.press("f3")
        if waiting:
            await wait_for(self.pilot, lambda: self.screen() is not None, PATIENCE)
            screen = self.screen()
            assert screen is not None
            await wait_for(self.pilot, lambda: screen.focused is not None, PATIENCE)
            self.opened(screen)
            assert self.dialog is not None and screen.focused is not None
            assert screen.focused.id == self.dialog.safe  # it opens on the safe button
        else:
            await self.pilot.pause()
            assert self.screen() is None

    async def after_close(self) -> None:
        """Wait for the session to stand still: the next review announced, the customer's turn, or the end. (A
        review announced while the model decides whether F3 opens one would race the model.)"""
        live = self.app.live
        await wait_for(self.pilot, lambda: self.app.screen is self.app.main and (
            self.app.main.review_waiting or (live.human is not None and live.human.waiting)
            or live.state.phase == "ended"), PATIENCE)

    @invariant()
    def customer_text_stays_in_its_box(self) -> None:
        if self.app is None:
            return
        assert self.app.main.input_box.value == self.customer


CONVERSATIONS = {"ALLOW": ("my email is mia.garcia@example.com", "cancel order #W4821002"),
                 "REVISE": ("cancel order #W4821002",),
                 "BLOCK": ("my email is noah.kim@example.com", "cancel order #W4821002")}


class ConsoleAllow(ConsoleReview):
    conversation = CONVERSATIONS["ALLOW"]


class ConsoleRevise(ConsoleReview):
    conversation = CONVERSATIONS["REVISE"]


class ConsoleBlock(ConsoleReview):
    conversation = CONVERSATIONS["BLOCK"]


# ----------------------------------------------------------------------------------------------- desk


class DeskReview(ReviewModel):
    """The desk with one session waiting on the operator: its inbox item is decided with `a` at the desk, or
    in the review modal that `v`, `e` or `f` opens (those keys start their decision)."""

    screen_kind = DeskReviewScreen
    scenario: tuple[str, str, SupervisionMode] = ("retail", "refund-to-original-payment", W)

    @initialize()
    def open_desk(self) -> None:
        domain, scenario, mode = self.scenario
        self.domain = domain
        self.desk = make_desk([spec(domain, scenario, mode)], self.home, ManualClock())
        self.start(SupervisorApp(self.desk, operator="op", lifecycle=self.desk), (160, 45))
        self.run(self._item())

    async def _item(self) -> None:
        screen: DeskScreen = self.app.desk_screen
        await wait_for(self.pilot, lambda: bool(self.desk.snapshot().items) or self.desk.snapshot().done, PATIENCE)
        await wait_for(self.pilot, lambda: self.desk.snapshot().done or (
            bool(screen.inbox.item_ids) and screen.claimed is not None
            and all(i.id in screen.inbox.item_ids for i in self.desk.snapshot().items)), PATIENCE)

    def recorded(self) -> list[tuple[str, str]]:
        audit = read_audit(self.home / "desk" / "audit.jsonl")
        return [(d["decision"], d["reason"]) for d in audit.decisions if d.get("call_id") is not None]

    def item(self) -> Any:
        items = self.desk.snapshot().items
        return items[0] if items else None

    @precondition(lambda self: self.dialog is None)
    @rule(key=st.sampled_from(["a", "v", "e", "f", "x"]))
    def desk_key(self, key: str) -> None:
        """A key on the desk, on the highlighted item."""
        self.run(self._desk_key(key))

    async def _desk_key(self, key: str) -> None:
        item = self.item()
        decided = len(self.recorded())
        await self.pilot.press(key)
        if item is None or key == "x":
            await self.pilot.pause()
            return
        refused = item.verdict in ("REVISE", "BLOCK")
        if key == "a":
            self.expected.append(("accept_verdict" if refused else "approve", ""))
            await wait_for(self.pilot, lambda: len(self.recorded()) > decided, PATIENCE)
            await self._item()
            return
        if key == "f" and not refused:  # the desk says why, opens nothing
            await self.pilot.pause()
            assert self.screen() is None
            return
        await wait_for(self.pilot, lambda: self.screen() is not None, PATIENCE)
        screen = self.screen()
        assert screen is not None
        await wait_for(self.pilot, lambda: screen.started is not None, PATIENCE)
        self.opened(screen)
        assert self.dialog is not None
        self.dialog.started = {"v": "veto", "e": "edit", "f": "force"}[key]
        self.dialog.forced = key == "f"

    async def after_close(self) -> None:
        await wait_for(self.pilot, lambda: isinstance(self.app.screen, DeskScreen), PATIENCE)
        await self._item()


class DeskAllow(DeskReview):
    scenario = ("telecom", "roaming-abroad", W)


class DeskRevise(DeskReview):
    scenario = ("retail", "refund-to-original-payment", W)


class DeskBlock(DeskReview):
    scenario = ("retail", "other-customers-order", N)


for machine in (ConsoleAllow, ConsoleRevise, ConsoleBlock):  # an example: the app, a conversation, the dialog
    machine.TestCase.settings = examples(2)
for machine in (DeskAllow, DeskRevise, DeskBlock):  # cheaper: the desk's session runs to its item by itself
    machine.TestCase.settings = examples(2)

TestConsoleAllow = ConsoleAllow.TestCase
TestConsoleRevise = ConsoleRevise.TestCase
TestConsoleBlock = ConsoleBlock.TestCase
TestDeskAllow = DeskAllow.TestCase
TestDeskRevise = DeskRevise.TestCase
TestDeskBlock = DeskBlock.TestCase
