"""A docs block marked `needs=recordings` runs on the development recordings, decompressed for it into its scratch
folder (`$RECORDINGS`, with `$SHARED` beside them), and is skipped with the reason where the set is absent (CI);
a need nobody knows is refused, never silently run."""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.support.upstream as upstream
from tests.support.doc_blocks import Block, run_block, unmet_need

HERE = Path(__file__)


def block(info: str, code: str = "true\n") -> Block:
    return Block(HERE, 1, tuple(info.split()), code)


def test_needs_are_read_from_the_info_string() -> None:
    assert block("sh test needs=recordings expect=x").needs == ("recordings",)
    assert block("sh test expect=x").needs == ()
    assert unmet_need(block("sh test")) is None


def test_a_block_needing_absent_recordings_says_where_it_looked(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setattr(upstream, "RECORDINGS", tmp_path / "nowhere")
    reason = unmet_need(block("sh test needs=recordings"))
    assert reason is not None and reason.endswith(f"runs on the development recordings, not found at "
                                                  f"{tmp_path / 'nowhere'}")
    unknown = unmet_need(block("sh test needs=gpu"))
    assert unknown is not None and "unknown need 'gpu'" in unknown


@pytest.mark.shared
def test_the_recordings_are_decompressed_for_the_block(tmp_path: Path) -> None:
    names = upstream.recording_names()
    if not names:
        pytest.skip(f"recordings not found at {upstream.RECORDINGS}")
    needing = block("sh test needs=recordings",
                    'ls "$RECORDINGS"\ntest -f "$SHARED/tau2/airline/db.json" && echo shared\n')
    assert unmet_need(needing) is None
    result = run_block(needing, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [*(name.removesuffix(".gz") for name in names), "shared"]
    assert (tmp_path / "recordings").is_dir()  # in the block's scratch folder, gone with it
