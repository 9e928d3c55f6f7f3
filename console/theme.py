"""One colour map for verdicts and phases, shared by every pane, modal and screen.

Badges use a solid background with a contrasting foreground, so they read the same on the light and the
dark theme; nothing else in the console hard-codes a verdict colour.
"""

from __future__ import annotations

VERDICT_BADGE = {"ALLOW": "bold black on green", "REVISE": "bold black on yellow", "BLOCK": "bold white on red",
                 "ERROR": "bold white on magenta"}


def verdict_style(verdict: str) -> str:
    return VERDICT_BADGE.get(verdict, "bold reverse")
