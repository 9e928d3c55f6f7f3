"""Who the desk's operators are (`console.runtime.operators`): names checked, a token of each one's own, what an
`--operators-file` keeps of it (a hash), and whose a presented token is. Pure: no server, no socket."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from console.runtime.operators import (
    FAILURES,
    HASHING_AT_ONCE,
    REFILL_S,
    OperatorError,
    Operators,
    TokenChecks,
    TooManyTries,
    check_name,
    generate,
    hash_token,
    load_file,
    matches,
    parse_names,
)
from tests.support.desk_remote import Clock

ROOT = Path(__file__).resolve().parents[3]


def test_an_operator_name_is_checked() -> None:
    assert check_name("alice.b@desk-1") == "alice.b@desk-1"
    for bad in ("", "a b", "-alice", "a;rm", "x" * 65, "é", "a\n", "$(id)"):
        with pytest.raises(OperatorError, match="1-64 letters"):
            check_name(bad)
    assert parse_names(" alice, bob ,") == ["alice", "bob"]
    for bad, why in ((",", "names no operator"), ("alice,alice", "named twice"), ("alice,b c", "1-64 letters")):
        with pytest.raises(OperatorError, match=why):
            parse_names(bad)


def test_each_operator_is_known_by_their_own_token_and_nobody_by_another() -> None:
    operators, tokens = generate(["alice", "bob"])
    assert set(tokens) == {"alice", "bob"} and tokens["alice"] != tokens["bob"]
    assert all(len(token) >= 32 for token in tokens.values())
    assert operators.identify(tokens["alice"]) == "alice" and operators.identify(tokens["bob"]) == "bob"
    assert operators.identify(tokens["alice"]) == "alice"  # remembered, the same answer
    for wrong in ("", "alice", tokens["alice"][:-1], tokens["alice"] + "x", "x" * 300):
        assert operators.identify(wrong) is None
    assert tokens["alice"] not in operators.text() and tokens["bob"] not in operators.text()  # hashes only


def test_sha256_and_scrypt_hashes_check_the_token_they_were_made_of() -> None:
    token = "a-secret-someone-chose-1234"
    plain = hash_token(token)
    assert plain == "sha256:" + hashlib.sha256(token.encode()).hexdigest()
    salted = hash_token(token, "scrypt")
    assert salted.startswith("scrypt:16384:8:1:") and salted != hash_token(token, "scrypt")  # a fresh salt each
    for stored in (plain, salted):
        assert matches(token, stored) and not matches(token + "!", stored)
    operators = Operators({"carol": salted})
    assert operators.slow and operators.identify(token) == "carol" and operators.identify("x" * 20) is None


def test_an_operators_file_is_read_strictly(tmp_path: Path) -> None:
    operators, tokens = generate(["alice", "bob"])
    good = tmp_path / "operators"
    good.write_text("# the desk's operators\n\n" + operators.text(), encoding="utf-8")
    loaded = load_file(good)
    assert loaded.names == ("alice", "bob") and loaded.identify(tokens["bob"]) == "bob"
    digest = "sha256:" + "0" * 64
    for text, why in [
        ("alice\n", "line 1: a line is NAME HASH"),
        (f"alice {digest} extra\n", "line 1: a line is NAME HASH"),
        (f"# c\nb c {digest}\n", "line 2: a line is NAME HASH"),
        (f"-x {digest}\n", "line 1: operator name '-x'"),
        ("alice md5:abc\n", "line 1: a hash is sha256:"),
        ("alice sha256:XYZ\n", "line 1: a hash is sha256:"),
        (f"alice scrypt:1048577:8:1:{'00' * 16}:{'00' * 32}\n", "line 1: a scrypt hash's n must be"),
        (f"alice {digest}\nalice {digest}\n", "line 2: operator 'alice' is named twice"),
        ("# nobody\n", "names no operator"),
    ]:
        bad = tmp_path / "bad"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(OperatorError, match=why):
            load_file(bad)
    bad.write_bytes(b"alice sha256:\xe9\n")
    with pytest.raises(OperatorError, match="not UTF-8"):
        load_file(bad)
    with pytest.raises(OperatorError, match="cannot read the operators file"):
        load_file(tmp_path / "missing")


def test_the_helper_prints_tokens_on_stderr_and_lines_that_load(tmp_path: Path) -> None:
    made = subprocess.run([sys.executable, "-m", "console.runtime.operators", "alice", "bob"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    tokens = dict(line.removeprefix("token for ").split(": ") for line in made.stderr.splitlines())
    file = tmp_path / "operators"
    file.write_text(made.stdout, encoding="utf-8")
    assert load_file(file).identify(tokens["bob"]) == "bob"
    refused = subprocess.run([sys.executable, "-m", "console.runtime.operators", "a b"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr.startswith("error: operator name 'a b'")


def _scrypt_operators(tmp_path: Path, *names: str) -> tuple[Operators, dict[str, str]]:
    """Scrypt hashes made by the helper, as an operator would make them: the loaded file and the tokens."""
    made = subprocess.run([sys.executable, "-m", "console.runtime.operators", "--scrypt", *names], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    file = tmp_path / "operators"
    file.write_text(made.stdout, encoding="utf-8")
    tokens = dict(line.removeprefix("token for ").split(": ") for line in made.stderr.splitlines())
    return load_file(file), tokens


class CountedScrypt:
    """The real hashlib.scrypt, counted: how many runs, and the most running at once."""

    def __init__(self) -> None:
        self.real = hashlib.scrypt
        self.runs = 0
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> bytes:
        with self.lock:
            self.runs += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            return self.real(*args, **kwargs)
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def scrypt_runs(monkeypatch: pytest.MonkeyPatch) -> CountedScrypt:
    counted = CountedScrypt()
    monkeypatch.setattr(hashlib, "scrypt", counted)
    return counted


def test_a_wrong_token_costs_at_most_one_scrypt_check_and_a_known_one_none(
        tmp_path: Path, scrypt_runs: CountedScrypt) -> None:
    """Three operators with scrypt hashes: each wrong token used to cost three scrypt runs (every hash was
    checked), and a flood of them took the server's CPU. A token made by the helper starts with the selector
    of its own hash: a wrong one with a real selector costs one run, one with no real selector none, the same
    wrong token twice one, and the operator's own token one the first time and none after."""
    operators, tokens = _scrypt_operators(tmp_path, "alice", "bob", "carol")
    alice = tokens["alice"]
    assert alice.count(".") == 1 and len(alice.split(".")[0]) == 8  # <selector>.<secret>
    assert operators.identify(alice) == "alice" and scrypt_runs.runs == 1
    for _ in range(5):
        assert operators.identify(alice) == "alice"
    assert scrypt_runs.runs == 1  # remembered: no scrypt again
    scrypt_runs.runs = 0
    wrong = [alice[:-4] + f"{n:04d}" for n in range(10)]  # alice's selector, a wrong secret
    assert all(operators.identify(token) is None for token in wrong)
    assert scrypt_runs.runs == 10  # one each: only alice's hash, not bob's and carol's
    assert all(operators.identify(token) is None for token in wrong) and scrypt_runs.runs == 10  # remembered
    scrypt_runs.runs = 0
    assert all(operators.identify(f"{n:08x}.{'x' * 32}") is None for n in range(20))  # selectors of nobody
    assert scrypt_runs.runs == 0


def test_a_secret_without_a_selector_still_works_and_is_checked_against_each_scrypt_hash(
        scrypt_runs: CountedScrypt) -> None:
    """Operators files from before selectors (and secrets a person chose) keep working: such a token is checked
    against every scrypt hash, as it always was."""
    chosen = "a-secret-someone-chose-1234"
    operators = Operators({"carol": hash_token(chosen, "scrypt"), "dave": hash_token("another-secret-5678", "scrypt"),
                           "erin": hash_token("x" * 20)})
    scrypt_runs.runs = 0
    assert operators.identify(chosen) == "carol" and scrypt_runs.runs == 2
    assert operators.identify("x" * 20) == "erin"


async def test_a_flood_of_wrong_tokens_is_slowed_down_per_client_and_hashes_two_at_a_time(
        tmp_path: Path, scrypt_runs: CountedScrypt) -> None:
    """A client that presents wrong tokens gets FAILURES tries, then TooManyTries (the servers' 429) before
    anything is hashed, one more try every REFILL_S seconds; at most HASHING_AT_ONCE scrypt checks run at
    once, however many clients flood; an operator whose token is known is never slowed down."""
    clock = Clock()
    operators, tokens = _scrypt_operators(tmp_path, "alice", "bob", "carol")
    checks = TokenChecks(operators, clock=clock, waiting=100)  # the queue's own bound: the next test
    assert await checks.identify(tokens["bob"], "127.0.0.1") == "bob"
    scrypt_runs.runs = 0
    legacy = [secrets.token_urlsafe(24) for _ in range(3 * FAILURES)]  # no selector: every scrypt hash checked
    answers = await asyncio.gather(*(checks.identify(token, f"10.0.0.{n % 3}") for n, token in enumerate(legacy)),
                                   return_exceptions=True)
    assert scrypt_runs.most <= HASHING_AT_ONCE
    assert all(answer is None for answer in answers)  # three clients, each within its tries
    throttled = 0
    for _ in range(3 * FAILURES):
        try:
            assert await checks.identify(secrets.token_urlsafe(24), "10.0.0.1") is None
        except TooManyTries as exc:
            throttled += 1
            assert "too many wrong tokens from 10.0.0.1: try again in 6 s" == exc.message and exc.seconds == 6
    assert throttled == 3 * FAILURES  # its tries were used up: nothing more was even hashed
    runs = scrypt_runs.runs
    assert runs == 3 * FAILURES * 3  # the tries it had, three hashes each (no selector)
    assert await checks.identify(tokens["bob"], "10.0.0.1") == "bob"  # known: never throttled
    with pytest.raises(TooManyTries):
        await checks.identify(tokens["alice"], "10.0.0.1")  # not known yet: that client waits like any other
    clock.now += REFILL_S
    assert await checks.identify(tokens["alice"], "10.0.0.1") == "alice"  # one try back
    assert scrypt_runs.runs == runs + 1


async def test_too_many_checks_waiting_at_once_are_refused_at_once(tmp_path: Path,
                                                                  scrypt_runs: CountedScrypt) -> None:
    operators, _ = _scrypt_operators(tmp_path, "alice")
    checks = TokenChecks(operators, at_once=1, waiting=2)
    answers = await asyncio.gather(*(checks.identify(secrets.token_urlsafe(24), f"10.0.1.{n}") for n in range(6)),
                                   return_exceptions=True)
    busy = [a for a in answers if isinstance(a, TooManyTries)]
    assert len(busy) == 4 and all("too many tokens are being checked at once" in a.message for a in busy)
    assert scrypt_runs.runs == 2 and scrypt_runs.most == 1
