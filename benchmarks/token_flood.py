"""A real operator's request while wrong tokens flood `serve --supervise` with scrypt operator hashes.

A real server (`python -m console.cli.serve --supervise --operators-file F --port 0`, its desk host running one
scripted retail session) knows three operators by scrypt hashes made as `python -m console.runtime.operators
--scrypt` makes them. The operator signs in once (`GET /` with their token as `Authorization: Bearer`, as a
browser does with its cookie); then, for `seconds`, a flood sends `rate` wrong tokens a second (each a `GET /`
with a fresh random token and no selector, the costliest kind: before, each cost one scrypt check of every
operator's hash), while the operator repeats their request every `OPERATOR_EVERY_S` seconds and each round
trip is timed.

Two floods: from one address (127.0.0.1: after its tries it is answered 429 without any hashing), and from
`ADDRESSES` loopback addresses (127.0.1.N, each still within its tries: every wrong token is hashed, at most
two at a time, and those beyond the checks' queue are answered 429 at once). The flood's answers by status
are in the row's note.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from benchmarks.serve import ServedConsole
from benchmarks.timing import MS, Result, summarise

RATE = 100  # wrong tokens a second
SECONDS = 10.0
OPERATOR_EVERY_S = 0.1
ADDRESSES = 100
DESK = ("--supervise", "--mode", "approve writes", "--domain", "retail", "--scenarios", "refund-to-original-payment")


def _operators_file(folder: Path) -> tuple[Path, str]:
    """Three operators with scrypt hashes; the file and the first one's token."""
    from console.runtime.operators import new_scrypt_token

    lines, first = [], ""
    for name in ("alice", "bob", "carol"):
        token, stored = new_scrypt_token()
        first = first or token
        lines.append(f"{name} {stored}\n")
    path = folder / "operators"
    path.write_text("".join(lines), encoding="utf-8")
    return path, first


async def _flood(url: str, rate: int, seconds: float, addresses: int, answers: Counter[int]) -> None:
    """`rate` requests a second with wrong tokens, spread over `addresses` source addresses (127.0.1.N), each
    sent on schedule whether or not the earlier ones were answered."""
    sessions = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(
        local_addr=(f"127.0.1.{n + 1}", 0) if addresses > 1 else None, limit=0)) for n in range(addresses)]
    pending: set[asyncio.Task[None]] = set()

    async def one(http: aiohttp.ClientSession) -> None:
        try:
            async with http.get(f"{url}/", headers={"Authorization": f"Bearer {secrets.token_urlsafe(24)}"}) as page:
                answers[page.status] += 1
        except aiohttp.ClientError:
            answers[0] += 1

    try:
        start = time.monotonic()
        for n in range(int(rate * seconds)):
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(one(sessions[n % addresses]))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.wait(pending, timeout=30)
    finally:
        for task in pending:
            task.cancel()
        for http in sessions:
            await http.close()


async def _operator_during_flood(url: str, token: str, addresses: int, rate: int,
                                 seconds: float) -> tuple[list[int], Counter[int]]:
    answers: Counter[int] = Counter()
    samples: list[int] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{url}/", headers=headers) as page:  # signed in once, before the flood
            assert page.status == 200, page.status
        flood = asyncio.create_task(_flood(url, rate, seconds, addresses, answers))
        await asyncio.sleep(1.0)  # the flood under way
        while not flood.done():
            began = time.perf_counter_ns()
            async with http.get(f"{url}/", headers=headers) as page:
                await page.read()
                if page.status != 200:
                    raise RuntimeError(f"the operator's request was answered {page.status} during the flood")
            samples.append(time.perf_counter_ns() - began)
            await asyncio.sleep(OPERATOR_EVERY_S)
        await flood
    return samples, answers


def _note(answers: Counter[int]) -> str:
    said = ", ".join(f"{count} × {status or 'connection error'}" for status, count in sorted(answers.items()))
    return f"the flood was answered {said}"


def bench_token_flood(rate: int = RATE, seconds: float = SECONDS, addresses: int = ADDRESSES) -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory(prefix="ledgeragent-flood-") as scratch:
        folder = Path(scratch)
        known, token = _operators_file(folder)
        with ServedConsole(*DESK, "--operators-file", str(known), home=folder / "home") as server:
            server.wait_for_line(r"desk host pid \d+: desk: ", 60)
            for sources, key, where in ((1, "token_flood_one_address", "from one address"),
                                        (addresses, "token_flood_many_addresses", f"from {addresses} addresses")):
                samples, answers = asyncio.run(_operator_during_flood(server.url, token, sources, rate, seconds))
                results.append(summarise(
                    key, f"serve --supervise, 3 scrypt operators: a known operator's request during a flood of "
                    f"{rate} wrong tokens/s {where}", samples, target_ns=100 * MS, note=_note(answers)))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.token_flood`: just these rows."""
    from benchmarks.report import environment, print_report

    print_report(bench_token_flood(), environment("token_flood"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
