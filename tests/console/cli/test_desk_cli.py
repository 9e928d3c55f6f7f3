"""`ledgeragent supervise` and `ledgeragent audit` on bad input: one line on stderr, exit 2, nothing started and no
folder left; `audit` on a real desk's log: filtered by operator, verdict and decision, each with its outcome."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli.main import main
from console.runtime.live import SupervisionMode
from tests.support.cli import cli_home, one_error_line
from tests.support.desk import ManualClock, make_desk, spec

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


def specs_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "specs.jsonl"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("args, fragment", [
    (["--domain", "nope"], "unknown domain 'nope'"),
    (["--domain", "retail", "--scenarios", "nope"], "unknown scenario(s) for retail: nope"),
    (["--scenarios", ","], "--scenarios names no scenario"),
    (["--amber", "50", "--red", "10"], "--amber (50 s) must not be above --red (10 s)"),
    (["--amber", "nan"], "argument --amber: must be a finite number"),
    (["--concurrency", "0"], "argument --concurrency: must be 1 or more"),
    (["--repeat", "-1"], "argument --repeat: must be 0 or more"),
    (["--mode", "whenever"], "argument --mode: invalid choice"),
    (["--operator", " "], "--operator: an operator name is required"),
    (["--base-url", "http://127.0.0.1:9/v1"], "--base-url needs --model"),
    (["--model-args", "[1]"], "model args must be a JSON object"),
    (["--specs", "missing.jsonl"], "no such specs file: missing.jsonl"),
    (["--specs", "@spec", "--domain", "retail"], "give --specs or --domain/--scenarios/--tasks, not both"),
    (["--domain", "retail", "--tasks", "r01,r99"], "--tasks: "),
    (["--tasks", "r01"], "--tasks with ids needs one --domain"),
    (["--domain", "retail", "--tasks", " , "], "--tasks names no task"),
    (["--user-model", "sim"], "--user-model plays a task's customer: it needs --tasks"),
    (["--specs", "@task-spec"], "unknown"),
    (["--audit", "@dir"], "is a folder; give a file path"),
])
def test_supervise_bad_input_is_one_line(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         args: list[str], fragment: str) -> None:
    task_line = '{"domain": "retail", "task": "r99"}\n'
    args = [specs_file(tmp_path, '{"domain": "retail"}\n') if a == "@spec" else str(tmp_path) if a == "@dir"
            else specs_file(tmp_path, task_line) if a == "@task-spec" else a
            for a in args]
    code = run(["supervise", *args])
    assert code == 2
    assert fragment in one_error_line(capsys.readouterr().err)
    assert not (home / "sessions").exists() and not (home / "desks").exists()


@pytest.mark.parametrize("text, fragment", [
    ('{"domain": "retail", "bogus": 1}\n', "line 1: unknown key 'bogus'"),
    ('\n{"domain": "retail", "max_steps": 0}\n', "line 2: max_steps: Input should be greater than or equal to 1"),
    ('{"domain": "retail", "pace": NaN}\n', "line 1: NaN is not a JSON number"),
    ('{"domain": "retail", "scenario": 7}\n', "line 1: scenario: Input should be a valid string"),
    ('{"domain": "mars"}\n', "line 1: unknown domain 'mars'"),
    ('{"domain": "retail", "scenario": "nope"}\n', "line 1: unknown scenario 'nope' for retail"),
    ('{"domain": "retail", "mode": "sometimes"}\n', "line 1: mode: Input should be"),
    ('[1, 2]\n', "line 1: a session spec is a JSON object"),
    ('{"domain": "retail"\n', "line 1: not valid JSON"),
    ('{"domain": "retail", "scenario": null}\n', "free chat needs you in the customer seat"),
    ("\n\n", "no session spec in the file"),
    ('{"domain": "retail", "scenario": "' + "x" * 20_000 + '"}\n', "line 1: longer than 10000 bytes"),
])
def test_supervise_bad_specs_file_is_one_line(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              text: str, fragment: str) -> None:
    code = run(["supervise", "--specs", specs_file(tmp_path, text)])
    assert code == 2
    assert fragment in one_error_line(capsys.readouterr().err)
    assert not (home / "sessions").exists()


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own usage errors (one line, exit 2: console.cli.errors.OneLineParser)
        return int(exc.code or 0)


def test_audit_of_a_missing_file_is_one_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["audit", "nowhere.jsonl"]) == 2
    assert "no such audit log: nowhere.jsonl" in one_error_line(capsys.readouterr().err)
    assert run(["audit", "nowhere.jsonl", "--verdict", "MAYBE"]) == 2
    assert "argument --verdict: invalid choice" in one_error_line(capsys.readouterr().err)


async def decided_desk(root: Path) -> Path:
    """A real desk: two sessions in 'approve non-ALLOW', alice force-allows the BLOCK, bob accepts the REVISE."""
    desk = make_desk([spec("retail", "other-customers-order", SupervisionMode.APPROVE_NON_ALLOW),
                      spec("retail", "refund-to-original-payment", SupervisionMode.APPROVE_NON_ALLOW)], root,
                     ManualClock())
    runner = asyncio.create_task(desk.run())
    while not runner.done():
        await asyncio.sleep(0.01)
        for item in desk.snapshot().items:
            if item.verdict == "BLOCK":
                await desk.decide(item.id, "alice", "force_allow", reason="spouse, verified by phone")
            else:
                await desk.decide(item.id, "bob", "accept_verdict")
    await desk.close()
    return root / "desk" / "audit.jsonl"


async def test_audit_filters_and_shows_outcomes(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(await decided_desk(tmp_path / "desk-root"))
    capsys.readouterr()
    assert run(["audit", path, "--json"]) == 0
    every = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {(r["operator"], r["decision"]) for r in every} == {("alice", "force_allow"), ("bob", "accept_verdict")}
    assert run(["audit", path, "--json", "--operator", "alice"]) == 0
    (forced,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert forced["gate_verdict"] == "BLOCK" and forced["outcome"] == "executed"
    assert run(["audit", path, "--json", "--verdict", "REVISE", "--decision", "accept_verdict"]) == 0
    (accepted,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert accepted["operator"] == "bob" and accepted["outcome"] == "not executed (rejected)"
    assert run(["audit", path, "--decision", "veto", "--json"]) == 0
    assert capsys.readouterr().out == ""
    for no_call in ("step", "resume"):  # decisions on no call can be asked for too (none on this desk)
        assert run(["audit", path, "--decision", no_call, "--json"]) == 0
        assert capsys.readouterr().out == ""
    assert run(["audit", path]) == 0
    table = capsys.readouterr().out
    assert "2 decision(s)" in table and "force_allow" in table and "spouse, verified by phone" in table
    # a torn last line (a crash mid-write) is skipped and counted, never fatal
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"type": "decision", "oper')
    assert run(["audit", path, "--json"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2 and "1 line(s)" in captured.err


def test_ledgeragent_help_lists_supervise_and_audit_without_importing_the_desk() -> None:
    code = ("import sys, json\nfrom console.cli.main import build_parser\nhelp = build_parser().format_help()\n"
            "print(json.dumps([help, sorted(m for m in sys.modules if m.startswith('console.'))]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    text, modules = json.loads(done.stdout)
    assert "supervise" in text and "audit" in text
    assert not {"console.tui.desk_app", "console.cli.supervise", "console.runtime.desk.desk",
                "console.tui.screens.desk"} & set(modules)


def test_supervise_builds_each_spec_repeat_times(tmp_path: Path) -> None:
    from console.cli.main import build_parser
    from console.cli.supervise import build_specs

    args = build_parser().parse_args(["supervise", "--domain", "retail", "--repeat", "3", "--mode", "step"])
    specs = build_specs(args)
    assert len(specs) == 9 and {s.mode for s in specs} == {SupervisionMode.STEP}
    assert [s.scenario for s in specs[:3]] == ["exchange-unavailable-variant"] * 3
    path = specs_file(tmp_path, '{"domain": "airline", "scenario": "unobserved-flight", "mode": "approve writes"}\n'
                                '{"domain": "telecom", "scenario": "roaming-abroad"}\n')
    args = build_parser().parse_args(["supervise", "--specs", path, "--repeat", "2"])
    specs = build_specs(args)
    assert [(s.domain, s.mode) for s in specs] == [("airline", SupervisionMode.APPROVE_WRITES)] * 2 + [
        ("telecom", SupervisionMode.APPROVE_NON_ALLOW)] * 2  # a line's own mode, else --mode's default


def test_tasks_become_sessions_of_their_domain(tmp_path: Path) -> None:
    """`--tasks` alone runs tasks only; with `--scenarios` both; a specs file may name a task."""
    import argparse

    from console.cli.supervise import build_specs
    from console.cli.supervise_options import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    only_tasks = build_specs(parser.parse_args(["supervise", "--domain", "retail", "--tasks", "r03,r01"]))
    assert [(s.domain, s.task, s.scenario) for s in only_tasks] == [("retail", "r03", None), ("retail", "r01", None)]
    both = build_specs(parser.parse_args(["supervise", "--domain", "telecom", "--tasks", "all", "--scenarios",
                                          "all", "--repeat", "2"]))
    assert sum(s.task is None for s in both) == 2 * 3 and sum(s.task is not None for s in both) > 2
    every = build_specs(parser.parse_args(["supervise", "--tasks", "all"]))
    assert {s.domain for s in every} == {"retail", "airline", "telecom", "telehealth"}
    assert all(s.task is not None and s.mode.value == "approve non-ALLOW" for s in every)
    from_file = build_specs(parser.parse_args(["supervise", "--specs", specs_file(
        tmp_path, '{"domain": "airline", "task": "a04", "mode": "approve writes"}\n')]))
    assert [(s.domain, s.task, s.mode.value) for s in from_file] == [("airline", "a04", "approve writes")]
