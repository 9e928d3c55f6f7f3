"""What a domain hands to the core: tools, path map, predicates, policy text, clock and identity rule.

The core never imports a domain package; domains build one `Domain` value and the CLI or console passes
it in. That keeps `core` domain-free and lets tests build tiny throwaway domains.

Dual control: tools with `Requestor.USER` are the customer's own (telecom's phone). What their reads return
lands in the ledger only under `device.*` (DEVICE_NAMESPACE), and an agent read never lands there, so a
reading from the customer's device and a record the agent observed can never overwrite each other, and
a predicate that reads `device.*` knows it is reading what the customer's device showed. A Domain whose
path map breaks this is refused when it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from core.evidence import EvidenceReads
from core.gate import GateContext, Predicate
from core.ledger import LedgerReader, PathMap
from core.tools import Requestor, ToolKind, ToolSpec

IdentityRule = Callable[[LedgerReader], str | None]


DEVICE_NAMESPACE = "device"

# policy.md = the policy the model reads, then this section (for the operator): which predicate encodes
# which sentence, which rules are house rules, and what no predicate can see. It becomes `policy_notes`.
NOTES_HEADING = "## What the gate checks and what it cannot"


def split_policy(text: str, *, required: tuple[str, ...] = ()) -> tuple[str, str]:
    """(the policy the model reads, the operator's notes) of a policy.md.

    The model's text is the same whether or not the gate is on, so a baseline run and a LedgerAgent run get
    identical instructions. `required` lists marks the model's text must contain (airline's `{now}`)."""
    policy, heading, notes = text.partition(NOTES_HEADING)
    if not heading:
        raise ValueError(f"policy.md has no '{NOTES_HEADING}' section")
    for mark in required:
        if mark not in policy:
            raise ValueError(f"policy.md does not contain {mark!r} before its notes")
    return policy.rstrip() + "\n", (heading + notes).strip() + "\n"


def _nobody(_ledger: LedgerReader) -> str | None:
    return None


def _namespace_problems(tools: tuple[ToolSpec, ...], path_map: PathMap) -> list[str]:
    side = {spec.name: spec.requestor for spec in tools}
    problems: list[str] = []
    for rule in path_map.rules:
        on_device = rule.path.split(".", 1)[0] == DEVICE_NAMESPACE
        requestor = side.get(rule.tool)
        if requestor is Requestor.USER and not on_device:
            problems.append(f"user-side tool {rule.tool} must land under '{DEVICE_NAMESPACE}.*', not {rule.path!r}")
        elif requestor is Requestor.ASSISTANT and on_device:
            problems.append(f"agent tool {rule.tool} must not land under '{DEVICE_NAMESPACE}.*' ({rule.path!r})")
    return problems


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
    # House rules (rules our policy adds, labelled "house rule", REVISE at most) are on unless a domain is
    # built with this off; then every gate over it starts with them disabled, shown as switched off.
    house_rules: bool = True
    # The reads the gate may make itself (`--evidence assist`), declared next to the path map (core.evidence).
    evidence_reads: EvidenceReads = field(default_factory=EvidenceReads)

    def __post_init__(self) -> None:
        problems = _namespace_problems(self.tools, self.path_map)
        if problems:
            raise ValueError(f"domain {self.name}: " + "; ".join(problems))
        if not self.house_rules:
            object.__setattr__(self, "predicates", tuple(
                replace(p, switched_off=True) if p.house_rule else p for p in self.predicates))

    def without_house_rules(self) -> Domain:
        """This domain with its house rules switched off (the upstream policy's rules only)."""
        return replace(self, house_rules=False)

    def tool(self, name: str) -> ToolSpec | None:
        for spec in self.tools:
            if spec.name == name:
                return spec
        return None

    def agent_tools(self) -> tuple[ToolSpec, ...]:
        """What the agent's model is offered. User-side tools never are: the agent can only ask for them."""
        return tuple(t for t in self.tools if t.requestor is Requestor.ASSISTANT)

    def user_tools(self) -> tuple[ToolSpec, ...]:
        """The customer's own tools (dual control, e.g. telecom's phone): run for the user proxy, never the agent.

        Empty for single-control domains, which is how a session knows whether the customer has a device.
        """
        return tuple(t for t in self.tools if t.requestor is Requestor.USER)

    def kind_of(self, name: str) -> ToolKind | None:
        spec = self.tool(name)
        return None if spec is None else spec.kind

    def context(self, ledger: LedgerReader) -> GateContext:
        return GateContext(domain=self.name, now=self.reference_time, customer_id=self.identify(ledger))
