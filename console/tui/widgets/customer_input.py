"""The customer's box (customer seat): Enter sends what was typed up to that Enter, and nothing typed after it.

Input's own Enter is a binding, and the App runs a binding only once the key has gone through the box and
back up to it; letters typed right after Enter (one burst from a terminal, a person who types on) are put in
the box meanwhile. The message sent then took them too ("yes" Enter "and also..." went as one message) and the
box was emptied after, losing the next sentence. Here the box takes Enter in its own order, with the letters:
it sends its text as it is at that Enter and empties itself at once; what comes after stays in the box.
(The screen gives it select_on_focus=False: coming back to the box, the next letter continues the sentence
instead of replacing it.)
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class CustomerInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            text, self.value = self.value, ""
            self.post_message(self.Submitted(self, text))
            return
        await super()._on_key(event)
