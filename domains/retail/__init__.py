"""Retail domain, compatible with tau2-bench: same tools, arguments and record shapes; our own policy text.

`policy.md` holds two things. Everything above its final section is the policy the model reads: it is the
same text whether or not the gate is on, so a baseline run and a LedgerAgent run get identical
instructions. The final section ("What the gate checks and what it cannot") maps policy sentences to
predicate ids and lists what no predicate can see; it is for the operator and becomes `policy_notes`.
"""

from __future__ import annotations

from pathlib import Path

from core.domain import Domain, split_policy
from domains.retail.paths import EVIDENCE_READS, PATH_MAP, identify
from domains.retail.predicates import PREDICATES
from domains.retail.tools import TOOLS

_HERE = Path(__file__).parent


POLICY, POLICY_NOTES = split_policy((_HERE / "policy.md").read_text(encoding="utf-8"))

DOMAIN = Domain(
    name="retail",
    title="Retail (tau2-bench compatible)",
    policy=POLICY,
    tools=TOOLS,
    path_map=PATH_MAP,
    predicates=PREDICATES,
    reference_time=None,
    identify=identify,
    scenarios_dir=_HERE / "scenarios",
    policy_notes=POLICY_NOTES,
    evidence_reads=EVIDENCE_READS,
)

__all__ = ["DOMAIN", "PATH_MAP", "POLICY", "POLICY_NOTES", "PREDICATES", "TOOLS", "identify"]
