"""`ledgeragent check` shows every reason whole, at any width, and says what a session's operator decided.

Piped (pytest captures stdout: no terminal) nothing is wrapped whatever `COLUMNS` says: each reason is one line.
On a terminal (a real pseudo-terminal, tests/support/terminal.py) lines wrap at the terminal's width at word
boundaries: every reason's words are on screen, in order, none split. A force-allowed write says who allowed
it, when and why, as the trace's own `supervisor_decision` event says, in both forms of `check`.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from console.cli.main import main
from core.gate import GateDecision, Verdict
from core.supervisor import Decision, Resolution
from core.tools import ToolCall
from tests.support.retail_records import MIA, MIA_EMAIL, MIA_PENDING, NOAH_PENDING
from tests.support.scenario_runs import run as run_scenario
from tests.support.terminal import run_in_terminal
from tests.support.upstream import RECORDINGS, TAU2_AIRLINE

WHEN = "2026-01-01T00:00:00"  # the scripted session's clock
TRAJECTORY = [
    {"name": "find_user_id_by_email", "arguments": {"email": MIA_EMAIL}},
    {"name": "get_user_details", "arguments": {"user_id": MIA}},
    {"name": "get_order_details", "arguments": {"order_id": MIA_PENDING}},
    {"name": "cancel_pending_order", "arguments": {"order_id": MIA_PENDING, "reason": "no longer needed"},
     "expect": "ALLOW"},
    {"name": "get_order_details", "arguments": {"order_id": NOAH_PENDING}},
    {"name": "cancel_pending_order", "arguments": {"order_id": NOAH_PENDING, "reason": "no longer needed"},
     "expect": "BLOCK"},
    {"name": "return_delivered_order_items",  # five rules object, one reason each
     "arguments": {"order_id": "#W4821001", "item_ids": ["x"], "payment_method_id": "paypal_1"}},
]


class ForceAllowsTheBlock:
    """The operator: force-allows the first write the gate does not ALLOW, approves every other."""

    def __init__(self, who: str, reason: str, decision: Decision = Decision.FORCE_ALLOW) -> None:
        self.who, self.reason, self.decision, self.used = who, reason, decision, False

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        if self.used or decision is None or decision.verdict is Verdict.ALLOW:
            return Resolution(Decision.APPROVE)
        self.used = True
        return Resolution(self.decision, who=self.who, reason=self.reason)


def record(folder: Path, operator: ForceAllowsTheBlock) -> Path:
    """airline cancel-outside-window: the gate BLOCKs the cancellation; `operator` decides it."""
    asyncio.run(run_scenario("airline", "cancel-outside-window", folder, supervisor=operator))
    return folder / "trace.jsonl"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A private home and a narrow `COLUMNS` (what a piped run must ignore); the environment for a subprocess."""
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    return {**os.environ, "LEDGERAGENT_HOME": str(tmp_path / "home")}


@pytest.fixture
def trajectory(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in TRAJECTORY), encoding="utf-8")
    return path


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def parts(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Every objecting rule's "id: reason", as the JSON output gives them (joined by " | ")."""
    return [part for row in rows if row["reason"] for part in row["reason"].split(" | ")]


def words_in_order(needle: str, hay: list[str]) -> bool:
    """Whether `needle`'s words appear in `hay`, one after the other, each whole."""
    words = " ".join(hay).split()
    wanted = needle.split()
    return any(words[i:i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))


def test_piped_every_reason_is_one_whole_line_whatever_columns_says(
        home: dict[str, str], trajectory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, str(trajectory), "--domain", "retail", "--json")
    wanted = parts(json.loads(line) for line in out.splitlines())
    assert code == 0 and len(wanted) == 6
    code, out = check(capsys, str(trajectory), "--domain", "retail")
    lines = [line.strip() for line in out.splitlines()]
    assert code == 0
    for part in wanted:
        assert part in lines, (part, out)
    assert max(len(line) for line in lines) > 80  # COLUMNS=80 is no limit when no terminal reads it
    assert "…" not in out


def test_on_an_80_column_terminal_every_reason_wraps_at_words(home: dict[str, str], trajectory: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _, out = check(capsys, str(trajectory), "--domain", "retail", "--json")
    wanted = parts(json.loads(line) for line in out.splitlines())
    code, lines = run_in_terminal(["check", str(trajectory), "--domain", "retail"], columns=80, env=home)
    assert code == 0, lines
    assert max(len(line) for line in lines) <= 80 and not any("…" in line for line in lines), lines
    for part in wanted:
        assert words_in_order(part, lines), (part, lines)
    assert "line 6  #5  cancel_pending_order  write  BLOCK  ✓ as expected" in lines


def test_on_a_wide_terminal_the_table_wraps_each_reason_in_its_column(home: dict[str, str], tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path / "s", ForceAllowsTheBlock("alice", "the customer's father passed away; compassion"))
    _, out = check(capsys, str(trace), "--json")
    wanted = parts(json.loads(line) for line in out.splitlines())
    code, lines = run_in_terminal(["check", str(trace)], columns=160, env=home)
    assert code == 0
    header = next(line for line in lines if line.split()[:2] == ["#", "line"])
    start, end = header.index("reason"), header.index("expect")
    column = [line[start:end] for line in lines[lines.index(header) + 1:] if not line.startswith("5 calls")]
    assert wanted and all(words_in_order(part, column) for part in wanted), (wanted, lines)
    assert words_in_order(f"in the session: BLOCK, force-allowed by alice at {WHEN}: the customer's father passed "
                          "away; compassion; ran", column), lines
    assert max(len(line) for line in lines) <= 160


def test_a_force_allowed_write_says_who_allowed_it_when_and_why(home: dict[str, str], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path / "s", ForceAllowsTheBlock("alice", "manager approved it by phone"))
    code, out = check(capsys, str(trace), "--as-recorded")
    assert code == 0
    head = next(line for line in out.splitlines() if "cancel_reservation" in line)
    assert head.split("  ", 2)[2] == (f"BLOCK, force-allowed by alice at {WHEN}: manager approved it by phone; ran "
                                      "(stale: reservations.UX789J)")
    code, out = check(capsys, str(trace))  # today's gate re-judges the calls; the session's decision beside it
    assert code == 0
    assert (f"    in the session: BLOCK, force-allowed by alice at {WHEN}: manager approved it by phone; ran"
            in out.splitlines())
    # the words are the event's: change what the trace recorded, and the report says that instead
    lines = trace.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if '"type":"supervisor_decision"' in line)
    event = json.loads(lines[at])
    event.update(who="bob", when="2026-02-03T04:05:06", reason="as the trace now says")
    lines[at] = json.dumps(event, separators=(",", ":"))
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, out = check(capsys, str(trace), "--as-recorded")
    assert "BLOCK, force-allowed by bob at 2026-02-03T04:05:06: as the trace now says; ran" in out
    assert "alice" not in out


def test_a_vetoed_write_says_who_stopped_it(home: dict[str, str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path / "s", ForceAllowsTheBlock("dana", "wrong reservation", Decision.VETO))
    _, out = check(capsys, str(trace), "--as-recorded")
    assert f"BLOCK, vetoed by dana at {WHEN}: wrong reservation; not run" in out
    _, out = check(capsys, str(trace))
    assert f"in the session: BLOCK, vetoed by dana at {WHEN}: wrong reservation; not run: stopped by the operator" \
        in out


def test_as_recorded_on_an_80_column_terminal_cuts_nothing(home: dict[str, str], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    trace = record(tmp_path / "s", ForceAllowsTheBlock("alice", "manager approved it by phone"))
    _, out = check(capsys, str(trace), "--as-recorded", "--json")
    wanted = parts(json.loads(line) for line in out.splitlines())
    code, lines = run_in_terminal(["check", str(trace), "--as-recorded"], columns=80, env=home)
    assert code == 0 and wanted
    # the one ellipsis allowed opens a quote: the excerpt of the agent's message a customer's yes answered
    assert max(len(line) for line in lines) <= 80 and not any("…" in line.replace('"…', '"') for line in lines), lines
    for part in [*wanted, f"BLOCK, force-allowed by alice at {WHEN}: manager approved it by phone; ran"]:
        assert words_in_order(part, lines), (part, lines)
    assert words_in_order("total 1 0 0 0 1 0", lines), lines  # the summary's totals, whole


@pytest.mark.shared
def test_a_tau2_recording_on_an_80_column_terminal_cuts_no_reason(home: dict[str, str], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    packed = RECORDINGS / "sierra-research__tau2-bench__gpt-4.1_airline_default_gpt-4.1_1trials.json.gz"
    database = TAU2_AIRLINE / "db.json"
    if not packed.is_file() or not database.is_file():
        pytest.skip(f"recordings or tau2 data not found at {packed}, {database}")
    recording = tmp_path / "airline.json"
    recording.write_bytes(gzip.decompress(packed.read_bytes()))
    argv = ["check", str(recording), "--as-recorded", "--db", str(database)]
    _, out = check(capsys, *argv[1:], "--json")
    wanted = parts(json.loads(line) for line in out.splitlines())
    assert len(wanted) > 10 and any(len(part) > 400 for part in wanted)  # long ones: they were cut at 400
    _, lines = run_in_terminal(argv, columns=80, env=home)
    assert max(len(line) for line in lines) <= 80, lines
    text = " ".join(" ".join(lines).split())
    for part in wanted:
        assert " ".join(part.split()) in text, part
