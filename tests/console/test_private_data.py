"""Session data is its user's alone: under the data dir every folder the console, `run`, `check`, `supervise`,
`serve` and `mcp` make is 0700 and every file 0600 (traces, databases with their -wal and -shm files, audit
logs, exports, locks, the desk's operators file and socket), whatever the umask.

Each test runs under a umask of 000 (the most permissive: every default mode shows as it is) and walks the data
dir afterwards. Before, session folders and `desks/` were 0755 and trace.jsonl, db.sqlite and audit.jsonl
0644 under the usual umask (0777 and 0666 under 000): another local user could read a customer's email from
a trace.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from benchmarks.serve import ServedConsole, Tab
from console.runtime.desk.remote import RemoteDesk
from console.tui.app import OperatorConsole
from tests.support.desk_remote import SCENARIO, socket_folder, until_items
from tests.support.mcp_server import stdio_client
from tests.support.pilot import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 000 for this test and every process it starts."""
    before = os.umask(0)
    try:
        yield
    finally:
        os.umask(before)


def open_to_others(root: Path) -> list[str]:
    """Everything under `root` (itself included) whose mode is not 0700 (a folder) or 0600 (anything else)."""
    wrong = []
    for folder, _, files in os.walk(root):
        for path in [Path(folder), *(Path(folder) / name for name in files)]:
            info = path.lstat()
            want = 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
            if stat.S_IMODE(info.st_mode) != want:
                wrong.append(f"{path.relative_to(root.parent)} {stat.S_IMODE(info.st_mode):o}")
    return sorted(set(wrong))


def names(root: Path) -> set[str]:
    return {path.name for path in root.rglob("*")}


def cli(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"LEDGERAGENT_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "console", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)


async def test_the_console_run_and_check_keep_their_data_to_their_user(
        open_umask: None, console_app: Callable[..., OperatorConsole], tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = console_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        await pilot.press("e")  # the transcript export, next to the trace
        assert app.live is not None and app.live.folder is not None
        assert (app.live.folder / "transcript.md").exists()
    ran = cli("run", "--domain", "retail", "--scenario", "refund-to-original-payment", home=home)
    assert ran.returncode == 0, ran.stderr
    lines = tmp_path / "calls.jsonl"
    lines.write_text(json.dumps({"name": "find_user_id_by_name_zip", "arguments": {
        "first_name": "Mia", "last_name": "Garcia", "zip": "46281"}}) + "\n", encoding="utf-8")
    checked = cli("check", str(lines), "--domain", "retail", home=home)
    assert checked.returncode == 0, checked.stderr
    assert len(list((home / "sessions").glob("*/db.sqlite"))) == 3  # check keeps a database, no trace
    assert {"trace.jsonl", "db.sqlite", "transcript.md"} <= names(home)
    assert open_to_others(home) == []


async def test_a_served_desk_and_its_operators_keep_their_data_to_their_user(open_umask: None,
                                                                           tmp_path: Path) -> None:
    """`supervise --listen` (its socket in folders it makes itself) with one operator deciding: the sessions,
    `desks/<stamp>/audit.jsonl` and the socket's folders and file."""
    home = tmp_path / "home"
    with socket_folder() as sockets:
        path = sockets / "made" / "here" / "desk.sock"
        env = os.environ | {"LEDGERAGENT_HOME": str(home)}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "console", "supervise", "--listen", str(path), "--domain", "retail", "--mode",
            "approve writes", "--scenarios", SCENARIO, cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)
        try:
            assert child.stdout is not None
            assert (await asyncio.wait_for(child.stdout.readline(), 120)).startswith(b"desk: 1 session(s) at ")
            dana = await RemoteDesk.connect(path, "dana")
            await until_items(dana)
            item = dana.snapshot().items[0]
            await dana.decide(item.id, "dana", "accept_verdict")
            assert open_to_others(sockets / "made") == []  # the folders made for the socket, and the socket
            assert stat.S_ISSOCK(path.lstat().st_mode)
            # While the session runs: its database's -wal and -shm files too.
            assert {"audit.jsonl", "trace.jsonl", "db.sqlite", "db.sqlite-wal", "db.sqlite-shm"} <= names(home)
            assert open_to_others(home) == []
            await dana.close()
        finally:
            child.terminate()
            await child.wait()
    assert list((home / "desks").glob("*/audit.jsonl"))
    assert open_to_others(home) == []


async def test_serve_and_serve_supervise_keep_their_tabs_data_to_their_user(open_umask: None,
                                                                          tmp_path: Path) -> None:
    """A browser tab's console (over the websocket) and a served desk with its operators: session folders,
    traces, databases, the desk's audit log; the desk host's own folder (its socket and operators file)."""
    home = tmp_path / "home"
    with ServedConsole("--pace", "0", home=home) as server, server.log_on_failure():
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http:
            tab = await Tab.open(http, server.url, width=100, height=30)
            await asyncio.wait_for(tab.painted.wait(), 60)
            await tab.send_key(" ")  # the demo starts: a session that is used keeps its folder
            async with asyncio.timeout(60):
                while not any('"type":"tool_result"' in trace.read_text()
                              for trace in (home / "sessions").glob("*/trace.jsonl")):
                    await asyncio.sleep(0.1)
            assert open_to_others(home) == []  # while its database is open: -wal and -shm too
            await tab.close()
    desk_home = tmp_path / "desk-home"
    with ServedConsole("--supervise", "--mode", "approve writes", "--domain", "retail", "--scenarios", SCENARIO,
                       "--operators", "alice", home=desk_home) as server, server.log_on_failure():
        found = server.wait_for_line(r"desk host pid \d+: desk: 1 session\(s\) at (\S+)", 60)
        socket = Path(found.group(1))
        server.wait_for_line(r"desk host: desk: audit log at (\S+)", 30)
        token = server.operator_urls["alice"].split("?token=", 1)[1]
        alice = await RemoteDesk.connect(socket, "alice", token=token)
        await until_items(alice)
        assert open_to_others(socket.parent) == []  # desk.sock and the operators file, in their 0700 folder
        await alice.close()
    assert list((home / "sessions").glob("*/trace.jsonl"))
    assert list((desk_home / "desks").glob("*/audit.jsonl"))
    assert open_to_others(home) == [] and open_to_others(desk_home) == []


async def test_an_mcp_session_keeps_its_data_to_its_user(open_umask: None, tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with stdio_client("retail", home) as client:
        result = await client.call_tool("find_user_id_by_name_zip",
                                        {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"})
        assert result.is_error is False
    assert list((home / "sessions").glob("*/trace.jsonl"))
    assert open_to_others(home) == []


def test_data_folders_an_earlier_version_left_open_are_closed(tmp_path: Path) -> None:
    """A data dir made before (0755 folders) is closed to others at the next start; older session folders inside
    stay as they were, but nobody else can enter `sessions/` to reach them."""
    home = tmp_path / "home"
    old = home / "sessions" / "20260101-000000-retail-old"
    old.mkdir(parents=True)
    for folder in (home, home / "sessions", old):
        folder.chmod(0o755)
    ran = cli("run", "--domain", "retail", "--scenario", "refund-to-original-payment", home=home)
    assert ran.returncode == 0, ran.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700 and stat.S_IMODE((home / "sessions").stat().st_mode) == 0o700
    assert stat.S_IMODE(old.stat().st_mode) == 0o755  # not ours to change; unreachable through sessions/ now
