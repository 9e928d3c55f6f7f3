"""The violating variants of the gold-replay tests in both evidence modes, as a table: what refuses each.

`python -m tests.support.variant_recall` prints the table docs/evidence.md quotes (needs /work/shared); the
assertions are the gold-replay tests' own (`test_violating_variant_is_refused_when_the_gate_reads_itself` and
`test_violating_variant_is_rejected_and_changes_nothing`).
"""

from __future__ import annotations

import asyncio
import importlib
import tempfile
from pathlib import Path
from typing import Any

from core.evidence import EvidenceMode
from core.replay import Checker, CheckResult
from tests.support.gold_own_reads import SOURCES
from tests.support.gold_replay import calls

MODULES = {name: f"tests.domains.{name}.test_{name}_gold_replay" for name in ("airline", "retail", "telecom",
                                                                               "telehealth")}


def _shown(result: CheckResult) -> str:
    if result.executed:
        return f"ALLOW (legal once read: {len(result.gate_reads)} read(s) by the gate)"
    kind = f" ({result.refusal.replace('_', ' ')})" if result.refusal else ""
    return f"{result.verdict}{kind} {', '.join(result.predicates)}"


async def rows(name: str, folder: Path) -> list[str]:
    module: Any = importlib.import_module(MODULES[name])
    domain, _, create = SOURCES[name]()
    backend = await create(folder / f"{name}.sqlite")
    found = []
    try:
        base = await backend.snapshot()
        for variant in module.VARIANTS:
            shown = []
            for mode in EvidenceMode.ASK, EvidenceMode.ASSIST:
                await backend.restore(base)
                if name == "telecom":
                    await module.set_variant_scene(backend, variant)
                now = getattr(variant, "now", None)
                checker = Checker(module.airline_domain(now) if now is not None else domain, backend, evidence=mode)
                *setup, last = calls(variant.build())
                for call in setup:
                    await checker.check(call)
                shown.append(_shown(await checker.check(last)))
            found.append(f"| {name} | {variant.id} | {shown[0]} | {shown[1]} |")
    finally:
        await backend.close()
    return found


async def _main() -> None:
    print("| domain | variant | ask | assist |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in MODULES:
            print("\n".join(await rows(name, Path(folder))))


if __name__ == "__main__":
    asyncio.run(_main())
