"""One writer per folder: an exclusive OS file lock on a lock file inside it, held while a process writes there.

Why a kernel lock and not a marker file: a marker left by a process killed with kill -9 would keep the folder
locked forever, or need a stale-pid guess to break it. `flock` belongs to the open file; the kernel drops it
when the holder exits, however it exits. The holder's pid is written into the lock file only so the refusal
can name it.

Why the lock file is removed on release, and how that stays safe: a second process may have opened the old
file just before the holder unlinked it. It then either fails to lock (the holder still had it: refused, which
is right) or locks a file that no longer is the folder's lock file; `acquire` checks that the file it locked
is still the one at the path, and tries again otherwise.

Locks are per open file, not per process (flock, not POSIX record locks): a second `acquire` of the same
folder in the same process is refused too. The descriptor is close-on-exec, so a child started with exec
(`ledgeragent serve` starts one console per tab) never inherits it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType

LOCK_NAME = ".ledgeragent.lock"
_ATTEMPTS = 8  # re-opens when the lock file was replaced under us (a holder releasing at that moment)


class FolderBusy(OSError):
    """Another process holds the folder. `pid` is the holder's (None when it had not written it yet)."""

    def __init__(self, folder: Path, pid: int | None, what: str = "") -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(f"{what or folder} is in use by {holder} (another ledgeragent writes there; a folder "
                         "has one writer at a time)")
        self.folder = folder
        self.pid = pid


def _holder_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text else None
    return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        mine, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


class FolderLock:
    """A held lock on `folder`. `release()` (or leaving the `with` block) gives it back."""

    def __init__(self, folder: Path, fd: int) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, folder: Path, what: str = "") -> FolderLock:
        """Lock `folder` (which must exist) for this process, or raise FolderBusy naming the holder's pid;
        `what` names the folder in that message (e.g. "--out s1"). Never waits."""
        path = folder / LOCK_NAME
        for _ in range(_ATTEMPTS):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _holder_pid(fd)
                os.close(fd)
                raise FolderBusy(folder, pid, what) from None
            except BaseException:
                os.close(fd)
                raise
            if not _same_file(fd, path):  # its previous holder removed it between our open and our lock
                os.close(fd)
                continue
            with contextlib.suppress(OSError):  # a full disk: the lock holds all the same, the pid is unknown
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            return cls(folder, fd)
        raise FolderBusy(folder, None, what)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file (while still holding it) and drop the lock. Safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(fd, self.path):
                with contextlib.suppress(OSError):  # gone already, or a read-only folder: nothing to tidy
                    self.path.unlink()
        finally:
            os.close(fd)

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
