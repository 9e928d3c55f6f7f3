"""The console's cold start (its figure: < 1.5 s to the first frame) is mostly imports. The heavy
libraries only some commands need are imported where they are used, so opening the console never pays for
them: the OpenAI SDK (~1 s with aiohttp; only a real model needs it), jsonschema (the first argument
check) and the evaluation harness (`ledgeragent eval`, and a REVISE's suggested reads in the offline agent).
`ledgeragent` itself (console.cli.main) declares `eval`'s options without importing the harness.
Proven in a clean interpreter, as tests/test_import_hygiene.py does for the layers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEFERRED = ("openai", "aiohttp", "jsonschema", "core.evaluation")


def loaded_by(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def deferred_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == d or m.startswith(f"{d}.") for d in DEFERRED))


@pytest.mark.parametrize("statement", ["import console.tui.app", "import console.cli.main",
                                       "import core.scenario, core.session, core.tools"])
def test_opening_the_console_imports_no_deferred_library(statement: str) -> None:
    leaked = deferred_in(loaded_by(statement))
    assert not leaked, f"`{statement}` loads {leaked[:8]}"


def test_a_real_model_still_gets_the_sdk() -> None:
    loaded = loaded_by("from core.llm.openai_model import OpenAIChatModel\n"
                       "OpenAIChatModel('m', base_url='http://127.0.0.1:9/v1', api_key='k')")
    assert "openai" in loaded


def test_the_first_argument_check_gets_jsonschema() -> None:
    loaded = loaded_by("from core.tools import ToolSpec, ToolKind, validate_arguments, closed_object\n"
                       "spec = ToolSpec('t', 'd', closed_object({'x': {'type': 'string'}}), ToolKind.READ)\n"
                       "assert validate_arguments(spec, {'x': 1}) == [\"argument 'x' must be string, got integer 1\"]")
    assert "jsonschema" in loaded


# What `ledgeragent mcp` has imported when it writes its answer to `initialize` over stdio (a desktop client
# launches it per chat and waits for that answer): argparse, the domains' names and the handshake, nothing a
# later request needs. The SDK and its pydantic models, the domain, the session runtime, the console's
# libraries and any event loop come after it.
BEFORE_THE_HANDSHAKE = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "starlette", "uvicorn", "httpx2",
                        "textual", "rich", "tiktoken", "openai", "jsonschema", "sqlite3", "asyncio", "core",
                        "mock_backends", "console.runtime", "console.tui", "console.web", "domains.airline")
ANSWERED_WITH = """
import json, sys
import console.mcp.handshake as handshake
written = handshake._write_all
def noted(fd, data):
    written(fd, data)
    sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
    sys.stderr.flush()
handshake._write_all = noted
from console.cli.main import main
sys.exit(main(["mcp", "--domain", "airline"]))
"""


def test_ledgeragent_mcp_answers_initialize_before_importing_anything_heavy(tmp_path: Path) -> None:
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "probe", "version": "1"}}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGERAGENT_")} | {
        "LEDGERAGENT_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", ANSWERED_WITH], cwd=ROOT, input=json.dumps(initialize) + "\n",
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "ledgeragent-airline"
    [line] = [line for line in done.stderr.splitlines() if line.startswith("MODULES ")]
    loaded = set(json.loads(line.removeprefix("MODULES ")))
    assert "console.mcp.handshake" in loaded and "console.cli.mcp_options" in loaded
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(f"{h}.") for h in BEFORE_THE_HANDSHAKE))
    assert not heavy, f"loaded before the handshake was answered: {heavy[:12]}"
