"""A token the console makes can be handed back on a command line as `--token T`, and a value that starts with
`-` gets a usage line that says how to give it. In-process parsers and `main`, nothing served."""

from __future__ import annotations

import argparse
import string

import pytest

from console.cli.main import build_parser, main
from console.cli.mcp_options import add_arguments as add_mcp_arguments
from console.cli.serve import choose_token
from console.runtime.operators import new_scrypt_token
from console.runtime.tokens import new_token
from tests.support.cli import one_error_line

URL_SAFE = set(string.ascii_letters + string.digits + "-_")
DRAWS = 3000  # token_urlsafe alone starts one token in 32 with '-': all 3000 clean by chance is about 1e-41


def test_a_made_token_never_starts_with_a_dash() -> None:
    tokens = [new_token() for _ in range(DRAWS)]
    assert len(set(tokens)) == DRAWS
    assert all(len(token) == 32 and set(token) <= URL_SAFE for token in tokens)
    assert not [token for token in tokens if token.startswith("-")]


def test_every_token_serve_and_mcp_make_parses_back_as_their_token_option() -> None:
    serve = build_parser()
    mcp = argparse.ArgumentParser(exit_on_error=False)
    add_mcp_arguments(mcp)
    for _ in range(DRAWS // 10):
        token, source = choose_token(None, None, no_token=False)
        assert source == "generated" and token is not None
        assert serve.parse_args(["serve", "--token", token]).token == token
        assert mcp.parse_args(["--domain", "retail", "--transport", "http", "--token", token]).token == token


def test_an_operators_scrypt_token_starts_with_its_selector_never_a_dash() -> None:
    assert not [token for token, _ in (new_scrypt_token() for _ in range(20)) if token.startswith("-")]


@pytest.mark.parametrize("command", [["mcp", "--domain", "retail", "--transport", "http"], ["serve"]])
def test_a_token_given_with_a_leading_dash_is_one_line_that_says_how(
        command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--token", "-v6wnIg9P6UT5gFoCZOwunvwjX9h60qw"])
    assert stopped.value.code == 2
    line = one_error_line(capsys.readouterr().err)
    assert "argument --token: expected one argument" in line
    assert "a value that starts with '-' is given as --token=VALUE" in line


def test_the_hint_is_only_for_a_missing_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--retries", "many"])
    assert stopped.value.code == 2
    assert "is given as" not in one_error_line(capsys.readouterr().err)
