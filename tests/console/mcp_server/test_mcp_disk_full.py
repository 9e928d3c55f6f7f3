"""`ledgeragent mcp` on a full disk: the client is told in plain words, with a server error code, and the server
logs one line; nothing already written is lost, and a start that does not fit leaves nothing behind.

The disk is filled the way tests/console/runtime/test_disk_full.py fills it, with the file size limit
(`RLIMIT_FSIZE`) in the server child: a write past it fails with EFBIG, as one on a full disk with ENOSPC.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.mcp_server import RawStdio, integrity, session_folders

DISK_FULL = -32010
READ = ("get_order_details", {"order_id": "#W4821001"})  # about 2 KB of trace per read


def calls_until_refused(raw: RawStdio, limit: int = 500) -> tuple[int, dict[str, Any]]:
    """Read after read until one is answered with an error: (how many were answered fine, that error)."""
    for number in range(1, limit + 1):
        raw.call(number, *READ)
        answer = raw.answer(number)
        if "error" in answer:
            return number - 1, answer["error"]
        assert answer["result"]["isError"] is False, answer
    raise AssertionError(f"{limit} reads and the disk never filled")


def test_a_full_disk_stops_the_session_in_plain_words_and_loses_nothing(tmp_path: Path) -> None:
    raw = RawStdio("retail", tmp_path, file_size_limit=200_000)  # the database (~140 KB) fits, the trace fills up
    try:
        raw.handshake()
        answered, error = calls_until_refused(raw)
        assert answered > 10 and error["code"] == DISK_FULL
        assert error["message"].startswith("the session's disk is full: nothing was written (file too large")
        assert error["data"]["write_ran"] is False and error["data"]["path"].endswith("trace.jsonl")
        raw.call(1000, *READ)
        again = raw.answer(1000)["error"]
        assert again["code"] == DISK_FULL and "nothing was written" in again["message"]
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    raw.join()
    stopped = [line for line in raw.err if "stopped" in line]
    assert len(stopped) == 1 and "file too large" in stopped[0] and "keeps every event before this one" in stopped[0]
    assert not [line for line in raw.err if not line.startswith("mcp: ")], raw.err  # one line each, no traceback
    [folder] = session_folders(tmp_path)
    data = (folder / "trace.jsonl").read_bytes()
    assert data.endswith(b"\n")
    events = [json.loads(line) for line in data.decode("utf-8").splitlines()]  # every line whole
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    results = [e for e in events if e["type"] == "tool_result" and e["call"]["name"] == READ[0]]
    assert len(results) >= answered  # every answered call is on disk
    assert not [e for e in events if e["type"] == "session_ended"]  # nothing after the event that did not fit
    assert integrity(folder / "db.sqlite") == "ok"


def test_a_start_that_does_not_fit_leaves_no_folder(tmp_path: Path) -> None:
    raw = RawStdio("retail", tmp_path, file_size_limit=40_000)  # the session's database does not fit
    try:
        raw.handshake()
        for number in (1, 2):
            raw.call(number, *READ)
            error = raw.answer(number)["error"]
            assert error["code"] == DISK_FULL, error
            assert error["message"].startswith("the session's disk is full: nothing was written (file too large")
            assert "db.sqlite" in error["message"]
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    raw.join()
    assert session_folders(tmp_path) == []
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.stat().st_size == 0]
    could_not = [line for line in raw.err if "could not start" in line]
    assert len(could_not) == 2 and all("nothing was kept" in line for line in could_not)
    assert not [line for line in raw.err if not line.startswith("mcp: ")], raw.err
