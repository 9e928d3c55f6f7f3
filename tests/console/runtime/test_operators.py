"""Who the desk's operators are (`console.runtime.operators`): names checked, a token of each one's own, what an
`--operators-file` keeps of it (a hash), and whose a presented token is. Pure: no server, no socket."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from console.runtime.operators import (
    OperatorError,
    Operators,
    check_name,
    generate,
    hash_token,
    load_file,
    matches,
    parse_names,
)

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
