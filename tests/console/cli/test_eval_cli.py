"""`ledgeragent eval` through `console.cli.eval_options.register` on a plain argparse parser (the main CLI adds it
with one call)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from console.cli.eval_options import register
from core.evaluation import load_results


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="ledgeragent")
    register(root.add_subparsers(dest="command", required=True))
    return root


async def run(argv: list[str]) -> int:
    args = parser().parse_args(["eval", *argv])
    return int(await args.handler(args))


async def test_offline_eval_prints_the_table_and_writes_the_run(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = await run(["--domain", "retail", "--agent", "both", "--trials", "2", "--tasks", "r01,r12",
                      "--out", str(out), "--error-rate", "1", "--seed", "5"])
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0
    assert captured.err == ""  # not a terminal: no progress bar, not even its closing newline
    assert "SIMULATION" in printed and "pass^2" in printed and "ledger" in printed and "fc" in printed
    assert str(out / "results.json") in printed
    results = load_results(out)
    assert results.header.error_rate == 1.0 and results.header.agents == ["ledger", "fc"]
    assert {(t.task_id, t.agent) for t in results.trials} == {(i, a) for i in ("r01", "r12") for a in ("ledger", "fc")}
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["offline"] is True
    # resuming a finished run has nothing left to do and reports the same trials
    assert await run(["--tasks", "r01,r12", "--trials", "2", "--out", str(out), "--resume",
                      "--error-rate", "1", "--seed", "5"]) == 0
    assert "8 trial(s) were taken from the earlier run" in capsys.readouterr().out


async def test_ablation_flags_reach_the_agent_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = await run(["--agent", "ledger", "--no-gate", "--compact-history", "--trials", "1", "--tasks", "r05",
                      "--disable-predicate", "retail.user_is_customer", "--out", str(tmp_path)])
    assert code == 0
    results = load_results(tmp_path)
    assert results.header.agents == ["ledger-no-gate-compact"]
    assert results.header.disabled_predicates == ["retail.user_is_customer"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--domain", "nowhere"], "unknown domain"),
    (["--disable-predicate", "retail.nope"], "unknown predicate"),
    (["--resume"], "--resume needs --out"),
    (["--error-rate", "2"], "between 0 and 1"),
    (["--tasks", "zz"], "unknown task id"),
    (["--tau2-dir", "/nonexistent"], "no such tau2 data folder"),
    (["--domain", "retail", "--tau2-dir", "/nonexistent"], "no tasks.json"),
    (["--agent-model-args", "[1]"], "expected a JSON object"),
    (["--user-model-args", '{"x": NaN}'], "not valid JSON"),
    (["--max-retries", "-1"], "--max-retries"),
    (["regrade"], "usage: ledgeragent eval regrade"),
    (["compare", "a.json"], "usage: ledgeragent eval compare"),
    (["export", "/nonexistent"], "needs --out"),
])
async def test_input_errors_exit_2_without_a_traceback(argv: list[str], message: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with_out = "--resume" not in argv and argv[0] != "export"
    assert await run([*argv, "--out", str(tmp_path)] if with_out else argv) == 2
    assert message in capsys.readouterr().err


async def test_evidence_assist_is_its_own_configuration_beside_the_papers_gate(tmp_path: Path) -> None:
    """`--evidence both`: the paper's gate keeps its label, assist runs as `ledger-assist`, and each trial's trace
    says which mode it ran in; the report counts the REVISEs by kind and the reads the gate made."""
    out = tmp_path / "run"
    assert await run(["--domain", "retail", "--agent", "ledger", "--evidence", "both", "--trials", "1", "--tasks",
                      "r01", "--out", str(out)]) == 0
    results = load_results(out)
    assert results.header.agents == ["ledger", "ledger-assist"]
    modes = {t.agent: next(e["evidence"] for e in t.events if e["type"] == "session_started")
             for t in results.trials}
    assert modes == {"ledger": "ask", "ledger-assist": "assist"}
    gate_table = (out / "report.md").read_text(encoding="utf-8").split("## Gate", 1)[1]
    assert "| needs a read | breaks a rule | gate reads |" in gate_table and "ledger-assist" in gate_table
