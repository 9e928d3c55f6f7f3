"""An operator's desk screen on a remote desk (`supervise --connect`) whose host process dies or hangs: it says
so at once in plain words, its waits stop counting, and no decision key acts.

The host is a real `ledgeragent supervise --listen` child process with two sessions waiting on the inbox; the
operator's screen is the real desk App (Pilot) on a `RemoteDesk` over its socket. The host is killed with
SIGKILL (the socket closes: said at once) or stopped with SIGSTOP (nothing closes: the missing heartbeat
says it), and the test waits, bounded, for the screen to say it; it measures nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.runtime.desk.audit import read_audit
from console.runtime.desk.remote import RemoteDesk
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk import DeskScreen
from console.tui.screens.desk_session import SessionViewScreen
from tests.support.desk import until, until_screen
from tests.support.desk_remote import SCENARIO, Clock, socket_folder

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def host() -> AsyncIterator[tuple[asyncio.subprocess.Process, Path, Path]]:
    """`supervise --listen` with two sessions in 'approve writes': the child, its socket, its audit log."""
    with socket_folder() as folder:
        path = folder / "sock" / "desk.sock"
        audit = folder / "audit.jsonl"
        env = os.environ | {"LEDGERAGENT_HOME": str(folder / "home")}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "console", "supervise", "--listen", str(path), "--domain", "retail", "--mode",
            "approve writes", "--scenarios", SCENARIO, "--repeat", "2", "--audit", str(audit), cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            assert child.stdout is not None
            line = (await asyncio.wait_for(child.stdout.readline(), 120)).decode()
            assert line.startswith("desk: 2 session(s) at "), line
            yield child, path, audit
        finally:
            if child.returncode is None:
                os.kill(child.pid, signal.SIGCONT)
                child.kill()
            await child.wait()


async def test_a_killed_host_is_said_at_once_its_waits_stop_and_no_key_decides(
        host: tuple[asyncio.subprocess.Process, Path, Path]) -> None:
    child, path, audit = host
    clock = Clock()
    remote = await RemoteDesk.connect(path, "dana", clock=clock)
    app = SupervisorApp(remote, operator="dana")
    async with app.run_test(size=(120, 35)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(remote.snapshot().items) == 2 and screen.inbox.selected_id is not None)
        await until(pilot, lambda: " 2 waiting " in screen.status.plain)
        before = remote.snapshot().now
        clock.now += 5
        assert remote.snapshot().now == before + 5  # waits count on between pushes while the desk is there
        assert screen.check_action("approve", ()) is True
        os.kill(child.pid, signal.SIGKILL)
        await until(pilot, lambda: screen.status.plain.startswith(" The desk is gone: its host closed the "
                                                                 "connection (it stopped or was killed)"))
        assert "Nothing can be decided here" in screen.status.plain
        assert any(said.startswith("The desk is gone") for said in screen.decisions.said)
        stopped = remote.snapshot().now
        clock.now += 60
        assert remote.snapshot().now == stopped  # the waits stand still: the desk is gone
        screen.redraw()
        assert screen.snapshot.now == stopped
        for action in ("approve", "veto", "edit", "force", "step", "resume", "bulk"):
            assert screen.check_action(action, ()) is None  # off, shown dimmed in the footer
        assert screen.check_action("focus_inbox", ()) is True
        await pilot.press("a", "v", "f")
        await pilot.pause()
        assert isinstance(app.screen, DeskScreen)  # no review dialog opened
        assert not screen.ticking  # the clock tick has stopped: nothing on the screen moves any more
        screen.open_session(remote.snapshot().rows[0].id)  # a session's own view says it too, its keys off
        view = await until_screen(pilot, app, SessionViewScreen)
        await until(pilot, lambda: str(view.title_bar.render()).startswith("The desk is gone"))
        assert view.check_action("approve", ()) is None and view.check_action("force", ()) is None
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DeskScreen))
        await pilot.press("q")  # quitting a gone desk is clean: its claim is nobody's to release
    assert read_audit(audit).decisions == []  # nothing was decided


async def test_a_hung_host_is_said_within_the_heartbeat_and_work_resumes_when_it_answers(
        host: tuple[asyncio.subprocess.Process, Path, Path]) -> None:
    child, path, _ = host
    remote = await RemoteDesk.connect(path, "dana")
    app = SupervisorApp(remote, operator="dana")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.desk_screen
        await until(pilot, lambda: len(remote.snapshot().items) == 2)
        os.kill(child.pid, signal.SIGSTOP)  # alive, socket open, silent
        await until(pilot, lambda: screen.status.plain.startswith(" The desk is not answering"))
        assert remote.silent and not remote.gone
        assert screen.check_action("approve", ()) is None
        stopped = remote.snapshot().now
        await until(pilot, lambda: remote.snapshot().now == stopped and screen.ticks >= 2)
        os.kill(child.pid, signal.SIGCONT)
        await until(pilot, lambda: not screen.status.plain.startswith(" The desk is not answering"))
        assert not remote.silent and screen.check_action("approve", ()) is True
        assert "The desk answers again: decisions can be taken." in screen.decisions.said
        await remote.close()
        await pilot.press("q")
