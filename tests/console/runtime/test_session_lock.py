"""One writer per session folder, with real processes: a second `run` (or `eval`) on a folder another process
writes to is refused in one line naming the holder's pid, two started in the same instant never share one, a
refused start deletes nothing, and kill -9 of the holder frees the folder (the kernel drops the lock)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.runtime.live import LiveSession, SessionSpec
from console.runtime.storage import FolderInUse, claim_out_dir, claim_session_folder, new_session_folder
from core.folder_lock import LOCK_NAME, FolderBusy, FolderLock
from tests.support.cli import one_error_line
from tests.support.openai_stub import OpenAIStub

ROOT = Path(__file__).resolve().parents[3]
HOLD = 60.0  # seconds the stub model keeps a holder waiting inside its first model call


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    """A model endpoint that answers nobody in time: a `run` using it sits in its first model call, its
    folder claimed and its trace begun, until it is killed."""
    with OpenAIStub() as server:
        for _ in range(8):
            server.reply_text("too late", delay=HOLD)
        yield server


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "LEDGERAGENT_HOME": str(tmp_path / "home"), "COLUMNS": "400", "OPENAI_API_KEY": "x"}


def _run(out: Path, stub: OpenAIStub) -> list[str]:
    return [sys.executable, "-m", "console", "run", "--domain", "retail", "--scenario",
            "refund-to-original-payment", "--headless", "--out", str(out), "--model", "m",
            "--base-url", stub.base_url, "--retries", "0", "--timeout", "120"]


def _wait(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def _events(trace: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]


def test_a_second_run_on_a_held_out_folder_is_refused_naming_the_holder(tmp_path: Path, stub: OpenAIStub) -> None:
    out = tmp_path / "s1"
    holder = subprocess.Popen(_run(out, stub), cwd=ROOT, env=_env(tmp_path), text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait(lambda: len(stub.requests) >= 1 or holder.poll() is not None)
        assert holder.poll() is None, holder.stderr.read() if holder.stderr else ""
        before = sorted(p.name for p in out.iterdir())
        second = subprocess.run(_run(out, stub), cwd=ROOT, env=_env(tmp_path), text=True, capture_output=True,
                                timeout=120)
        assert second.returncode == 2
        line = one_error_line(second.stderr)
        assert f"--out {out} is in use by process {holder.pid}" in line
        assert sorted(p.name for p in out.iterdir()) == before  # the refused start deleted nothing
        assert len(stub.requests) == 1  # ... and never got as far as the model
    finally:
        _kill(holder)
    started = [e for e in _events(out / "trace.jsonl") if e["type"] == "session_started"]
    assert len(started) == 1
    # kill -9 released the lock: the folder can be locked again, and is refused only for what is in it
    FolderLock.acquire(out).release()
    third = subprocess.run(_run(out, stub), cwd=ROOT, env=_env(tmp_path), text=True, capture_output=True,
                           timeout=120)
    assert third.returncode == 2 and "is not empty" in one_error_line(third.stderr)


def test_two_runs_started_together_never_share_a_folder(tmp_path: Path, stub: OpenAIStub) -> None:
    """Both find the folder empty (or missing) at once: the lock, taken before looking inside, picks one."""
    for attempt in range(3):
        out = tmp_path / f"race{attempt}"
        if attempt == 1:
            out.mkdir()  # empty and existing, as well as missing
        runs = [subprocess.Popen(_run(out, stub), cwd=ROOT, env=_env(tmp_path), text=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
        try:
            waiting = attempt + 1  # the stub's requests so far: one holder per attempt

            def settled(runs: list[subprocess.Popen[str]] = runs, waiting: int = waiting) -> bool:
                ended = sum(r.poll() is not None for r in runs)
                return ended == 2 or len(stub.requests) > waiting or (ended == 1 and len(stub.requests) == waiting)

            _wait(settled)
            refused = [r for r in runs if r.poll() is not None]
            assert len(refused) == 1 and refused[0].returncode == 2, [r.returncode for r in refused]
            holder = next(r for r in runs if r is not refused[0])
            assert refused[0].stderr is not None
            line = one_error_line(refused[0].stderr.read())
            assert f"is in use by process {holder.pid}" in line
            assert len(stub.requests) == waiting
        finally:
            for run in runs:
                _kill(run)
        events = _events(out / "trace.jsonl")
        assert [e["type"] for e in events].count("session_started") == 1
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1))


def test_an_eval_run_folder_has_one_writer(tmp_path: Path, stub: OpenAIStub) -> None:
    """`eval --out` writes run.json, trials.jsonl, results.json and per-worker databases named alike in every
    process (work/<domain>-slot-1.sqlite): a second eval on a run folder another eval writes to is refused
    before it touches any of them."""
    out = tmp_path / "run"
    eval_args = ["eval", "--domain", "retail", "--trials", "1", "--tasks", "r01", "--agent", "ledger",
                 "--out", str(out)]
    holder = subprocess.Popen([sys.executable, "-m", "console", *eval_args, "--model", "m", "--base-url",
                               stub.base_url, "--max-retries", "0", "--request-timeout", "120"],
                              cwd=ROOT, env=_env(tmp_path), text=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        _wait(lambda: len(stub.requests) >= 1 or holder.poll() is not None)
        assert holder.poll() is None, holder.stderr.read() if holder.stderr else ""
        before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
        done = subprocess.run([sys.executable, "-m", "console", *eval_args], cwd=ROOT, env=_env(tmp_path),
                              text=True, capture_output=True, timeout=300)
        assert done.returncode == 2, done.stderr
        assert f"{out} is in use by process {holder.pid}" in one_error_line(done.stderr)
        assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before  # nothing touched
    finally:
        _kill(holder)


async def test_a_console_session_folder_is_held_while_it_is_open(tmp_path: Path, stub: OpenAIStub) -> None:
    """The folder of a console, desk, browser-tab or MCP session (a LiveSession) is locked from `open()` to
    `close()`: a `run --out` naming it in another process is refused with this process's pid, and touches
    nothing; once closed, the lock file is gone and an empty folder could be claimed again."""
    live = LiveSession(SessionSpec(domain="retail", scenario="refund-to-original-payment"), root=tmp_path / "home")
    await live.open()
    folder = live.folder
    assert folder is not None
    try:
        before = sorted(p.name for p in folder.iterdir())
        refused = subprocess.run(_run(folder, stub), cwd=ROOT, env=_env(tmp_path), text=True, capture_output=True,
                                 timeout=120)
        assert refused.returncode == 2
        assert f"--out {folder} is in use by process {os.getpid()}" in one_error_line(refused.stderr)
        assert sorted(p.name for p in folder.iterdir()) == before and LOCK_NAME in before
        with pytest.raises(FolderInUse):  # and in this same process: one writer, not one per process
            claim_out_dir(folder)
    finally:
        await live.close()
    assert not folder.exists()  # it never ran: nothing kept, the lock file included
    claim = new_session_folder("retail", "chat", tmp_path)
    claim.release()
    assert not (claim.path / LOCK_NAME).exists()
    with claim_session_folder(str(claim.path), "retail", "x") as again:  # an empty folder: claimable now
        assert again.lock.held


def test_a_failed_start_removes_only_what_it_made_while_holding_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "s"
    with pytest.raises(RuntimeError), claim_session_folder(str(out), "retail", "x") as claim:
        (claim.path / "db.sqlite").write_bytes(b"partial")
        raise RuntimeError("bad start")
    assert not out.exists()
    claim.release()  # twice is harmless
    with pytest.raises(RuntimeError, match="no longer held"):
        claim.discard()


def test_the_lock_names_its_holder_and_is_per_open_file(tmp_path: Path) -> None:
    lock = FolderLock.acquire(tmp_path)
    try:
        with pytest.raises(FolderBusy) as refused:
            FolderLock.acquire(tmp_path, "the folder")
        assert refused.value.pid == os.getpid()
        assert str(refused.value).startswith(f"the folder is in use by process {os.getpid()}")
        assert (tmp_path / LOCK_NAME).stat().st_mode & 0o777 == 0o600
    finally:
        lock.release()
    assert not (tmp_path / LOCK_NAME).exists()
    FolderLock.acquire(tmp_path).release()
