"""`ledgeragent check` in-process over the shipped seed data (no upstream tau2 data needed).

The story records of mock_backends/retail/seed.json: Mia Garcia (mia_garcia_4821) with a delivered order
#W4821001 and a pending order #W4821002, and Noah Kim (noah_kim_3107) with orders of his own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli.main import main
from tests.support.retail_records import MIA, MIA_EMAIL, MIA_PENDING, NOAH_PENDING

GOOD_BEFORE = [
    {"name": "find_user_id_by_email", "arguments": {"email": MIA_EMAIL}, "expect": "ALLOW"},
    {"name": "get_user_details", "arguments": {"user_id": MIA}, "expect": "ALLOW"},
]
BROKEN = '{"name": "get_order_details", "arguments": {"order_id": "#W4821002"'  # no closing braces
GOOD_AFTER = [
    {"name": "get_order_details", "arguments": {"order_id": MIA_PENDING}, "expect": "ALLOW"},
    {"name": "cancel_pending_order", "arguments": {"order_id": MIA_PENDING, "reason": "no longer needed"},
     "expect": "ALLOW"},
    {"name": "get_order_details", "arguments": {"order_id": NOAH_PENDING}, "expect": "ALLOW"},
    {"name": "cancel_pending_order", "arguments": {"order_id": NOAH_PENDING, "reason": "no longer needed"},
     "expect": "BLOCK"},
]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps stderr at the console width; keep messages on one line
    return tmp_path


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_broken_json_line_is_reported_with_its_number_and_the_rest_still_runs(
        env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [json.dumps(r) for r in GOOD_BEFORE] + [BROKEN] + [json.dumps(r) for r in GOOD_AFTER]
    path = _write(env / "broken.jsonl", rows)
    code = main(["check", str(path), "--domain", "retail", "--json", "--out", str(env / "out")])
    captured = capsys.readouterr()
    assert code == 1
    assert f"{path}:3: not valid JSON" in captured.err
    assert "(line skipped)" in captured.err
    assert "expected" not in captured.err  # every expectation of the remaining lines was met
    results = [json.loads(row) for row in captured.out.splitlines()]
    assert [(r["line"], r["name"], r["verdict"], r["executed"]) for r in results] == [
        (1, "find_user_id_by_email", "ALLOW", True),
        (2, "get_user_details", "ALLOW", True),
        (4, "get_order_details", "ALLOW", True),
        (5, "cancel_pending_order", "ALLOW", True),
        (6, "get_order_details", "ALLOW", True),
        (7, "cancel_pending_order", "BLOCK", False),
    ]
    assert results[-1]["predicates"] == ["retail.order_owned_by_customer"]
    assert all(r["met"] is True for r in results)
    assert (env / "out" / "db.sqlite").is_file() and not (env / "home").exists()


def test_same_file_without_the_broken_line_exits_0(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(env / "clean.jsonl", [json.dumps(r) for r in [*GOOD_BEFORE, *GOOD_AFTER]])
    assert main(["check", str(path), "--domain", "retail", "--json", "--out", str(env / "out")]) == 0
    assert capsys.readouterr().err == ""
