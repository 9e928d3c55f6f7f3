"""`console --compare`: the baseline and LedgerAgent on one scenario, side by side.

Per shipped scenario, both sessions run to their end and the assertions read both traces from disk: the baseline
proposed the scenario's declared mistake and the gate, re-judging that call with the same rules, refuses it; on
the LedgerAgent side the gate refused the same tool's call and it did not run. The screen tests wait for states,
never for time."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from console.cli.main import main
from console.cli.serve import ServeError, build_config
from console.cli.serve import register as register_serve
from console.runtime.compare_export import compare_html, compare_markdown
from console.runtime.compare_run import NO_DIFFERENCE, SIMULATED, ComparePair, compare_problem, strip_lines
from console.runtime.live import SessionSpec
from console.tui.compare_app import CompareConsole
from core.events import GateDecided, SessionStarted, ToolResultEvent
from core.regate import judge_writes
from core.scenario import list_scenarios, load_scenario
from core.trace import load_trace
from domains.registry import DOMAINS, load_domain
from tests.support.cli import cli_home, one_error_line
from tests.support.pilot import wait_for

SCENARIOS = [(d, name) for d in DOMAINS for name in list_scenarios(load_domain(d).scenarios_dir)]


async def run_pair(spec: SessionSpec, root: Path) -> ComparePair:
    pair = ComparePair(spec, root=root)
    await pair.open()
    await asyncio.gather(pair["fc"].run(), pair["ledger"].run())
    await pair.end_states()
    return pair


def test_every_scenario_declares_the_baseline_mistake() -> None:
    assert len(SCENARIOS) == 12
    for domain, name in SCENARIOS:
        scenario = load_scenario(list_scenarios(load_domain(domain).scenarios_dir)[name])
        mistake = scenario.baseline_mistake
        assert mistake is not None and mistake.says and load_domain(domain).tool(mistake.tool) is not None


@pytest.mark.parametrize(("domain", "name"), SCENARIOS, ids=[f"{d}/{n}" for d, n in SCENARIOS])
async def test_both_traces_show_the_baseline_mistake_and_the_refusal(tmp_path: Path, domain: str, name: str) -> None:
    pair = await run_pair(SessionSpec(domain=domain, scenario=name), tmp_path)
    scenario = pair.scenario
    assert scenario is not None and scenario.baseline_mistake is not None
    tool = scenario.baseline_mistake.tool
    folders = {side: pair[side].folder for side in ("fc", "ledger")}
    assert folders["fc"] != folders["ledger"]  # two normal sessions: own folder, database copy, trace
    traces = {}
    for side, folder in folders.items():
        assert folder is not None and (folder / "db.sqlite").is_file()
        traces[side] = load_trace(folder / "trace.jsonl")
        started = next(e for e in traces[side] if isinstance(e, SessionStarted))
        assert started.agent == side and started.scenario == name
    # the baseline proposed the mistake (no gate saw it); re-judged with the same rules, the gate refuses it
    assert not any(isinstance(e, GateDecided) for e in traces["fc"])
    judged = [(e, d) for e, d in judge_writes(traces["fc"], pair.domain) if e.call.name == tool]
    assert judged, f"the baseline never called {tool}"
    first, decision = judged[0]
    assert first.executed and decision.verdict.value in ("REVISE", "BLOCK")
    # LedgerAgent proposed the same call: its gate refused it and it did not run
    refused = next(e for e in traces["ledger"] if isinstance(e, GateDecided) and e.call.name == tool)
    assert refused.verdict in ("REVISE", "BLOCK")
    outcome = next(e for e in traces["ledger"] if isinstance(e, ToolResultEvent) and e.call.id == refused.call.id)
    assert not outcome.executed
    assert refused.call.name == first.call.name and dict(refused.call.arguments) == dict(first.call.arguments)
    assert pair.met_expectations()
    # the strip says both, stakeholder words first, the rule ids second
    lines = strip_lines(pair.differences())
    baseline = next(text for role, text in lines if role == "baseline")
    assert baseline.startswith(f"Baseline {scenario.baseline_mistake.says}")
    assert f"would have said {decision.verdict.value}" in baseline
    assert all(r.predicate_id in baseline for r in decision.failed)
    ledger = next(text for role, text in lines if role == "ledger")
    assert f"the gate said {refused.verdict}" in ledger and "not run" in ledger
    assert any(role == "end" and "expected one" in text for role, text in lines)


async def test_the_baseline_is_re_judged_with_the_rules_the_session_had(tmp_path: Path) -> None:
    """A rule the spec disables is off on both sides: the strip's "same rules" are the LedgerAgent side's."""
    spec = SessionSpec(domain="airline", scenario="cancel-outside-window",
                       disabled_predicates=("airline.cancel_basis",))
    pair = await run_pair(spec, tmp_path)
    ledger = next(e for e in pair["ledger"].bus.history if isinstance(e, GateDecided))
    baseline = next(text for role, text in strip_lines(pair.differences()) if role == "baseline")
    assert f"would have said {ledger.verdict}" in baseline and "airline.cancel_basis" not in baseline


async def test_a_scenario_without_a_declared_mistake_still_runs(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    shutil.copy(Path(__file__).parents[1] / "data" / "refund-no-mistake.json", scenarios)
    retail = load_domain("retail")
    monkeypatch.setattr("console.runtime.live.load_domain", lambda name: replace(retail, scenarios_dir=scenarios))
    pair = await run_pair(SessionSpec(domain="retail", scenario="refund-no-mistake"), tmp_path / "home")
    lines = strip_lines(pair.differences())
    assert lines[0] == ("none", NO_DIFFERENCE)
    assert all(e.verdict == "ALLOW" for e in load_trace(pair["ledger"].folder / "trace.jsonl")  # type: ignore[operator]
               if isinstance(e, GateDecided))


async def test_the_export_aligns_both_transcripts_by_turn(tmp_path: Path) -> None:
    pair = await run_pair(SessionSpec(domain="airline", scenario="cancel-outside-window"), tmp_path)
    markdown = compare_markdown(pair)
    assert SIMULATED in markdown and "## What differs" in markdown and "would have said BLOCK" in markdown
    assert markdown.count("### Turn 1") == 1 and "### Turn 2" in markdown
    turn2 = markdown.split("### Turn 2")[1].split("### Turn 3")[0]
    assert "#### Baseline" in turn2 and "#### LedgerAgent" in turn2 and "cancel_reservation" in turn2
    assert "reservations UX789J status" in markdown
    # the money in words, never as the payment history's JSON
    assert "reservations UX789J payment_history: $312.00 refunded to Visa credit_card_4521001" in markdown
    assert "$312.00 refunded to Visa credit_card_4521001; 1 row(s) differ" in markdown
    assert '"payment_id"' not in markdown
    page = compare_html(pair)
    assert page.startswith("<!doctype html>") and "<script" not in page and "would have said BLOCK" in page
    assert page.count("<td><pre>") == 2 * (markdown.count("### Turn ") + 1)


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_the_compare_screen_steps_both_sides_together(tmp_path: Path, size: tuple[int, int]) -> None:
    app = CompareConsole(SessionSpec(domain="airline", scenario="cancel-outside-window"), root=tmp_path)
    async with app.run_test(size=size) as pilot:
        screen = app.compare
        await wait_for(pilot, lambda: screen.pair is not None and bool(screen.panes))
        pair = screen.pair
        assert pair is not None
        sides = [screen.query_one(f"#side-{s}") for s in ("fc", "ledger")]
        if size[0] >= 160:
            assert all(s.display for s in sides)
        else:
            assert [s.display for s in sides] == [True, False]
            await pilot.press("s")
            assert [s.display for s in sides] == [False, True]
        await pilot.press("n")  # one model call on each side, then both wait for the next step
        await wait_for(pilot, lambda: all(p.session is not None and p.session.steps >= 1 and p.pacer.waiting
                                          for p in pair.sides.values()))
        turns = {side: len([e for e in pair[side].bus.history if e.type == "assistant_turn"]) for side in pair.sides}
        assert turns == {"fc": 1, "ledger": 1}
        await pilot.press("1")  # the baseline alone
        await wait_for(pilot, lambda: len([e for e in pair["fc"].bus.history if e.type == "assistant_turn"]) == 2
                       and pair["fc"].pacer.waiting is not None)
        assert len([e for e in pair["ledger"].bus.history if e.type == "assistant_turn"]) == 1
        await pilot.press("space")  # both run on to the end
        await wait_for(pilot, lambda: pair.end is not None, timeout=30)
        said = [text for _role, text in screen.strip.lines]
        assert any("would have said BLOCK: airline.cancel_basis" in t for t in said)
        assert any("the gate said BLOCK, not run" in t for t in said)
        await pilot.press("e")
        assert [p.name for p in screen.exported] == ["compare.md", "compare.html"]


@pytest.mark.parametrize(("argv", "conflict"), [
    (["--seat", "agent"], "drop --seat agent"), (["--agent", "fc"], "drop --agent fc"),
    (["--seat", "customer"], "drop --seat customer"), (["--mode", "step"], "drop --mode 'step'"),
    (["--scenario", "chat"], "drop --scenario chat")])
def test_compare_refuses_options_for_one_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], argv: list[str],
                                              conflict: str) -> None:
    home = cli_home(tmp_path, monkeypatch)
    assert main(["console", "--compare", "--domain", "airline", *argv]) == 2
    assert conflict in one_error_line(capsys.readouterr().err)
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_compare_problem_accepts_the_defaults() -> None:
    assert compare_problem(seat="watch", agent="ledger", mode="autopilot", scenario="x") is None


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register_serve(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_serve_compare_gives_every_tab_the_compare_view(tmp_path: Path) -> None:
    environ = {"PATH": "/bin", "LEDGERAGENT_HOME": str(tmp_path)}
    config = build_config(_serve_args("--compare", "--domain", "airline", "--scenario", "cancel-outside-window"),
                          environ)
    words = shlex.split(config.command)
    assert words[1:4] == [sys.executable, "-m", "console.cli.tab"] and "--compare" in words
    assert "--scenario=cancel-outside-window" in words and not config.live_model
    with pytest.raises(ServeError, match="--compare runs both agents .*: drop --agent fc"):
        build_config(_serve_args("--compare", "--agent", "fc"), environ)


async def test_a_tab_command_line_opens_the_compare_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a tab runs (`console.cli.tab` -> `ledgeragent console --compare ...`) builds the compare App."""
    opened: list[object] = []
    monkeypatch.setattr(CompareConsole, "run", lambda self: opened.append(self))
    cli_home(tmp_path, monkeypatch)
    assert main(["console", "--compare", "--domain", "retail", "--scenario", "other-customers-order"]) == 0
    (app,) = opened
    assert isinstance(app, CompareConsole) and app.compare.spec.scenario == "other-customers-order"
    assert app.compare.spec.pace == 0.6  # the scripted demo's pace, so an audience can follow
