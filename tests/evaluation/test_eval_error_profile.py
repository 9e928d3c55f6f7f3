"""Simulated errors (`eval --error-profile realistic`): seeded, the same mistakes for both agents, per failure kind
in the table; and without a profile the scripted agent is exactly what it was."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from core.error_profile import LABELS, REALISTIC, FailureKind, load_profile
from core.evaluation import load_results
from core.evaluation.metrics import compute_metrics
from tests.support.eval_domains import run_eval

# sha256 of the function-calling agent's proposals (each model call's text and tool calls, in task and trial
# order) over `--trials 2`, recorded on the code before error profiles existed. The FC agent has no gate, so
# these depend only on the planner, the customer and the tools: a profile that leaks into the default changes them.
SLIPS = ("--error-rate", "0.5", "--seed", "1")
BEFORE_PROFILES = {
    ("retail",): "ee53d3655255ec845307bd559728bafc37c1892c2fb7d3176a11d380a92b32a3",
    ("retail", *SLIPS): "e0e242b6430a72c9a93e916e5413efad31a5c373cb2d0747cb7be11130e15ae2",
    ("airline",): "0d9cb716cf9ac5363249dd352bd888d3a75476cf9fbe49019e09dca9ff78e655",
    ("airline", *SLIPS): "edd66933ea69b3da9d636975afc5cf3a186a640429d8d074e3b337453baa1c11",
}


def proposals(folder: Path) -> str:
    lines = sorted((json.loads(line) for line in (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()),
                   key=lambda t: (t["task_id"], t["trial"]))
    turns = [[t["task_id"], t["trial"], [(e.get("text"), e.get("tool_calls")) for e in t["events"]
                                         if e["type"] == "assistant_turn"]] for t in lines]
    return hashlib.sha256(json.dumps(turns, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("argv", list(BEFORE_PROFILES), ids=lambda a: " ".join(a))
async def test_without_a_profile_the_scripted_agent_is_unchanged(tmp_path: Path, argv: tuple[str, ...]) -> None:
    domain, *extra = argv
    assert await run_eval(["--domain", domain, "--agent", "fc", "--trials", "2", "--out", str(tmp_path), *extra]) == 0
    assert proposals(tmp_path) == BEFORE_PROFILES[argv]
    assert all(not json.loads(line)["mistakes"]
               for line in (tmp_path / "trials.jsonl").read_text(encoding="utf-8").splitlines())


def test_every_kind_is_weighed_and_sourced() -> None:
    assert set(REALISTIC.kinds) == set(FailureKind) == set(LABELS)
    for spec in REALISTIC.kinds.values():
        assert 0 < spec.weight < 1 and spec.sources and spec.estimated
    assert load_profile("realistic") is REALISTIC
    with pytest.raises(ValueError, match="unknown error profile 'nope' \\(known: realistic\\)"):
        load_profile("nope")


async def test_the_profile_gives_both_agents_the_same_mistakes_and_the_table_counts_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert await run_eval(["--domain", "airline", "--agent", "both", "--trials", "4", "--error-profile", "realistic",
                           "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "SIMULATION" in printed and "simulated errors: realistic profile, seed 0" in printed
    assert "per failure kind" in printed and "(cancel_without_basis)" in printed
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "**Simulated errors** (realistic profile, seed 0)" in report
    assert "## Simulated errors per failure kind (SIMULATION)" in report
    assert "| airline | ledger | cancel_without_basis |" in report
    results = load_results(out)
    by_key: dict[tuple[str, int], dict[str, list[str]]] = {}
    for trial in results.trials:
        by_key.setdefault((trial.task_id, trial.trial), {})[trial.agent] = [m.kind for m in trial.mistakes]
    assert all(agents["fc"] == agents["ledger"] for agents in by_key.values())  # the method is what differs
    assert any(agents["fc"] for agents in by_key.values())
    metrics = compute_metrics(results.trials)
    fc, ledger = metrics.cell("airline", "fc"), metrics.cell("airline", "ledger")
    assert fc is not None and ledger is not None
    basis = FailureKind.CANCEL_WITHOUT_BASIS.value
    assert fc.mistakes[basis].committed == fc.mistakes[basis].reached_db > 0  # the baseline cancels
    assert ledger.mistakes[basis].gate_refused == ledger.mistakes[basis].committed  # the gate stops each one
    assert ledger.mistakes[basis].blocked == ledger.mistakes[basis].gate_refused
    assert ledger.mistakes[basis].recovery_calls >= ledger.mistakes[basis].gate_refused
    assert ledger.pass_k[1] == 1.0 and fc.pass_k[1] < 1.0
    # seeded: the same command gives the same mistakes
    again = tmp_path / "again"
    assert await run_eval(["--domain", "airline", "--agent", "both", "--trials", "4", "--error-profile", "realistic",
                           "--out", str(again)]) == 0
    assert [[m.model_dump() for m in t.mistakes] for t in load_results(again).trials] == \
        [[m.model_dump() for m in t.mistakes] for t in results.trials]


@pytest.mark.parametrize(("argv", "message"), [
    (["--error-profile", "nope"], "--error-profile: unknown error profile 'nope' (known: realistic)"),
    (["--error-profile", "realistic", "--error-rate", "0.5"], "--error-profile replaces --error-rate"),
    (["--error-profile", "realistic", "--model", "m"], "--error-profile simulates errors of the offline"),
])
async def test_bad_profile_options_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                argv: list[str], message: str) -> None:
    assert await run_eval(["--domain", "retail", "--trials", "1", "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and not (tmp_path / "x").exists()


@pytest.mark.parametrize("domain", ["airline", "retail"])
async def test_a_console_task_session_makes_the_same_mistakes_as_trial_0(tmp_path: Path, domain: str) -> None:
    """Console and eval alike: a task session with the profile records exactly the events the profile's one-trial
    eval run records for that task (trial 0, seed 0), and its agent is named as making simulated errors."""
    from dataclasses import replace

    from console.runtime.live import LiveSession, SessionSpec
    from console.runtime.task_sessions import task_specs

    assert await run_eval(["--domain", domain, "--agent", "ledger", "--trials", "1", "--concurrency", "1",
                           "--error-profile", "realistic", "--out", str(tmp_path / "eval")]) == 0
    trials = {t.task_id: t for t in load_results(tmp_path / "eval").trials}
    base = SessionSpec(scenario=None, error_profile="realistic", evidence="ask")  # eval's default, the paper's
    mistaken = [spec for spec in task_specs(domain, "all", base) if trials[spec.task or ""].mistakes]
    assert mistaken
    for spec in mistaken:
        live = LiveSession(spec, root=tmp_path / "home")
        await live.run()
        assert live.folder is not None
        session = [json.loads(line) for line in (live.folder / "trace.jsonl").read_text().splitlines()]
        session[0].pop("rules_version")
        assert session[0]["model"] == "scripted-simulated-errors(realistic)"
        recorded = [{k: v for k, v in e.items() if k != "rules_version"} for e in trials[spec.task or ""].events]
        assert session == recorded, spec.task
    assert "simulated errors" in " ".join(SessionSpec(domain, scenario="refund-to-original-payment",
                                                      error_profile="realistic").problems())
    assert "unknown error profile 'x'" in " ".join(replace(base, domain="retail", task="r01",
                                                           error_profile="x").problems())


@pytest.mark.parametrize(("executed", "ok", "outcome", "became"), [
    (True, True, "ok", "reached the database"), (True, False, "error", "tool refused"),
    (False, False, "rejected", "gate refused"), (False, False, "vetoed", "operator stopped"),
    (False, False, "undecided", "nobody decided"), (False, False, "invalid", "invalid")])
def test_a_mistake_ends_as_its_tool_result_recorded(executed: bool, ok: bool, outcome: str, became: str) -> None:
    """Each way a call can end is its own, read from the tool_result: an invalid or undecided call is not counted
    as an operator's stop."""
    from core.evaluation.mistakes import mistake_outcomes
    from core.events import CallInfo, ToolResultEvent

    call = CallInfo(id="c1", name="cancel_pending_order", arguments={})
    result = ToolResultEvent(step=1, call=call, kind="write", executed=executed, ok=ok, outcome=outcome,  # type: ignore[arg-type]
                             content="")
    (mistake,) = mistake_outcomes([result], [(FailureKind.OTHER_CUSTOMER_RECORD.value, "c1")])
    assert mistake.outcome == became
