"""A long-running `ledgeragent mcp --transport http` keeps nothing in memory for the sessions that ended.

Every way an HTTP session ends (the client's DELETE, its idle timeout, the connection dropped and then idle) goes
through `McpSessions.end`; here that is driven directly on real sessions (folders, databases, traces) of a
real desk, many in a row, and what is left is counted: no `McpLiveSession` alive, no entry in the manager's
tables, and on the desk a compact row per ended session (what the sessions table shows), its events read back
from the trace on disk when asked. Counted objects, never RSS: the figure is `make bench`'s
(`mcp_memory_per_ended_session`)."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from console.mcp.manager import McpSessions
from console.mcp.session import McpLiveSession, McpSessionSpec, SessionGone
from console.runtime.desk.desk import Desk
from console.runtime.desk.view import RowPhase
from console.runtime.live import SupervisionMode

SESSIONS = 30
READ = ("get_user_details", {"user_id": "mia_garcia_4821"})
REASONS = ("client_disconnected", "client_idle")


def alive_sessions() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, McpLiveSession))


def trace_events(folder: str) -> list[dict[str, object]]:
    lines = (Path(folder) / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


async def test_an_ended_session_leaves_only_its_row(home: Path) -> None:
    desk = Desk([], concurrency=1)
    spec = McpSessionSpec(domain="retail", scenario=None, model="mcp", mode=SupervisionMode.AUTOPILOT)
    sessions = McpSessions(desk, spec, decision_timeout=None)
    try:
        live_events = {}
        for number in range(SESSIONS):
            key = f"session-{number}"
            live = await sessions.session(key, "agent 1.0")
            result = await live.call(*READ)
            assert result.outcome.ok
            desk_id = sessions.desk_id(key)
            assert desk_id is not None
            live_events[desk_id] = await desk.session_events(desk_id)  # while it runs: from memory
            del live, result
            await sessions.end(key, REASONS[number % 2])
            with pytest.raises(SessionGone, match=REASONS[number % 2]):  # a late call opens no new session
                await sessions.session(key, "agent 1.0")
        assert alive_sessions() == 0
        assert sessions.keys == [] and sessions._desk_ids == {} and sessions._opening == {}
        rows = desk.snapshot().rows
        assert len(rows) == SESSIONS and all(r.phase is RowPhase.ENDED and r.folder for r in rows)
        assert [r.end_reason for r in rows] == [REASONS[n % 2] for n in range(SESSIONS)]
        assert all(s.live is None and s.events == [] and s.task is None for s in desk.sessions)
        for row in rows:  # the session view still shows everything: read back from the trace on disk
            events = await desk.session_events(row.id)
            assert events == trace_events(row.folder)
            assert events[:len(live_events[row.id])] == live_events[row.id]
            assert events[-1]["type"] == "session_ended" and await desk.session_events(row.id, 3) == events[3:]
            assert desk.events_of(row.id)[-1].type == "session_ended"
    finally:
        await sessions.end_all("server_stopped")
        await desk.close()


async def test_the_desk_keeps_a_bounded_number_of_ended_rows(home: Path) -> None:
    desk = Desk([], concurrency=1, keep_ended=5)
    spec = McpSessionSpec(domain="retail", scenario=None, model="mcp", mode=SupervisionMode.AUTOPILOT)
    sessions = McpSessions(desk, spec, decision_timeout=None)
    try:
        ids = []
        for number in range(12):
            key = f"k{number}"
            await sessions.session(key, "agent")
            ids.append(sessions.desk_id(key))
            await sessions.end(key, "client_disconnected")
        rows = desk.snapshot().rows
        assert [r.id for r in rows] == ids[-5:]  # the newest five; the others' traces stay on disk
        assert len(desk.sessions) == 5 and len({*ids}) == 12  # ids are never reused
        live = await sessions.session("k-new", "agent")  # a new session still opens and serves
        assert (await live.call(*READ)).outcome.ok
    finally:
        await sessions.end_all("server_stopped")
        await desk.close()
