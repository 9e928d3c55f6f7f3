"""How a human steers writes: every gated call passes through a Supervisor before it runs.

Autopilot follows the gate. A console supervisor asks the operator according to its mode. Whatever the
resolution, the executor re-checks it: an edit is gated again, and only FORCE_ALLOW (with a reason and a
name) lets a REVISE/BLOCK call run. That is the one door around the gate, and it is always recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from core.gate import GateDecision
from core.tools import ToolCall


class Decision(StrEnum):
    APPROVE = "approve"  # accept the gate's verdict (run an ALLOW, drop a REVISE/BLOCK)
    ACCEPT_VERDICT = "accept_verdict"  # a human agreed with a REVISE/BLOCK: the call is not run
    VETO = "veto"  # do not run, tell the model why
    EDIT = "edit"  # replace the arguments; the edited call is gated again
    FORCE_ALLOW = "force_allow"  # run despite REVISE/BLOCK; reason required


@dataclass(frozen=True)
class Resolution:
    decision: Decision
    who: str = "autopilot"
    reason: str = ""
    arguments: Mapping[str, Any] | None = None
    # How long the call waited for this human, in seconds (None: nobody measured it, e.g. autopilot). The
    # supervisor that asked measures it; the executor records it with the decision.
    waited_s: float | None = None

    def __post_init__(self) -> None:
        if self.decision is Decision.FORCE_ALLOW and not self.reason.strip():
            raise ValueError("force-allow needs a reason")
        if self.decision is Decision.EDIT and self.arguments is None:
            raise ValueError("edit needs the new arguments")
        if self.decision in (Decision.FORCE_ALLOW, Decision.VETO, Decision.EDIT) and not self.who.strip():
            raise ValueError("an override must say who made it")
        if self.waited_s is not None and not (0 <= self.waited_s < float("inf")):
            raise ValueError("waited_s must be a finite, non-negative number of seconds")

    @property
    def is_human(self) -> bool:
        return self.who != "autopilot"


class Undecided(Exception):
    """Nobody decided: the supervisor asked a human and no decision came in time (an external agent's call
    cannot wait forever). Raised by `Supervisor.review`; the executor then does not run the call and records
    it as not executed ("undecided"), with no operator decision, since none was made."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@runtime_checkable
class Supervisor(Protocol):
    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution: ...


class Autopilot:
    """Follows the gate without asking anyone."""

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        return Resolution(Decision.APPROVE)
