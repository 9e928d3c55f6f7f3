"""Layers go one way: core → domains → mock_backends → console. Proven at run time in a clean interpreter
(the static import graph cannot see imports done inside functions; a subprocess can)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def all_modules(package: str) -> list[str]:
    found = [package]
    for info in pkgutil.walk_packages([str(ROOT.joinpath(*package.split(".")))], prefix=f"{package}."):
        if ".tests" not in info.name and not info.name.endswith("__main__"):
            found.append(info.name)
    return found


def imported_after(modules: list[str]) -> set[str]:
    code = (
        "import sys, json\n"
        f"for m in {modules!r}: __import__(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    import json

    return set(json.loads(out.stdout))


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("core", {"textual", "console", "domains", "mock_backends", "rich"}),
        ("domains", {"textual", "console", "mock_backends"}),
        ("mock_backends", {"textual", "console"}),
    ],
)
def test_lower_layers_never_import_upward(package: str, forbidden: set[str]) -> None:
    loaded = imported_after(all_modules(package))
    leaked = sorted(m for m in loaded if m.split(".")[0] in forbidden)
    assert not leaked, f"{package} pulls in {leaked[:10]}"


# The console's headless parts: what runs a session, stores it, hosts a desk, serves MCP clients or runs and
# exports a compare run without a screen (`serve`'s host, `supervise --listen`, `ledgeragent mcp`, a compare
# export). They are imported where no terminal exists, so Textual (the screens' library) stays out of them.
HEADLESS = ["console.live", "console.storage", "console.compare_run", "console.compare_export",
            "console.recorded_report", "console.mcp_args", *all_modules("console.desk"), *all_modules("console.mcp")]


def test_the_consoles_headless_parts_never_import_textual() -> None:
    loaded = imported_after(HEADLESS)
    assert {"console.mcp.server", "console.desk.desk"} <= loaded  # the walk found the packages' modules
    leaked = sorted(m for m in loaded if m.split(".")[0] == "textual")
    assert not leaked, f"the headless console modules pull in {leaked[:10]}"
