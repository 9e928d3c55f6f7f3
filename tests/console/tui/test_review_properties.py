"""Stateful property test of the review dialog, in the console and on the desk: random keys, one at a time and in
bursts, never record a decision the operator did not choose.

Hypothesis drives the real apps through Pilot (a RuleBasedStateMachine per surface and verdict; its rules are
keys, run on one event loop kept across the rules): letters (the decision keys among them), Enter, Tab,
shift+Tab, escape, backspace, text typed into the reason and the arguments boxes, and, in the console's
customer seat, text typed into the customer's box right after the message that makes the agent propose the
write (one burst: the review is asked for while the keys are still coming) and on while it is announced.

Keys come one at a time (`pilot.press`: the app is idle before the next key is made) and in bursts
(`press_at_once`: every key of the burst is made before the app handles the first, as a terminal that batches
input, a paste, `tmux send-keys -l` or one websocket frame delivers them): a decision key followed at once by
its message, the message and Enter, any mix. The model (tests/support/review_model.py) follows the operator:
where the cursor is, what each key is there, and which keys of a burst came too late to take a decision. The
same model predicts the bursts sent to the real binary in a terminal and over the websocket
(tests/console/tui/test_review_bursts_terminal.py, tests/console/web/test_review_bursts_websocket.py).

The invariants, checked after every rule against what the session recorded (its SupervisorDecided events; on
the desk, its audit log):
- every decision recorded is the one the model says the operator chose, in order, with the reason exactly as
  typed in the reason box (so no force-allow without a force act, no approval of a write the operator was
  vetoing, no edit that changed nothing);
- while the dialog is open the model and the screen agree on where the cursor is and on both boxes' text;
- the text typed in the customer's box is never lost, and never taken by a dialog.

Small in `make test` (the `ci` profile); the `fuzz` profile (`make fuzz`) runs it long.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
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
from tests.support.review_model import CLOSE, STAY, Dialog, as_keys, recorded_name

FUZZ = fuzzing()  # the Hypothesis profile (tests/conftest.py): `make fuzz` runs it long
pytestmark = pytest.mark.fuzz


def examples(default: int) -> settings:
    """`default` examples of up to 14 steps (`make test`); the fuzz profile runs fifty of 40 steps each."""
    return settings(max_examples=50 if FUZZ else default, stateful_step_count=40 if FUZZ else 14, deadline=None,
                    derandomize=not FUZZ, suppress_health_check=list(HealthCheck))


LOOP = asyncio.new_event_loop()
PATIENCE = 60.0  # seconds a wait may take on a busy machine (a bound, never a measurement)
SETTLED = 400  # at most this many pauses waiting for the app to stop changing after a burst

# What the operator types: the decision keys, other letters, digits and a blank; keys with a name.
LETTERS = "aveftxyn1 "
KEYS = st.one_of(st.sampled_from(["enter", "tab", "shift+tab", "escape"]), st.sampled_from([*LETTERS, "backspace"]))
TEXT = st.text(alphabet="aevfxyz ,.", min_size=1, max_size=6)
# A burst: mostly a decision key and what was typed right after it (its message, Enter, more keys), as fast
# typists and batching terminals deliver them; sometimes any keys at all. Its simplest value, which every run
# tries first, is `v` and a letter of the message typed right after it.
DECISION_FIRST = st.tuples(st.sampled_from(["v", "f", "e", "a", "enter"]), TEXT, st.sampled_from(["", "enter"]),
                           st.lists(KEYS, max_size=3)).map(lambda t: [t[0], *as_keys(t[1]), *([t[2]] if t[2] else []),
                                                                      *t[3]])
BURST = st.one_of(DECISION_FIRST, st.lists(st.one_of(KEYS, TEXT.map(as_keys).map(tuple)), min_size=2, max_size=6)
                  .map(lambda parts: [k for p in parts for k in ([p] if isinstance(p, str) else p)]))
W, N = SupervisionMode.APPROVE_WRITES, SupervisionMode.APPROVE_NON_ALLOW
FOCUS_NAMES = {"review-arguments": "arguments", "review-reason": "reason"}


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

    def valid_arguments(self, text: str, tool: str) -> bool:
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError:
            return False
        spec_ = load_domain(self.domain).tool(tool)
        return isinstance(arguments, dict) and spec_ is not None and not validate_arguments(spec_, arguments)

    def opened(self, screen: ReviewScreen, start: str | None = None) -> None:
        # as proposed (a burst may have typed into the box already, as the dialog opened)
        text = json.dumps(dict(screen.call.arguments), indent=2, ensure_ascii=False)
        tool = screen.call.name

        def valid(arguments: str) -> bool:
            return self.valid_arguments(arguments, tool)

        self.dialog = Dialog(screen.verdict, text, valid) if start is None else \
            Dialog.opened_with(start, screen.verdict, text, valid)

    def agree(self, screen: ReviewScreen, after: str) -> None:
        """The screen shows what the model says: the cursor where it says, both boxes' text as typed."""
        dialog = self.dialog
        assert dialog is not None
        focused = screen.focused
        where = None if focused is None else FOCUS_NAMES.get(str(focused.id), focused.id)
        assert where == dialog.focus, f"after {after}: the cursor is on {where}, the model says {dialog.focus}"
        assert screen.query_one("#review-reason", Input).value == dialog.reason, after
        area = screen.query_one("#review-arguments", TextArea)
        assert area.text == dialog.arguments, after
        if where == "arguments":
            before = dialog.arguments[:dialog.cursor]
            assert area.cursor_location == (before.count("\n"), len(before) - before.rfind("\n") - 1), after
        if not isinstance(focused, Input | TextArea):
            assert isinstance(focused, Button)

    async def settle(self) -> None:
        """Let the app handle what it was sent, until two looks in a row see the same (the keys of a burst
        are all queued at once; a decision it took is recorded by the session a moment later)."""
        def look() -> tuple[Any, ...]:
            screen = self.app.screen
            boxes = [w.value if isinstance(w, Input) else w.text
                     for w in screen.query("#review-reason, #review-arguments")]
            return screen, screen.focused, len(self.recorded()), *boxes

        last = None
        for _ in range(SETTLED):
            await self.pilot.pause()
            now = look()
            if now == last:
                return
            last = now
        raise AssertionError("the app never stood still")

    async def send(self, keys: list[str], at_once: bool) -> None:
        """Send `keys` (one key pressed, or a burst) and check the dialog did what the model says."""
        screen = self.screen()
        dialog = self.dialog
        assert screen is not None and dialog is not None
        decided = len(dialog.decided)
        if at_once:
            outcome, _rest = dialog.burst(keys)
            await press_at_once(self.pilot, *keys)
        else:
            outcome, _changed = dialog.key(keys[0])
            await self.pilot.press(keys[0])
        self.expected += dialog.decided[decided:]
        await self.settle()
        what = f"{keys!r}" + (" in one burst" if at_once else "")
        if outcome == STAY:
            assert self.app.screen is screen, f"{what} closed the dialog: the model says it stays open"
            self.agree(screen, what)
            return
        assert self.app.screen is not screen, f"{what} left the dialog open: the model says {outcome}"
        if outcome == CLOSE:
            await wait_for(self.pilot, lambda: len(self.recorded()) >= len(self.expected), PATIENCE)
        self.dialog = None
        await self.after_close()

    async def after_close(self) -> None:
        """Let the app settle after the dialog closed (the next review may be announced)."""
        await self.pilot.pause()

    # ------------------------------------------------------------------------------------ rules

    @precondition(lambda self: self.dialog is not None)
    @rule(keys=BURST)
    def burst(self, keys: list[str]) -> None:
        """Keys sent together: every one is made before the app handles the first."""
        self.run(self.send(keys, at_once=True))

    @precondition(lambda self: self.dialog is not None)
    @rule(key=KEYS)
    def key(self, key: str) -> None:
        self.run(self.send([key], at_once=False))

    @precondition(lambda self: self.dialog is not None)
    @rule(text=TEXT, box=st.sampled_from(["#review-reason", "#review-arguments"]), at_once=st.booleans())
    def type_into(self, text: str, box: str, at_once: bool = False) -> None:
        """Click into a box (the cursor goes to its end) and type, key by key or in one burst."""
        screen = self.screen()
        dialog = self.dialog
        assert screen is not None and dialog is not None
        widget = screen.query_one(box)
        widget.focus()
        if isinstance(widget, TextArea):
            widget.move_cursor(widget.document.end)
            dialog.focus, dialog.cursor = "arguments", len(dialog.arguments)
        else:
            dialog.focus = "reason"
        self.run(self._type(as_keys(text), at_once))

    async def _type(self, keys: list[str], at_once: bool) -> None:
        await self.pilot.pause()  # the click's focus first
        if at_once:
            await self.send(keys, at_once=True)
            return
        for key in keys:
            await self.send([key], at_once=False)

    @precondition(lambda self: self.dialog is not None)
    @rule(text=TEXT, enters=st.integers(1, 2), at_once=st.booleans())
    def reason_and_enter(self, text: str, enters: int, at_once: bool) -> None:
        """What an operator does most: write the reason, press Enter (and Enter again); a fast typist sends
        the reason and its Enter in one burst."""
        if not at_once:
            self.type_into(text, "#review-reason")
            for _ in range(enters):
                if self.dialog is not None:
                    self.run(self.send(["enter"], at_once=False))
            return
        screen = self.screen()
        assert screen is not None and self.dialog is not None
        screen.query_one("#review-reason").focus()
        self.dialog.focus = "reason"
        self.run(self._type([*as_keys(text), *["enter"] * enters], at_once=True))

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

    @initialize(burst=TEXT, opening=BURST)
    def converse(self, burst: str, opening: list[str]) -> None:
        """The conversation up to the review, which the operator takes (F3) and answers with a burst."""
        app = make_app(seat="customer", mode=W, root=self.home, operator="op")
        self.start(app, (120, 35))
        self.customer = ""
        self.run(self._converse(burst))
        self.run(self._take([]))
        self.run(self.send(opening, at_once=True))

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
    @rule(then=st.one_of(st.just([]), st.lists(KEYS, min_size=1, max_size=4)))
    def take(self, then: list[str]) -> None:
        """F3: open the announced review (nothing happens when none is waiting); sometimes with keys typed
        right after it in the same burst, which came before the dialog did: none of them decides."""
        self.run(self._take(then))

    async def _take(self, then: list[str]) -> None:
        waiting = self.app.main.review_waiting
        if then:
            await press_at_once(self.pilot, "f3", *then)
        else:
            await self.pilot.press("f3")
        if not waiting:
            await self.pilot.pause()
            assert self.screen() is None
            return
        await wait_for(self.pilot, lambda: self.screen() is not None, PATIENCE)
        screen = self.screen()
        assert screen is not None
        await wait_for(self.pilot, lambda: screen.focused is not None, PATIENCE)
        self.opened(screen)
        dialog = self.dialog
        assert dialog is not None
        outcome, _rest = dialog.burst(then, stale=True)
        self.expected += dialog.decided
        await self.settle()
        if outcome == STAY:
            assert self.app.screen is screen, f"F3 and {then!r} in one burst closed the dialog"
            self.agree(screen, f"F3 and {then!r} in one burst")
            return
        assert self.app.screen is not screen
        self.dialog = None
        await self.after_close()

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

    @initialize(key=st.sampled_from(["v", "e", "f", "a"]), text=TEXT, then=st.lists(KEYS, max_size=3))
    def open_desk(self, key: str, text: str, then: list[str]) -> None:
        """The desk with its item, and the operator's first keys on it in one burst."""
        domain, scenario, mode = self.scenario
        self.domain = domain
        self.desk = make_desk([spec(domain, scenario, mode)], self.home, ManualClock())
        self.start(SupervisorApp(self.desk, operator="op", lifecycle=self.desk), (160, 45))
        self.run(self._item())
        self.desk_burst(key, text, then)

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
        self.run(self._desk_keys([key], at_once=False))

    @precondition(lambda self: self.dialog is None)
    @rule(key=st.sampled_from(["a", "v", "e", "f"]), text=TEXT, then=st.lists(KEYS, max_size=3))
    def desk_burst(self, key: str, text: str, then: list[str]) -> None:
        """A desk key and what was typed right after it, in one burst: after `v`, `e` or `f` the keys are for
        the dialog the key opens (text in its box, never a decision: they came before it); after `a` (the
        item is decided, the inbox changes) or a refused key they decide nothing."""
        refused = (item := self.item()) is not None and item.verdict in ("REVISE", "BLOCK")
        opens = key in ("v", "e") or (key == "f" and refused)
        self.run(self._desk_keys([key, *as_keys(text), *(then if opens else [])], at_once=True))

    async def _desk_keys(self, keys: list[str], at_once: bool) -> None:
        item = self.item()
        decided = len(self.recorded())
        key, rest = keys[0], keys[1:]
        if at_once:
            await press_at_once(self.pilot, *keys)
        else:
            await self.pilot.press(key)
        if item is None or key == "x":
            await self.settle()
            assert self.screen() is None
            return
        refused = item.verdict in ("REVISE", "BLOCK")
        if key == "a":
            self.expected.append((recorded_name("approve", refused), ""))
            await wait_for(self.pilot, lambda: len(self.recorded()) > decided, PATIENCE)
            await self.settle()
            await self._item()
            return
        if key == "f" and not refused:  # the desk says why, opens nothing
            await self.settle()
            assert self.screen() is None
            return
        await wait_for(self.pilot, lambda: (self.screen() is not None and self.screen().started is not None)
                       or len(self.recorded()) > decided, PATIENCE)
        assert len(self.recorded()) == decided, (f"{keys!r}: the desk recorded {self.recorded()[decided:]} "
                                                 "before its dialog was open")
        screen = self.screen()
        assert screen is not None
        self.opened(screen, start={"v": "veto", "e": "edit", "f": "force"}[key])
        dialog = self.dialog
        assert dialog is not None
        outcome, _rest = dialog.burst(rest, stale=True)
        self.expected += dialog.decided
        await self.settle()
        if outcome == STAY:
            assert self.app.screen is screen, f"{keys!r} closed the dialog: the model says it stays open"
            self.agree(screen, f"{keys!r}" + (" in one burst" if at_once else ""))
            return
        assert self.app.screen is not screen
        self.dialog = None
        await self.after_close()

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
