"""The report: one rich table on the terminal, optionally the same rows as JSON."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from benchmarks.timing import Result, format_value

_STYLES = {"PASS": "bold green", "FAIL": "bold white on red", "INFO": "dim"}


def environment(data_label: str) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "database": data_label,
    }


def build_table(results: Sequence[Result], env: dict[str, Any]) -> Table:
    table = Table(
        title="LedgerAgent Console: speed figures",
        caption=(f"DB: {env['database']} · Python {env['python']} · {env['cpus']} CPU(s)\n"
                 "median / p95 (nearest rank) of n perf_counter_ns samples; PASS = median under target"),
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("#", justify="right", style="dim")
    table.add_column("figure", overflow="fold")
    table.add_column("target", justify="right")
    table.add_column("median", justify="right", style="bold")
    table.add_column("p95", justify="right")
    table.add_column("n", justify="right")
    table.add_column("result", justify="center")
    for number, result in enumerate(results, start=1):
        target = "—" if result.target_ns is None else f"< {format_value(result.target_ns, result.unit)}"
        table.add_row(str(number), Text(result.figure), target, format_value(result.median_ns, result.unit),
                      format_value(result.p95_ns, result.unit),
                      str(result.n), Text(result.status, style=_STYLES[result.status]))
    return table


def print_report(results: Sequence[Result], env: dict[str, Any], console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:  # piped or captured: do not squeeze the table into 80 columns
            console = Console(width=150)
    console.print(build_table(results, env))
    targeted = [r for r in results if r.target_ns is not None]
    failed = [r for r in targeted if r.status == "FAIL"]
    if failed:
        console.print(Text(f"FAIL: {len(failed)} of {len(targeted)} targets missed: "
                           + "; ".join(r.figure for r in failed), style="bold red"))
    else:
        console.print(Text(f"All {len(targeted)} targets met.", style="bold green"))


def write_json(path: Path, results: Sequence[Result], env: dict[str, Any]) -> None:
    payload = {"environment": env, "argv": sys.argv, "results": [r.to_json() for r in results]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
