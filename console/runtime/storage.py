"""Where sessions live on disk: one folder per session under the user data dir, never in the package.

A session folder is never reused: a second run into the folder of a first one would delete its database
and interleave two sessions in one trace. And a start that fails (a bad `--db`, an unusable model
setting) leaves no folder behind: `claim_session_folder` removes what it made unless the caller says the
session started.

One writer per folder: a session holds an OS lock on its folder (`core.folder_lock`) from the moment it
claims it until it is done, so a second process on the same `--out` is refused naming the holder's pid, even
when both start in the same instant and both found the folder empty; and the cleanup of a failed start only
ever runs while the lock is held, so it never deletes what another process is writing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import platformdirs

from core.folder_lock import LOCK_NAME, FolderBusy, FolderLock
from core.private_files import close_to_others, make_dir, make_dirs


class StorageError(OSError):
    """A folder the sessions cannot be kept in: one line saying which and why (shown without traceback)."""


class FolderInUse(StorageError):
    """The folder is another process's session folder right now (`pid`: the holder, when known)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


def data_root() -> Path:
    """`$LEDGERAGENT_HOME` when set (tests, CI, portable installs), else the platform's user data dir."""
    override = os.environ.get("LEDGERAGENT_HOME")
    return Path(override) if override else Path(platformdirs.user_data_dir("ledgeragent", appauthor=False))


def _reason(exc: OSError) -> str:
    if isinstance(exc, NotADirectoryError | FileExistsError):
        return "a file is in the way"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or type(exc).__name__


def _make_dirs(path: Path, what: str) -> None:
    """`path` and the folders above it, each made 0700 (`core.private_files`: session data is its user's)."""
    try:
        make_dirs(path)
    except OSError as exc:
        hint = " (check LEDGERAGENT_HOME)" if os.environ.get("LEDGERAGENT_HOME") else ""
        raise StorageError(f"cannot create {what} {path}: {_reason(exc)}{hint}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot write to {what} {path}: permission denied")


_latest: Path | None = None  # the last folder new_session_folder made in this process


def latest_session_dir() -> Path | None:
    """The last session folder this process made (console.cli.tab files a console's crash log next to its trace)."""
    return _latest


def _lock(path: Path, what: str) -> FolderLock:
    try:
        return FolderLock.acquire(path, what)
    except FolderBusy as exc:
        raise FolderInUse(str(exc), exc.pid) from exc
    except OSError as exc:
        raise StorageError(f"cannot lock {what} {path}: {_reason(exc)}") from exc


@dataclass
class SessionFolder:
    """A session folder this process holds (its lock is taken), until `release()`.

    `discard()` removes everything the session put there (and the folder itself when it was made here): how a
    start that failed leaves nothing behind. It runs only while the lock is held."""

    path: Path
    created: bool
    lock: FolderLock
    _started: bool = False

    def started(self) -> None:
        self._started = True

    def discard(self) -> None:
        if not self.lock.held:
            raise RuntimeError(f"{self.path} is no longer held: nothing may be deleted from it")
        if self.created:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        for child in list(self.path.iterdir()) if self.path.is_dir() else []:
            if child.name == LOCK_NAME:
                continue  # removed by release(), which still holds it
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    child.unlink()

    def release(self) -> None:
        self.lock.release()


def new_session_folder(domain: str, label: str | None = None, root: Path | None = None) -> SessionFolder:
    """A fresh folder, never one another process has: `mkdir` is the claim (`ledgeragent serve` starts one
    console per browser tab, and two tabs opened in the same second race for the same name), and the lock is
    taken at once (a name another process locked between our mkdir and our lock is left to it)."""
    global _latest
    home = root or data_root()
    base = home / "sessions"
    _make_dirs(base, "the sessions folder")
    for folder in (home, base):  # made 0755 by an earlier version: nobody else's to enter
        close_to_others(folder)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{domain}-{label or 'chat'}")
    n = 1
    while True:
        candidate = base / (f"{stamp}-{slug}" if n == 1 else f"{stamp}-{slug}-{n}")
        n += 1
        try:
            make_dir(candidate)  # 0700, whatever the umask
        except FileExistsError:
            continue
        except OSError as exc:
            raise StorageError(f"cannot create session folder {candidate}: {_reason(exc)}") from exc
        try:
            lock = _lock(candidate, "session folder")
        except FolderInUse:
            continue
        _latest = candidate
        return SessionFolder(candidate, True, lock)


def claim_out_dir(path: Path) -> SessionFolder:
    """Make `path` (an operator's `--out`) this session's folder: created when missing, locked, and refused
    when it is a file, holds anything, or is another process's session folder right now."""
    what = f"--out {path}"
    if path.exists() and not path.is_dir():
        raise StorageError(f"{what} is a file, not a folder")
    created = not path.is_dir()
    if created:
        _make_dirs(path, "--out folder")
    elif not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot write to --out folder {path}: permission denied")
    lock = _lock(path, what)  # before looking inside: two claims that both found it empty cannot both win
    try:
        try:
            taken = any(child.name != LOCK_NAME for child in path.iterdir())
        except OSError as exc:
            raise StorageError(f"cannot read --out folder {path}: {_reason(exc)}") from exc
        if taken:
            raise StorageError(f"{what} is not empty: a session folder is never reused (name a new or empty "
                               "folder)")
    except BaseException:
        lock.release()
        raise
    return SessionFolder(path, created, lock)


@contextlib.contextmanager
def claim_session_folder(out: str | None, domain: str, label: str) -> Iterator[SessionFolder]:
    """`--out` when given (see `claim_out_dir`), else a new folder under the data dir; held (locked) until the
    `with` block ends. Leaving it by an exception before `started()` discards what the session put there."""
    folder = claim_out_dir(Path(out)) if out else new_session_folder(domain, label)
    try:
        yield folder
    except BaseException:
        if not folder._started:
            folder.discard()
        raise
    finally:
        folder.release()
