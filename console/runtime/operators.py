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

What a wrong token costs. A scrypt check is deliberately slow (tens of milliseconds of CPU and 16 MiB), so a
server that checks every scrypt hash for every token it is shown can be made to spend all its CPU on a flood
of wrong ones, and a real operator then waits seconds. So, as a careful auth layer does:

- a token made for a scrypt hash starts with its **selector** (`<8 hex digits>.`, the first 8 digits of that
  hash's salt: public, like the salt): it is checked against that hash alone, and a token whose selector
  names no hash costs no scrypt at all. A token without one (a secret a person chose, or made before
  selectors) is checked against every scrypt hash, as before;
- a token that matched is remembered by a keyed hash (HMAC with a key made per process), so an operator's
  later requests cost no scrypt; one that matched nothing is remembered too (the last `MAX_REFUSED`);
- `TokenChecks` (for the servers) runs at most `HASHING_AT_ONCE` scrypt checks at a time, refuses more than
  `HASHING_WAITING` waiting at once, and lets a client fail only `FAILURES` times, then one more each
  `REFILL_S` seconds: past either it raises `TooManyTries` (a 429 with `Retry-After`). A remembered token
  is never throttled.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import math
import re
import secrets
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from console.runtime.tokens import new_token

# An operator's name lands on a command line, in the audit log and on every screen: nothing else is let through.
OPERATOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
DESK_TOKEN_ENV = "LEDGERAGENT_DESK_TOKEN"  # `supervise --connect`'s token, never on a command line
MIN_TOKEN_LENGTH = 16
MAX_TOKEN_LENGTH = 256
MAX_OPERATORS = 1000
MAX_FILE = 1024 * 1024  # bytes of an operators file
SCRYPT = {"n": 2**14, "r": 8, "p": 1}  # hashlib.scrypt's cost: about 16 MiB and a few tens of ms a check
SCRYPT_LIMITS = {"n": 2**20, "r": 32, "p": 16}  # a file asking for more is refused (it would stall every check)
# A scrypt token's selector: the first 8 hex digits of its hash's salt, then a dot (see the module docstring).
SELECTOR = re.compile(r"([0-9a-f]{8})\.")
SELECTOR_DIGITS = 8
MAX_REFUSED = 4096  # wrong tokens remembered (by keyed hash): the same wrong token twice costs one check
FAILURES = 10  # wrong tokens a client may present before it is slowed down...
REFILL_S = 6.0  # ...then one more every this many seconds (10 a minute)
HASHING_AT_ONCE = 2  # scrypt checks running at once (the machine's cores are for the sessions)
HASHING_WAITING = 16  # scrypt checks waiting for one of those; more at once are refused (429) at once
MAX_CLIENTS = 10_000  # clients whose failures are counted; the longest-forgiven are forgotten first


class OperatorError(ValueError):
    """A bad operator name, list or file: the message is one line, for the command line."""


def check_name(name: str) -> str:
    """`name` if it is 1-64 letters, digits or `. _ @ -`, starting with a letter or digit; else OperatorError."""
    if not OPERATOR_NAME.fullmatch(name):
        raise OperatorError(f"operator name {name[:70]!r}: an operator name is 1-64 letters, digits or . _ @ -, "
                            "starting with a letter or digit")
    return name


def new_scrypt_token() -> tuple[str, str]:
    """A fresh token for a scrypt hash and that hash: the token starts with its selector (the salt's first
    8 hex digits and a dot), so a server checks it against this one hash only."""
    salt = secrets.token_bytes(16)
    token = f"{salt.hex()[:SELECTOR_DIGITS]}.{new_token()}"
    return token, hash_token(token, "scrypt", salt=salt)


def hash_token(token: str, scheme: str = "sha256", *, salt: bytes | None = None) -> str:
    """What an operators file keeps of `token`: `sha256:…` or, with a random salt (or `salt`), `scrypt:…`."""
    data = token.encode("utf-8")
    if scheme == "sha256":
        return "sha256:" + hashlib.sha256(data).hexdigest()
    if scheme == "scrypt":
        salt = secrets.token_bytes(16) if salt is None else salt
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

    Which hashes a token is checked against (`candidates`): every sha256 one (a microsecond each), and the
    scrypt one its selector names, or every scrypt one for a token without a selector. A token that matched
    is remembered by a keyed hash, so a slow hash is checked once per operator, not on every request; one
    that matched nothing is remembered too (the last MAX_REFUSED), so the same wrong token is not checked twice.
    """

    def __init__(self, hashes: Mapping[str, str]) -> None:
        if not hashes:
            raise OperatorError("no operator given")
        self.hashes = {check_name(name): _check_hash(stored) for name, stored in hashes.items()}
        self._cheap = tuple(name for name, stored in self.hashes.items() if not stored.startswith("scrypt:"))
        self._slow = tuple(name for name, stored in self.hashes.items() if stored.startswith("scrypt:"))
        self._by_selector: dict[str, list[str]] = {}
        for name in self._slow:
            salt = self.hashes[name].split(":")[4]
            self._by_selector.setdefault(salt[:SELECTOR_DIGITS], []).append(name)
        self._key = secrets.token_bytes(32)  # this process's: a remembered token's fingerprint means nothing elsewhere
        self._known: dict[bytes, str] = {}  # at most one entry per operator: only their token matches their hash
        self._refused: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()  # checks run in threads (TokenChecks): the two memories change under it

    @classmethod
    def from_tokens(cls, tokens: Mapping[str, str]) -> Operators:
        return cls({name: hash_token(token) for name, token in tokens.items()})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.hashes)

    @property
    def slow(self) -> bool:
        """Some hash is scrypt: a check can take tens of milliseconds (run it off an event loop)."""
        return bool(self._slow)

    def _fingerprint(self, token: str) -> bytes:
        return hmac.new(self._key, token.encode("utf-8", "surrogateescape"), hashlib.sha256).digest()

    def candidates(self, token: str) -> tuple[str, ...]:
        """The operators whose hash `token` is checked against: every sha256 one, and the scrypt one(s) its
        selector names (every scrypt one when it has none)."""
        found = SELECTOR.match(token)
        slow = tuple(self._by_selector.get(found.group(1), ())) if found else self._slow
        return self._cheap + slow

    def remembered(self, token: str) -> str | Literal[False] | None:
        """What is known of `token` without a check: the operator's name, False for a wrong token seen
        lately, None when it must be checked."""
        if not MIN_TOKEN_LENGTH <= len(token) <= MAX_TOKEN_LENGTH:
            return False
        key = self._fingerprint(token)
        known = self._known.get(key)
        if known is not None:
            return known
        return False if key in self._refused else None

    def cost(self, token: str) -> int:
        """How many scrypt checks `identify(token)` would run now: 0 for a remembered token."""
        if self.remembered(token) is not None:
            return 0
        return sum(1 for name in self.candidates(token) if self.hashes[name].startswith("scrypt:"))

    def identify(self, token: str) -> str | None:
        """The operator whose token this is, or None. Every candidate's hash is checked, whatever matched."""
        seen = self.remembered(token)
        if seen is not None:
            return seen if isinstance(seen, str) else None
        key = self._fingerprint(token)
        found = [name for name in self.candidates(token) if matches(token, self.hashes[name])]
        with self._lock:
            if len(found) != 1:  # none, or two operators holding one token: nobody in particular
                self._refused[key] = None
                while len(self._refused) > MAX_REFUSED:
                    self._refused.popitem(last=False)
                return None
            self._known[key] = found[0]
        return found[0]

    def text(self) -> str:
        """The operators as an `--operators-file`."""
        return "".join(f"{name} {stored}\n" for name, stored in self.hashes.items())


class TooManyTries(Exception):
    """A token not checked now: its client failed too often, or too many checks wait already. `retry_after`:
    seconds until a check would be taken (for a `Retry-After` header)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    @property
    def seconds(self) -> int:
        """`retry_after` as whole seconds, at least 1 (what `Retry-After` carries)."""
        return max(1, math.ceil(self.retry_after))


@dataclass
class _Budget:
    left: float
    at: float


class TokenChecks:
    """Who presents a token, at a bounded cost however many wrong ones arrive (the servers' way in).

    A remembered token (`Operators.remembered`) is answered at once and never throttled: an operator already
    known keeps working through a flood. Any other costs its client one try of `failures` (refilled one per
    `refill_s` seconds); a client with none left gets `TooManyTries` before anything is hashed. A check that
    needs scrypt runs in a thread, at most `at_once` at a time; with `waiting` checks queued already, the next
    is refused at once rather than queued (its client may try again in a second).
    """

    def __init__(self, operators: Operators, *, clock: Callable[[], float] = time.monotonic,
                 failures: int = FAILURES, refill_s: float = REFILL_S, at_once: int = HASHING_AT_ONCE,
                 waiting: int = HASHING_WAITING) -> None:
        self.operators = operators
        self.clock = clock
        self.failures = failures
        self.refill_s = refill_s
        self.waiting = waiting
        self._hashing = asyncio.Semaphore(at_once)
        self._queued = 0
        self._budgets: OrderedDict[str, _Budget] = OrderedDict()

    def _left(self, client: str) -> _Budget | None:
        """The client's tries left now (None: all of them, nothing is counted for it)."""
        budget = self._budgets.get(client)
        if budget is None:
            return None
        now = self.clock()
        budget.left = min(float(self.failures), budget.left + max(0.0, now - budget.at) / self.refill_s)
        budget.at = now
        if budget.left >= self.failures:
            del self._budgets[client]
            return None
        return budget

    def _spend(self, client: str) -> None:
        budget = self._left(client) or _Budget(float(self.failures), self.clock())
        budget.left -= 1
        self._budgets[client] = budget
        self._budgets.move_to_end(client)
        while len(self._budgets) > MAX_CLIENTS:
            self._budgets.popitem(last=False)

    def _refund(self, client: str) -> None:
        """A try spent on a token that turned out right is given back: only wrong tokens count."""
        budget = self._left(client)
        if budget is not None:
            budget.left = min(float(self.failures), budget.left + 1)

    async def identify(self, token: str, client: str) -> str | None:
        """The operator whose token this is, or None (a failure counted against `client`); TooManyTries when
        the client has no try left or the checks are busy."""
        operators = self.operators
        seen = operators.remembered(token)
        if isinstance(seen, str):
            return seen
        budget = self._left(client)
        if budget is not None and budget.left < 1:
            wait = (1 - budget.left) * self.refill_s
            raise TooManyTries(f"too many wrong tokens from {client or 'this client'}: try again in "
                               f"{math.ceil(wait)} s", wait)
        if seen is False:
            self._spend(client)
            return None
        if operators.cost(token) == 0:
            who = operators.identify(token)
            if who is None:
                self._spend(client)
            return who
        if self._queued >= self.waiting:
            raise TooManyTries("too many tokens are being checked at once: try again in a second", 1.0)
        self._spend(client)  # before the check: the client's other tokens, arriving meanwhile, see it spent
        self._queued += 1
        try:
            async with self._hashing:
                who = await asyncio.to_thread(operators.identify, token)
        finally:
            self._queued -= 1
        if who is not None:
            self._refund(client)
        return who


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
        token, stored = new_scrypt_token() if scheme == "scrypt" else (new_token(), "")
        print(f"token for {name}: {token}", file=sys.stderr)
        print(f"{name} {stored or hash_token(token)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
