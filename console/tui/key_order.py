"""Keys taken in the order they were typed by the screen in front, on the screens where a key can decide.

Textual's App routes every key to the widget focused *when the App handles it*, by posting it to that widget's
own queue (textual/app.py `App.on_event`); the widget interprets it later in its own task, and the screen's
bindings fire later still, as the key bubbles back up. Keys that come in one burst (a terminal that batches its
input, a paste, `tmux send-keys -l`, one websocket frame) are all routed before the first is interpreted: a key
is routed by a focus the keys before it were about to move, and a binding acts on a state they were about to
change. On a decision dialog that turned a veto's message into an approval.

So a screen that is a `KeyInterpreter` takes each key itself, in the App's order, before Textual routes it
(`InOrderApp.on_event`): its `interpret` applies the key at once (text into the box that has the cursor, a focus
move, a decision) or declines it, and Textual then routes it as usual. The App's own priority keys (quit) come
first, as in Textual. Keys that reach a screen before it is mounted wait for it, and are interpreted once it is
(`keys_ready`), in order.

The burst rule. Every message carries the monotonic time it was made (`Message.time`, textual/message.py), and a
key is made when the driver parses it: every key of a burst is made before the App handles the first. A screen
records when it last changed what the operator sees (`changed`: it opened, a decision started, the cursor
moved, a note was shown, the item under the cursor changed); a key made before that was typed without seeing the
change (`stale`). It may still be text for the box with the cursor, but it takes no decision. A key typed one
at a time is made after the one before was handled, so only keys of one burst are ever stale.

And keys made while a decision dialog was in front, handled after it closed, were typed for the dialog: the App
uses them for nothing (`InOrderApp.dialog_closed`), and says so.
"""

from __future__ import annotations

from textual import events
from textual._time import get_time  # the clock Textual stamps every message with (Message.time)
from textual.app import App

NEVER = float("-inf")


def now() -> float:
    """The present on the clock of `Message.time`."""
    return get_time()


class KeyInterpreter:
    """A screen that interprets its keys in the order the App receives them (mixed into a `Screen`)."""

    _changed_at: float = NEVER
    _ready: bool = False
    _early: list[events.Key] | None = None

    def changed(self) -> None:
        """What the operator sees changed now: keys made before this moment are stale."""
        self._changed_at = now()

    def stale(self, event: events.Key) -> bool:
        """Whether `event` was typed before the last change was shown (in the burst that made it)."""
        return event.time < self._changed_at

    async def interpret(self, event: events.Key) -> bool:
        """Apply `event` now; False to leave it to Textual's routing."""
        raise NotImplementedError

    async def take_key(self, event: events.Key) -> bool:
        """A key, in the App's order: interpreted now, or held until the screen is mounted (and until the keys
        held before it are interpreted)."""
        if not self._ready or self._early:
            if self._early is None:
                self._early = []
            self._early.append(event)
            return True
        return await self.interpret(event)

    def keys_ready(self, app: App[object]) -> None:
        """The screen is mounted and shows what it opened with: from now its keys are interpreted; the keys that
        came before are interpreted first, in the App's own task (they are all stale: made before it opened)."""
        self.changed()
        self._ready = True
        if self._early:
            app.call_later(self._replay)

    async def _replay(self) -> None:
        while self._early:
            await self.interpret(self._early.pop(0))


class InOrderApp(App[None]):
    """An App whose decision screens take their keys in the order typed (see the module docstring)."""

    _dialog_closed_at: float = NEVER
    _dropped_for: float = NEVER

    def dialog_closed(self) -> None:
        """A decision dialog closed now: the keys typed for it that are still coming are used for nothing."""
        self._dialog_closed_at = now()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            if event.time < self._dialog_closed_at:
                self._dropped()
                return
            screen = self.screen
            if isinstance(screen, KeyInterpreter):
                if not self.app_focus:
                    self.app_focus = True
                if await self._check_bindings(event.key, priority=True):
                    return
                if await screen.take_key(event):
                    return
        await super().on_event(event)

    def _dropped(self) -> None:
        if self._dropped_for != self._dialog_closed_at:
            self._dropped_for = self._dialog_closed_at
            self.notify("Keys typed while the dialog was still open were not used here.", timeout=4)
