"""What both Apps (the one-session console and the supervision desk) do alike for their global keys."""

from __future__ import annotations

from textual.app import App


class ThemeAndHelpKeys(App[None]):
    """`t` switches between the dark and the light theme; `?` shows the keys of the screen in front."""

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme != "textual-light" else "textual-dark"

    def action_help(self) -> None:
        from console.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))
