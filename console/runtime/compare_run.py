"""Two sessions of one scenario side by side: the function-calling baseline and LedgerAgent (`console --compare`).

Both are normal console sessions (`LiveSession`: own folder, database copy and trace), built from the same spec
with only the agent changed (`fc`: `AgentConfig(ledger=False, gate=False)`; `ledger`), so they hear the same
customer lines and run the same scripted model: the same mistakes, proposed on both sides. Stepping acts on both
pacers at once; each side can also be stepped alone.

What differs is said in `differences`, from the two traces (never from the screen): the write the baseline ran
that the gate refuses on the other side, re-judged after the fact with the same rules (`core.regate.judge_writes`:
"the gate would have said BLOCK: airline.cancel_basis"), and LedgerAgent's own verdict on it; at the end, how
each side's database differs from the expected end state (`end_states`): the end state of the LedgerAgent
session when it met the scenario's expectations (the verdicts and end reason the scenario declares).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console.runtime.live import LiveSession, Phase, SessionSpec, SupervisionMode
from core.db_diff import DbDiff, db_diff
from core.domain import Domain
from core.events import GateDecided, SessionEnded, ToolResultEvent
from core.gate import GateDecision, RefusalKind
from core.llm.base import ChatModel
from core.regate import WriteJudge
from core.scenario import Scenario
from core.timeline import failed_ids, recorded_refusal
from mock_backends.registry import open_backend

SIDES = ("fc", "ledger")
SIDE_NAMES = {"fc": "Baseline (function calling, no ledger, no gate)", "ledger": "LedgerAgent (ledger + gate)"}
SIMULATED = ("SIMULATION · simulated errors: the scripted agent makes the same mistake on both sides; only the "
             "gate differs")
NO_DIFFERENCE = "no difference on this scenario"
NOTHING_YET = "nothing differs yet"


class CompareError(ValueError):
    """Options that make no sense for two sides: one line naming the one that conflicts."""


def compare_problem(*, seat: str, agent: str, mode: str, scenario: str | None) -> str | None:
    """Why `--compare` cannot run with these options (None: it can). Each side's agent is fixed, both sides hear
    the same scripted customer, and no operator decides for two sessions at once."""
    if agent != "ledger":
        return f"--compare runs both agents (fc on the left, ledger on the right): drop --agent {agent}"
    if seat != "watch":
        return f"--compare shows two scripted sessions side by side: drop --seat {seat}"
    if mode != SupervisionMode.AUTOPILOT.value:
        return f"--compare runs both sides on autopilot: drop --mode {mode!r}"
    if scenario is None:
        return "--compare needs a scenario (both sides hear its customer lines): drop --scenario chat"
    return None


@dataclass
class MistakeView:
    """The declared (or found) mistake on each side, from the traces."""

    says: str
    tool: str
    baseline: ToolResultEvent | None = None  # the baseline's call of it
    judged: GateDecision | None = None  # the gate re-judging the baseline's call with the same rules
    ledger: GateDecided | None = None  # LedgerAgent's gate on its own call of it
    ledger_result: ToolResultEvent | None = None


@dataclass
class Differences:
    mistakes: list[MistakeView] = field(default_factory=list)
    ended: bool = False
    end_lines: list[str] = field(default_factory=list)

    @property
    def none(self) -> bool:
        return not self.mistakes


def _verdict_words(verdict: str, refusal: RefusalKind | None) -> str:
    """A verdict as the strip says it: a REVISE names its kind (needs a read / breaks a rule)."""
    return f"{verdict} ({refusal.label})" if refusal is not None else verdict


def differences(scenario: Scenario | None, domain: Domain, baseline: Sequence[Any],
                ledger: Sequence[Any], judge: WriteJudge | None = None) -> Differences:
    """What the two traces show so far (see the module docstring). With a declared baseline mistake, its tool's
    first write on each side; without one, every baseline write the gate re-judges as not ALLOW. `judge` (one
    per baseline trace) keeps what it judged, so a live view re-judges only new events."""
    out = Differences(ended=any(isinstance(e, SessionEnded) for e in baseline)
                      and any(isinstance(e, SessionEnded) for e in ledger))
    judged = (judge or WriteJudge(domain)).feed(baseline)
    declared = scenario.baseline_mistake if scenario is not None else None
    if declared is not None:
        view = MistakeView(declared.says, declared.tool)
        found = next(((e, d) for e, d in judged if e.call.name == declared.tool), None)
        if found is not None:
            view.baseline, view.judged = found
        view.ledger = next((e for e in ledger if isinstance(e, GateDecided) and e.call.name == declared.tool), None)
        if view.ledger is not None:
            view.ledger_result = next((e for e in ledger if isinstance(e, ToolResultEvent)
                                       and e.call.id == view.ledger.call.id), None)
        if view.baseline is not None or view.ledger is not None:
            out.mistakes.append(view)
        return out
    for event, decision in judged:
        if decision.verdict.value != "ALLOW":
            view = MistakeView(f"ran {event.call.name}, which the policy does not allow here", event.call.name,
                               event, decision)
            view.ledger = next((e for e in ledger if isinstance(e, GateDecided) and e.call.name == event.call.name
                                and e.verdict != "ALLOW"), None)
            out.mistakes.append(view)
    return out


def strip_lines(diff: Differences) -> list[tuple[str, str]]:
    """(role, text) lines for the difference strip and the export: stakeholder words first, rule ids second.
    Roles: "baseline", "ledger", "end", "none"."""
    if diff.none:
        return [("none", NO_DIFFERENCE if diff.ended else NOTHING_YET), *(("end", line) for line in diff.end_lines)]
    lines: list[tuple[str, str]] = []
    for view in diff.mistakes:
        if view.baseline is not None:
            mine = view.baseline
            if mine.executed and mine.ok:
                what = "it went through: the database changed"
            elif mine.executed:
                what = f"only the tool's own check stopped it ({(mine.content.splitlines() or [''])[0][:120]})"
            else:
                what = "it did not run"
            rules = ", ".join(r.predicate_id for r in view.judged.failed) if view.judged is not None else ""
            verdict = _verdict_words(view.judged.verdict.value, view.judged.refusal) \
                if view.judged is not None else "ALLOW"
            lines.append(("baseline", f"Baseline {view.says}: {what}. Re-judged with the same rules, the gate "
                                      f"would have said {verdict}" + (f": {rules}" if rules else "")))
        else:
            lines.append(("baseline", f"Baseline has not made the mistake yet ({view.says})"))
        if view.ledger is not None:
            rules = ", ".join(failed_ids(view.ledger.results))
            result = view.ledger_result
            outcome = "pending" if result is None else "it ran" if result.executed else "not run"
            words = _verdict_words(view.ledger.verdict, recorded_refusal(view.ledger))
            lines.append(("ledger", f"LedgerAgent proposed the same {view.tool}: the gate said {words}, {outcome}"
                                    + (f" — {rules}" if rules else "")))
        else:
            lines.append(("ledger", f"LedgerAgent has not proposed {view.tool} yet"))
    lines += [("end", line) for line in diff.end_lines]
    return lines


class ComparePair:
    """The two live sessions, stepped together or alone. Callbacks name the side ("fc" or "ledger")."""

    def __init__(self, spec: SessionSpec, *, on_event: Callable[[str, Any], object] = lambda s, e: None,
                 on_state: Callable[[str], object] = lambda s: None, operator: str = "operator",
                 root: Path | None = None, model_factory: Callable[[SessionSpec], ChatModel] | None = None) -> None:
        self.spec = spec
        self.sides: dict[str, LiveSession] = {
            side: LiveSession(replace(spec, agent=side), operator=operator, root=root, model_factory=model_factory,
                              on_event=_bound_event(on_event, side), on_state=_bound_state(on_state, side))
            for side in SIDES}
        ledger = self.sides["ledger"]
        self.domain = ledger.domain
        self.scenario = ledger.scenario
        self.before: dict[str, dict[str, Any]] | None = None
        self.end: Differences | None = None
        self.end_diffs: dict[str, DbDiff] = {}  # per side: its database against the starting one
        self.judge = WriteJudge(self.domain)  # the baseline's writes, re-judged as its trace grows

    def __getitem__(self, side: str) -> LiveSession:
        return self.sides[side]

    async def open(self) -> None:
        for live in self.sides.values():
            await live.open()
        self.before = await _export(self.spec.domain, self.spec.db)

    def start_paused(self) -> None:
        for live in self.sides.values():
            live.pacer.pause()

    def step(self, side: str | None = None) -> None:
        for name in (side,) if side is not None else SIDES:
            self.sides[name].pacer.step()

    def toggle(self) -> None:
        """Pause both when either runs; resume both when both are paused."""
        lives = list(self.sides.values())
        if all(live.pacer.paused for live in lives):
            for live in lives:
                live.pacer.resume()
        else:
            for live in lives:
                live.pacer.pause()

    @property
    def ended(self) -> bool:
        return all(live.state.phase == Phase.ENDED for live in self.sides.values())

    def ended_traces(self) -> bool:
        """Both traces hold their `session_ended` (the event arrives before the session's phase changes)."""
        return all(any(isinstance(e, SessionEnded) for e in live.bus.history) for live in self.sides.values())

    def differences(self) -> Differences:
        diff = differences(self.scenario, self.domain, self.sides["fc"].bus.history,
                           self.sides["ledger"].bus.history, self.judge)
        if self.end is not None:
            diff.end_lines = self.end.end_lines
        return diff

    def difference_lines(self) -> list[tuple[str, str]]:
        """What differs, as (role, text) lines: the one source of the screen's strip and of the export's
        "What differs", so the two cannot say different things."""
        return strip_lines(self.differences())

    def met_expectations(self) -> bool:
        """Did the LedgerAgent side do what the scenario declares (its gate verdicts, in order, and end reason)?"""
        if self.scenario is None:
            return False
        history = self.sides["ledger"].bus.history
        verdicts = [e.verdict for e in history if isinstance(e, GateDecided)]
        ended = next((e.reason for e in history if isinstance(e, SessionEnded)), None)
        expect = self.scenario.expect
        return (expect.verdicts is None or verdicts == expect.verdicts) and \
            (expect.end_reason is None or ended == expect.end_reason)

    async def end_states(self) -> Differences:
        """Once both sides ended: each side's database against the expected end state (see the module doc)."""
        assert self.before is not None
        after = {side: await _export(self.spec.domain, live.folder / "db.sqlite" if live.folder else None)
                 for side, live in self.sides.items()}
        lines: list[str] = []
        if self.met_expectations():
            expected = after["ledger"]
            vs = db_diff(expected, after["fc"])
            rest = vs.record_changes  # (the payments are the summary's first words); every row, none left out
            lines.append(f"End state, baseline against the expected one: {vs.summary()}"
                         + (": " + "; ".join(c.describe() for c in rest) if rest else ""))
            lines.append("End state, LedgerAgent against the expected one: no difference (it met the scenario's "
                         "expected verdicts and ending)")
        else:
            lines.append("End state: the LedgerAgent side did not meet the scenario's expectations, so there is no "
                         "expected end state to compare with")
        for side in SIDES:
            changed = db_diff(self.before, after[side])
            lines.append(f"Against the starting database, {side_label(side)}: {changed.summary()}")
        self.end = Differences(ended=True, end_lines=lines)
        self.end_diffs = {side: db_diff(self.before, after[side]) for side in SIDES}
        return self.differences()

    async def close(self) -> None:
        for live in self.sides.values():
            with contextlib.suppress(Exception):
                await live.close()


def _bound_event(callback: Callable[[str, Any], object], side: str) -> Callable[[Any], object]:
    def forward(event: Any) -> object:
        return callback(side, event)

    return forward


def _bound_state(callback: Callable[[str], object], side: str) -> Callable[[], object]:
    def forward() -> object:
        return callback(side)

    return forward


def side_label(side: str) -> str:
    return "baseline" if side == "fc" else "LedgerAgent"


async def _export(domain: str, source: Path | None) -> dict[str, dict[str, Any]]:
    """The data of a database (a session's db.sqlite, or the shipped seed / --db data), read from a copy so the
    session's own file is never opened a second time."""
    scratch = Path(tempfile.mkdtemp(prefix="ledgeragent-compare-"))
    try:
        backend = await open_backend(domain, scratch / "db.sqlite", source)
        try:
            data: dict[str, dict[str, Any]] = await backend.export()
        finally:
            await backend.close()
        return data
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
