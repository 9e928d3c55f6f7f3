"""What the review dialog does with the operator's keys, as a person reads it: a model to check the real dialog
against, key by key and burst by burst (tests/console/tui/test_review_properties.py drives the apps through
Pilot; the end-to-end burst tests send the same keys to the real binary in a terminal and over the websocket).

The dialog has one cursor: in the arguments box, in the reason box, or on one of its buttons (Tab and shift+Tab
go round them in the order drawn). A box takes text; on the buttons a decision key (`a`, `v`, `e`, `f`, or
Enter on a button) is its decision's act. An act that needs more (a veto's message, a force-allow's reason, an
edit that changes an argument) is *started*: the dialog says what is missing and puts the cursor where it goes,
and Enter in the reason box then completes it.

A burst is keys sent together (one write to the terminal, one websocket frame): every key of it is typed
before the operator could see what the first did. So once a key of a burst has changed the dialog (the
cursor moved, a decision started, a note shown, the dialog opened or closed), the keys after it are *stale*:
they are still text in the box that has the cursor, but none of them takes or starts a decision; a stale
decision key only says to press it again. The keys of a burst after the one that closed the dialog are not
used at all (they were typed for the dialog, never for the screen under it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

LETTER_DECISIONS = {"a": "approve", "v": "veto", "e": "edit", "f": "force"}
REFUSALS = ("REVISE", "BLOCK")

# What one key did: the dialog stays open, closed with a decision, or closed undecided (escape on the buttons).
STAY, CLOSE, UNDECIDED = "stay", "close", "undecided"


def recorded_name(decision: str, refused: bool) -> str:
    """The decision as the trace and the desk's audit log name it."""
    return {"approve": "accept_verdict" if refused else "approve", "veto": "veto", "edit": "edit",
            "force": "force_allow"}[decision]


@dataclass
class Dialog:
    """One open review dialog, as the operator knows it.

    `valid` says whether an arguments text is a valid call of the tool (JSON object, the tool's schema);
    `arguments` is the text of the arguments box and `cursor` where its cursor is (an offset into it)."""

    verdict: str | None
    arguments: str
    valid: Callable[[str], bool]
    focus: str = ""  # "arguments", "reason", or a button: "approve", "veto", "edit", "force"
    started: str | None = None  # the decision started, waiting for its reason or a real edit
    forced: bool = False  # a force act happened in this dialog (its key or its button)
    reason: str = ""  # the reason box's text (its cursor is always at its end)
    cursor: int = 0
    original: Any = None  # the arguments as proposed (parsed): an edit must change them
    decided: list[tuple[str, str]] = field(default_factory=list)  # what this dialog recorded: (decision, reason)
    refusals: int = 0  # stale decision keys the dialog refused (each says: press it again)

    def __post_init__(self) -> None:
        self.original = json.loads(self.arguments)
        if not self.focus:
            self.focus = self.safe

    @property
    def refused(self) -> bool:
        return self.verdict in REFUSALS

    @property
    def safe(self) -> str:
        """The button the dialog puts the cursor on by itself: accept the refusal, or (on an ALLOW) veto."""
        return "approve" if self.refused else "veto"

    @property
    def order(self) -> list[str]:
        """Where Tab goes, in the order drawn: the arguments, the reason, the buttons."""
        return ["arguments", "reason", "approve", "veto", "edit", *(["force"] if self.refused else [])]

    # ------------------------------------------------------------------------------------------ opening

    @classmethod
    def opened_with(cls, start: str, verdict: str | None, arguments: str, valid: Callable[[str], bool]) -> Dialog:
        """The desk's dialog, opened by its `v`, `e` or `f` on an item: that decision is started."""
        dialog = cls(verdict, arguments, valid)
        dialog.started = start
        dialog.forced = start == "force"
        dialog.focus = "arguments" if start == "edit" else "reason"
        return dialog

    # ------------------------------------------------------------------------------------------ keys

    def key(self, key: str, stale: bool = False) -> tuple[str, bool]:
        """What `key` does: (STAY | CLOSE | UNDECIDED, whether it changed the dialog)."""
        if self.focus == "reason":
            return self._in_reason(key, stale)
        if self.focus == "arguments":
            return self._in_arguments(key)
        return self._on_buttons(key, stale)

    def burst(self, keys: Iterable[str], stale: bool = False) -> tuple[str, list[str]]:
        """Keys sent together: what the dialog ends in, and the keys of the burst left after it closed.
        `stale`: the burst's first key already came after a change (the key that opened the dialog)."""
        rest = list(keys)
        while rest:
            outcome, changed = self.key(rest.pop(0), stale)
            if outcome != STAY:
                return outcome, rest
            stale |= changed
        return STAY, []

    def _move(self, key: str) -> tuple[str, bool]:
        order = self.order
        step = 1 if key == "tab" else -1
        self.focus = order[(order.index(self.focus) + step) % len(order)]
        return STAY, True

    def _in_reason(self, key: str, stale: bool) -> tuple[str, bool]:
        if key in ("tab", "shift+tab"):
            return self._move(key)
        if key == "escape":
            self.focus = self.safe
            return STAY, True
        if key == "enter":
            if self.started is None:
                self.focus = self.safe
                return STAY, True
            if stale:
                self.refusals += 1
                return STAY, True
            return self._act(self.started)
        if key == "backspace":
            self.reason = self.reason[:-1]
        elif key == "space" or len(key) == 1:
            self.reason += " " if key == "space" else key
        return STAY, False

    def _in_arguments(self, key: str) -> tuple[str, bool]:
        if key in ("tab", "shift+tab"):
            return self._move(key)
        if key == "escape":
            self.focus = self.safe
            return STAY, True
        if key == "backspace":
            if self.cursor > 0:
                self.arguments = self.arguments[:self.cursor - 1] + self.arguments[self.cursor:]
                self.cursor -= 1
        elif key in ("enter", "space") or len(key) == 1:
            char = {"enter": "\n", "space": " "}.get(key, key)
            self.arguments = self.arguments[:self.cursor] + char + self.arguments[self.cursor:]
            self.cursor += 1
        return STAY, False

    def _on_buttons(self, key: str, stale: bool) -> tuple[str, bool]:
        if key in ("tab", "shift+tab"):
            return self._move(key)
        if key == "escape":
            return UNDECIDED, True
        decision = LETTER_DECISIONS.get(key) or (self.focus if key == "enter" else None)
        if decision is None or (decision == "force" and not self.refused):
            return STAY, False  # a letter that decides nothing here (there is no force-allow of an ALLOW)
        if stale:
            self.refusals += 1
            return STAY, True
        return self._act(decision)

    # ------------------------------------------------------------------------------------------ decisions

    def _act(self, decision: str) -> tuple[str, bool]:
        """The operator's act for `decision`: the dialog closes with it, or it starts (the cursor moves to
        what it still needs)."""
        reason = self.reason.strip()
        if decision == "force":
            self.forced = True
        if decision in ("veto", "force") and not reason:
            self.started, self.focus = decision, "reason"
            return STAY, True
        if decision == "edit" and not self.changed_arguments():
            self.started, self.focus = decision, "arguments"
            return STAY, True
        self.decided.append((recorded_name(decision, self.refused), reason))
        return CLOSE, True

    def changed_arguments(self) -> bool:
        """A valid call whose arguments differ from the proposal's: the only edit there is."""
        return self.valid(self.arguments) and json.loads(self.arguments) != self.original


def as_keys(text: str) -> list[str]:
    """Text as the key names Pilot presses (a blank is `space`)."""
    return ["space" if c == " " else c for c in text]


def as_bytes(keys: Sequence[str]) -> str:
    """Keys as a terminal sends them in one write (what `tmux send-keys -l` and a websocket frame carry)."""
    names = {"enter": "\r", "tab": "\t", "space": " ", "backspace": "\x7f"}
    return "".join(names.get(key, key) for key in keys)
