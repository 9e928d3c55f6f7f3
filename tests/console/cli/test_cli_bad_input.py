"""Bad input → one line on stderr, exit 2, nothing left half-way. In-process `main`, real
files in tmp_path, real SQLite."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

import console.cli.options as options
import console.cli.run as run_command
from console.cli.errors import CliError
from console.cli.main import main
from tests.support.cli import cli_home, one_error_line

OK_LINE = json.dumps({"name": "find_user_id_by_email", "arguments": {"email": "nobody@example.com"}})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


def sessions(home: Path) -> list[Path]:
    folder = home / "sessions"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def trajectory(tmp_path: Path, content: bytes | str, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("content, fragment", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is a binary file"),
    ('{"name": "café"}\n'.encode("latin-1"), "is not UTF-8 text (byte 0xe9"),
])
def test_check_refuses_a_file_that_is_not_utf8_text(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    content: bytes, fragment: str) -> None:
    path = trajectory(tmp_path, content)
    assert main(["check", str(path)]) == 2
    assert fragment in one_error_line(capsys.readouterr().err)
    assert sessions(home) == []


@pytest.mark.parametrize("line, fragment", [
    ('{"name": "get_user_details", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 64"),
    ('{"name": "\\udc80", "arguments": {}}', "lone surrogate \\udc80"),
    ('{"name": "get_user_details", "arguments": {"user_id": NaN}}', "NaN is not a JSON number"),
])
def test_check_reports_a_hostile_line_and_goes_on(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  line: str, fragment: str) -> None:
    path = trajectory(tmp_path, line + "\n" + OK_LINE + "\n")
    out = tmp_path / "out"
    assert main(["check", str(path), "--json", "--out", str(out)]) == 1  # a broken line fails the check
    captured = capsys.readouterr()
    assert fragment in one_error_line(captured.err) and f"{path}:1:" in captured.err
    assert [json.loads(row)["line"] for row in captured.out.splitlines()] == [2]


def _session_db(home: Path, domain: str, scenario: str) -> Path:
    out = home.parent / f"session-{domain}"
    assert main(["run", "--domain", domain, "--scenario", scenario, "--headless", "--json", "--out", str(out)]) == 0
    return out / "db.sqlite"


@pytest.mark.parametrize("kind", ["zero-bytes", "not-sqlite", "truncated", "other-domain"])
def test_check_refuses_a_bad_db_with_one_line_and_leaves_no_folder(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    source = tmp_path / "given.sqlite"
    if kind == "zero-bytes":
        source.write_bytes(b"")
    elif kind == "not-sqlite":
        source.write_bytes(b"this is not a database\n" * 200)
    elif kind == "truncated":
        good = _session_db(home, "retail", "refund-to-original-payment")
        source.write_bytes(good.read_bytes()[:6000])
    else:
        source = _session_db(home, "airline", "cancel-outside-window")
    capsys.readouterr()
    path = trajectory(tmp_path, OK_LINE + "\n")
    before = sessions(home)
    assert main(["check", str(path), "--domain", "retail", "--db", str(source)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(source) in line
    assert sessions(home) == before  # no half-made session folder


def test_check_out_naming_a_file_or_a_missing_folder(home: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = trajectory(tmp_path, OK_LINE + "\n")
    assert main(["check", str(path), "--out", str(path)]) == 2
    assert "is a file, not a folder" in one_error_line(capsys.readouterr().err)
    missing = tmp_path / "a" / "b"
    assert main(["check", str(path), "--json", "--out", str(missing)]) == 0
    assert (missing / "db.sqlite").is_file()


def test_a_second_run_into_the_same_out_folder_is_refused_and_the_first_is_intact(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the second run deleted the first session's database and interleaved both traces, exit 0."""
    out = tmp_path / "session"
    argv = ["run", "--scenario", "refund-to-original-payment", "--headless", "--json", "--out", str(out)]
    assert main(argv) == 0
    trace = (out / "trace.jsonl").read_bytes()
    db = (out / "db.sqlite").read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    assert "is not empty" in one_error_line(capsys.readouterr().err)
    assert (out / "trace.jsonl").read_bytes() == trace and (out / "db.sqlite").read_bytes() == db
    path = trajectory(tmp_path, OK_LINE + "\n")
    assert main(["check", str(path), "--out", str(out)]) == 2
    assert "is not empty" in one_error_line(capsys.readouterr().err)


def test_ledgeragent_home_under_a_regular_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LEDGERAGENT_HOME", str(blocker / "home"))
    assert main(["run", "--scenario", "refund-to-original-payment", "--headless"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "a file is in the way" in line and "LEDGERAGENT_HOME" in line


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can write anywhere")
def test_ledgeragent_home_unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    monkeypatch.setenv("LEDGERAGENT_HOME", str(home))
    try:
        assert main(["run", "--scenario", "refund-to-original-payment", "--headless"]) == 2
        assert "permission denied" in one_error_line(capsys.readouterr().err)
    finally:
        home.chmod(0o700)


@pytest.mark.parametrize("argv, fragment", [
    (["--retries", "-1", "--model", "m"], "argument --retries: must be 0 or more, got -1"),
    (["--timeout", "nan", "--model", "m"], "argument --timeout: must be a finite number above 0"),
    (["--max-steps", "0"], "argument --max-steps: must be 1 or more"),
])
def test_bad_numbers_are_one_line_and_exit_2_before_anything_opens(
        home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    """Before: `--retries -1` printed a traceback, then hung (the backend was open and never closed)."""
    with pytest.raises(SystemExit) as exited:
        main(["run", "--scenario", "refund-to-original-payment", "--headless", *argv])
    assert exited.value.code == 2
    assert fragment in one_error_line(capsys.readouterr().err)
    assert sessions(home) == []


@pytest.mark.parametrize("argv", [
    ["serve", "--port", "70000"], ["serve", "--port", "-1"],
    ["mcp", "--domain", "retail", "--transport", "http", "--no-token", "--port", "70000"]])
def test_a_port_out_of_range_is_the_parsers_one_line(home: Path, capsys: pytest.CaptureFixture[str],
                                                      argv: list[str]) -> None:
    """Not a bind's OverflowError reported as a crash (exit 70): bad input, exit 2, nothing started."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "argument --port: " in one_error_line(capsys.readouterr().err)
    assert sessions(home) == [] and not (home / "crashes").exists()


def test_a_model_that_cannot_be_built_leaves_no_session_folder(
        home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: object, scenario: object) -> object:
        raise CliError("cannot build the model")

    monkeypatch.setattr(run_command, "_model", broken)
    assert main(["run", "--scenario", "refund-to-original-payment", "--headless"]) == 2
    assert "cannot build the model" in one_error_line(capsys.readouterr().err)
    assert sessions(home) == []


def test_an_unexpected_error_prints_one_line_and_a_crash_log(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    async def explode(*args: object, **kwargs: object) -> object:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(options, "open_backend", explode)
    path = trajectory(tmp_path, OK_LINE + "\n")
    assert main(["check", str(path)]) == 70
    line = one_error_line(capsys.readouterr().err)
    assert "unexpected RuntimeError: boom second line" in line
    log = Path(line.rsplit("details: ", 1)[1].rstrip(")"))
    assert log.is_file() and "Traceback" in log.read_text() and "RuntimeError: boom" in log.read_text()
    assert sessions(home) == []


def test_a_session_db_opens_in_the_stock_sqlite_tooling(home: Path) -> None:
    """No custom SQL function in the schema, so any SQLite tool can open and check the file."""
    db = _session_db(home, "retail", "refund-to-original-payment")
    with sqlite3.connect(db) as plain:  # no ledger_lower registered
        assert plain.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert plain.execute("SELECT count(*) FROM users WHERE lower(replace(json_extract(doc, '$.email'), "
                             "char(8490), 'k')) LIKE '%@%'").fetchone()[0] > 0


def test_a_db_json_holding_nan_is_refused(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mock_backends.retail import load_seed

    data = load_seed()
    product = next(iter(data["products"].values()))
    variant = next(iter(product["variants"].values()))
    variant["price"] = float("nan")
    source = tmp_path / "db.json"
    source.write_text(json.dumps(data), encoding="utf-8")  # Python writes NaN; strict JSON would not
    path = trajectory(tmp_path, OK_LINE + "\n")
    assert main(["check", str(path), "--db", str(source)]) == 2
    assert "a number is not finite (NaN or Infinity) and cannot be stored" in one_error_line(capsys.readouterr().err)
    assert sessions(home) == []
