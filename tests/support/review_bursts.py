"""Bursts sent to the real binary: the cases, and what the review model (tests/support/review_model.py) says
each must record.

Shared by the terminal test (tests/console/tui/test_review_bursts_terminal.py: one `tmux send-keys -l` per
burst) and the websocket test (tests/console/web/test_review_bursts_websocket.py: one ["stdin", ...] frame per
burst). Each case runs one scenario in the console or on the desk: the reviews before the one it is about are
answered with a deliberate `a` each; on that one the operator sends the burst in one write, waits until the
screen shows the burst was handled, then sends the keys of `after` one at a time, each once the screen shows
what the one before did. The session's SupervisorDecided events must be what the model predicts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.tools import validate_arguments
from domains.registry import load_domain
from tests.support.review_model import STAY, Dialog, recorded_name
from tests.support.screen import decision_keys_shown

ANNOUNCED = "A write waits for your review"  # the console's announcement of a waiting review (F3 takes it)
OPEN = "Review write"  # the dialog's title
STALE = "again"  # the dialog's note on a decision key it did not take: press it again


@dataclass(frozen=True)
class BurstCase:
    name: str
    surface: str  # "console" (the one-session console, F3 takes a review) or "desk" (`supervise`)
    scenario: str
    mode: str  # the supervision mode, as --mode takes it
    burst: str  # sent in one write (the desk: the key on the item, then what was typed after it)
    after: tuple[str, ...] = ()  # key names, one write each, once the screen shows the one before was handled
    before: int = 0  # reviews answered with a deliberate `a` before the burst
    size: tuple[int, int] = (160, 45)
    domain: str = "retail"

    @property
    def argv(self) -> list[str]:
        if self.surface == "desk":
            return ["supervise", "--domain", self.domain, "--scenarios", self.scenario, "--mode", self.mode,
                    "--operator", "tester"]
        return ["console", "--domain", self.domain, "--scenario", self.scenario, "--mode", self.mode,
                "--pace", "0", "--operator", "tester"]


CASES = [
    # The one-session console, the review taken with F3 (the dialog's cursor on its safe button).
    BurstCase("allow-v-and-its-message", "console", "refund-to-original-payment", "approve writes",
              "vall wrong, stop", ("enter",), before=1, size=(80, 24)),
    BurstCase("block-v-its-message-and-enter", "console", "other-customers-order", "approve non-ALLOW",
              "vfix it, please\r", ("enter",)),
    BurstCase("revise-e-and-enter-change-nothing", "console", "refund-to-original-payment", "approve writes",
              "e\r", ("escape", "a"), size=(80, 24)),
    BurstCase("revise-a-and-typing-on", "console", "refund-to-original-payment", "approve writes", "aq"),
    # The desk: `v` on the inbox item opens the dialog, the message typed right after it.
    BurstCase("desk-v-and-its-message", "desk", "refund-to-original-payment", "approve writes",
              "vall wrong, stop", ("enter",), size=(120, 35)),
]
WEBSOCKET_CASES = [c for c in CASES if c.name in ("allow-v-and-its-message", "block-v-its-message-and-enter",
                                                  "desk-v-and-its-message")]


def as_keys(data: str) -> list[str]:
    """One write's characters as the key names the model reads."""
    names = {"\r": "enter", "\t": "tab", " ": "space", "\x7f": "backspace"}
    return [names.get(char, char) for char in data]


KEY_BYTES = {"enter": "\r", "escape": "\x1b", "tab": "\t", "f3": "\x1bOR", "backspace": "\x7f"}


@dataclass
class Prediction:
    """What the model says of one case's review: its state after the burst, and what it records in the end."""

    dialog: Dialog
    after_burst: str  # STAY, CLOSE or UNDECIDED
    states: list[tuple[str, str, int]]  # after the burst and after each key of `after`: (focus, reason, refusals)
    decided: list[tuple[str, str]]  # what the review records: (decision, reason)


def predict(case: BurstCase, verdict: str | None, arguments: dict[str, Any], tool: str) -> Prediction:
    domain = load_domain(case.domain)
    spec = domain.tool(tool)

    def valid(text: str) -> bool:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return False
        return isinstance(parsed, dict) and spec is not None and not validate_arguments(spec, parsed)

    text = json.dumps(arguments, indent=2, ensure_ascii=False)
    keys = as_keys(case.burst)
    if case.surface == "desk":
        start = {"v": "veto", "e": "edit", "f": "force"}[keys[0]]
        dialog = Dialog.opened_with(start, verdict, text, valid)
        outcome, _ = dialog.burst(keys[1:], stale=True)
    else:
        dialog = Dialog(verdict, text, valid)
        outcome, _ = dialog.burst(keys)
    states = [(dialog.focus, dialog.reason, dialog.refusals)]
    for key in case.after:
        if outcome != STAY:
            break
        outcome, _changed = dialog.key(key)
        states.append((dialog.focus, dialog.reason, dialog.refusals))
    return Prediction(dialog, outcome, states, list(dialog.decided))


def before_decisions(case: BurstCase, verdicts: list[str]) -> list[tuple[str, str]]:
    """The deliberate `a` on each review before the burst's."""
    return [(recorded_name("approve", v in ("REVISE", "BLOCK")), "") for v in verdicts[:case.before]]


def shows(screen: str, focus: str, reason: str, refusals: int) -> bool:
    """Whether the screen shows the dialog in this state: open, the reason as typed, the cursor in a box or on
    the buttons (the footer lists the decision keys only while the cursor is on the buttons), a refusal said."""
    if OPEN not in screen or (reason and reason not in screen) or (refusals and STALE not in screen):
        return False
    return decision_keys_shown(screen) == (focus not in ("reason", "arguments"))


def trace_events(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.endswith("}")]


def decisions_of(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["decision"], e["reason"]) for e in events if e["type"] == "supervisor_decision"]


class Driven:
    """How a test reaches one running case: write to its terminal, read its screen, read its trace."""

    def __init__(self, write: Callable[[str], Awaitable[None]], screen: Callable[[], str], home: Path) -> None:
        self.write = write
        self.screen = screen
        self.home = home

    def events(self) -> list[dict[str, Any]]:
        traces = sorted((self.home / "sessions").glob("*/trace.jsonl"))
        return trace_events(traces[0].read_text().splitlines()) if traces else []

    async def until(self, condition: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
        """Poll (never a fixed sleep) until `condition` holds; the deadline only bounds the wait."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {what}; screen:\n{self.screen()}")
            await asyncio.sleep(0.1)

    def gates(self) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["type"] == "gate_decision"]

    def decided(self) -> list[tuple[str, str]]:
        return decisions_of(self.events())


async def drive(case: BurstCase, run: Driven) -> tuple[list[tuple[str, str]], list[tuple[str, str]], Prediction]:
    """Run `case` to the end of its burst review: (what the session recorded, what the model says it must,
    the model's prediction). Stops waiting as soon as the session recorded more than the model says so far,
    so a burst taken as a decision fails at once, with what it recorded."""
    if case.surface == "desk":
        await run.until(lambda: bool(run.gates()) and "claimed by you" in run.screen(), "the desk's item, claimed")
    else:
        await run.until(lambda: "press space" in run.screen(), "the ready prompt")
        await run.write(" ")
        for answered in range(case.before + 1):
            await run.until(lambda n=answered: len(run.gates()) > n and ANNOUNCED in run.screen(),
                            f"review {answered + 1} announced")
            await run.write(KEY_BYTES["f3"])
            await run.until(lambda: shows(run.screen(), "approve", "", 0) or shows(run.screen(), "veto", "", 0),
                            f"review {answered + 1} open, its cursor on the buttons")
            if answered < case.before:
                await run.write("a")
                await run.until(lambda n=answered: len(run.decided()) > n, f"decision {answered + 1}")
    gates = run.gates()
    gate = gates[case.before]
    prediction = predict(case, gate["verdict"], gate["call"]["arguments"], gate["call"]["name"])
    expected = before_decisions(case, [g["verdict"] for g in gates]) + prediction.decided

    def beyond(count: int) -> bool:
        return len(run.decided()) > count

    so_far = case.before
    await run.write(case.burst)
    states = iter(prediction.states)
    focus, reason, refusals = next(states)
    if prediction.after_burst == STAY or case.after:
        await run.until(lambda: beyond(so_far) or shows(run.screen(), focus, reason, refusals),
                        f"the dialog after the burst: cursor on {focus}, reason {reason!r}")
    for key in case.after:
        if beyond(so_far):
            break
        await run.write(KEY_BYTES.get(key, key))
        state = next(states, None)
        if state is None:
            break
        await run.until(lambda s=state: beyond(so_far) or shows(run.screen(), *s) or (
            OPEN not in run.screen() and len(run.decided()) >= len(expected)), f"the dialog after {key!r}")
    await run.until(lambda: len(run.decided()) >= len(expected), f"{len(expected)} decision(s) recorded")
    return run.decided(), expected, prediction
