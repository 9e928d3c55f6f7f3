"""Reading recordings: the format is told from the data, calls are paired with their results, and every problem
is named with its position while the rest is read (core.recorded.formats / messages)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.evaluation.tau2_format import from_tau2
from core.recorded.formats import parse_recording, read_recording
from core.recorded.model import Recording, RecordingError
from core.tools import Requestor
from core.trace import read_session_start
from tests.support.recorded import Exchange as X
from tests.support.recorded import say, tau2_messages, tau2_results

USER = '{"user_id": "u1", "name": {"first_name": "Ann", "last_name": "Lee"}}'


def _assistant(*calls: tuple[str, str, Any], text: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}}
        for i, n, a in calls]}


def _tool(call_id: str | None, content: str) -> dict[str, Any]:
    message = {"role": "tool", "content": content}
    if call_id is not None:
        message["tool_call_id"] = call_id
    return message


def _read(messages: list[Any], name: str = "t.json") -> Recording:
    return parse_recording(json.dumps(messages), name)


def _pairs(recording: Recording) -> list[tuple[str, str, str | None]]:
    return [(c.call.name, c.where.short(), None if c.result is None else c.result.content)
            for c in recording.conversations[0].calls()]


def _problems(recording: Recording) -> list[str]:
    return [p.at(recording.source) for p in recording.problems] + [
        p.at(recording.source) for c in recording.conversations for p in c.problems]


def test_openai_messages_pair_each_call_with_the_result_naming_its_id() -> None:
    recording = _read([
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        _assistant(("a", "find_user_id_by_email", {"email": "a@x"}), ("b", "get_user_details", {"user_id": "u1"})),
        _tool("b", USER), _tool("a", "u1"),
        {"role": "assistant", "content": "Found you."},
    ])
    assert recording.format == "messages" and recording.results_recorded and recording.domain is None
    conversation = recording.conversations[0]
    assert [(t.role, t.text, len(t.calls)) for t in conversation.turns] == [
        ("user", "hi", 0), ("assistant", None, 2), ("assistant", "Found you.", 0)]
    assert _pairs(recording) == [("find_user_id_by_email", "[2].tool_calls[0]", "u1"),
                                 ("get_user_details", "[2].tool_calls[1]", USER)]
    first, second = conversation.calls()
    assert first.result is not None and first.result.value == "u1"  # plain text stays text
    assert second.result is not None and second.result.value["user_id"] == "u1"  # a record is parsed
    assert dict(second.call.arguments) == {"user_id": "u1"}
    assert _problems(recording) == []


def test_reused_ids_are_paired_by_position_and_reported() -> None:
    recording = _read([
        _assistant(("call_0", "find_user_id_by_email", {"email": "a@x"})), _tool("call_0", "u1"),
        _assistant(("call_0", "get_user_details", {"user_id": "u1"})), _tool("call_0", USER),
        _assistant(("x", "get_order_details", {"order_id": "#1"}), ("x", "get_order_details", {"order_id": "#2"})),
        _tool("x", '{"order_id": "#1"}'), _tool("x", '{"order_id": "#2"}'),
    ])
    calls = recording.conversations[0].calls()
    assert [c.result.content if c.result else None for c in calls] == ["u1", USER, '{"order_id": "#1"}',
                                                                     '{"order_id": "#2"}']
    assert len({c.call.id for c in calls}) == 4  # unique for the executor; the recorded id is kept
    assert [c.recorded_id for c in calls] == ["call_0", "call_0", "x", "x"]
    assert _problems(recording) == [
        "t.json: [2].tool_calls[0]: call id 'call_0' is used again (first at [0].tool_calls[0]); its result is "
        "paired by position",
        "t.json: [4].tool_calls[1]: call id 'x' is used again (first at [4].tool_calls[0]); its result is paired by "
        "position"]


def test_a_result_without_an_id_answers_the_earliest_waiting_call() -> None:
    recording = _read([_assistant(("", "find_user_id_by_email", {"email": "a@x"}),
                                  ("", "get_user_details", {"user_id": "u1"})),
                       _tool(None, "u1"), _tool(None, USER)])
    assert [p[2] for p in _pairs(recording)] == ["u1", USER]
    assert _problems(recording) == []


def test_calls_without_results_and_results_without_calls_are_reported_and_the_rest_read() -> None:
    recording = _read([
        _assistant(("a", "find_user_id_by_email", {"email": "a@x"})),
        _tool("zz", "nobody asked"),
        _tool("a", "u1"),
        _assistant(("b", "get_user_details", {"user_id": "u1"})),
        {"role": "narrator", "content": "?"},
        "not a message",
    ])
    assert _pairs(recording) == [("find_user_id_by_email", "[0].tool_calls[0]", "u1"),
                                 ("get_user_details", "[3].tool_calls[0]", None)]
    assert _problems(recording) == [
        "t.json: [1]: a tool result for call id 'zz', which no call waiting for a result has",
        "t.json: [3].tool_calls[0]: get_user_details: no result for this call in the recording (it is judged, but "
        "nothing is taken from it)",
        "t.json: [4]: unknown message role 'narrator'",
        "t.json: [5]: a message must be a JSON object, got str"]


def test_arguments_that_are_not_json_stay_on_the_call_as_its_parse_error() -> None:
    recording = _read([_assistant(("a", "get_user_details", '{"user_id": "u1"'),
                                  ("b", "get_user_details", '{"user_id": NaN}')),
                       _tool("a", "Error: bad"), _tool("b", "Error: bad")])
    broken, nan = recording.conversations[0].calls()
    assert broken.call.parse_error is not None and broken.call.parse_error.startswith("arguments are not valid JSON")
    assert nan.call.parse_error is not None and "NaN is not a JSON number" in nan.call.parse_error
    assert all(c.result is not None and c.result.outcome == "error" for c in (broken, nan))


@pytest.mark.parametrize("shape", ["list of lists", "list of objects", "traj objects", "jsonl messages",
                                   "jsonl conversations", "object"])
def test_every_openai_layout_is_read(shape: str) -> None:
    one = [_assistant(("a", "find_user_id_by_email", {"email": "a@x"})), _tool("a", "u1")]
    if shape == "list of lists":
        text = json.dumps([one, one])
    elif shape == "list of objects":
        text = json.dumps([{"messages": one}, {"messages": one}])
    elif shape == "traj objects":  # tau-bench's published results
        text = json.dumps([{"task_id": 0, "reward": 1.0, "traj": one}, {"task_id": 1, "reward": 0.0, "traj": one}])
    elif shape == "jsonl messages":
        text = "\n".join(json.dumps(m) for m in one + one)
    elif shape == "jsonl conversations":
        text = "\n".join(json.dumps(c) for c in (one, {"messages": one}))
    else:
        text = json.dumps({"messages": one + one})
    recording = parse_recording(text, "t")
    assert recording.format == ("tau-bench" if shape == "traj objects" else "messages")
    counts = [len(c.calls()) for c in recording.conversations]
    assert counts == ([2] if shape in ("jsonl messages", "object") else [1, 1])
    assert all(c.result is not None and c.result.content == "u1" for conv in recording.conversations
               for c in conv.calls())
    if shape == "jsonl messages":  # one id used twice in one conversation: still paired, and said
        assert [p.where.short() for p in recording.conversations[0].problems] == ["line 3 tool_calls[0]"]


def test_a_broken_line_of_json_lines_is_one_problem_and_the_other_lines_are_read() -> None:
    one = [_assistant(("a", "find_user_id_by_email", {"email": "a@x"})), _tool("a", "u1"),
           _assistant(("b", "get_user_details", {"user_id": "u1"})), _tool("b", USER)]
    lines = [json.dumps(m) for m in one]
    lines[1] = lines[1][:-5]
    lines.insert(2, '{"role": "tool", "tool_call_id": "q", "content": NaN}')
    recording = parse_recording("\n".join(lines), "t.jsonl")
    assert [p.at("t.jsonl") for p in recording.problems] == [
        "t.jsonl:2: not valid JSON (Expecting value at column 50) (line skipped)",
        "t.jsonl:3: NaN is not a JSON number (only finite numbers are allowed) (line skipped)"]
    assert _pairs(recording) == [("find_user_id_by_email", "line 1 tool_calls[0]", None),
                                 ("get_user_details", "line 4 tool_calls[0]", USER)]


@pytest.mark.parametrize(("text", "message"), [
    ("", "t.json is empty: no conversation to judge"),
    ('[{"role": "user", "con', "t.json: not valid JSON (Unterminated string starting at at line 1 column 19)"),
    ('{"a": 1}', "t.json: cannot tell what recording this is"),
    ("[1, 2]", "t.json: a list, but not of messages"),
    ("[]", "t.json: holds no conversation"),
    ("42", "t.json: holds no conversation"),
])
def test_unusable_input_is_one_error(text: str, message: str) -> None:
    with pytest.raises(RecordingError) as caught:
        parse_recording(text, "t.json")
    assert str(caught.value).startswith(message)


def test_a_tau2_results_file_is_one_conversation_per_simulation(tmp_path: Path) -> None:
    exchanges = [say("I want to cancel", "user"), X("find_user_id_by_email", {"email": "a@x"}, "u1"),
                 X("cancel_pending_order", {"order_id": "#1", "reason": "x"}, "Error: Invalid reason", True)]
    document = tau2_results("retail", [exchanges, exchanges[:2]])
    from_tau2(document, tmp_path / "r.json")  # the file is tau2-shaped: our tau2 importer reads it too
    # a MultiToolMessage and a phone action (a user message with tool calls) in the second simulation
    document["simulations"][1]["messages"].append({"role": "user", "content": None, "tool_calls": [
        {"id": "p1", "name": "toggle_roaming", "arguments": {}, "requestor": "user"}]})
    document["simulations"][1]["messages"].append({"role": "tool", "tool_messages": [
        {"id": "p1", "role": "tool", "content": "Roaming is ON", "requestor": "user", "error": False}]})
    path = tmp_path / "airline-gpt.json"
    path.write_text(json.dumps(document))
    recording = read_recording(path)
    assert (recording.format, recording.domain, recording.model) == ("tau2", "retail", "gpt-4.1")
    first, second = recording.conversations
    assert (first.label, first.termination) == ("simulations[0] (task 0, trial 0)", "user_stop")
    cancel = first.calls()[1]
    assert cancel.where.short() == "simulations[0].messages[3].tool_calls[0]"
    assert cancel.result is not None and cancel.result.outcome == "error"
    assert dict(cancel.call.arguments) == {"order_id": "#1", "reason": "x"}
    phone = second.calls()[-1]
    assert phone.call.requestor is Requestor.USER and phone.result is not None
    assert phone.result.where.short() == "simulations[1].messages[4].tool_messages[0]"
    assert second.turns[-1].role == "user"
    assert _problems(recording) == []


def test_non_finite_numbers_in_a_tau2_document_refuse_that_call_or_result_only() -> None:
    exchanges = [X("find_user_id_by_email", {"email": "a@x"}, "u1"),
                 X("get_order_details", {"order_id": "#1"}, '{"order_id": "#1", "total": NaN}'),
                 X("refuel_data", {"customer_id": "c", "line_id": "l", "gb_amount": float("nan")}, "ok")]
    document = tau2_results("telecom", [exchanges])
    recording = parse_recording(json.dumps(document), "r.json")  # json.dumps writes NaN, as a careless writer would
    found, order, refuel = recording.conversations[0].calls()
    assert found.result is not None and found.result.value == "u1"
    assert order.result is not None and order.result.outcome == "unreadable"
    assert refuel.call.hardened().parse_error == "arguments are not valid JSON: nan is not a finite number at gb_amount"
    assert _problems(recording) == [
        "r.json: simulations[0].messages[3]: get_order_details: the recorded result is not strict JSON: NaN is not a "
        "JSON number (only finite numbers are allowed)"]


def test_check_lines_are_calls_whose_results_come_from_the_database() -> None:
    text = "\n".join([json.dumps({"name": "find_user_id_by_email", "arguments": {"email": "a@x"}}),
                      "{broken", json.dumps({"name": "toggle_roaming", "arguments": {}, "requestor": "user"})])
    recording = parse_recording(text, "t.jsonl")
    assert (recording.format, recording.results_recorded) == ("trajectory", False)
    assert [(c.call.name, c.call.requestor, c.result) for c in recording.conversations[0].calls()] == [
        ("find_user_id_by_email", Requestor.ASSISTANT, None), ("toggle_roaming", Requestor.USER, None)]
    assert [p.at("t.jsonl") for p in recording.problems] == [
        "t.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes at column 2) (line skipped)"]


def test_a_session_trace_is_read_as_it_ran(tmp_path: Path) -> None:
    from console.cli.main import main

    folder = tmp_path / "s"
    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--out", str(folder)]) == 0
    trace = folder / "trace.jsonl"
    assert read_session_start(trace) is not None
    recording = read_recording(trace)
    assert (recording.format, recording.domain, recording.model) == ("trace", "retail", "scripted-demo")
    conversation = recording.conversations[0]
    writes = [c for c in conversation.calls() if c.call.name == "return_delivered_order_items"]
    assert [(c.result.outcome if c.result else None, c.call.arguments["payment_method_id"]) for c in writes] == [
        ("rejected", "credit_card_4821002"), ("ok", "gift_card_4821001")]  # the gate refused the first at the time
    assert conversation.turns[0] == conversation.turns[0].__class__(conversation.turns[0].where, "assistant",
                                                                     "Hi! How can I help you today?")
    assert conversation.termination == "user_stop" and _problems(recording) == []


def test_only_a_trace_looks_like_a_trace(tmp_path: Path) -> None:
    messages = tmp_path / "m.jsonl"
    messages.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    assert read_session_start(messages) is None
    assert read_session_start(tmp_path / "missing.jsonl") is None
    recording = read_recording(messages)
    assert recording.format == "messages" and recording.conversations[0].turns[0].text == "hi"



def test_the_task_trial_and_reward_a_benchmark_recorded_are_kept_per_conversation() -> None:
    exchanges = [say("hi", "user"), X("find_user_id_by_email", {"email": "a@x"}, "u1")]
    document = tau2_results("retail", [exchanges, exchanges, exchanges])
    document["simulations"][0]["reward_info"] = {"reward": 1.0, "info": None}
    document["simulations"][1]["reward_info"] = {"reward": float("nan")}  # no number: left out, never guessed
    document["simulations"][2]["trial"] = True  # a boolean is no trial number
    tau2 = parse_recording(json.dumps(document), "r.json")
    assert [(c.task_id, c.trial, c.reward) for c in tau2.conversations] == [("0", 0, 1.0), ("1", 0, None),
                                                                           ("2", None, None)]
    listed = [{"task_id": 7, "trial": 2, "reward": 0, "info": {}, "traj": tau2_messages(exchanges)},
              {"task_id": "x", "reward": "1", "traj": tau2_messages(exchanges)}]
    tau_bench = parse_recording(json.dumps(listed), "l.json")
    assert [(c.task_id, c.trial, c.reward) for c in tau_bench.conversations] == [("7", 2, 0.0), ("x", None, None)]


# -- tau-bench results lists, and documents that do not parse whole ----------------------------------------


def _tau_bench(*items: Any) -> str:
    return json.dumps(list(items))


def _item(task: Any, messages: list[Any], reward: Any = 1.0, trial: Any = 0) -> dict[str, Any]:
    return {"task_id": task, "reward": reward, "info": {"source": "user"}, "traj": messages, "trial": trial}


ONE = [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"},
       _assistant(("a", "find_user_id_by_email", {"email": "a@x"})), _tool("a", "u1")]


def test_a_tau_bench_list_is_its_own_format_with_each_task_trial_and_reward() -> None:
    from core.recorded.model import FORMAT_WORDS

    recording = parse_recording(_tau_bench(_item(3, ONE), _item(4, ONE, reward=0.0, trial=1)), "l.json")
    assert recording.format == "tau-bench" and FORMAT_WORDS["tau-bench"].startswith("a tau-bench results list")
    assert [(c.label, c.task_id, c.trial, c.reward) for c in recording.conversations] == [
        ("[0] (task 3, trial 0)", "3", 0, 1.0), ("[1] (task 4, trial 1)", "4", 1, 0.0)]
    assert _pairs(recording) == [("find_user_id_by_email", "[0].traj[2].tool_calls[0]", "u1")]
    assert _problems(recording) == []
    lines = "\n".join(json.dumps(_item(n, ONE)) for n in (5, 6))  # the same items as JSON lines
    assert [c.label for c in parse_recording(lines, "l.jsonl").conversations] == ["line 1 (task 5, trial 0)",
                                                                                 "line 2 (task 6, trial 0)"]


@pytest.mark.parametrize(("first", "message"), [
    (5, "a number, not a conversation: a list of messages, or an object with 'messages' or 'traj' (skipped)"),
    ({"task_id": 0, "traj": "oops"}, "its 'traj' is a string, not a list of messages (skipped)"),
    ({"task_id": 0, "traj": {"role": "user"}}, "its 'traj' is an object, not a list of messages (skipped)"),
    ({"task_id": 0, "reward": 1.0}, "an object without 'messages' or 'traj', not a conversation (skipped)"),
])
def test_a_broken_item_at_the_head_of_a_list_is_one_problem_and_the_rest_is_read(first: Any, message: str) -> None:
    recording = parse_recording(_tau_bench(first, _item(1, ONE), _item(2, ONE)), "l.json")
    assert recording.format == "tau-bench"
    assert [c.label for c in recording.conversations] == ["[1] (task 1, trial 0)", "[2] (task 2, trial 0)"]
    assert _problems(recording) == [f"l.json: [0]: {message}"]


def test_a_list_cut_short_is_read_up_to_the_item_it_ends_in() -> None:
    text = json.dumps([_item(0, ONE), _item(1, ONE), _item(2, ONE)], indent=1)
    cut = text[:text.index('"task_id": 2') + 40]  # a download that stopped inside the third conversation
    recording = parse_recording(cut, "l.json")
    assert [c.label for c in recording.conversations] == ["[0] (task 0, trial 0)", "[1] (task 1, trial 0)"]
    line = cut[:cut.rindex("{", 0, cut.index('"task_id": 2'))].count("\n") + 1
    assert _problems(recording) == [f"l.json:{line} [2]: the file ends inside this item (cut short?); skipped"]
    closed = text[:text.rindex("}") + 1]  # every item whole, the list never closed
    assert [p.message for p in parse_recording(closed, "l.json").problems] == [
        "the file ends before this list is closed (cut short?)"]


def test_a_tau2_file_cut_short_keeps_every_whole_simulation() -> None:
    exchanges = [say("hi", "user"), X("find_user_id_by_email", {"email": "a@x"}, "u1")]
    text = json.dumps(tau2_results("retail", [exchanges, exchanges, exchanges]))
    cut = text[:text.index('"id": "sim-2"') + 30]
    recording = parse_recording(cut, "r.json")
    assert (recording.format, recording.domain) == ("tau2", "retail")
    assert [c.label for c in recording.conversations] == ["simulations[0] (task 0, trial 0)",
                                                          "simulations[1] (task 1, trial 0)"]
    assert [p.at("r.json") for p in recording.problems] == [
        "r.json:1 simulations[2]: the file ends inside this item (cut short?); skipped"]


def test_one_conversation_cut_short_keeps_its_whole_messages() -> None:
    text = json.dumps([*ONE, _assistant(("b", "get_user_details", {"user_id": "u1"})), _tool("b", USER)])
    recording = parse_recording(text[:-30], "m.json")
    assert _pairs(recording) == [("find_user_id_by_email", "[2].tool_calls[0]", "u1"),
                                 ("get_user_details", "[4].tool_calls[0]", None)]
    assert _problems(recording) == [
        "m.json:1 [5]: the file ends inside this item (cut short?); skipped",
        "m.json: [4].tool_calls[0]: get_user_details: no result for this call in the recording (it is judged, but "
        "nothing is taken from it)"]


def test_an_item_nested_deeper_than_python_reads_is_skipped_and_the_rest_is_read() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    text = _tau_bench(_item(0, ONE), {"task_id": 1, "traj": "DEEP"}, _item(2, ONE)).replace('"DEEP"', deep)
    recording = parse_recording(text, "l.json")
    assert [c.label for c in recording.conversations] == ["[0] (task 0, trial 0)", "[2] (task 2, trial 0)"]
    assert _problems(recording) == ["l.json:1 [1]: nested deeper than Python can read; skipped"]
    with pytest.raises(RecordingError, match="nested deeper than Python can read"):
        parse_recording(deep, "d.json")  # nothing else to read


def test_content_that_is_no_text_is_a_problem_and_nothing_is_taken_from_it() -> None:
    messages = [{"role": "user", "content": float("nan")}, _assistant(("a", "get_user_details", {"user_id": "u1"})),
                {"role": "tool", "tool_call_id": "a", "content": {"user_id": "u1"}}]
    recording = parse_recording(_tau_bench(_item(0, messages)), "l.json")  # json.dumps writes the NaN
    call_ = recording.conversations[0].calls()[0]
    assert call_.result is not None and (call_.result.outcome, call_.result.value) == ("unreadable", None)
    assert recording.conversations[0].turns[0].text is None
    assert _problems(recording) == [
        "l.json: [0].traj[0]: the message's content is a number, not text (left out)",
        "l.json: [0].traj[2]: get_user_details: the recorded result is an object, not text: nothing is taken from it"]


def test_a_gzip_file_is_read_as_its_text_and_one_cut_short_as_far_as_it_goes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from core.recorded import formats

    items = [_item(n, [*ONE, {"role": "user", "content": f"conversation {n} of many"}]) for n in range(400)]
    data = gzip.compress(_tau_bench(*items).encode())
    whole = tmp_path / "run.json.gz"
    whole.write_bytes(data)
    recording = read_recording(whole)
    assert (recording.format, len(recording.conversations), _problems(recording)) == ("tau-bench", 400, [])
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[:len(data) // 2])
    partial = read_recording(cut)
    assert 0 < len(partial.conversations) < 400
    assert [p.message for p in partial.problems][0] == ("the compressed file ends early (a download cut short?): "
                                                        "what it holds is read")
    assert partial.problems[1].message == "the file ends inside this item (cut short?); skipped"
    monkeypatch.setattr(formats, "MAX_FILE_BYTES", len(data) + 1)  # a small file that inflates past the limit
    with pytest.raises(RecordingError, match="holds more than"):
        read_recording(whole)
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    with pytest.raises(RecordingError, match="gzip-compressed but cannot be inflated"):
        read_recording(tmp_path / "bad.gz")
