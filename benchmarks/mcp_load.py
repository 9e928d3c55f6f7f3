"""Runs inside a fresh interpreter for the `ledgeragent mcp` figures: the SDK clients, apart from the benchmark
process.

Why a process of its own: timed in the benchmark process, a round trip would also carry that process's own
pauses, its garbage collector walking whatever the figures before it left on the heap (the whole suite runs in
one process), which the server never sees. Here the heap is the clients' only; the objects that exist once
everything is imported are frozen (`gc.freeze`), so a collection walks what the clients make, not the modules.

`python -m benchmarks.mcp_load stdio ROUNDS WRITE_JSON`: one SDK client on a `python -m console mcp --domain
retail` child (this process's environment and working folder), logged in as the customer, then ROUNDS times a
read, the write WRITE_JSON (`[name, arguments]`) and a `log_message`, each timed; prints `{"reads": [...],
"writes": [...], "notes": [...]}` (ns) and exits.

`python -m benchmarks.mcp_load http URL FIRST COUNT TOTAL CALLS THINK_S`: sessions FIRST .. FIRST+COUNT-1 of
TOTAL, each one SDK client (its own httpx client, its own MCP session) making one read to open its session,
then, once told, CALLS reads THINK_S seconds apart, session n starting THINK_S * n / TOTAL seconds after the
word (so the TOTAL sessions of every load process together are staggered as independent agents are). It talks
to the benchmark on its stdin and stdout, one line each way at a time:
- prints `{"opened": COUNT}` once every session has made its first call, then waits for `go`;
- prints `{"times": [...]}` (each timed round trip, in ns) once every call was made, then waits for `close`,
  so no session ends (and no server work for its end runs) while another load process is still measuring;
- closes its sessions (each client deletes its MCP session) and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

USER = "mia_garcia_4821"
LOGIN = ("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"})
READ = ("get_user_details", {"user_id": USER})
NOTE = ("log_message", {"role": "customer", "text": "I moved, please update my address"})


@contextlib.asynccontextmanager
async def client(url: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(120.0)) as http, \
            Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as opened:
        yield opened


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def heard(word: str) -> None:
    line = await asyncio.to_thread(sys.stdin.readline)
    if line.strip() != word:
        raise SystemExit(f"mcp_load: expected {word!r}, got {line.strip()[:40]!r}")


async def stdio(rounds: int, write: tuple[str, dict[str, Any]]) -> None:
    import os

    from mcp import Client, StdioServerParameters

    samples: dict[str, list[int]] = {"reads": [], "writes": [], "notes": []}
    params = StdioServerParameters(command=sys.executable, args=["-m", "console", "mcp", "--domain", "retail"],
                                   env=dict(os.environ), cwd=os.getcwd())
    async with Client(params, read_timeout_seconds=120) as session:
        await session.call_tool(*LOGIN)
        for _ in range(rounds):
            for (name, arguments), into in ((READ, "reads"), (write, "writes"), (NOTE, "notes")):
                start = time.perf_counter_ns()
                result = await session.call_tool(name, arguments)
                samples[into].append(time.perf_counter_ns() - start)
                facts = result.structured_content or {}
                if result.is_error or facts.get("verdict") not in (None, "ALLOW"):
                    raise RuntimeError(f"mcp: {name} failed: {result.content}")
    say(samples)


async def http(url: str, first: int, count: int, total: int, calls: int, think: float) -> None:
    times: list[int] = []
    opened = asyncio.Event()
    go = asyncio.Event()
    done = asyncio.Event()
    ready = 0

    async def one(number: int) -> None:
        nonlocal ready
        async with client(url) as session:
            await session.call_tool(*READ)  # the server makes the session on its first call
            ready += 1
            if ready == count:
                opened.set()
            await go.wait()
            await asyncio.sleep(think * number / total)
            for _ in range(calls):
                start = time.perf_counter_ns()
                result = await session.call_tool(*READ)
                times.append(time.perf_counter_ns() - start)
                if result.is_error:
                    raise RuntimeError(f"mcp: {result.content}")
                await asyncio.sleep(think)
            await done.wait()

    tasks = [asyncio.create_task(one(first + n)) for n in range(count)]

    async def settled(event: asyncio.Event) -> None:
        waiter = asyncio.create_task(event.wait())
        await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done() and task.exception() is not None:
                waiter.cancel()
                raise task.exception()  # type: ignore[misc]
        await waiter

    await settled(opened)
    say({"opened": count})
    await heard("go")
    go.set()
    while len(times) < count * calls:
        await asyncio.sleep(0.05)
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    say({"times": times})
    await heard("close")
    done.set()
    await asyncio.gather(*tasks)


def main(argv: list[str]) -> int:
    import httpx2  # noqa: F401  (imported before the freeze: the clients' modules are not what is timed)
    import mcp.client.stdio  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401

    gc.collect()
    gc.freeze()
    match argv:
        case ["stdio", rounds, write]:
            name, arguments = json.loads(write)
            asyncio.run(stdio(int(rounds), (name, arguments)))
        case ["http", url, first, count, total, calls, think]:
            asyncio.run(http(url, int(first), int(count), int(total), int(calls), float(think)))
        case _:
            raise SystemExit("usage: python -m benchmarks.mcp_load stdio ROUNDS WRITE_JSON | "
                             "http URL FIRST COUNT TOTAL CALLS THINK_S")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
