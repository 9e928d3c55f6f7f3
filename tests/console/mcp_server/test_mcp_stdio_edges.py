"""`ledgeragent mcp` over stdio at its edges: JSON-RPC's corner cases answered as the specifications say,
pipelined calls run and answered in the order they came, a client that closes its end with calls queued,
and answers written to a regular file. A real server child, driven line by line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.mcp_server import ROOT, RawStdio, server_env, session_folders, trace_events, wait_until

FIND = ("find_user_id_by_email", {"email": "noah.kim@example.com"})
MIA_LOGIN = ("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"})
MIA = ("get_user_details", {"user_id": "mia_garcia_4821"})
ORDER = ("get_order_details", {"order_id": "#W4821002"})
CANCEL = ("cancel_pending_order", {"order_id": "#W4821002", "reason": "no longer needed"})


def request(number: int, name: str, arguments: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_corner_cases_get_jsonrpcs_invalid_request_and_a_notification_gets_nothing(tmp_path: Path) -> None:
    raw = RawStdio("retail", tmp_path)
    try:
        raw.handshake()
        for bad in ({}, {"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"},
                    {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
                    {"jsonrpc": "2.0", "id": 2.5, "method": "tools/list"},
                    [{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}], 7):
            raw.send(bad)  # type: ignore[arg-type]
            answer = raw.answer(None)
            assert answer["error"]["code"] == -32600, bad
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
        raw.send({"jsonrpc": "2.0", "id": 4, "result": {}})  # a response to nothing: not answered either
        raw.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        assert "result" in raw.answer(5)
        assert raw.answered == [0, None, None, None, None, None, None, 5]  # nothing else was answered
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()


def test_pipelined_calls_run_and_are_answered_in_the_order_they_came(tmp_path: Path) -> None:
    """Seven calls in one write, none waiting for an answer: the trace records them in that order, the answers
    come in that order, and the cancellation is judged on the reads before it (an ALLOW, as when each call
    waits for its answer)."""
    calls = [MIA_LOGIN, MIA, ORDER, ("log_message", {"role": "agent", "text": "cancelling it"}), CANCEL, ORDER]
    raw = RawStdio("retail", tmp_path)
    try:
        raw.handshake()
        raw.send_line(b"".join(json.dumps(request(n, name, args)).encode() + b"\n"
                               for n, (name, args) in enumerate(calls, start=1)))
        answers = [raw.answer(n) for n in range(1, len(calls) + 1)]
        assert raw.answered == list(range(len(calls) + 1))  # the handshake's, then each call's, in order
        assert answers[4]["result"]["structuredContent"]["verdict"] == "ALLOW"
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    [folder] = session_folders(tmp_path)
    events = trace_events(folder)
    made = [e["call"]["name"] for e in events if e["type"] == "tool_result" and e["by"] != "gate"]
    assert made == [name for name, _ in calls if name != "log_message"]
    noted = [e["seq"] for e in events if e["type"] == "message" and e["text"] == "cancelling it"]
    cancel = [e["seq"] for e in events if e["type"] == "gate_decision"]
    assert len(noted) == 1 and noted[0] < cancel[0]


def test_closing_the_pipe_with_calls_queued_prints_no_stray_error(tmp_path: Path) -> None:
    raw = RawStdio("retail", tmp_path)
    try:
        raw.handshake()
        raw.send_line(b"".join(json.dumps(request(n, *FIND)).encode() + b"\n" for n in range(1, 9)))
        raw.close_input()
        assert raw.wait() == 0
    finally:
        raw.stop()
    raw.join()
    assert [line for line in raw.err if not line.startswith("mcp: ")] == []  # no asyncio complaint, no traceback
    for folder in session_folders(tmp_path):
        assert trace_events(folder)[-1]["reason"] == "client_disconnected"


def test_answers_reach_a_stdout_that_is_a_regular_file(tmp_path: Path) -> None:
    """A client's input on a pipe, the answers into a file (a script's `> answers.jsonl`): every answer is
    there. The pipe's asyncio reader used to be attached alone, and read the client's lines away."""
    out = tmp_path / "answers.jsonl"
    with out.open("wb") as answers:
        process = subprocess.Popen([sys.executable, "-m", "console", "mcp", "--domain", "retail"], cwd=ROOT,
                                   env=server_env(tmp_path / "home"), stdin=subprocess.PIPE, stdout=answers,
                                   stderr=subprocess.DEVNULL)
        assert process.stdin is not None
        try:
            for message in (*RawStdio.HANDSHAKE, request(1, *FIND)):
                process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            wait_until(lambda: out.read_bytes().count(b"\n") >= 2, what="two answers in the file")
            process.stdin.close()
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [m["id"] for m in written] == [0, 1]
    assert written[1]["result"]["content"][0]["text"] == "noah_kim_3107"
