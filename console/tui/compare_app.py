"""`ledgeragent console --compare`: the App that shows one compare run (console/tui/screens/compare.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.binding import Binding
from textual.screen import Screen

from console.runtime.live import SessionSpec
from console.tui.app_keys import ThemeAndHelpKeys
from console.tui.screens.compare import CompareScreen
from core.llm.base import ChatModel


class CompareConsole(ThemeAndHelpKeys):
    TITLE = "LedgerAgent Console — compare"
    CSS_PATH = ["console.tcss", "compare.tcss"]
    BINDINGS = [
        Binding("t", "toggle_theme", "Theme", show=False, id="theme"),
        Binding("question_mark", "help", "Keys", id="help"),
        Binding("q", "quit_compare", "Quit", id="quit"),
    ]

    def __init__(self, spec: SessionSpec, *, operator: str = "operator", root: Path | None = None,
                 autostart: bool = False, model_factory: Callable[[SessionSpec], ChatModel] | None = None) -> None:
        super().__init__()
        self.compare = CompareScreen(spec, operator=operator, root=root, autostart=autostart,
                                     model_factory=model_factory)

    def get_default_screen(self) -> Screen[Any]:
        return self.compare

    async def action_quit_compare(self) -> None:
        """Quit; both sessions' traces end with their `session_ended` (reason `quit` if still running)."""
        await self.compare.close_pair("quit")
        self.exit()
