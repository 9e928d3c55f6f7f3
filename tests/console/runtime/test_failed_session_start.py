"""A console, desk, browser-tab or MCP session (a `LiveSession`) whose start fails leaves no folder behind, as
docs/cli.md says of every start: data that will not load, or a disk that cannot take the session's database
(tests/console/mcp_server/test_mcp_disk_full.py fills one), after its folder was made and locked."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.runtime.live import LiveSession, SessionSpec
from mock_backends.registry import BackendSourceError


async def test_a_start_whose_data_will_not_load_leaves_no_folder(tmp_path: Path) -> None:
    bad = tmp_path / "db.json"
    bad.write_text('{"users": "not a table"}', encoding="utf-8")
    home = tmp_path / "home"
    live = LiveSession(SessionSpec(domain="retail", scenario=None, seat="customer", db=bad), root=home)
    with pytest.raises(BackendSourceError):
        await live.open()
    assert live.backend is None
    assert list((home / "sessions").iterdir()) == []  # the folder, its lock file and its database copy: gone
    await live.close()  # and closing what never opened is still safe
