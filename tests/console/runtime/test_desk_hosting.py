"""The headless desk (`supervise --listen`: what `serve --supervise` runs too) and the way in to one
(`supervise --connect`): a real child process serving a real socket, operators joining it, and bad paths
refused in one line with exit status 2."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli.errors import CliError
from console.runtime.desk.audit import read_audit
from console.runtime.desk.hosting import connect
from console.runtime.desk_specs import scenario_specs
from console.runtime.live import SupervisionMode
from tests.support.cli import one_error_line as one_line
from tests.support.desk_remote import SCENARIO, socket_folder, until

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def folder() -> Iterator[Path]:
    with socket_folder() as made:
        yield made


def hosting(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`ledgeragent supervise --listen PATH …` / `--connect PATH …` (args: "listen"/"connect", PATH, options)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"LEDGERAGENT_HOME": str(home)}
    which, path, *rest = args
    return subprocess.run([sys.executable, "-m", "console", "supervise", f"--{which}", path, *rest], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    return one_line(result.stderr)


async def listening(folder: Path, path: Path, *options: str) -> asyncio.subprocess.Process:
    """`supervise --listen PATH` on the retail scenario, its audit log at folder/audit.jsonl, as a child process."""
    env = os.environ | {"LEDGERAGENT_HOME": str(folder / "home")}
    argv = ["-m", "console", "supervise", "--listen", str(path), "--domain", "retail", "--mode", "approve writes",
            "--scenarios", SCENARIO, "--audit", str(folder / "audit.jsonl"), *options]
    return await asyncio.create_subprocess_exec(sys.executable, *argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)


async def test_a_headless_desk_runs_its_sessions_serves_operators_and_stops_on_sigterm(folder: Path) -> None:
    path = folder / "sock" / "desk.sock"
    child = await listening(folder, path, "--repeat", "2")
    try:
        assert child.stdout is not None and child.stderr is not None
        line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode()
        assert line == f"desk: 2 session(s) at {path}\n"
        said = (await asyncio.wait_for(child.stderr.readline(), 60)).decode()
        assert said == f"desk: audit log at {folder / 'audit.jsonl'}\n"
        alice = await connect(path, "alice")
        while not alice.snapshot().done:  # approve or accept every call until both sessions ended
            await until(alice, lambda: alice.snapshot().done or bool(alice.snapshot().items), "an item or the end")
            for item in alice.snapshot().items:
                decision = "approve" if item.verdict == "ALLOW" else "accept_verdict"
                await alice.decide(item.id, "alice", decision)
        assert {r.phase.value for r in alice.snapshot().rows} == {"ended"}
        await alice.close()
        bob = await connect(path, "bob")  # every session has ended: the desk still serves
        assert bob.snapshot().done and bob.snapshot().stats.decisions >= 2
        await bob.close()
        child.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(child.wait(), 60) == 0
        assert await child.stdout.read() == b""  # one line on stdout, ever
        assert not path.exists()
        assert {r["operator"] for r in read_audit(folder / "audit.jsonl").decisions} == {"alice"}
        assert len(list((folder / "home" / "sessions").glob("*/trace.jsonl"))) == 2
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()


async def test_a_headless_desk_with_operators_knows_each_by_their_token(folder: Path) -> None:
    """`supervise --listen --operators alice,bob`: each gets a token, said once on stderr; `--connect` as
    alice needs alice's token ($LEDGERAGENT_DESK_TOKEN); a name alone, or another's token, is refused."""
    path = folder / "sock" / "desk.sock"
    child = await listening(folder, path, "--operators", "alice,bob")
    try:
        assert child.stdout is not None and child.stderr is not None
        assert (await asyncio.wait_for(child.stdout.readline(), 60)).decode() == f"desk: 1 session(s) at {path}\n"
        tokens: dict[str, str] = {}
        while len(tokens) < 2:
            said = (await asyncio.wait_for(child.stderr.readline(), 60)).decode()
            found = re.match(r"desk: (\S+)'s token, shown this once: (\S+) \(they connect with "
                             r"LEDGERAGENT_DESK_TOKEN=<it> ledgeragent supervise --connect ", said)
            if found:
                tokens[found.group(1)] = found.group(2)
        with pytest.raises(CliError, match="this desk knows its operators"):
            await connect(path, "alice")
        with pytest.raises(CliError, match="this token is bob's, not alice's"):
            await connect(path, "alice", token=tokens["bob"])
        alice = await connect(path, "alice", token=tokens["alice"])
        await until(alice, lambda: bool(alice.snapshot().items), "an item")
        item = alice.snapshot().items[0]
        await alice.decide(item.id, "alice", "accept_verdict")
        await alice.close()
        refused = hosting("connect", str(path), "--operator", "alice", home=folder / "home")
        assert "this desk knows its operators: say hello with your token" in one_error_line(refused)
        child.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(child.wait(), 60) == 0
        assert [r["operator"] for r in read_audit(folder / "audit.jsonl").decisions] == ["alice"]
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()


def test_operators_are_only_for_a_served_desk(folder: Path) -> None:
    home = folder / "home"
    result = subprocess.run([sys.executable, "-m", "console", "supervise", "--operators", "alice", "--domain",
                             "retail"], cwd=ROOT, env=os.environ | {"LEDGERAGENT_HOME": str(home)},
                            capture_output=True, text=True, timeout=120)
    assert "--operators/--operators-file: only with --listen" in one_error_line(result)
    bad = hosting("listen", str(folder / "p" / "d.sock"), "--operators", "a b", home=home)
    assert "operator name 'a b'" in one_error_line(bad)


def test_listen_refuses_unusable_paths_in_one_line(folder: Path) -> None:
    home = folder / "home"
    shared = folder / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    assert "open to other users" in one_error_line(hosting("listen", str(shared / "desk.sock"), home=home))
    (folder / "file").write_text("x")
    assert f"cannot use folder {folder / 'file'}" in one_error_line(
        hosting("listen", str(folder / "file" / "desk.sock"), home=home))
    private = folder / "private"
    private.mkdir(mode=0o700)
    (private / "taken").write_text("x")
    assert "exists and is not a socket" in one_error_line(hosting("listen", str(private / "taken"), home=home))
    assert "too long" in one_error_line(hosting("listen", str(private / ("x" * 120)), home=home))
    assert "unknown scenario(s) for retail: nope" in one_error_line(
        hosting("listen", str(private / "d.sock"), "--domain", "retail", "--scenarios", "nope", home=home))
    assert "argument --mode: invalid choice: 'whenever'" in one_error_line(
        hosting("listen", str(private / "d.sock"), "--mode", "whenever", home=home))


def test_listen_is_headless_it_never_imports_the_desk_screens(folder: Path) -> None:
    """`supervise --listen` (what `serve --supervise` runs) builds its desk and gets as far as serving without
    Textual: a path too long for a socket fails at the bind, after the desk is made; nothing imported a screen."""
    script = ("import sys; from console.cli.main import main; "
              "code = main(['supervise', '--listen', sys.argv[1], '--domain', 'retail', '--scenarios', sys.argv[2]]); "
              "print(code, sorted(m for m in ('console.tui.desk_app', 'textual') if m in sys.modules))")
    env = os.environ | {"LEDGERAGENT_HOME": str(folder / "home")}
    done = subprocess.run([sys.executable, "-c", script, str(folder / ("x" * 120)), SCENARIO], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "too long" in one_line(done.stderr)
    assert done.stdout == "2 []\n"


def test_connect_refuses_a_path_with_no_desk_in_one_line(folder: Path) -> None:
    home = folder / "home"
    assert "no desk at" in one_error_line(hosting("connect", str(folder / "none.sock"), "--operator", "a", home=home))
    (folder / "plain").write_text("x")
    assert "is not a desk socket" in one_error_line(
        hosting("connect", str(folder / "plain"), "--operator", "a", home=home))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.fspath(folder / "stale.sock"))
    stale.close()
    assert "no desk is listening" in one_error_line(
        hosting("connect", str(folder / "stale.sock"), "--operator", "a", home=home))
    assert "operator name" in one_error_line(
        hosting("connect", str(folder / "stale.sock"), "--operator", " ", home=home))


async def test_connect_gives_a_cli_error_not_a_desk_refusal(folder: Path) -> None:
    with pytest.raises(CliError, match="no desk at"):
        await connect(folder / "none.sock", "alice")


def test_scenario_specs_take_all_of_a_domain_or_the_named_ones() -> None:
    every = scenario_specs("airline", "all", SupervisionMode.STEP)
    assert [s.scenario for s in every] == sorted(s.scenario or "" for s in every) and len(every) == 3
    assert {s.mode for s in every} == {SupervisionMode.STEP}
    named = scenario_specs("retail", f"{SCENARIO}, {SCENARIO}", SupervisionMode.APPROVE_WRITES, agent="fc")
    assert [(s.scenario, s.agent) for s in named] == [(SCENARIO, "fc")]  # each once: --repeat runs it again


def test_supervise_names_a_scenario_as_the_one_builder_does() -> None:
    """`--scenarios` strings go through console.runtime.task_sessions.scenario_specs: `domain/name` with `--domain all`,
    an ambiguous or unknown name refused in that builder's words."""
    picked = scenario_specs("all", "retail/other-customers-order,roaming-abroad", SupervisionMode.STEP, pace=0.5)
    assert [(s.domain, s.scenario, s.pace) for s in picked] == [("retail", "other-customers-order", 0.5),
                                                                ("telecom", "roaming-abroad", 0.5)]
    with pytest.raises(CliError, match=r"^unknown scenario\(s\) for any domain: airline/roaming-abroad$"):
        scenario_specs("all", "airline/roaming-abroad", SupervisionMode.STEP)
    with pytest.raises(CliError, match=r"^unknown scenario\(s\) for telecom: nope$"):
        scenario_specs("telecom", "roaming-abroad,nope", SupervisionMode.STEP)
