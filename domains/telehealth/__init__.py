"""Telehealth domain, from tau-Trait brought to the tau2 conventions: same tools and arguments, our own policy.

`policy.md` holds two things. Everything above its final section is the policy the model reads: it is the
same text whether or not the gate is on, so a baseline run and a LedgerAgent run get identical
instructions. The final section ("What the gate checks and what it cannot") maps policy sentences to
predicate ids, argues their severities and lists what no predicate can see; it is for the operator and
becomes `policy_notes`.

The domain has a fixed clock (`vocabulary.REFERENCE_TIME`, Tuesday 2025-05-20 05:00): predicates judge
ages with it and the mock backend stamps cancellations with it, so runs never depend on the wall clock.
"""

from __future__ import annotations

from pathlib import Path

from core.domain import Domain, split_policy
from domains.telehealth.paths import EVIDENCE_READS, PATH_MAP, identify
from domains.telehealth.predicates import PREDICATES
from domains.telehealth.tools import TOOLS
from domains.telehealth.vocabulary import REFERENCE_TIME

_HERE = Path(__file__).parent


POLICY, POLICY_NOTES = split_policy((_HERE / "policy.md").read_text(encoding="utf-8"))

DOMAIN = Domain(
    name="telehealth",
    title="Telehealth (tau-Trait, tau2 conventions)",
    policy=POLICY,
    tools=TOOLS,
    path_map=PATH_MAP,
    predicates=PREDICATES,
    reference_time=REFERENCE_TIME,
    identify=identify,
    scenarios_dir=_HERE / "scenarios",
    policy_notes=POLICY_NOTES,
    evidence_reads=EVIDENCE_READS,
)

__all__ = ["DOMAIN", "PATH_MAP", "POLICY", "POLICY_NOTES", "PREDICATES", "TOOLS", "identify"]
