"""The results viewer's headline counts trials as tau2's metrics and `eval regrade` do: a trial that never ran
(infrastructure error) or whose grade is incomplete (unscored) is in no denominator, and is named beside it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from console.tui.app import OperatorConsole
from console.tui.screens.results import ResultsScreen, row_key
from core.evaluation import load_results
from tests.support.pilot import wait_for_screen

NATIVE = Path(__file__).resolve().parents[2] / "evaluation" / "data" / "tau2_native_retail.json"
SIZE = (160, 45)


async def test_the_headline_of_a_tau2_file_says_6_of_8(console_app: Callable[..., OperatorConsole]) -> None:
    results = load_results(NATIVE)
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(results, NATIVE))
        screen = await wait_for_screen(pilot, app, ResultsScreen)
        summary = str(screen.query_one("#results-summary").render())
        assert "llm_agent: 6 of 8 scored trials passed (75.0%), left out: 2 not run (infrastructure error)" \
            in summary
        assert "6/10" not in summary
        table = screen.query_one("#results-table")
        rows = {str(table.get_row_at(n)[1]): str(table.get_row_at(n)[3])  # type: ignore[attr-defined]
                for n in range(table.row_count)}  # type: ignore[attr-defined]
        assert rows == {"r01": "2/2", "r02": "1/1", "r04": "1/2", "r05": "1/1", "r06": "1/2"}


async def test_an_unscored_trial_is_named_not_failed(console_app: Callable[..., OperatorConsole]) -> None:
    results = load_results(NATIVE)
    unscored = [t.model_copy(update={"unscored": ["NL_ASSERTION"], "success": False})
                if t.task_id == "r06" else t for t in results.trials]
    app = console_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(results.model_copy(update={"trials": unscored}), NATIVE))
        screen = await wait_for_screen(pilot, app, ResultsScreen)
        summary = str(screen.query_one("#results-summary").render())
        assert "5 of 6 scored trials passed (83.3%)" in summary and "2 unscored" in summary
        assert [screen._cell(t).plain for t in screen.rows[row_key("retail", "r06", "llm_agent")]] == ["? unscored"] * 2
