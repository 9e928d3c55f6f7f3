"""A full disk, said as such: "no space left on device while writing …/trace.jsonl", never a bug or a bad file.

Three errors mean the disk (or a limit on it) is the cause: ENOSPC (no space), EDQUOT (the user's quota) and
EFBIG (the file size limit, `ulimit -f`). A plain write says which directly. A library that hides
the errno (SQLite's "disk I/O error") can ask `disk_cause`, which looks at the disk itself: the file size limit
against the files being written, the free space, and a small probe write in the same folder; only when one of
them fails is the disk blamed, so a damaged file is still called damaged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from pathlib import Path

REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (the file size limit, ulimit -f)",
}
LOW_SPACE = 1 << 20  # below this much free space, a failed SQLite write is the disk's doing
PROBE_BYTES = 64 << 10


class DiskFull(OSError):
    """A write failed because the disk is full (or a quota or the file size limit was reached).

    Its parts are kept apart (`reason`, `path`, `detail`: what is known besides, e.g. what the trace still
    holds) so each place words it in its own sentence; `message` is the command line's."""

    def __init__(self, path: Path | str, code: int, detail: str = "") -> None:
        self.reason = REASONS.get(code, os.strerror(code))
        self.path = Path(path)
        self.detail = detail
        message = f"{self.reason} while writing {path}" + (f" ({detail})" if detail else "")
        super().__init__(code, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` (a write may take only part of it before the disk fills: the rest raises)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in REASONS


def _size_limit_reached(files: list[Path]) -> bool:
    soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY:
        return False
    for path in files:
        with contextlib.suppress(OSError):
            if path.stat().st_size + PROBE_BYTES > soft:
                return True
    return False


def disk_cause(folder: Path, files: list[Path] | None = None) -> int | None:
    """The errno that says the disk under `folder` cannot take more (None when it can): `files` at the file
    size limit, less than LOW_SPACE free, or a PROBE_BYTES write that fails. The probe is removed again."""
    if files and _size_limit_reached(files):
        return errno.EFBIG
    try:
        stats = os.statvfs(folder)
        if stats.f_bavail * stats.f_frsize < LOW_SPACE:
            return errno.ENOSPC
    except OSError:
        pass
    probe = folder / f".ledgeragent-space-{os.getpid()}-{id(folder)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        return exc.errno if exc.errno in REASONS else None
    try:
        os.write(fd, b"\0" * PROBE_BYTES)
    except OSError as exc:
        return exc.errno if exc.errno in REASONS else None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            probe.unlink()
    return None
