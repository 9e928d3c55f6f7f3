"""Several operators on one desk: a RemoteDesk against a real DeskHost on a real Unix socket,
running real scripted sessions. Claims, decisions and releases as two operator processes see them, and the
host's answers to bad input (one line each, the host keeps serving)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from console.runtime.desk.audit import read_audit
from console.runtime.desk.remote import GONE, MAX_REQUEST, DeskHost, RemoteDesk, SocketPathError, snapshot_json
from console.runtime.desk.view import DeskRefused
from console.runtime.operators import FAILURES, generate
from tests.support.desk_remote import Clock, Served, served_desk, socket_folder, specs, until, until_items

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def folder() -> Path:
    with socket_folder() as made:
        yield made


async def test_two_operators_see_one_inbox_and_cannot_decide_a_call_twice(folder: Path) -> None:
    async with served_desk(folder, specs(2)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        bob = await RemoteDesk.connect(served.path, "bob")
        await until_items(alice, 2)
        await until_items(bob, 2)
        assert [i.id for i in alice.snapshot().items] == [i.id for i in served.desk.snapshot().items]
        item = alice.snapshot().items[0]
        assert item.tool and item.verdict == "REVISE" and item.failing  # the gate's evidence travels too
        await alice.decide(item.id, "alice", "accept_verdict")
        assert alice.snapshot().item(item.id) is None  # pushed before the answer: read your own writes
        with pytest.raises(DeskRefused, match="no longer waiting"):
            await bob.decide(item.id, "bob", "approve")
        await until(bob, lambda: bob.snapshot().item(item.id) is None, "the decided item leaves bob's inbox")
        decisions = [r for r in read_audit(folder / "audit.jsonl").decisions if r.get("item") == item.id]
        assert [(r["operator"], r["decision"]) for r in decisions] == [("alice", "accept_verdict")]
        await alice.close()
        await bob.close()


async def test_a_claim_blocks_the_other_operator_until_its_connection_closes(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        bob = await RemoteDesk.connect(served.path, "bob")
        await until_items(bob)
        item = bob.snapshot().items[0].id
        await alice.claim(item, "alice")
        await until(bob, lambda: bob.snapshot().items[0].claimed_by == "alice", "bob sees alice's claim")
        with pytest.raises(DeskRefused, match="claimed by alice"):
            await bob.claim(item, "bob")
        with pytest.raises(DeskRefused, match="claimed by alice"):
            await bob.decide(item, "bob", "accept_verdict")
        # the refused decision is on the host's record (the refused claim is not: screens claim on every move)
        refused = [line for line in served.log if "refused" in line]
        assert len(refused) == 1
        assert refused[0].startswith(f"desk: refused bob's decide of {item}: item {item} is claimed by alice for ")
        await alice.close()  # her tab closed
        await until(bob, lambda: bob.snapshot().items[0].claimed_by is None, "alice's claim released")
        await bob.claim(item, "bob")
        assert bob.snapshot().items[0].claimed_by == "bob"
        assert "desk: alice disconnected; released 1 claim(s)" in served.log
        await bob.close()


async def test_the_same_operator_in_two_tabs_keeps_the_claim_while_one_is_open(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        first = await RemoteDesk.connect(served.path, "alice")
        second = await RemoteDesk.connect(served.path, "alice")
        bob = await RemoteDesk.connect(served.path, "bob")
        await until_items(first)
        item = first.snapshot().items[0].id
        await first.claim(item, "alice")
        await first.close()
        # The close changes nothing on the desk (no push to wait on): the host's log line proves it was handled.
        await served.until_logged("desk: alice disconnected (still connected elsewhere: claims kept)")
        with pytest.raises(DeskRefused, match="claimed by alice"):
            await bob.claim(item, "bob")
        await second.close()
        await until(bob, lambda: bob.snapshot().items[0].claimed_by is None, "released with the last tab")
        await bob.close()


async def test_a_killed_operator_process_releases_its_claims(folder: Path) -> None:
    """A closed browser tab ends its console process (SIGKILL if it hangs): its socket closes with it."""
    async with served_desk(folder, specs(1)) as served:
        bob = await RemoteDesk.connect(served.path, "bob")
        await until_items(bob)
        item = bob.snapshot().items[0].id
        script = ("import asyncio, sys\n"
                  "from pathlib import Path\n"
                  "from console.runtime.desk.remote import RemoteDesk\n"
                  "async def main():\n"
                  "    desk = await RemoteDesk.connect(Path(sys.argv[1]), 'carol')\n"
                  "    await desk.claim(sys.argv[2], 'carol')\n"
                  "    print('claimed', flush=True)\n"
                  "    await asyncio.Event().wait()\n"
                  "asyncio.run(main())\n")
        child = await asyncio.create_subprocess_exec(sys.executable, "-c", script, str(served.path), item,
                                                     cwd=ROOT, stdout=subprocess.PIPE)
        try:
            assert child.stdout is not None
            assert await asyncio.wait_for(child.stdout.readline(), 60) == b"claimed\n"
            await until(bob, lambda: bob.snapshot().items[0].claimed_by == "carol", "carol's claim")
            child.send_signal(signal.SIGKILL)
            await child.wait()
            await until(bob, lambda: bob.snapshot().items[0].claimed_by is None, "carol's claim released")
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
        await bob.claim(item, "bob")
        await bob.close()


async def test_a_claim_runs_out_on_the_desk_clock(folder: Path) -> None:
    desk_clock, alice_clock = Clock(), Clock(5.0)
    async with served_desk(folder, specs(1), clock=desk_clock, claim_ttl=30.0) as served:
        alice = await RemoteDesk.connect(served.path, "alice", clock=alice_clock)
        bob = await RemoteDesk.connect(served.path, "bob")
        await until_items(alice)
        item = alice.snapshot().items[0].id
        await alice.claim(item, "alice")
        assert alice.snapshot().items[0].claimed_by == "alice"
        alice_clock.now += 31.0  # alice's own view: the claim has run out on the desk's clock by now
        assert alice.snapshot().items[0].claimed_by is None
        with pytest.raises(DeskRefused, match="claimed by alice"):  # but the desk decides: not yet on its clock
            await bob.claim(item, "bob")
        desk_clock.now += 31.0
        await bob.claim(item, "bob")
        await until(alice, lambda: alice.snapshot().items[0].claimed_by == "bob", "bob's claim reaches alice")
        await alice.close()
        await bob.close()


async def test_now_moves_on_between_pushes_by_the_local_clock(folder: Path) -> None:
    local = Clock(0.0)
    async with served_desk(folder, specs(1), clock=Clock(500.0)) as served:
        alice = await RemoteDesk.connect(served.path, "alice", clock=local)
        await until_items(alice)
        before = alice.snapshot()
        local.now += 45.0
        after = alice.snapshot()
        assert after.now == pytest.approx(before.now + 45.0)
        item = after.items[0]
        assert after.service(item).value == "amber" and before.service(item).value == "ok"  # 30 s amber
        await alice.close()


async def test_session_events_come_in_full_and_from_an_index(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice)
        session = alice.snapshot().items[0].session_id
        assert await alice.session_events(session) == await served.desk.session_events(session)
        tail = await alice.session_events(session, since=3)
        assert tail == (await served.desk.session_events(session))[3:] and tail
        with pytest.raises(DeskRefused, match="no session"):
            await alice.session_events("s99")
        await alice.close()


async def test_a_connection_acts_only_as_its_own_operator(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice)
        with pytest.raises(DeskRefused, match="alice's, not bob's"):
            await alice.claim(alice.snapshot().items[0].id, "bob")
        with pytest.raises(DeskRefused, match="printable"):
            await RemoteDesk.connect(served.path, "x" * 65)
        await alice.close()


async def test_at_a_desk_that_knows_its_operators_a_connection_is_whose_token_it_holds(folder: Path) -> None:
    """A hello names nobody by itself there: the token decides (a name sent along must be the token's), and
    the audit log records that operator."""
    operators, tokens = generate(["alice", "bob"])
    async with served_desk(folder, specs(1), operators=operators) as served:
        with pytest.raises(DeskRefused, match=r"this desk knows its operators: say hello with your token"):
            await RemoteDesk.connect(served.path, "alice")
        with pytest.raises(DeskRefused, match="this desk does not know that token"):
            await RemoteDesk.connect(served.path, "alice", token="not-a-token-of-anyone-here")
        with pytest.raises(DeskRefused, match="this token is bob's, not alice's"):
            await RemoteDesk.connect(served.path, "alice", token=tokens["bob"])
        await served.until_logged("desk: refused a hello: a token this desk does not know")
        alice = await RemoteDesk.connect(served.path, "alice", token=tokens["alice"])
        assert alice.operator == "alice"
        await served.until_logged("desk: alice connected (by token)")
        raw = await RawClient.open(served.path)  # no name at all: the token's owner
        assert (await raw.send(b'{"id": 1, "op": "hello", "token": "%s"}\n' % tokens["bob"].encode())) == {
            "id": 1, "ok": True, "result": {"operator": "bob"}}
        raw.writer.close()
        await until_items(alice)
        item = alice.snapshot().items[0].id
        await alice.decide(item, "alice", "accept_verdict")
        assert [(r["item"], r["operator"]) for r in read_audit(folder / "audit.jsonl").decisions] == [(item, "alice")]
        await alice.close()


async def test_wrong_hellos_on_a_connection_are_slowed_down_and_an_operator_still_joins(folder: Path) -> None:
    """A connection saying hello with wrong tokens gets FAILURES answers "does not know that token", then
    "too many wrong tokens" without a check; another connection with a real token joins as ever."""
    operators, tokens = generate(["alice"])
    async with served_desk(folder, specs(1), operators=operators) as served:
        raw = await RawClient.open(served.path)
        errors = []
        for n in range(FAILURES + 3):
            answer = await raw.send(b'{"id": %d, "op": "hello", "token": "wrong-token-number-%04d"}\n' % (n, n))
            errors.append(str(answer["error"]))
        assert errors[:FAILURES] == ["this desk does not know that token"] * FAILURES
        assert all(re.fullmatch(r"too many wrong tokens from connection \d+: try again in 6 s", e)
                   for e in errors[FAILURES:]), errors[FAILURES:]
        await served.until_logged("desk: refused a hello: too many wrong tokens from connection")
        alice = await RemoteDesk.connect(served.path, "alice", token=tokens["alice"])
        assert alice.operator == "alice"
        raw.writer.close()
        await alice.close()


async def test_a_lost_host_makes_every_call_refused(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice)
        told = asyncio.Event()
        alice.subscribe(told.set)
        await served.host.close()
        await asyncio.wait_for(told.wait(), 30)
        assert alice.gone
        with pytest.raises(DeskRefused, match=GONE):
            await alice.claim(alice.snapshot().items[0].id, "alice")
        assert alice.snapshot().items  # the last state stays readable for the screen that says it is gone
        await alice.close()


# ------------------------------------------------------------------------------------------ bad requests


class RawClient:
    """A hand-written client on the socket, to send what no RemoteDesk would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, path: Path) -> RawClient:
        reader, writer = await asyncio.open_unix_connection(os.fspath(path), limit=64 * 1024 * 1024)
        return cls(reader, writer)

    async def send(self, data: bytes) -> dict[str, object]:
        """Send raw bytes; the next answer (pushes skipped)."""
        self.writer.write(data)
        await self.writer.drain()
        while True:
            line = await asyncio.wait_for(self.reader.readline(), 30)
            assert line.endswith(b"\n"), line[:200]
            message = json.loads(line)
            if "push" not in message:  # a snapshot, or the host's heartbeat
                return dict(message)


async def test_bad_requests_get_one_line_errors_and_the_host_keeps_serving(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        raw = await RawClient.open(served.path)
        bad = {
            b"not json\n": "bad request: not valid JSON",
            b'{"id": 1, "op": "claim", "item": NaN}\n': "bad request: NaN is not a JSON number",
            b'{"id": 1, "op": "hello", "operator": 1e999}\n': "out of range",
            b'["hello"]\n': "a request is a JSON object",
            b'{"op": "hello", "operator": "a"}\n': "every request needs an id",
            b'{"id": 2, "op": "claim", "item": "i1"}\n': "say hello first",
            b'{"id": 3, "op": "shutdown"}\n': "unknown op 'shutdown'",
            b"x" * (MAX_REQUEST + 10) + b"\n": "request line too long",
            b'{"id": 4, "op": "hello", "operator": "\\ud800"}\n': "lone surrogate",
        }
        for data, message in bad.items():
            answer = await raw.send(data)
            assert answer["ok"] is False and message in str(answer["error"]), (data[:60], answer)
            assert "\n" not in str(answer["error"])
        assert (await raw.send(b'{"id": 5, "op": "hello", "operator": "mallory"}\n')) == {
            "id": 5, "ok": True, "result": {"operator": "mallory"}}
        assert (await raw.send(b'{"id": 6, "op": "decide", "item": "i1", "decision": "approve", '
                               b'"arguments": [1]}\n'))["error"] == "arguments must be a JSON object"
        assert (await raw.send(b'{"id": 7, "op": "hello", "operator": "eve"}\n'))["error"] == \
            "this connection is mallory's already"
        assert (await raw.send(b'{"id": 8, "op": "session_events", "session": "s01", "since": -1}\n'))["error"] \
            == "since must be a whole number of 0 or more"
        raw.writer.close()
        alice = await RemoteDesk.connect(served.path, "alice")  # the host is still serving
        await until_items(alice)
        await alice.claim(alice.snapshot().items[0].id, "alice")
        await alice.close()


async def test_a_line_split_across_reads_and_a_long_line_in_pieces_keep_the_stream_in_step(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        raw = await RawClient.open(served.path)
        for _ in range(4):  # an overlong line arriving in pieces: one error, then the next line is read as such
            raw.writer.write(b"y" * (MAX_REQUEST // 2))
        answer = await raw.send(b"\n")
        assert "request line too long" in str(answer["error"])
        raw.writer.write(b'{"id": 9, "op": "hel')
        await raw.writer.drain()
        assert await raw.send(b'lo", "operator": "zed"}\n') == {"id": 9, "ok": True, "result": {"operator": "zed"}}
        raw.writer.close()


# ------------------------------------------------------------------------------------------ the socket file


async def settled(served: Served) -> None:
    """Wait until the session waits on its item: closing a desk whose session is still opening its database
    leaves aiosqlite's worker thread answering a closed event loop (a warning, and noise in the next test)."""
    watcher = await RemoteDesk.connect(served.path, "watcher")
    await until_items(watcher)
    await watcher.close()


async def test_the_socket_is_private_and_removed_when_the_host_stops(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        await settled(served)
        assert stat.S_IMODE(served.path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(served.path.stat().st_mode) == 0o600
        await served.host.close()
        assert not served.path.exists()


async def test_unsafe_or_busy_socket_paths_are_refused_in_one_line(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        await settled(served)
        with pytest.raises(SocketPathError, match="already served"):
            await DeskHost(served.desk, served.path).start()
        shared = folder / "shared"
        shared.mkdir(mode=0o755)
        shared.chmod(0o755)
        with pytest.raises(SocketPathError, match="open to other users"):
            await DeskHost(served.desk, shared / "desk.sock").start()
        private = folder / "private"
        private.mkdir(mode=0o700)
        (private / "file").write_text("not a socket")
        with pytest.raises(SocketPathError, match="not a socket"):
            await DeskHost(served.desk, private / "file").start()
        with pytest.raises(SocketPathError, match="too long"):
            DeskHost(served.desk, private / ("x" * 120))
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a desk that died left its socket behind
        stale.bind(os.fspath(private / "stale.sock"))
        stale.close()
        again = DeskHost(served.desk, private / "stale.sock")
        await again.start()
        alice = await RemoteDesk.connect(private / "stale.sock", "alice")
        assert alice.snapshot().rows
        await alice.close()
        await again.close()


async def test_the_change_a_request_made_is_pushed_before_its_answer(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice)
        item = alice.snapshot().items[0].id
        await alice.close()
        raw = await RawClient.open(served.path)
        await raw.send(b'{"id": 1, "op": "hello", "operator": "zed"}\n')
        raw.writer.write(b'{"id": 2, "op": "claim", "item": "%s"}\n' % item.encode())
        await raw.writer.drain()
        lines = []
        while not lines or "push" in lines[-1]:
            lines.append(json.loads(await asyncio.wait_for(raw.reader.readline(), 30)))
        claimed = [i["claimed_by"] for i in lines[-2]["snapshot"]["items"] if i["id"] == item]
        assert lines[-1] == {"id": 2, "ok": True, "result": None} and claimed == ["zed"]
        raw.writer.close()


async def test_pushes_are_coalesced_the_latest_wins(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice)  # the one session now waits on its item: nothing else changes the desk
        item = alice.snapshot().items[0].id
        raw = await RawClient.open(served.path)
        await raw.send(b'{"id": 1, "op": "hello", "operator": "zed"}\n')
        for _ in range(50):  # fifty changes in a burst
            await served.desk.release_all("nobody")
        await served.desk.claim(item, "bob")
        raw.writer.write(b'{"id": 2, "op": "release", "item": "none"}\n')
        await raw.writer.drain()
        pushes = []
        while True:
            message = json.loads(await asyncio.wait_for(raw.reader.readline(), 30))
            if "push" not in message:
                break
            pushes.append(message)
        assert message["id"] == 2 and 1 <= len(pushes) <= 2
        assert pushes[-1]["snapshot"]["items"][0]["claimed_by"] == "bob"
        raw.writer.close()
        await alice.close()


async def test_the_pushed_snapshot_is_exactly_to_json(folder: Path) -> None:
    async with served_desk(folder, specs(2)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice, 2)
        await alice.claim(alice.snapshot().items[0].id, "alice")
        snapshot = served.desk.snapshot()
        assert snapshot.items[0].rules and snapshot.items[0].arguments and snapshot.items[0].claimed_by
        assert json.loads(json.dumps(snapshot_json(snapshot))) == json.loads(json.dumps(snapshot.to_json()))
        await alice.close()


async def test_session_events_longer_than_a_page_come_whole(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("console.runtime.desk.remote.EVENTS_PAGE", 4)
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")
        await until_items(alice)
        session = alice.snapshot().items[0].session_id
        everything = await served.desk.session_events(session)
        assert len(everything) > 8 and await alice.session_events(session) == everything
        assert await alice.session_events(session, since=5) == everything[5:]
        await alice.close()


async def test_connections_past_the_limit_are_refused_in_one_line(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        small = DeskHost(served.desk, folder / "sock" / "small.sock", max_connections=1)
        await small.start()
        try:
            alice = await RemoteDesk.connect(small.path, "alice")
            with pytest.raises(DeskRefused, match="the desk has 1 connections already"):
                await RemoteDesk.connect(small.path, "bob")
            await alice.close()
            async with asyncio.timeout(30):  # the host notices her close on its next read
                while small.operators:
                    await asyncio.sleep(0.01)
            bob = await RemoteDesk.connect(small.path, "bob")  # her slot is free again
            await bob.close()
        finally:
            await small.close()


async def test_a_failing_listener_loses_neither_the_desk_nor_the_other_listeners(folder: Path) -> None:
    async with served_desk(folder, specs(1)) as served:
        alice = await RemoteDesk.connect(served.path, "alice")

        def broken() -> None:
            raise RuntimeError("a screen's bug")

        alice.subscribe(broken)
        await until_items(alice)  # its own listener is called after the broken one, push after push
        await alice.claim(alice.snapshot().items[0].id, "alice")
        assert not alice.gone
        await alice.close()
