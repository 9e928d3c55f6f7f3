"""Writing an audit report's folder: `index.html`, `report.md` and `audit.json`, each whole or not at all.

A report never overwrites: the folder must be new or empty unless the caller says `force` (then only these
three files are replaced; nothing else in the folder is touched). Each file is written beside its final name
and renamed into place, so a run killed while writing leaves the previous file or the new one, never half.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from console.runtime.audit_html import Replay, render_html
from console.runtime.audit_markdown import render_markdown
from console.runtime.audit_replay import At, replay_command
from console.runtime.errors import CliError
from core.recorded.report import AuditReport, WriteFinding
from core.strict_json import printable

REPORT_FILES = ("index.html", "report.md", "audit.json")


def claim_report_folder(path: Path, *, force: bool) -> Path:
    """`path` ready for a report (created when missing); CliError when it is a file, or a folder that is not
    empty and `force` was not given."""
    if path.exists() and not path.is_dir():
        raise CliError(f"--out {path} is a file, not a folder")
    if path.is_dir() and not force and any(path.iterdir()):
        raise CliError(f"--out {path} is not empty: a report never overwrites one (name a new or empty folder, or "
                       "pass --force to replace its index.html, report.md and audit.json)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create --out {path}: {exc.strerror or exc}") from None
    return path


def replayer(report: AuditReport) -> Replay:
    """Each finding's console command, from its file and the database its domain was audited with."""

    def replay(finding: WriteFinding) -> str:
        source = report.files[finding.at.file]
        return replay_command(source.path, source.database, At(finding.at.conversation, finding.call))

    return replay


def _write(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def write_report(folder: Path, report: AuditReport) -> list[Path]:
    """The three files of the report in `folder` (claimed before); their paths."""
    replay = replayer(report)
    texts = {
        "index.html": render_html(report, replay),
        "report.md": render_markdown(report, replay),
        "audit.json": printable(json.dumps(report.to_json(replay), ensure_ascii=False, indent=1,
                                           allow_nan=False)) + "\n",
    }
    written = []
    for name in REPORT_FILES:
        target = folder / name
        try:
            _write(target, printable(texts[name]))
        except OSError as exc:
            raise CliError(f"cannot write {target}: {exc.strerror or exc}") from None
        written.append(target)
    return written

