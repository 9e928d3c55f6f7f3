"""Untrusted text is inert wherever it is shown: an ESC sequence, a C1 control, DEL or a bidi override in a
customer's record, an MCP client's name or `log_message`, a tool call's arguments, an operator's reason or a
trace someone handed over never reaches the operator's terminal as such; it is shown escaped (`␛]0;…`,
`\\x9b`, `\\u202e`), and `[red]` in it is shown as `[red]`, never as markup.

The text goes in through the real doors: a `--db` whose customer record holds it, an MCP client (stdio) on a
desk (`mcp --listen`) that names itself with it, logs it and sends it as an argument, an operator's veto reason
over the desk's socket. It is then looked at on every surface: the desk's screen (inbox, item detail, sessions,
status) and a session's view (transcript, ledger tree and its detail, gate log), the session's trace replayed
(Pilot), and the output of `run`, `check` and `audit` (plain and `--json`). On screen, what the terminal gets
is read twice: every drawn segment's text has no control character, and the whole frame, fed to a terminal
emulator (`pyte`), leaves the window title alone and shows the escaped text.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyte
from mcp import Client
from mcp.types import Implementation

from console.runtime.desk.remote import RemoteDesk
from console.tui.app import OperatorConsole
from console.tui.desk_app import SupervisorApp
from console.tui.screens.desk_decide import DeskReviewScreen
from console.tui.screens.desk_session import SessionViewScreen
from console.tui.screens.replay import ReplayScreen, load_replay
from mock_backends.retail import load_seed
from tests.support.desk_remote import socket_folder
from tests.support.mcp_server import scenario_lines, session_folders, stdio_params
from tests.support.pilot import wait_for, wait_for_screen

ROOT = Path(__file__).resolve().parents[2]
# Set the window title, clear the screen, home the cursor, a C1 CSI, markup, a right-to-left override, DEL.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[1;1H\x9b31m[red]styled[/red]\u202eevil\x7f"
SEEN = "␛]0;pwned␇␛[2J"  # how it starts on screen: visible, doing nothing
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
LINES = scenario_lines("retail", "refund-to-original-payment")
READS, WRITE = LINES[:3], LINES[5]


def hostile_db(folder: Path) -> Path:
    """The retail data with the text in the customer's address and email (what a tool returns about her)."""
    data = load_seed()
    mia = data["users"]["mia_garcia_4821"]
    mia["address"]["address1"] = HOSTILE + mia["address"]["address1"]
    mia["email"] = HOSTILE + mia["email"]
    path = folder / "hostile-db.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def terminal_sees(app: Any) -> str:
    """What the terminal is sent for the screen in front, checked: no drawn text holds a control character,
    and a terminal emulator fed the whole frame keeps its title; the emulator's screen, as text."""
    update = app.screen._compositor.render_update(full=True)
    drawn = [segment.text for line in update.strips for strip in line for segment in strip if not segment.control]
    unsafe = sorted({text for text in drawn if UNSAFE.search(text)})
    assert unsafe == [], f"control characters drawn raw: {unsafe[:5]}"
    width, height = app.size
    screen = pyte.Screen(width, height)
    pyte.Stream(screen).feed(update.render_segments(app.console))
    assert screen.title == "" and "pwned" not in screen.title
    return "\n".join(screen.display)


def assert_inert_output(output: bytes) -> str:
    """A command's output: UTF-8 with no control character but newlines."""
    text = output.decode("utf-8")
    assert not UNSAFE.search(text.replace("\n", "")), [c for c in text if UNSAFE.match(c) and c != "\n"][:5]
    return text


def cli(*argv: str, home: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {
        "LEDGERAGENT_HOME": str(home), "COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "console", *argv], cwd=ROOT, env=env, capture_output=True,
                          timeout=180)


async def _drive_mcp_on_a_desk(tmp_path: Path, operate: Callable[[RemoteDesk, Path], Any]) -> Path:
    """An MCP client that names itself, logs and sends the text, on a desk over a hostile database; `operate`
    works the desk while the write waits, then the write is vetoed with the text as the reason. The trace."""
    home = tmp_path / "home"
    with socket_folder() as sockets:
        path = sockets / "desk.sock"
        params = stdio_params("retail", home, "--db", str(hostile_db(tmp_path)), "--listen", str(path), "--mode",
                              "approve writes", "--audit", str(tmp_path / "audit.jsonl"))
        async with Client(params, read_timeout_seconds=120, client_info=Implementation(name=HOSTILE, version="1")) \
                as client:
            logged = await client.call_tool("log_message", {"role": "customer", "text": f"I am Mia {HOSTILE}"})
            assert logged.is_error is False
            for line in READS:
                await client.call_tool(line["name"], line["arguments"])
            write = asyncio.create_task(client.call_tool(
                WRITE["name"], {**WRITE["arguments"], "payment_method_id": f"gift_card_4821001{HOSTILE}"}))
            remote = await RemoteDesk.connect(path, "dana")
            try:
                async with asyncio.timeout(60):
                    while not remote.snapshot().items:
                        await asyncio.sleep(0.05)
                await operate(remote, tmp_path)
                await remote.decide(remote.snapshot().items[0].id, "dana", "veto", reason=f"no: {HOSTILE}")
                result = await asyncio.wait_for(write, 60)
                assert result.is_error is True  # vetoed: not run
            finally:
                await remote.close()
    [folder] = session_folders(home)
    return folder / "trace.jsonl"


async def test_the_desk_and_a_session_view_show_an_mcp_clients_text_inert(tmp_path: Path) -> None:
    async def on_screen(remote: RemoteDesk, _: Path) -> None:
        app = SupervisorApp(remote, operator="dana")
        async with app.run_test(size=(200, 50)) as pilot:
            screen = app.desk_screen
            await wait_for(pilot, lambda: screen.detail.item_id is not None)
            seen = terminal_sees(app)
            assert SEEN in seen and "[red]styled[/red]" in seen  # the argument in the item's detail, markup shown
            assert "\\x9b31m" in seen and "\\u202eevil␡" in seen  # C1, the bidi override and DEL, named
            await pilot.press("v")  # the review dialog on the item: its title, the gate's reasons, the arguments
            await wait_for_screen(pilot, app, DeskReviewScreen)
            seen = terminal_sees(app)
            assert "\\u001b]0;pwned" in seen or SEEN in seen
            for _ in range(3):  # escape leaves the reason box, then the dialog (undecided)
                if app.screen is screen:
                    break
                await pilot.press("escape")
                await pilot.pause()
            await wait_for(pilot, lambda: app.screen is screen)
            screen.open_session(remote.snapshot().rows[0].id)
            view = await wait_for_screen(pilot, app, SessionViewScreen)
            await wait_for(pilot, lambda: "Customer:" in view.panes.transcript.text())
            transcript = view.panes.transcript.text()
            assert f"Customer: I am Mia {SEEN}" in transcript  # the client's log_message
            view.panes.transcript.action_toggle_results()  # every tool result unfolded: the address, the email
            view.panes.ledger.show_entry("user")
            seen = terminal_sees(app)
            assert SEEN in seen and "[red]styled[/red]" in seen
            await pilot.press("escape")

    trace = await _drive_mcp_on_a_desk(tmp_path, on_screen)
    said = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert any(e.get("text") == f"I am Mia {HOSTILE}" for e in said)  # the trace keeps what was said, as it was


async def test_a_replayed_trace_and_the_commands_show_it_inert(
        tmp_path: Path, console_app: Callable[..., OperatorConsole]) -> None:
    async def nothing(_remote: RemoteDesk, _folder: Path) -> None:
        return None

    trace = await _drive_mcp_on_a_desk(tmp_path, nothing)
    events, domain, _ = load_replay(trace)
    app = console_app()
    async with app.run_test(size=(200, 50)) as pilot:
        app.push_screen(ReplayScreen(events, domain, trace))
        replay = await wait_for_screen(pilot, app, ReplayScreen)
        await pilot.press("end")
        await wait_for(pilot, lambda: "operator dana" in replay.panes.transcript.text())
        replay.panes.transcript.action_toggle_results()
        replay.panes.ledger.show_entry("user")
        seen = terminal_sees(app)
        assert SEEN in seen and "[red]styled[/red]" in seen
        transcript = replay.panes.transcript.text()
        assert f"Customer: I am Mia {SEEN}" in transcript and "operator dana vetoed" in transcript
        assert transcript.count(SEEN) >= 3  # the message, the argument, the veto's reason
    home = tmp_path / "cli-home"
    for argv in (("check", str(trace), "--all"), ("check", str(trace), "--json"),
                 ("audit", str(tmp_path / "audit.jsonl")), ("audit", str(tmp_path / "audit.jsonl"), "--json"),
                 ("run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--db",
                  str(hostile_db(tmp_path))),
                 ("run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--db",
                  str(hostile_db(tmp_path)), "--json")):
        done = cli(*argv, home=home)
        assert done.returncode in (0, 1), (argv, done.stderr[-500:])
        out = assert_inert_output(done.stdout)
        assert_inert_output(done.stderr)
        if argv[0] == "audit" and "--json" not in argv:
            assert f"no: {SEEN}" in out and "[red]styled[/red]" in out  # the reason, its markup shown as text
        if "--json" in argv:  # still JSON (the escapes are JSON's own), the text in it escaped
            assert "u001b]0;pwned" in out or "x1b]0;pwned" in out
            assert all(json.loads(line) for line in out.splitlines() if line)


async def test_the_console_shows_a_customer_record_inert(tmp_path: Path,
                                                        console_app: Callable[..., OperatorConsole]) -> None:
    """The one-session console over a database whose customer record holds the text: the transcript's tool
    results unfolded, the ledger entry's detail, the status bar and header, the whole frame."""
    app = console_app(db=hostile_db(tmp_path))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("space")
        await wait_for(pilot, lambda: app.live is not None and app.live.state.phase == "ended")
        app.transcript.action_toggle_results()
        lines = app.transcript.text().splitlines()
        app.transcript.scroll_to(y=next(n for n, line in enumerate(lines) if "address1" in line), animate=False,
                                 immediate=True)  # the customer's profile, unfolded, on screen
        await pilot.pause()
        seen = terminal_sees(app)
        assert "[red]styled[/red]" in seen and "\\x9b31m" in seen and "\\u202eevil␡" in seen
