"""Who the operators of a desk are: names, each with a token of its own, known to the server before anyone comes.

Why: at a desk every decision goes into the audit log under an operator's name, and "who decided" is only as
good as the way that name was established. A name a page states (`?operator=alice`) or a connection states
(`hello alice`) is anyone's to state. So `serve --supervise --operators alice,bob` (and `supervise --listen`)
make each operator a token of their own, print it once, and from then on an operator is whoever's token was
presented; `--operators-file` gives the names with only a hash of each token, so the server never holds them.

File format (`--operators-file`): one operator a line, `NAME HASH`; blank lines and `#` comments are skipped.
A HASH is `sha256:<hex>` (enough for a random token: nothing to guess) or
`scrypt:<n>:<r>:<p>:<salt hex>:<hex>` (for a secret a person chose); `python -m console.runtime.operators NAME…`
makes a token and its line for each name. Nothing here imports aiohttp or the desk.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# An operator's name lands on a command line, in the audit log and on every screen: nothing else is let through.
OPERATOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
DESK_TOKEN_ENV = "LEDGERAGENT_DESK_TOKEN"  # `supervise --connect`'s token, never on a command line
MIN_TOKEN_LENGTH = 16
MAX_TOKEN_LENGTH = 256
MAX_OPERATORS = 1000
MAX_FILE = 1024 * 1024  # bytes of an operators file
SCRYPT = {"n": 2**14, "r": 8, "p": 1}  # hashlib.scrypt's cost: about 16 MiB and a few tens of ms a check
SCRYPT_LIMITS = {"n": 2**20, "r": 32, "p": 16}  # a file asking for more is refused (it would stall every check)


class OperatorError(ValueError):
    """A bad operator name, list or file: the message is one line, for the command line."""


def check_name(name: str) -> str:
    """`name` if it is 1-64 letters, digits or `. _ @ -`, starting with a letter or digit; else OperatorError."""
    if not OPERATOR_NAME.fullmatch(name):
        raise OperatorError(f"operator name {name[:70]!r}: an operator name is 1-64 letters, digits or . _ @ -, "
                            "starting with a letter or digit")
    return name


def new_token() -> str:
    """A fresh token: 24 random bytes, URL-safe (as `serve`'s shared token)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str, scheme: str = "sha256") -> str:
    """What an operators file keeps of `token`: `sha256:…` or, with a random salt, `scrypt:…`."""
    data = token.encode("utf-8")
    if scheme == "sha256":
        return "sha256:" + hashlib.sha256(data).hexdigest()
    if scheme == "scrypt":
        salt = secrets.token_bytes(16)
        digest = hashlib.scrypt(data, salt=salt, dklen=32, maxmem=2**26, **SCRYPT)
        return f"scrypt:{SCRYPT['n']}:{SCRYPT['r']}:{SCRYPT['p']}:{salt.hex()}:{digest.hex()}"
    raise OperatorError(f"unknown hash scheme {scheme!r} (sha256 or scrypt)")


def _check_hash(stored: str) -> str:
    """`stored` if it is a hash `matches` can check; OperatorError (why) otherwise."""
    scheme, _, rest = stored.partition(":")
    if scheme == "sha256" and re.fullmatch(r"[0-9a-f]{64}", rest):
        return stored
    if scheme == "scrypt":
        parts = rest.split(":")
        if len(parts) == 5 and all(p.isdigit() for p in parts[:3]) and all(
                re.fullmatch(r"(?:[0-9a-f]{2}){8,64}", p) for p in parts[3:]):
            n, r, p = (int(v) for v in parts[:3])
            if n < 2 or n & (n - 1) or not 1 <= r <= SCRYPT_LIMITS["r"] or not 1 <= p <= SCRYPT_LIMITS["p"] \
                    or n > SCRYPT_LIMITS["n"]:
                raise OperatorError("a scrypt hash's n must be a power of 2 up to 2^20, r up to 32, p up to 16")
            return stored
    raise OperatorError("a hash is sha256:<64 hex digits> or scrypt:<n>:<r>:<p>:<salt hex>:<hash hex>")


def matches(token: str, stored: str) -> bool:
    """Whether `token` is the one `stored` (a checked hash) was made of; compared in constant time."""
    data = token.encode("utf-8")
    scheme, _, rest = stored.partition(":")
    if scheme == "sha256":
        return hmac.compare_digest(hashlib.sha256(data).hexdigest(), rest)
    n, r, p, salt, digest = rest.split(":")
    expected = bytes.fromhex(digest)
    made = hashlib.scrypt(data, salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected),
                          maxmem=2**31 - 1)
    return hmac.compare_digest(made, expected)


class Operators:
    """The operators a server knows: name -> the hash of their token. `identify(token)` says whose it is.

    A token that matched once is remembered by its SHA-256 (so a slow scrypt hash is checked once per
    operator, not on every request); a token that matched nothing is checked again each time.
    """

    def __init__(self, hashes: Mapping[str, str]) -> None:
        if not hashes:
            raise OperatorError("no operator given")
        self.hashes = {check_name(name): _check_hash(stored) for name, stored in hashes.items()}
        self._known: dict[str, str] = {}

    @classmethod
    def from_tokens(cls, tokens: Mapping[str, str]) -> Operators:
        return cls({name: hash_token(token) for name, token in tokens.items()})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.hashes)

    @property
    def slow(self) -> bool:
        """Some hash is scrypt: a check can take tens of milliseconds (run it off an event loop)."""
        return any(stored.startswith("scrypt:") for stored in self.hashes.values())

    def identify(self, token: str) -> str | None:
        """The operator whose token this is, or None. Every operator's hash is checked, whatever matched."""
        if not MIN_TOKEN_LENGTH <= len(token) <= MAX_TOKEN_LENGTH:
            return None
        key = hashlib.sha256(token.encode("utf-8")).hexdigest()
        known = self._known.get(key)
        if known is not None:
            return known
        found = [name for name, stored in self.hashes.items() if matches(token, stored)]
        if len(found) != 1:
            return None  # none, or two operators holding one token: nobody in particular
        self._known[key] = found[0]
        return found[0]

    def text(self) -> str:
        """The operators as an `--operators-file`."""
        return "".join(f"{name} {stored}\n" for name, stored in self.hashes.items())


def parse_names(text: str) -> list[str]:
    """`--operators alice,bob`: the names, each checked, none twice; OperatorError (one line) otherwise."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise OperatorError("--operators names no operator (give NAME,NAME)")
    return _unique(check_name(name) for name in names)


def _unique(names: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for name in names:
        if name in seen:
            raise OperatorError(f"operator {name!r} is named twice")
        seen.append(name)
    if len(seen) > MAX_OPERATORS:
        raise OperatorError(f"more than {MAX_OPERATORS} operators")
    return seen


def generate(names: Sequence[str]) -> tuple[Operators, dict[str, str]]:
    """A fresh token for each name: the Operators, and the tokens (to be shown once, then forgotten)."""
    tokens = {name: new_token() for name in names}
    return Operators.from_tokens(tokens), tokens


def load_file(path: Path) -> Operators:
    """An `--operators-file`: OperatorError (one line, with the line number) for anything off."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE + 1)
    except OSError as exc:
        raise OperatorError(f"cannot read the operators file {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE:
        raise OperatorError(f"operators file {path}: over {MAX_FILE // 1024} KiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise OperatorError(f"operators file {path}: not UTF-8 text") from None
    hashes: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise OperatorError("a line is NAME HASH")
            name, stored = check_name(parts[0]), _check_hash(parts[1])
            if name in hashes:
                raise OperatorError(f"operator {name!r} is named twice")
        except OperatorError as exc:
            raise OperatorError(f"operators file {path}, line {number}: {exc}") from None
        hashes[name] = stored
    if not hashes:
        raise OperatorError(f"operators file {path} names no operator")
    if len(hashes) > MAX_OPERATORS:
        raise OperatorError(f"operators file {path}: more than {MAX_OPERATORS} operators")
    return Operators(hashes)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m console.runtime.operators [--scrypt] NAME…`: a new token and its operators-file line for each name.

    The tokens go to stderr (give each to its operator), the lines to stdout (append them to the file)."""
    args = list(sys.argv[1:] if argv is None else argv)
    scheme = "scrypt" if "--scrypt" in args else "sha256"
    names = [arg for arg in args if arg != "--scrypt"]
    try:
        if not names:
            raise OperatorError("usage: python -m console.runtime.operators [--scrypt] NAME [NAME ...]")
        checked = _unique(check_name(name) for name in names)
    except OperatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name in checked:
        token = new_token()
        print(f"token for {name}: {token}", file=sys.stderr)
        print(f"{name} {hash_token(token, scheme)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
