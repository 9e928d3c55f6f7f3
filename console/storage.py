"""Where sessions live on disk: one folder per session under the user data dir, never in the package.

A session folder is never reused: a second run into the folder of a first one would delete its database
and interleave two sessions in one trace. And a start that fails (a bad `--db`, an unusable model
setting) leaves no folder behind: `claim_session_folder` removes what it made unless the caller says the
session started.
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


class StorageError(OSError):
    """A folder the sessions cannot be kept in: one line saying which and why (shown without traceback)."""


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
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        hint = " (check LEDGERAGENT_HOME)" if os.environ.get("LEDGERAGENT_HOME") else ""
        raise StorageError(f"cannot create {what} {path}: {_reason(exc)}{hint}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorageError(f"cannot write to {what} {path}: permission denied")


_latest: Path | None = None  # the last folder new_session_dir made in this process


def latest_session_dir() -> Path | None:
    """The last session folder this process made (console.tab files a console's crash log next to its trace)."""
    return _latest


def new_session_dir(domain: str, label: str | None = None, root: Path | None = None) -> Path:
    """A fresh folder, never one another process has: `mkdir` is the claim (`ledgeragent serve` starts one
    console per browser tab, and two tabs opened in the same second race for the same name)."""
    global _latest
    base = (root or data_root()) / "sessions"
    _make_dirs(base, "the sessions folder")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{domain}-{label or 'chat'}")
    n = 1
    while True:
        candidate = base / (f"{stamp}-{slug}" if n == 1 else f"{stamp}-{slug}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            n += 1
            continue
        except OSError as exc:
            raise StorageError(f"cannot create session folder {candidate}: {_reason(exc)}") from exc
        _latest = candidate
        return candidate


def claim_out_dir(path: Path) -> bool:
    """Make `path` (an operator's `--out`) this session's folder: created when missing, refused when it is a
    file or holds anything. Returns whether it was created here."""
    if path.exists() and not path.is_dir():
        raise StorageError(f"--out {path} is a file, not a folder")
    if path.is_dir():
        try:
            taken = any(path.iterdir())
        except OSError as exc:
            raise StorageError(f"cannot read --out folder {path}: {_reason(exc)}") from exc
        if taken:
            raise StorageError(f"--out {path} is not empty: a session folder is never reused (name a new or "
                               "empty folder)")
        if not os.access(path, os.W_OK | os.X_OK):
            raise StorageError(f"cannot write to --out folder {path}: permission denied")
        return False
    _make_dirs(path, "--out folder")
    return True


@dataclass
class SessionFolder:
    """The folder a CLI session writes to. Until `started()` is called, leaving the `with` block by an
    exception removes everything the session put there (and the folder itself when it was made here)."""

    path: Path
    created: bool
    _started: bool = False

    def started(self) -> None:
        self._started = True

    def _discard(self) -> None:
        if self.created:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        for child in list(self.path.iterdir()) if self.path.is_dir() else []:
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    child.unlink()


@contextlib.contextmanager
def claim_session_folder(out: str | None, domain: str, label: str) -> Iterator[SessionFolder]:
    """`--out` when given (see `claim_out_dir`), else a new folder under the data dir."""
    if out:
        path = Path(out)
        folder = SessionFolder(path, claim_out_dir(path))
    else:
        folder = SessionFolder(new_session_dir(domain, label), True)
    try:
        yield folder
    except BaseException:
        if not folder._started:
            folder._discard()
        raise
