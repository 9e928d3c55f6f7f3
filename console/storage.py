"""Where sessions live on disk: one folder per session under the user data dir, never in the package."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

import platformdirs


def data_root() -> Path:
    """`$LEDGERAGENT_HOME` when set (tests, CI, portable installs), else the platform's user data dir."""
    override = os.environ.get("LEDGERAGENT_HOME")
    return Path(override) if override else Path(platformdirs.user_data_dir("ledgeragent", appauthor=False))


_latest: Path | None = None  # the last folder new_session_dir made in this process


def latest_session_dir() -> Path | None:
    """The last session folder this process made (console.tab files a console's crash log next to its trace)."""
    return _latest


def new_session_dir(domain: str, label: str | None = None, root: Path | None = None) -> Path:
    """A fresh folder, never one another process has: `mkdir` is the claim (`ledgeragent serve` starts one
    console per browser tab, and two tabs opened in the same second race for the same name)."""
    global _latest
    base = (root or data_root()) / "sessions"
    base.mkdir(parents=True, exist_ok=True)
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
        _latest = candidate
        return candidate
