"""The `audit` bench row: its 1,000 conversations are the development set's, repeated in file order, every one of a
domain we have, in files of at most 50; without the shared folder the row says it is skipped and why. Speed is
never asserted here (`make bench` reads it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import audit
from benchmarks.audit import PER_FILE, bench_audit, write_set
from core.recorded.formats import read_recording


def test_without_the_shared_folder_the_row_is_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    monkeypatch.setattr(audit, "RECORDINGS", tmp_path / "nowhere")
    (row,) = bench_audit()
    assert (row.key, row.note, row.status, row.n) == ("audit_1000_wall", "skipped", "INFO", 0)
    assert f"no development recordings at {tmp_path / 'nowhere'}" in row.figure
    assert json.dumps(row.to_json())


@pytest.mark.shared
def test_the_set_is_the_development_recordings_repeated_to_the_count(tmp_path: Path) -> None:
    if audit._missing() is not None:
        pytest.skip(str(audit._missing()))
    files = write_set(tmp_path, 130)
    recordings = [read_recording(path) for path in files]
    sizes = [len(r.conversations) for r in recordings]
    assert sum(sizes) == 130 and max(sizes) <= PER_FILE
    assert {r.format for r in recordings} <= {"tau2", "messages", "tau-bench"}
    assert all(not r.problems for r in recordings)
