"""A console that is told to quit while it is still starting ends cleanly, whatever the moment.

In the browser a tab closed while its console starts makes textual-serve ask the app to exit during start-up.
The main screen's mount (its panes, its session) and Textual's own Header each used to look up widgets that
the teardown had already removed, so the console died with `NoMatches` (a crash log for a plain close)
instead of quitting. Each exit moment below, from "before the screen mounted" to "while the session opens",
must end the app without an exception, with return code 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import console.tui.app as console_app
from console.runtime.live import SessionSpec
from console.tui.app import OperatorConsole


def _quitting_after(seconds: float | None) -> type[OperatorConsole]:
    class QuitsEarly(OperatorConsole):
        CSS_PATH = str(Path(console_app.__file__).parent / "console.tcss")

        def on_mount(self) -> None:
            if seconds is None:
                self.exit()  # before the main screen has mounted its widgets
            else:
                self.set_timer(seconds, self.exit)

    return QuitsEarly


@pytest.mark.parametrize("seconds", [None, 0.001, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08])
async def test_quitting_during_start_up_ends_without_a_crash(tmp_path: Path, seconds: float | None) -> None:
    for attempt in range(3):  # each moment a few times: where the exit lands in start-up varies run to run
        app = _quitting_after(seconds)(SessionSpec(domain="retail", scenario="refund-to-original-payment"),
                                       root=tmp_path / f"sessions-{attempt}")
        async with app.run_test():
            pass  # run_test re-raises any exception the app died of
        assert app.return_code == 0


async def test_a_session_that_never_started_leaves_no_folder_and_one_that_ran_keeps_it(tmp_path: Path) -> None:
    spec = SessionSpec(domain="retail", scenario="refund-to-original-payment")
    unused = OperatorConsole(spec, root=tmp_path / "unused")
    async with unused.run_test() as pilot:
        await pilot.pause()
        folder = unused.main.live.folder if unused.main.live else None
        assert folder is not None and (folder / "db.sqlite").is_file()  # prepared, ready to run
    assert not folder.exists()  # quit before space: nothing happened, nothing kept
    assert list((tmp_path / "unused" / "sessions").iterdir()) == []

    ran = OperatorConsole(spec, root=tmp_path / "ran")
    async with ran.run_test() as pilot:
        await pilot.press("space")
        live = ran.main.live
        assert live is not None and live.folder is not None
        for _ in range(200):
            if (live.folder / "trace.jsonl").stat().st_size:
                break
            await pilot.pause(0.05)
        kept = live.folder
    assert (kept / "trace.jsonl").stat().st_size > 0 and (kept / "db.sqlite").is_file()
