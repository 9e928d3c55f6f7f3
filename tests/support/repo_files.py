"""The repository's own files, as git lists them, for the hygiene tests that read every file.

Tracked files and new ones not yet committed (but not ignored ones), so a check sees a file before its first
commit; a file listed but deleted from the work tree is left out. Outside a git checkout (an unpacked sdist)
the list is unknown and the calling test skips rather than pass on nothing.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.support.upstream import REPO


def listed_files() -> list[str]:
    """Repository-relative names of every tracked or new, non-ignored file that exists, in git's order."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's file list is unknown")
    return [name for name in listed if (REPO / name).is_file()]


def numbered_lines(name: str) -> list[tuple[int, str]]:
    """(1-based line number, line) of one listed file, read as UTF-8 (undecodable bytes replaced)."""
    text = (REPO / name).read_text(encoding="utf-8", errors="replace")
    return list(enumerate(text.splitlines(), 1))

