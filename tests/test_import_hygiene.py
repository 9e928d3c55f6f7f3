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


# The console's groups go one way too: the session runtime below everything; the Textual apps, the web server
# and the MCP server on it, side by side (the MCP server shares the web server's network policy); the command
# line on top. Read statically (every import, deferred ones included, as tests/test_import_cycles.py does),
# so an import done inside a function cannot cross a line either.
GROUPS = ("runtime", "tui", "web", "mcp", "cli")
MAY_IMPORT = {
    "runtime": {"runtime"},
    "tui": {"runtime", "tui"},
    "web": {"runtime", "web"},
    "mcp": {"runtime", "mcp", "web.policy"},
    "cli": set(GROUPS) | {"web.policy"},
}
def _group(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "console" and parts[1] in GROUPS else None


def _console_imports(path: Path, *, top_level_only: bool) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("console.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("console"):
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def test_console_is_grouped_and_each_group_imports_only_below_it() -> None:
    console = ROOT / "console"
    loose = sorted(p.name for p in console.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"console/ holds only its groups, not modules: {loose}"
    assert {p.name for p in console.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(GROUPS)
    crossings = []
    for path in sorted(console.rglob("*.py")):
        group = _group(".".join(path.relative_to(ROOT).with_suffix("").parts))
        if group is None:
            continue
        for target in _console_imports(path, top_level_only=False):
            other = _group(target)
            allowed = MAY_IMPORT[group]
            if other is not None and other not in allowed and not any(
                    target.startswith(f"console.{name}") for name in allowed if "." in name):
                crossings.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not crossings, "\n".join(crossings)


def test_the_command_line_imports_the_apps_only_inside_their_sub_commands() -> None:
    """`ledgeragent` builds its whole parser (every sub-command registered) without loading an app: the Textual
    apps, the web server and the MCP server are imported by the sub-command that runs them."""
    code = ("import sys, json\nfrom console.cli.main import build_parser\nbuild_parser()\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    import json

    loaded = set(json.loads(out.stdout))
    apps = sorted(m for m in loaded if m.startswith(("console.tui", "console.web.server", "console.mcp"))
                  or m.split(".")[0] in ("textual", "textual_serve", "aiohttp", "mcp"))
    assert "console.cli.supervise_options" in loaded  # the parser was really built
    assert not apps, f"building the parser loads {apps[:10]}"


def test_each_group_says_what_it_holds_and_what_it_may_import() -> None:
    for group in GROUPS:
        doc = (ROOT / "console" / group / "__init__.py").read_text(encoding="utf-8")
        assert doc.startswith('"""') and "import" in doc, f"console/{group}/__init__.py says what it may import"


# The console's headless parts: what runs a session, stores it, hosts a desk, serves MCP clients or runs and
# exports a compare run without a screen (`serve`'s host, `supervise --listen`, `ledgeragent mcp`, a compare
# export). They are imported where no terminal exists, so Textual (the screens' library) stays out of them.
HEADLESS = [*all_modules("console.runtime"), *all_modules("console.mcp"), "console.cli.recorded_report",
            "console.cli.mcp", "console.cli.main"]


def test_the_consoles_headless_parts_never_import_textual() -> None:
    loaded = imported_after(HEADLESS)
    assert {"console.mcp.server", "console.runtime.desk.desk", "console.runtime.live"} <= loaded  # the walk found them
    leaked = sorted(m for m in loaded if m.split(".")[0] == "textual")
    assert not leaked, f"the headless console modules pull in {leaked[:10]}"
