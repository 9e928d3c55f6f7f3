"""What a domain hands to the core: tools, path map, predicates, policy text, clock and identity rule.

The core never imports a domain package; domains build one `Domain` value and the CLI or console passes
it in. That keeps `core` domain-free and lets tests build tiny throwaway domains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from core.gate import GateContext, Predicate
from core.ledger import LedgerReader, PathMap
from core.tools import Requestor, ToolKind, ToolSpec

IdentityRule = Callable[[LedgerReader], str | None]


def _nobody(_ledger: LedgerReader) -> str | None:
    return None


@dataclass(frozen=True)
class Domain:
    name: str
    title: str
    policy: str
    tools: tuple[ToolSpec, ...]
    path_map: PathMap
    predicates: tuple[Predicate, ...]
    reference_time: datetime | None = None
    identify: IdentityRule = _nobody
    scenarios_dir: Path | None = None
    policy_notes: str = ""
    extras: dict[str, object] = field(default_factory=dict)

    def tool(self, name: str) -> ToolSpec | None:
        for spec in self.tools:
            if spec.name == name:
                return spec
        return None

    def agent_tools(self) -> tuple[ToolSpec, ...]:
        return tuple(t for t in self.tools if t.requestor is Requestor.ASSISTANT)

    def kind_of(self, name: str) -> ToolKind | None:
        spec = self.tool(name)
        return None if spec is None else spec.kind

    def context(self, ledger: LedgerReader) -> GateContext:
        return GateContext(domain=self.name, now=self.reference_time, customer_id=self.identify(ledger))
