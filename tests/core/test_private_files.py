"""`core.private_files`: folders 0700 and files 0600 whatever the umask, existing ones left as they are."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.private_files import append_text, close_to_others, make_dir, make_dirs, open_fd, sqlite_file, write_text


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture(params=[0o000, 0o022, 0o077, 0o277], ids=lambda m: f"umask {m:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    before = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(before)


def test_folders_are_0700_and_files_0600_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    deep = tmp_path / "a" / "b" / "c"
    assert make_dirs(deep) is True and make_dirs(deep) is False
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", deep)] == [0o700] * 3
    make_dir(deep / "one")
    with pytest.raises(FileExistsError):
        make_dir(deep / "one")  # the mkdir is the claim
    write_text(deep / "t.md", "text")
    with append_text(deep / "log") as out:
        out.write("line\n")
    os.close(open_fd(deep / "trace.jsonl", os.O_WRONLY | os.O_APPEND))
    sqlite_file(deep / "db.sqlite")
    db = sqlite3.connect(deep / "db.sqlite")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    made = sorted(p.name for p in deep.iterdir())
    assert {"db.sqlite", "db.sqlite-wal", "db.sqlite-shm"} <= set(made)
    assert {p.name: mode(p) for p in deep.iterdir()} == {name: 0o700 if name == "one" else 0o600 for name in made}
    db.close()


def test_what_exists_keeps_its_mode_but_the_data_folders_are_closed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o750)
    (shared / "audit.jsonl").write_text("")
    (shared / "audit.jsonl").chmod(0o640)
    make_dirs(shared)
    with append_text(shared / "audit.jsonl") as out:
        out.write("{}\n")
    assert mode(shared) == 0o750 and mode(shared / "audit.jsonl") == 0o640  # an operator's choice
    close_to_others(shared)
    assert mode(shared) == 0o700
    close_to_others(tmp_path / "missing")  # nothing to close: nothing happens
    close_to_others(shared / "audit.jsonl")  # not a folder: left alone
    assert mode(shared / "audit.jsonl") == 0o640


def test_a_file_in_the_way_is_the_error_mkdir_gives(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError):
        make_dirs(tmp_path / "file")
    with pytest.raises(NotADirectoryError):
        make_dirs(tmp_path / "file" / "below")
