"""`ledgeragent audit` on the development set of real model recordings (tests/support/upstream.py; skipped when the
shared folder is absent): every file audited or reported, the report's counts adding up and agreeing with `check
--as-recorded` write by write, every rewarded violation cited with its policy sentence and a command that names
its write."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from console.cli.main import main
from tests.support.cli import cli_home
from tests.support.upstream import (
    TAU2_AIRLINE,
    TAU2_RETAIL,
    TAU2_TELECOM,
    TAU_TRAIT_TELEHEALTH,
    decompressed_recording,
    recording_names,
)

pytestmark = pytest.mark.shared

DATABASES = [TAU2_AIRLINE / "db.json", TAU2_RETAIL / "db.json", TAU2_TELECOM / "db.toml", TAU_TRAIT_TELEHEALTH]
GPT_AIRLINE = "sierra-research__tau2-bench__gpt-4.1_airline_default_gpt-4.1_1trials.json.gz"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], int]:
    names = recording_names()
    if not names or not all(p.exists() for p in DATABASES):
        pytest.skip("the development recordings or the tau2 / tau-Trait databases are not in the shared folder")
    folder = tmp_path_factory.mktemp("recordings")
    files = [decompressed_recording(name, folder) for name in names]
    with pytest.MonkeyPatch.context() as patch:
        cli_home(folder, patch)
        argv = ["audit", *map(str, files), *(f"--db={p}" for p in DATABASES), "--out", str(folder / "report")]
        code = main(argv)
    return folder / "report", files, code


def report_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "audit.json").read_text(encoding="utf-8"))


def test_every_file_is_audited_or_reported_and_the_counts_add_up(audited: tuple[Path, list[Path], int]) -> None:
    folder, files, code = audited
    report = report_of(folder)
    assert code == 1 and report["problems"]  # the report is written; some input could not be read
    assert [f["path"] for f in report["files"]] == [str(p) for p in files]
    for source in report["files"]:
        assert (source["conversations"] > 0) != (source["unusable"] is not None), source
        if source["unusable"] is None:
            assert source["domain"] in ("airline", "retail", "telecom", "telehealth") and source["database"]
    assert sum(f["conversations"] for f in report["files"]) == report["conversations"] >= 300
    assert sum(report["categories"].values()) == report["writes"] == sum(g["writes"] for g in report["groups"])
    models = {f["model"]: f["model_source"] for f in report["files"] if f["model"]}
    assert models["gpt-4.1"] == "recording" and "collinear-ai__tau-trait__telehealth_none" in models
    listed = len(report["rewarded_violations"]) + len(report["other_refusals"]) + len(report["not_judged"])
    assert listed == report["writes"] - report["categories"]["ALLOW"]
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert "<script" not in page and not any(ord(c) < 32 and c not in "\n" for c in page)


def test_each_rewarded_violation_is_cited_and_names_its_write(audited: tuple[Path, list[Path], int]) -> None:
    folder, _, _ = audited
    report = report_of(folder)
    assert report["rewarded_violations"]
    for finding in report["rewarded_violations"]:
        assert finding["conversation"]["reward"] == 1.0 and finding["category"] in ("breaks a rule", "BLOCK")
        cited = [r for r in finding["rules"] if r["status"] == "violation" and r["source"] == "policy"]
        assert cited and all(r["policy"] and r["reason"] for r in cited)
        argv = shlex.split(finding["replay"])
        assert argv[:4] == ["ledgeragent", "console", "--recorded", str(Path(finding["file"]).absolute())]
        assert "--db" in argv  # every domain of the set had its database
        assert argv[-2:] == ["--at", f"{finding['conversation']['index']}:{finding['call']['index']}"]


def test_the_report_agrees_with_check_as_recorded_write_by_write(audited: tuple[Path, list[Path], int],
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder, files, _ = audited
    path = next(p for p in files if p.name == GPT_AIRLINE.removesuffix(".gz"))
    (folder.parent / "check").mkdir(exist_ok=True)
    cli_home(folder.parent / "check", monkeypatch)
    capsys.readouterr()
    assert main(["check", str(path), "--as-recorded", "--json", "--db", str(DATABASES[0]), "--out",
                 str(folder.parent / "check" / "out")]) in (0, 1)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    checked = Counter(line["category"] for line in lines if line["kind"] == "write" and line["category"])
    group = next(g for g in report_of(folder)["groups"] if g["model"] == "gpt-4.1" and g["domain"] == "airline")
    assert {k: v for k, v in group["categories"].items() if v} == dict(checked)
