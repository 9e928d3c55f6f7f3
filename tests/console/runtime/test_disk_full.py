"""A full disk loses nothing already written, with real processes and real file systems.

Two ways to fill a disk: a small tmpfs as LEDGERAGENT_HOME (needs root and a mount; skipped cleanly where
mounting is not allowed), and the file size limit (`RLIMIT_FSIZE`, `ulimit -f`) set in the child, which any
user may lower: a write past it fails with EFBIG where a full disk gives ENOSPC. Either way: the trace stays
whole lines (the event that did not fit is cut off, not left half-written), the one error line names the disk
and the file, no crash log goes to the shared temp dir, and no empty file is left behind.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.cli.errors import run_handler
from tests.support.cli import cli_home, one_error_line

ROOT = Path(__file__).resolve().parents[3]
MIA = {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"}


def many_reads(folder: Path, reads: int = 200) -> Path:
    """A scripted retail session whose trace grows to about 2 KB per read (each order's full record)."""
    calls = [{"name": "get_order_details", "arguments": {"order_id": order}}
             for _ in range(reads // 2) for order in ("#W4821001", "#W4821002")]
    scenario = {"name": "many-reads", "title": "many reads", "domain": "retail", "description": "a long trace",
                "user": ["Hi, I'm Mia Garcia, zip 46281.", "Thanks. ###STOP###"],
                "agent": [{"calls": [{"name": "find_user_id_by_name_zip", "arguments": MIA}]}, {"calls": calls},
                          {"say": "Here are your orders."}]}
    path = folder / "many-reads.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return path


def size_limit(limit: int) -> Callable[[], None]:
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def ledgeragent(home: Path, *argv: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEDGERAGENT_HOME": str(home), "COLUMNS": "400", "TMPDIR": str(home.parent / "tmp")}
    (home.parent / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "console", *argv], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300, preexec_fn=None if limit is None else size_limit(limit))


def a_bug(home: Path, shared_tmp: Path, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """A command whose handler has a bug (what every command's failures go through: `run_handler`), in a child
    whose shared temp dir is `shared_tmp`, under the file size limit `limit` when given."""
    code = ("import sys\nfrom console.cli.errors import run_handler\n"
            "def bug(args):\n    raise RuntimeError('a bug ' * 100)\n"
            "sys.exit(run_handler(bug, None, ['ledgeragent', 'x']))\n")
    env = {**os.environ, "LEDGERAGENT_HOME": str(home), "COLUMNS": "400", "TMPDIR": str(shared_tmp)}
    shared_tmp.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=120, preexec_fn=None if limit is None else size_limit(limit))


def assert_whole_lines(trace: Path) -> list[dict[str, object]]:
    data = trace.read_bytes()
    assert data and data.endswith(b"\n"), data[-200:]
    events = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    return events


def empty_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size == 0]


def crash_logs(folder: Path) -> list[Path]:
    return sorted(folder.glob("ledgeragent-crash-*")) if folder.is_dir() else []


# ------------------------------------------------------------------ the file size limit (any user)


def test_a_trace_past_the_file_size_limit_keeps_whole_lines_and_names_the_file(tmp_path: Path) -> None:
    home, out, limit = tmp_path / "home", tmp_path / "s", 200_000  # the session's database (~140 KB) fits
    done = ledgeragent(home, "run", "--scenario", str(many_reads(tmp_path)), "--out", str(out), limit=limit)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert f"file too large (the file size limit, ulimit -f) while writing {out / 'trace.jsonl'}" in line
    events = assert_whole_lines(out / "trace.jsonl")
    assert events[0]["type"] == "session_started" and len(events) > 50
    assert (out / "trace.jsonl").stat().st_size <= limit
    assert empty_files(tmp_path) == [] and crash_logs(tmp_path / "tmp") == []


def test_a_crash_log_that_cannot_be_written_whole_leaves_nothing(tmp_path: Path) -> None:
    """A bug while the disk is full: no partial log under the data dir, none in the shared temp dir."""
    home = tmp_path / "home"
    done = a_bug(home, tmp_path / "tmp", limit=300)
    assert done.returncode == 70
    line = one_error_line(done.stderr)
    assert f"no crash log could be written under {home / 'crashes'}: file too large" in line
    assert crash_logs(home / "crashes") == [] and list((tmp_path / "tmp").iterdir()) == []


def test_a_session_database_past_the_file_size_limit_blames_the_disk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = ledgeragent(home, "run", "--scenario", "refund-to-original-payment", limit=40_000)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert "file too large (the file size limit, ulimit -f) while writing" in line and "db.sqlite" in line
    assert "not a usable SQLite database" not in line
    assert list((home / "sessions").iterdir()) == []  # a failed start leaves no folder
    assert empty_files(tmp_path) == []


def test_crash_logs_are_owner_only_and_only_under_the_data_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = cli_home(tmp_path, monkeypatch)
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    (home / "crashes").mkdir(parents=True)
    (home / "crashes").chmod(0o755)  # made by an older version

    def bug(args: object) -> int:
        raise RuntimeError("boom")

    assert run_handler(bug, None, ["ledgeragent", "x"]) == 70  # type: ignore[arg-type]
    log = Path(one_error_line(capsys.readouterr().err).rsplit("details: ", 1)[1].rstrip(")"))
    assert log.parent == home / "crashes" and "RuntimeError: boom" in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600 and log.parent.stat().st_mode & 0o777 == 0o700
    # a data dir that cannot hold one: said so, and still nothing in the shared temp dir
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LEDGERAGENT_HOME", str(blocker / "home"))
    assert run_handler(bug, None, ["ledgeragent", "x"]) == 70  # type: ignore[arg-type]
    assert "no crash log could be written under" in one_error_line(capsys.readouterr().err)
    assert list(shared.iterdir()) == []


# ------------------------------------------------------------------ a really full disk (tmpfs, root)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 300 KiB tmpfs; skipped where this user may not mount one."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True,
                          text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> None:
    """Fill `disk` until about `leave` bytes are free."""
    with (disk / "filler").open("wb") as filler:
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        filler.write(b"\0" * max(free - leave, 0))


def test_a_disk_that_fills_mid_session_loses_nothing_already_written(small_disk: Path, tmp_path: Path) -> None:
    home = small_disk / "home"
    done = ledgeragent(home, "run", "--scenario", str(many_reads(tmp_path)))
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert "no space left on device while writing" in line and line.endswith(
        "trace.jsonl (the trace keeps every event before this one)")
    (session,) = (home / "sessions").iterdir()
    assert assert_whole_lines(session / "trace.jsonl")[0]["type"] == "session_started"
    assert empty_files(small_disk) == [] and crash_logs(tmp_path / "tmp") == []


def test_too_little_free_space_to_start_blames_the_disk_not_the_database(small_disk: Path, tmp_path: Path) -> None:
    home = small_disk / "home"
    (home / "sessions").mkdir(parents=True)
    fill(small_disk, 30 << 10)
    done = ledgeragent(home, "run", "--scenario", "refund-to-original-payment")
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert "no space left on device while writing" in line and "not a usable SQLite database" not in line
    assert list((home / "sessions").iterdir()) == []
    assert empty_files(small_disk) == [] and crash_logs(tmp_path / "tmp") == []


def test_a_bug_on_a_full_disk_leaves_no_empty_crash_log(small_disk: Path, tmp_path: Path) -> None:
    home = small_disk / "home"
    home.mkdir()
    fill(small_disk, 0)
    done = a_bug(home, tmp_path / "tmp")
    assert done.returncode == 70
    assert "no space left on device" in one_error_line(done.stderr)
    assert empty_files(small_disk) == [] and list((tmp_path / "tmp").iterdir()) == []


# ------------------------------------------------------------------ what the console says (any user)

CONSOLE_CHILD = """
import asyncio, resource, sys
from pathlib import Path
from console.tui.app import make_app
from console.runtime.live import SupervisionMode
from tests.support.pilot import wait_for

async def main() -> None:
    app = make_app(domain="retail", scenario="refund-to-original-payment", root=Path(sys.argv[1]),
                   mode=SupervisionMode.STEP)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")  # start: in step mode the session opens, then waits for a step
        await wait_for(pilot, lambda: app.live is not None and app.live.pacer.waiting is not None, 60)
        trace = app.live.folder / "trace.jsonl"
        # from now on no file may grow: the trace's next event does not fit (EFBIG, as a full disk's ENOSPC)
        limit = trace.stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        await pilot.press("n")
        await wait_for(pilot, lambda: any("stopped" in n.message for n in app._notifications), 60)
        print(trace)
        for note in app._notifications:
            print(repr(note.message))

asyncio.run(main())
"""


def test_the_console_says_a_full_disk_stopped_the_session_not_an_internal_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "LEDGERAGENT_HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CONSOLE_CHILD, str(home)], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    trace, *notes = done.stdout.splitlines()
    (said,) = [n for n in notes if "stopped" in n]
    assert said == repr(f"The session stopped: file too large (the file size limit, ulimit -f) while writing {trace}; "
                        "the trace keeps every event before this one")
    assert "internal error" not in done.stdout
    assert assert_whole_lines(Path(trace))[0]["type"] == "session_started"


def test_a_full_disk_is_worded_as_what_happened() -> None:
    import errno

    from console.runtime.session_stop import stopped_words
    from core.disk_full import DiskFull

    trace = Path("/data/sessions/s1/trace.jsonl")
    assert stopped_words(DiskFull(trace, errno.ENOSPC, "the trace keeps every event before this one")) == (
        "The session stopped: no space left on device while writing /data/sessions/s1/trace.jsonl; the trace keeps "
        "every event before this one")
    assert stopped_words(DiskFull(trace.with_name("db.sqlite"), errno.EDQUOT)) == (
        "The session stopped: disk quota exceeded while writing /data/sessions/s1/db.sqlite")
    assert stopped_words(RuntimeError("a bug")) == "The session stopped on an internal error: a bug"
