"""`ledgeragent check FILE --as-recorded` in-process: every format from a real file, the output (per-write rows, the
summary table, `--json`), and bad input: one line per problem with its position, the rest judged, exit 1; an
unusable file one error line, exit 2; never a traceback.

Recordings are made of real results of the retail backend over the seed data (tests/support/recorded.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from console.cli.main import main
from mock_backends.registry import open_backend
from tests.support.cli import cli_home, one_error_line
from tests.support.recorded import (
    ANOTHER_ADDRESS,
    MIA,
    SWAP,
    SWAP_THEN_ADDRESS,
    Exchange,
    call,
    check_lines,
    openai_messages,
    record_on_seed,
    tau2_results,
    tau_bench_list,
)

JSON_KEYS = {"conversation", "where", "index", "name", "arguments", "kind", "verdict", "refusal", "category",
             "predicates", "crashed", "reason", "evidence", "customer", "recorded", "taken", "staled", "difference",
             "problem", "not_judged"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


def exchanges(tmp_path: Path, script: list[Exchange] = SWAP_THEN_ADDRESS) -> list[Exchange]:
    folder = tmp_path / f"recording-{len(list(tmp_path.glob('recording-*')))}"
    folder.mkdir()
    return asyncio.run(record_on_seed("retail", folder / "db.sqlite", script))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def rows(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_openai_messages_print_each_write_and_the_summary(home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(openai_messages(exchanges(tmp_path))))
    code, out, err = run(capsys, str(path), "--as-recorded")
    assert (code, err) == (0, "")
    assert f"{path}: OpenAI chat messages, 1 conversation(s), domain retail." in out
    assert "what the gate would have said" in out
    # no database: the reads the gate would make itself cannot be made, so neither write is judged
    assert "modify_pending_order_items  NOT JUDGED  ran" in out and "(stale: orders.#W4821002" in out
    assert '    not judged: needs a database read (pass --db): get_product_details(product_id="1000000002")' in out
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    # writes, ALLOW, needs a read, breaks a rule, BLOCK, not judged, problems
    assert total.split() == ["total", "2", "0", "0", "0", "0", "2", "0"]
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())  # no database, no folder


def test_json_is_one_object_per_write(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in openai_messages(exchanges(tmp_path))))
    code, out, err = run(capsys, str(path), "--as-recorded", "--json", "--domain", "retail")
    assert (code, err) == (0, "")
    found = rows(out)
    assert all(set(row) == JSON_KEYS for row in found)
    assert [(r["name"], r["verdict"], r["refusal"], r["category"], r["recorded"], r["where"]) for r in found] == [
        ("modify_pending_order_items", "REVISE", "needs_read", "not judged", "ok", f"{path}:9 tool_calls[0]"),
        ("modify_pending_order_address", "REVISE", "needs_read", "not judged", "ok", f"{path}:15 tool_calls[0]")]
    assert [r["not_judged"] for r in found] == [
        'needs a database read (pass --db): get_product_details(product_id="1000000002")',
        'needs a database read (pass --db): get_order_details(order_id="#W4821002")']
    assert "orders.#W4821002" in found[1]["evidence"] and found[0]["staled"]


def test_a_tau2_file_names_its_domain_and_each_simulation_is_a_row(home: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """docs/cli.md's example: the swap as recorded without reads, then recorded with them and the order re-read."""
    careful = [*MIA, call("get_product_details", product_id="1000000002"), SWAP,
               call("get_order_details", order_id="#W4821002"), *ANOTHER_ADDRESS]
    path = tmp_path / "retail-gpt.json"
    path.write_text(json.dumps(tau2_results("retail", [exchanges(tmp_path), exchanges(tmp_path, careful)]),
                               indent=2))
    code, out, err = run(capsys, str(path), "--as-recorded")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    at = lines.index("simulations[1].messages[17].tool_calls[0]  modify_pending_order_address  BLOCK  ran (stale: "
                     "orders.#W4821002)")
    assert lines[at + 1].startswith("    retail.items_modified_once: the items of order #W4821002 were already "
                                    "modified (orders.#W4821002.status is 'pending (item modified)')")
    assert lines[at + 2].startswith('    customer: the customer said "Yes, please." to "')  # beside the verdict
    assert lines[at + 3] == "    evidence: auth.user_id, orders.#W4821002, conversation.confirmation"
    assert [line.split() for line in lines[-4:]] == [
        "conversation writes ALLOW needs a read breaks a rule BLOCK not judged problems".split(),
        ["simulations[0]", "(task", "0,", "trial", "0)", "2", "0", "0", "0", "0", "2", "0"],
        ["simulations[1]", "(task", "1,", "trial", "0)", "2", "1", "0", "0", "1", "0", "0"],
        ["total", "4", "1", "0", "0", "1", "2", "0"]]
    code, _, err = run(capsys, str(path), "--as-recorded", "--domain", "airline")
    assert code == 2
    assert one_error_line(err) == f"error: {path} is a recording of the retail domain, not airline"


def test_a_session_trace_is_audited_from_its_own_results(home: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--domain", "retail", "--scenario", "refund-to-original-payment", "--out",
                 str(tmp_path / "s")]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, str(tmp_path / "s" / "trace.jsonl"), "--as-recorded", "--json")
    assert (code, err) == (0, "")
    assert [(r["category"], r["recorded"], r["taken"]) for r in rows(out)] == [
        ("breaks a rule", "not run", False), ("ALLOW", "ok", True)]
    code, out, _ = run(capsys, str(tmp_path / "s" / "trace.jsonl"), "--as-recorded", "--json", "--all")
    assert [r["kind"] for r in rows(out)] == ["read", "read", "read", "read", "write", "write", "read"]


def test_check_lines_run_on_the_seed_data_and_a_refused_write_still_takes_effect(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(check_lines(SWAP_THEN_ADDRESS))
    # the paper's gate, which asks for the reads instead of making them, so that the writes are refused
    code, out, err = run(capsys, str(path), "--as-recorded", "--json", "--evidence", "ask",
                         "--out", str(tmp_path / "as-recorded"))
    assert (code, err) == (0, "")
    assert [(r["category"], r["recorded"], r["taken"]) for r in rows(out)] == [
        ("needs a read", "database", True), ("needs a read", "database", True)]
    code, out, _ = run(capsys, str(path), "--json", "--evidence", "ask", "--out", str(tmp_path / "plain"))  # dropped
    assert [(r["verdict"], r["executed"]) for r in rows(out) if r["kind"] == "write"] == [("REVISE", False),
                                                                                          ("ALLOW", True)]


def test_with_db_each_result_that_differs_is_reported(home: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    messages = openai_messages(exchanges(tmp_path, [*MIA, SWAP]))
    order = json.loads(messages[7]["content"])
    order["status"] = "processed"
    messages[7]["content"] = json.dumps(order)  # what the agent saw is not what this database holds
    path = tmp_path / "m.json"
    path.write_text(json.dumps(messages))
    db = tmp_path / "start.sqlite"

    async def seed() -> None:
        backend = await open_backend("retail", db)
        await backend.close()

    asyncio.run(seed())
    code, out, err = run(capsys, str(path), "--as-recorded", "--db", str(db), "--out", str(tmp_path / "o"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    at = lines.index("[6].tool_calls[0]  get_order_details  read  ran")
    assert lines[at + 1] == '    differs from the database: status: recorded "processed", database "pending"'
    assert "every call re-executed on" in out
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    assert total.split() == ["total", "1", "0", "0", "0", "1", "0", "1", "0"]  # the processed order: BLOCK; 1 differs
    code, out, _ = run(capsys, str(path), "--as-recorded", "--db", str(db), "--json", "--out", str(tmp_path / "j"))
    differing = [r for r in rows(out) if r["difference"]]
    assert [(r["name"], r["kind"]) for r in differing] == [("get_order_details", "read")]


def test_bad_calls_and_lines_are_one_line_each_with_their_position_and_the_rest_is_judged(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messages = openai_messages(exchanges(tmp_path))
    messages[4]["tool_calls"][0]["id"] = "call_0"  # reused (real recordings do)
    messages[5]["tool_call_id"] = "call_0"
    messages.insert(6, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "teleport", "arguments": "{}"}},
        {"id": "s", "type": "function", "function": {"name": "get_order_details", "arguments": '{"order": "#1"}'}},
        {"id": "w", "type": "function", "function": {"name": "cancel_pending_order", "arguments": '{"order_id"'}}]})
    messages.insert(7, {"role": "tool", "tool_call_id": "t", "content": "Error: Tool 'teleport' not found."})
    messages.insert(8, {"role": "tool", "tool_call_id": "s", "content": "Error: missing order_id"})
    lines = [json.dumps(m) for m in messages]
    lines.insert(3, '{"role": "tool", "tool_call_id": "x", "content": 1e999}')
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, str(path), "--as-recorded", "--domain", "retail")
    assert code == 1
    assert err.splitlines() == [
        f"error: {path}:4: number 1e999 is out of range (only finite numbers are allowed) (line skipped)",
        f"error: {path}:6 tool_calls[0]: call id 'call_0' is used again (first at line 3 tool_calls[0]); its result "
        "is paired by position",
        f"error: {path}:8 tool_calls[2]: cancel_pending_order: no result for this call in the recording (it is "
        "judged, but nothing is taken from it)",
        f"error: {path}:8 tool_calls[0]: teleport: the retail domain has no such tool, so its calls are not judged "
        "(it may be a write; said once for the file)",
        f"error: {path}:8 tool_calls[1]: get_order_details: invalid arguments for get_order_details: missing "
        "required argument 'order_id'; unexpected argument 'order' (not judged)",
        f"error: {path}:8 tool_calls[2]: cancel_pending_order: arguments are not valid JSON (Expecting ':' "
        "delimiter at column 12) (not judged)"]
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    # both real writes as before (not judged without a database), and the write whose arguments are broken
    assert total.split() == ["total", "3", "0", "0", "0", "0", "3", "6"]


@pytest.mark.parametrize(("content", "message"), [
    ("", "{path} is empty: no conversation to judge"),
    ('[{"role": "user", "con', "{path}: not valid JSON (Unterminated string starting at at line 1 column 19)"),
    ('{"hello": "world"}', "{path}: cannot tell what recording this is: no line is a trace event ('type'), a check "
     "line ('name'), a chat message ('role') or a conversation"),
    ("[1, 2, 3]", "{path}: a list, but not of messages (objects with a 'role') nor of conversations (lists of "
     "messages, or objects with 'messages' or 'traj')"),
    ('[{"role": "user", "content": "hello"}]', "cannot tell the domain: the file holds no valid tool call; pass "
     "--domain"),
    ('{"info": {}, "tasks": [], "simulations": [{"task_id": "1", "ticks": []}]}', "{path}: no conversation could "
     "be read (1 problem(s), the first: {path}: simulations[0]: no 'messages' list (a full-duplex run keeps ticks "
     "instead; skipped))"),
])
def test_unusable_files_are_one_error_line_and_exit_2(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      content: str, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    code, out, err = run(capsys, str(path), "--as-recorded")
    assert code == 2 and out == ""
    assert one_error_line(err) == "error: " + message.format(path=path)


def test_a_missing_or_binary_file_is_refused(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope.json"), "--as-recorded")
    assert code == 2 and one_error_line(err) == f"error: no such recording: {tmp_path / 'nope.json'}"
    binary = tmp_path / "b.json"
    binary.write_bytes(b'[{"role": "user"\x00}]')
    code, _, err = run(capsys, str(binary), "--as-recorded")
    assert code == 2 and "is a binary file" in one_error_line(err)


def _break(messages: list[dict[str, Any]], kind: str) -> str:
    """The conversation's JSON lines with one problem of `kind` put in before its first write (messages[8])."""
    extra: list[dict[str, Any]] = []
    if kind == "unknown tool":
        extra = [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "t", "type": "function", "function": {"name": "teleport", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "t", "content": "Error: Tool 'teleport' not found."}]
    elif kind == "call without result":
        extra = [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "n", "type": "function", "function": {"name": "get_product_details",
                                                         "arguments": '{"product_id": "1000000002"}'}}]}]
    elif kind == "arguments that fail the schema":
        extra = [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "s", "type": "function", "function": {"name": "get_product_details",
                                                         "arguments": '{"product_id": 1000000002}'}}]},
                 {"role": "tool", "tool_call_id": "s", "content": "Error: product not found"}]
    elif kind == "broken JSON arguments":
        extra = [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "j", "type": "function", "function": {"name": "get_product_details",
                                                         "arguments": '{"product_id": "1000'}}]},
                 {"role": "tool", "tool_call_id": "j", "content": "Error: bad arguments"}]
    elif kind == "repeated call id":
        messages[6]["tool_calls"][0]["id"] = messages[7]["tool_call_id"] = "call_0"
    lines = [json.dumps(m) for m in [*messages[:8], *extra, *messages[8:]]]
    if kind == "broken JSON line":
        lines.insert(8, '{"role": "user", "content": "the rest got lost')
    return "\n".join(lines) + "\n"


BAD_INPUT = {
    "broken JSON line": ":9: not valid JSON (Unterminated string starting at column 29) (line skipped)",
    "unknown tool": ":9 tool_calls[0]: teleport: the retail domain has no such tool, so its calls are not judged (it "
                    "may be a write; said once for the file)",
    "call without result": ":9 tool_calls[0]: get_product_details: no result for this call in the recording (it "
                           "is judged, but nothing is taken from it)",
    "repeated call id": ":7 tool_calls[0]: call id 'call_0' is used again (first at line 3 tool_calls[0]); its "
                        "result is paired by position",
    "arguments that fail the schema": ":9 tool_calls[0]: get_product_details: invalid arguments for "
                                      "get_product_details: argument 'product_id' must be string, got integer "
                                      "1000000002 (not judged)",
    "broken JSON arguments": ":9 tool_calls[0]: get_product_details: arguments are not valid JSON (Unterminated "
                             "string starting at column 16) (not judged)",
}


@pytest.mark.parametrize("kind", list(BAD_INPUT))
def test_each_kind_of_bad_input_is_one_line_with_its_position_and_the_rest_is_judged(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_break(openai_messages(exchanges(tmp_path)), kind))
    code, out, err = run(capsys, str(path), "--as-recorded", "--json", "--domain", "retail")
    assert code == 1
    assert one_error_line(err) == f"error: {path}{BAD_INPUT[kind]}"
    assert [(r["name"], r["category"]) for r in rows(out)] == [
        ("modify_pending_order_items", "not judged"), ("modify_pending_order_address", "not judged")]


def test_hostile_values_in_a_tau2_file_never_reach_the_gate_or_the_output(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from core import strict_json

    document = tau2_results("retail", [exchanges(tmp_path)])
    simulation = document["simulations"][0]
    simulation["task_id"] = "t\udc80"
    swap = next(m for m in simulation["messages"] if m.get("tool_calls")
                and m["tool_calls"][0]["name"] == "modify_pending_order_items")
    swap["tool_calls"][0]["arguments"]["payment_method_id"] = float("inf")
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document))  # Infinity, and an escaped lone surrogate, as a careless writer makes them
    code, out, err = run(capsys, str(path), "--as-recorded", "--json")
    assert code == 1
    assert err.splitlines() == [f"error: {path}: simulations[0].messages[7].tool_calls[0]: modify_pending_order_items: "
                                "arguments are not valid JSON: inf is not a finite number at payment_method_id (not "
                                "judged)"]
    found = [strict_json.loads(line) for line in out.splitlines()]  # strict JSON out, whatever came in
    assert [(r["name"], r["verdict"], r["problem"] is not None) for r in found] == [
        ("modify_pending_order_items", None, True), ("modify_pending_order_address", "ALLOW", False)]
    # the swap could not be judged, so nothing of it is taken: the order it would have changed stays fresh
    assert found[0]["conversation"] == "simulations[0] (task t\\udc80, trial 0)" and found[0]["arguments"] == {}


def test_with_a_database_the_gate_reads_what_a_write_lacks_and_without_one_it_cannot(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(openai_messages(exchanges(tmp_path))))
    db = tmp_path / "start.sqlite"

    async def seed() -> None:
        backend = await open_backend("retail", db)
        await backend.close()

    asyncio.run(seed())
    code, out, err = run(capsys, str(path), "--as-recorded", "--json")  # no database: the paper's gate
    assert (code, err) == (0, "")
    assert [r["refusal"] for r in rows(out) if r["kind"] == "write"] == ["needs_read", "needs_read"]
    code, out, err = run(capsys, str(path), "--as-recorded", "--json", "--db", str(db), "--out", str(tmp_path / "a"))
    assert (code, err) == (0, "")
    assisted = [r for r in rows(out) if r["kind"] == "write"]
    assert "needs_read" not in [r["refusal"] for r in assisted]  # the gate re-read the stale order itself
    code, out, err = run(capsys, str(path), "--as-recorded", "--json", "--db", str(db), "--evidence", "ask",
                         "--out", str(tmp_path / "k"))
    assert [r["refusal"] for r in rows(out) if r["kind"] == "write"] == ["needs_read", "needs_read"]
    code, out, err = run(capsys, str(path), "--as-recorded", "--evidence", "assist")
    assert code == 2 and one_error_line(err).endswith(
        "--evidence assist with --as-recorded needs --db: the gate reads what a write lacks from a database, and "
        "the recording holds only the reads the agent made")


def _tau_bench_list(*conversations: list[Exchange]) -> str:
    return json.dumps(tau_bench_list(conversations))


def test_a_gzipped_tau_bench_list_says_which_writes_it_could_not_judge_and_why(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(_tau_bench_list(exchanges(tmp_path), exchanges(tmp_path, MIA)).encode()))
    code, out, err = run(capsys, str(path), "--as-recorded")
    assert (code, err) == (0, "")
    assert out.startswith(f"{path}: a tau-bench results list (task, trial, reward and OpenAI messages per "
                          "conversation), 2 conversation(s), domain retail.")
    lines = out.splitlines()
    assert "[0] (task 0, trial 0)" in lines
    at = lines.index("[0].traj[8].tool_calls[0]  modify_pending_order_items  NOT JUDGED  ran (stale: "
                     "orders.#W4821002)")
    assert lines[at + 1] == ('    not judged: needs a database read (pass --db): get_product_details(product_id='
                             '"1000000002")')
    code, out, _ = run(capsys, str(path), "--as-recorded", "--json")
    assert [(r["conversation"], r["category"], r["verdict"], r["not_judged"][:38]) for r in rows(out)] == [
        ("[0] (task 0, trial 0)", "not judged", "REVISE", "needs a database read (pass --db): get"),
        ("[0] (task 0, trial 0)", "not judged", "REVISE", "needs a database read (pass --db): get")]


def test_a_recording_cut_short_is_judged_up_to_the_cut_and_the_cut_is_one_line(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _tau_bench_list(exchanges(tmp_path), exchanges(tmp_path), exchanges(tmp_path))
    path = tmp_path / "cut.json"
    path.write_text(text[:text.index('"task_id": 2') + 60])
    code, out, err = run(capsys, str(path), "--as-recorded", "--json")
    assert code == 1
    assert one_error_line(err) == f"error: {path}:1 [2]: the file ends inside this item (cut short?); skipped"
    assert sorted({r["conversation"] for r in rows(out)}) == ["[0] (task 0, trial 0)", "[1] (task 1, trial 0)"]
