"""`ledgeragent audit FILES... --out FOLDER` in-process, end to end: recordings of two domains and two models
(tests/support/audit_recordings.py, every result real) audited into a report whose numbers and findings are
asserted in all three files; a domain without a database; hostile input (markup and control characters in a
customer message, an argument, a model name) shown as text; a broken line reported with its position and the
rest judged; the folder rules; the desk's audit log still printed by `audit FILE` alone.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from console.cli.main import main
from console.runtime.audit_escape import html_text, md_text
from tests.support.audit_recordings import (
    AIRLINE_INSIDE_WINDOW,
    AIRLINE_MODEL,
    AIRLINE_NOBODY,
    RETAIL_MODEL,
    YES,
    Recordings,
    recorded,
    tau_bench_list,
    write_recordings,
)
from tests.support.cli import cli_home, one_error_line
from tests.support.recorded import MIA, call, openai_messages, say


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


@pytest.fixture
def recordings(tmp_path: Path) -> Recordings:
    return asyncio.run(write_recordings(tmp_path / "recordings"))


def audit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def facts(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "audit.json").read_text(encoding="utf-8"))


def test_two_domains_and_two_models_make_one_report(home: Path, recordings: Recordings, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out_folder = tmp_path / "report"
    code, out, err = audit(capsys, str(recordings.retail), str(recordings.airline), "--db", str(recordings.retail_db),
                           "--db", f"airline={recordings.airline_db}", "--out", str(out_folder))
    assert (code, err) == (0, "")
    assert sorted(p.name for p in out_folder.iterdir()) == ["audit.json", "index.html", "report.md"]
    report = facts(out_folder)
    # the unlabelled --db was matched to retail by its content; each file's model is its own
    assert [(f["domain"], f["model"], f["model_source"], f["database"], f["conversations"]) for f in report["files"]] \
        == [("retail", RETAIL_MODEL, "recording", str(recordings.retail_db), 2),
            ("airline", AIRLINE_MODEL, "recording", str(recordings.airline_db), 3)]
    groups = {(g["model"], g["domain"]): (g["conversations"], g["rewarded"], g["writes"], g["categories"])
              for g in report["groups"]}
    kinds = ("ALLOW", "needs a read", "breaks a rule", "BLOCK", "not judged")
    assert {key: (c, r, w, tuple(cats[k] for k in kinds)) for key, (c, r, w, cats) in groups.items()} == {
        (RETAIL_MODEL, "retail"): (2, 1, 3, (2, 0, 0, 1, 0)),
        (AIRLINE_MODEL, "airline"): (3, 2, 3, (1, 0, 1, 1, 0))}
    assert (report["conversations"], report["writes"]) == (5, 6)

    violations = report["rewarded_violations"]
    assert [(v["conversation"]["index"], v["conversation"]["task_id"], v["conversation"]["reward"], v["call"]["name"],
             v["category"], v["kind"]) for v in violations] == [
        (0, "0", 1.0, "modify_pending_order_address", "BLOCK", "BLOCK"),
        (0, "0", 1.0, "cancel_reservation", "BLOCK", "BLOCK")]
    address, cancel = violations
    assert address["call"]["arguments"]["address1"] == "1 Main St"
    assert [(r["id"], r["status"], r["source"]) for r in address["rules"]] == [
        ("retail.items_modified_once", "violation", "policy")]
    assert "already modified" in address["rules"][0]["reason"] and address["rules"][0]["policy"]
    assert [(r["id"], r["source"]) for r in cancel["rules"]] == [("airline.cancel_basis", "policy")]
    # the console command of each finding: the file, its domain's database, the conversation and the call
    argv = shlex.split(cancel["replay"])
    assert argv[:3] == ["ledgeragent", "console", "--recorded"]
    assert Path(argv[3]) == recordings.airline.absolute()
    assert argv[4:] == ["--db", str(recordings.airline_db.absolute()), "--at", f"0:{cancel['call']['index']}"]
    others = report["other_refusals"]
    assert [(o["domain"], o["conversation"]["index"], o["conversation"]["reward"], o["category"], o["kind"])
            for o in others] == [("airline", 2, 0.0, "breaks a rule", "policy")]
    assert "airline.customer_identified" in [r["id"] for r in others[0]["rules"]]
    assert report["not_judged"] == [] and report["problems"] == []
    rules = {r["id"]: r["refused"] for r in report["rules"]}
    assert rules["retail.items_modified_once"] == 1 and rules["airline.cancel_basis"] == 1

    page = (out_folder / "index.html").read_text(encoding="utf-8")
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "Written-policy violations the benchmark rewarded (2)" in page
    assert page.count("<svg") == 2  # refusals by rule, writes per model
    for finding in violations:  # each with its rule, its policy sentence and its command
        for text in (finding["rules"][0]["id"], finding["rules"][0]["policy"], finding["replay"]):
            assert html_text(text) in page
    markdown = (out_folder / "report.md").read_text(encoding="utf-8")
    assert "## Written-policy violations the benchmark rewarded (2)" in markdown
    assert f"| {md_text(RETAIL_MODEL)} | retail | 2 | 1 | 3 | 2 | 0 | 0 | 1 | 0 |" in markdown
    assert f"| {md_text(AIRLINE_MODEL)} | airline | 3 | 2 | 3 | 1 | 0 | 1 | 1 | 0 |" in markdown
    assert "- rule `airline.cancel_basis` (policy, violation):" in markdown
    # the summary on stdout
    assert "6 writes of the agents: 3 allowed, 3 refused, 0 not judged" in out
    assert "rewarded, but a rule of the written policy broken: 2 write(s)" in out


def test_a_domain_without_a_database_and_a_list_that_names_no_model(home: Path, recordings: Recordings,
                                                                     tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """tau-bench lists name no model: `--model` names it, else the file's name, and the report says which. A
    domain given no database is judged on the recorded results (no database in its replay command)."""
    scripts = asyncio.run(recorded("airline", tmp_path, [AIRLINE_INSIDE_WINDOW, AIRLINE_NOBODY]))
    listing = tmp_path / "skeptical_airline.json"
    listing.write_text(json.dumps(tau_bench_list(scripts, [1.0, 0.0])), encoding="utf-8")
    code, out, err = audit(capsys, str(listing), str(recordings.retail), "--db", str(recordings.retail_db),
                           "--out", str(tmp_path / "a"))
    assert (code, err) == (0, "")
    first = facts(tmp_path / "a")
    assert [(f["model"], f["model_source"], f["database"]) for f in first["files"]] == [
        ("skeptical_airline", "file name", None), (RETAIL_MODEL, "recording", str(recordings.retail_db))]
    airline = next(g for g in first["groups"] if g["domain"] == "airline")
    assert (airline["model"], airline["writes"], airline["categories"]["ALLOW"],
            airline["categories"]["breaks a rule"]) == ("skeptical_airline", 2, 1, 1)
    (nobody,) = [f for f in first["other_refusals"] if f["domain"] == "airline"]
    assert "--db" not in shlex.split(nobody["replay"])
    assert main(["audit", str(listing), "--model", "gpt-5", "--out", str(tmp_path / "b")]) == 0
    assert [(f["model"], f["model_source"]) for f in facts(tmp_path / "b")["files"]] == [("gpt-5", "--model")]


SOMEONE_ELSES = "#W3107002"  # a pending order of another customer of the seed data
HOSTILE_MODEL = '<img src=x onerror="alert(1)">'
HOSTILE_ADDRESS = "<script>alert('address')</script>\x1b[2J\u202e"


def test_hostile_text_is_shown_as_text_and_a_broken_line_is_reported(home: Path, recordings: Recordings,
                                                                      tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Markup and control characters from a recording (a customer's message, an argument, the model's name) are
    escaped and made visible in index.html and report.md; a broken line of a JSON-lines file is one error line
    with its position, and the conversation around it is judged; a missing file is one more, the rest audited."""
    script = [say("<script>alert('customer')</script> I'm Mia Garcia, zip 46281.", "user"), *MIA[1:],
              call("get_order_details", order_id=SOMEONE_ELSES),
              say("I will change the address. Shall I proceed?"), YES,  # of another customer's order: refused
              call("modify_pending_order_address", order_id=SOMEONE_ELSES, address1=HOSTILE_ADDRESS, address2="",
                   city="Springfield", state="IN", country="USA", zip="46281"),
              call("cancel_pending_order", order_id="#W4821002", reason="<marquee>because</marquee>", refund="all")]
    exchanges = asyncio.run(recorded("retail", tmp_path, [script]))[0]
    messages = openai_messages(exchanges)
    lines = [json.dumps(m) for m in messages]
    lines.insert(3, '{"role": "assistant", "content": "cut sho')  # a torn line in the middle
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = audit(capsys, str(hostile), str(tmp_path / "gone.json"), str(recordings.retail), "--model",
                           HOSTILE_MODEL, "--out", str(tmp_path / "r"))
    assert code == 1
    errors = err.strip().splitlines()
    assert all(line.startswith("error: ") for line in errors)
    assert any(line.startswith(f"error: {hostile}:4: ") for line in errors), err  # the torn line, by its number
    assert f"error: {tmp_path / 'gone.json'}: no such file" in errors
    report = facts(tmp_path / "r")
    assert [(f["conversations"], f["unusable"] is None) for f in report["files"]] == [(1, True), (0, False), (2, True)]
    hostile_group = next(g for g in report["groups"] if g["model"] == HOSTILE_MODEL)
    assert hostile_group["writes"] == 2  # both writes judged or listed despite the torn line
    (refused,) = [f for f in report["other_refusals"] if f["model"] == HOSTILE_MODEL]
    assert (refused["call"]["arguments"]["address1"], refused["category"]) == (HOSTILE_ADDRESS, "BLOCK")
    not_judged = report["not_judged"]
    assert [n["call"]["name"] for n in not_judged if n["model"] == HOSTILE_MODEL] == ["cancel_pending_order"]  # its
    # arguments are not the tool's
    assert any(f"{hostile}:4" in p for p in report["problems"])

    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    for raw in ("<script", "<img", "<marquee", "\x1b", "\u202e"):
        assert raw not in page, raw
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page  # the model's name, as text
    assert "&lt;script&gt;alert(&#x27;address&#x27;)&lt;/script&gt;\\u001b[2J\\u202e" in page  # the argument, as JSON
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "\x1b" not in markdown and "\u202e" not in markdown
    # rendered as GitHub renders it (inline HTML on), no recorded tag becomes one: each is text
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    for raw in ("<script", "<img", "<marquee"):
        assert raw not in rendered, raw
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in rendered


def test_the_report_folder_is_never_overwritten_unasked(home: Path, recordings: Recordings, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    code, _, err = audit(capsys, str(recordings.retail), "--out", str(folder))
    assert code == 2
    assert "is not empty: a report never overwrites one" in one_error_line(err)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    code, _, err = audit(capsys, str(recordings.retail), "--out", str(folder), "--force")
    assert (code, err) == (0, "")
    assert sorted(p.name for p in folder.iterdir()) == ["audit.json", "index.html", "notes.txt", "report.md"]
    assert (folder / "notes.txt").read_text() == "mine"
    code, _, err = audit(capsys, str(recordings.retail), "--out", str(folder / "notes.txt"))
    assert code == 2 and "is a file, not a folder" in one_error_line(err)


@pytest.mark.parametrize(("argv", "message"), [
    (["--db", "@notes"], "no domain's database"),
    (["--db", "@missing"], "no such file or folder"),
    (["--db", "retail=@notes"], "--db retail=@notes:"),
    (["--db", "@retail_db", "--db", "retail=@retail_db"], "a second database for the retail domain"),
    (["--json"], "--json: options of a desk's audit log, not of a report of recordings"),
])
def test_bad_options_are_one_line(home: Path, recordings: Recordings, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    (tmp_path / "notes.txt").write_text("not a database")
    paths = {"@notes": str(tmp_path / "notes.txt"), "@missing": str(tmp_path / "missing.json"),
             "@retail_db": str(recordings.retail_db)}
    shown = [next((v.replace(k, p) for k, p in paths.items() if k in v), v) for v in argv]
    code, _, err = audit(capsys, str(recordings.retail), *shown, "--out", str(tmp_path / "report"))
    assert code == 2
    assert message.replace("@notes", paths["@notes"]) in one_error_line(err)
    assert not (tmp_path / "report").exists() or not any((tmp_path / "report").iterdir())


def test_nothing_audited_is_an_error_and_writes_no_report(home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"simulations": [', encoding="utf-8")
    code, _, err = audit(capsys, str(broken), str(tmp_path / "gone.json"), "--out", str(tmp_path / "report"))
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("error: no conversation could be audited (2 problem(s), the "
                                                   f"first: {broken}: not valid JSON")
    assert not any((tmp_path / "report").iterdir())


def test_audit_without_out_is_the_desk_log_and_refuses_a_recording(home: Path, recordings: Recordings,
                                                                  tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = audit(capsys, str(recordings.retail))
    assert code == 2
    assert one_error_line(err) == (f"error: {recordings.retail} is no supervision desk audit log; to audit "
                                   f"recordings, name the report's folder: ledgeragent audit {recordings.retail} "
                                   "--out FOLDER")
    code, _, err = audit(capsys, str(recordings.retail), str(recordings.airline))
    assert code == 2 and "an audit of recordings writes a report; name its folder with --out" in one_error_line(err)
    log = tmp_path / "audit.jsonl"
    log.write_text(json.dumps({"type": "decision", "when": "2026-12-01T10:00:00", "operator": "alice",
                               "session": "s1", "call_id": "c1", "tool": "cancel_pending_order",
                               "gate_verdict": "BLOCK", "failing_rules": [], "decision": "veto",
                               "reason": "no"}) + "\n", encoding="utf-8")
    code, out, err = audit(capsys, str(log), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["operator"] == "alice"


def test_a_forbidden_attempt_the_recorded_tool_refused_is_no_rewarded_violation(
        home: Path, recordings: Recordings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The benchmark rewarded the end state; a write that failed in the recording changed nothing it accepted, so
    it is listed with the other refusals (still refused, and saying it failed there), not as a rewarded one."""
    from dataclasses import replace

    from tests.support.audit_recordings import AIRLINE_OUTSIDE_WINDOW, tau2_file

    (exchanges,) = asyncio.run(recorded("airline", tmp_path, [AIRLINE_OUTSIDE_WINDOW]))
    refused_there = [*exchanges[:-1], replace(exchanges[-1], content="Error: the reservation cannot be cancelled",
                                              error=True)]
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(tau2_file("airline", [refused_there], [1.0], "m")), encoding="utf-8")
    code, _, err = audit(capsys, str(path), "--db", str(recordings.airline_db), "--out", str(tmp_path / "r"))
    assert (code, err) == (0, "")
    report = facts(tmp_path / "r")
    assert report["rewarded_violations"] == []
    (other,) = report["other_refusals"]
    assert (other["call"]["name"], other["category"], other["recorded"], other["ran"]) == (
        "cancel_reservation", "BLOCK", "error", False)
    assert "failed in the recording (the tool refused it)" in (tmp_path / "r" / "index.html").read_text()
