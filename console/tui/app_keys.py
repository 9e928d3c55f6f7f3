"""What the Apps (the one-session console, the supervision desk, compare) do alike for their global keys."""

from __future__ import annotations

from console.tui.key_order import InOrderApp


class ThemeAndHelpKeys(InOrderApp):
    """`t` switches between the dark and the light theme; `?` shows the keys of the screen in front. A decision
    screen in front takes its keys in the order they were typed (console/tui/key_order.py)."""

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme != "textual-light" else "textual-dark"

    def action_help(self) -> None:
        from console.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))
