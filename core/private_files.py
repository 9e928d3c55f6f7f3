"""Session data is private to its user: folders 0700, files 0600, whatever the process's umask.

Why: a trace holds the customers' names, emails and orders, a session database all of their records, an
audit log who decided what. Made with the defaults (`mkdir`, `open`, SQLite's own 0644), they are 0755 and
0644 under the usual umask, and any other local user reads them; under a umask of 000, 0777 and 0666. So,
as Jupyter does for its runtime files (a folder of mode 0700, files opened with mode 0600 and then
`chmod`-ed), every folder the sessions make is created 0700 and every file 0600, each set explicitly after it
is created (a umask can only take bits away from a mode, and a tighter one would leave a file we cannot use).

Only what is made here is set: a folder or file that already exists keeps its mode (an `--out` folder or an
`--audit` file an operator chose and shared on purpose), except the data folders named by `close_to_others`
(the data root, `sessions/`, `desks/`), closed when an earlier version left them open. SQLite gives a
database's `-wal`, `-shm` and `-journal` files the mode of the database file itself, so `sqlite_file` makes
that file 0600 before SQLite opens it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

FOLDER_MODE = 0o700
FILE_MODE = 0o600


def make_dirs(path: Path) -> bool:
    """`path` and each missing folder above it made with mode 0700 (set after each `mkdir`); existing folders
    are left as they are. True when `path` itself was made here. OSError as `Path.mkdir(parents=True,
    exist_ok=True)` raises it (FileExistsError for a file in the way, NotADirectoryError, PermissionError)."""
    missing: list[Path] = []
    here = path
    while not os.path.lexists(here):
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    made = False
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile: theirs, as it is
        os.chmod(folder, FOLDER_MODE)
        made = folder == path
    if not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a folder")
    return made


def make_dir(path: Path) -> None:
    """One new folder, mode 0700: FileExistsError when it exists (the `mkdir` is the claim)."""
    os.mkdir(path, FOLDER_MODE)
    os.chmod(path, FOLDER_MODE)


def close_to_others(path: Path) -> None:
    """An existing folder of this user's that others may enter becomes 0700 (a data folder an earlier version
    made 0755). Anything else (missing, a file, another user's) is left alone."""
    try:
        info = path.lstat()
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077:
        os.chmod(path, FOLDER_MODE)


def open_fd(path: Path, flags: int) -> int:
    """`os.open(path, flags)`, the file created if missing with mode 0600 (set on the descriptor, so whatever
    the umask); an existing file keeps its mode. `flags` are the access and behaviour flags (O_WRONLY,
    O_APPEND, O_TRUNC...): O_CREAT and O_CLOEXEC are added."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return os.open(path, (flags | os.O_CLOEXEC) & ~os.O_CREAT)
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_text(path: Path, text: str) -> None:
    """`path.write_text(text, encoding="utf-8")`, a new file being 0600."""
    with os.fdopen(open_fd(path, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as out:
        out.write(text)


def append_text(path: Path) -> IO[str]:
    """`path.open("a", encoding="utf-8")`, a new file being 0600."""
    return os.fdopen(open_fd(path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8")


def sqlite_file(path: Path) -> None:
    """Make a missing database file (empty: SQLite takes an empty file for a new database) with mode 0600
    before SQLite opens it; SQLite then gives its -wal, -shm and -journal files the same mode."""
    os.close(open_fd(path, os.O_RDWR))
