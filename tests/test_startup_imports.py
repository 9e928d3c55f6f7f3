"""The console's cold start (its figure: < 1.5 s to the first frame) is mostly imports. The heavy
libraries only some commands need are imported where they are used, so opening the console never pays for
them: the OpenAI SDK (~1 s with aiohttp; only a real model needs it), jsonschema (the first argument
check) and the evaluation harness (`ledgeragent eval`, and a REVISE's suggested reads in the offline agent).
`ledgeragent` itself (console.cli.main) declares `eval`'s options without importing the harness.
Proven in a clean interpreter, as tests/test_import_hygiene.py does for the layers."""

from __future__ import annotations

import json
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
