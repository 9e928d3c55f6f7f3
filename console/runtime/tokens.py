"""Access tokens the console makes: for `serve`, `mcp --transport http` and each operator.

A token is 24 random bytes, URL-safe base64, and never starts with `-`. A person hands a token back to a
command line (`--token T`, `--operators-file`, a shell variable), and there a value starting with `-` reads as
an option: one token in 32 would fail to start a server. Drawing again costs no strength worth counting (1/64 of
one character's values).
"""

from __future__ import annotations

import secrets

TOKEN_BYTES = 24


def new_token() -> str:
    """A fresh token: TOKEN_BYTES random bytes, URL-safe, never starting with `-`."""
    while True:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        if not token.startswith("-"):
            return token
