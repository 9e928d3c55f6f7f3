"""Bursts through the browser's websocket: `ledgeragent serve` (the real server, a real console process per tab;
`serve --supervise` for the desk), each burst sent as ONE ["stdin", "..."] frame, as the page's xterm.js sends
what it is given at once; the decisions the session recorded are what the review model says
(tests/support/review_model.py; the cases: tests/support/review_bursts.py)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from benchmarks.serve import ServedConsole
from tests.support.review_bursts import WEBSOCKET_CASES, BurstCase, Driven, drive
from tests.support.served_screen import ScreenTab


@pytest.fixture(autouse=True)
def no_token_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEDGERAGENT_TOKEN", raising=False)


def serve_argv(case: BurstCase) -> list[str]:
    if case.surface == "desk":
        return ["--supervise", "--domain", case.domain, "--scenarios", case.scenario, "--mode", case.mode,
                "--operator", "tester"]
    return ["--domain", case.domain, "--scenario", case.scenario, "--mode", case.mode, "--pace", "0",
            "--operator", "tester"]


@pytest.mark.parametrize("case", WEBSOCKET_CASES, ids=lambda c: c.name)
async def test_a_burst_in_one_websocket_frame_records_what_the_operator_chose(case: BurstCase,
                                                                            tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ServedConsole(*serve_argv(case), home=home) as server, server.log_on_failure():
        async with aiohttp.ClientSession() as http:
            tab = await ScreenTab.open_screen(http, server.url, *case.size, token=server.token)
            try:
                async def write(data: str) -> None:  # one frame, one write to the console's stdin
                    await tab.send_key(data)

                recorded, expected, _ = await drive(case, Driven(write, tab.screen, home))
                assert recorded == expected, (case.name, recorded, expected)
            finally:
                await tab.close()
