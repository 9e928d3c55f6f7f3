"""The child process of tests/mock_backends/test_crash_safety.py: writes through the retail backend in a
loop until it is killed. A module of its own so a forkserver/spawn child can import it by name."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from mock_backends.retail import RetailBackend

USER = "mia_garcia_4821"


def write_forever(path: str, seed: int, writing: Any) -> None:
    async def loop() -> None:
        backend = await RetailBackend.attach(path)
        rng = random.Random(seed)
        n = 0
        while True:
            n += 1
            zip_code = f"{rng.randint(10000, 99999)}"
            await backend.call("modify_user_address", {
                "user_id": USER, "address1": f"{n} Main St", "address2": "x" * rng.randint(0, 3000),
                "city": "Springfield", "state": "IL", "country": "USA", "zip": zip_code})
            found = await backend.call("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia",
                                                                    "zip": zip_code})
            assert found == USER, found
            if n == 1:
                writing.set()  # the parent kills only from here on: every kill lands in the write loop

    asyncio.run(loop())
