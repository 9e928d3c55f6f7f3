"""Helpers for desk-over-a-socket tests: a short private folder for the socket, an injectable clock, a desk
served on a real Unix socket with real sessions, and waiting on a RemoteDesk's pushes (never a fixed sleep)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from console.runtime.desk.desk import Desk
from console.runtime.desk.remote import DeskHost, RemoteDesk
from console.runtime.live import SessionSpec, SupervisionMode
from console.runtime.operators import Operators, generate

SCENARIO = "refund-to-original-payment"  # retail: its first write is a REVISE the operator must weigh


class Clock:
    """A monotonic clock the test moves by hand (claims and waits are measured on it)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@contextlib.contextmanager
def socket_folder() -> Iterator[Path]:
    """A fresh folder with a short path (AF_UNIX paths are at most 107 bytes; pytest's tmp_path can be longer)."""
    folder = Path(tempfile.mkdtemp(prefix="ldesk-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def specs(count: int = 2, mode: SupervisionMode = SupervisionMode.APPROVE_WRITES) -> list[SessionSpec]:
    return [SessionSpec(domain="retail", scenario=SCENARIO, mode=mode) for _ in range(count)]


@dataclass
class Served:
    desk: Desk
    host: DeskHost
    path: Path
    log: list[str] = field(default_factory=list)
    logged: asyncio.Event = field(default_factory=asyncio.Event)  # set on every line the host logs

    def say(self, line: str) -> None:
        """The host's log callback: keep the line and wake whoever waits on the log."""
        self.log.append(line)
        self.logged.set()

    async def until_logged(self, fragment: str, timeout: float = 60.0) -> str:
        """The first line the host logged that contains `fragment`, waiting for it if need be.

        Why: some things the host does change nothing on the desk (a connection closing while its operator is
        still connected elsewhere), so no push comes that a client could wait on; the log line is the only
        event that proves the host has handled it. The timeout only bounds the wait.
        """
        try:
            async with asyncio.timeout(timeout):
                while True:
                    found = next((line for line in self.log if fragment in line), None)
                    if found is not None:
                        return found
                    self.logged.clear()
                    await self.logged.wait()
        except TimeoutError:
            raise AssertionError(f"the host never logged {fragment!r} within {timeout} s; its log: "
                                 f"{self.log}") from None


@contextlib.asynccontextmanager
async def served_desk(folder: Path, sessions: Sequence[SessionSpec], *, clock: Callable[[], float] | None = None,
                      claim_ttl: float = 60.0, operators: Operators | None = None) -> AsyncIterator[Served]:
    """A Desk running `sessions` (data under `folder`), served at `folder/sock/desk.sock` (knowing `operators`)."""
    extra = {} if clock is None else {"clock": clock}
    desk = Desk(sessions, root=folder / "home", audit_path=folder / "audit.jsonl", claim_ttl=claim_ttl, **extra)
    path = folder / "sock" / "desk.sock"
    served = Served(desk, DeskHost(desk, path, operators=operators), path)
    served.host.log = served.say
    await served.host.start()
    runner = asyncio.create_task(desk.run())
    try:
        yield served
    finally:
        await served.host.close()
        await desk.close()
        runner.cancel()
        with contextlib.suppress(BaseException):
            await runner


async def until(remote: RemoteDesk, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait for pushes until `condition` holds; the timeout only bounds the wait."""
    changed = asyncio.Event()

    def wake() -> None:
        changed.set()

    remote.subscribe(wake)
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await changed.wait()
                changed.clear()
    except TimeoutError:
        raise AssertionError(f"{what}: not reached within {timeout} s") from None
    finally:
        remote.unsubscribe(wake)


async def until_items(remote: RemoteDesk, count: int = 1) -> None:
    await until(remote, lambda: len(remote.snapshot().items) >= count, f"{count} inbox item(s)")


def operators_file(folder: Path, *names: str) -> tuple[Path, dict[str, str]]:
    """An `--operators-file` for `names` in `folder`, each with a token made now: the file, and the tokens."""
    operators, tokens = generate(names)
    path = folder / "operators"
    path.write_text(operators.text(), encoding="utf-8")
    return path, tokens
