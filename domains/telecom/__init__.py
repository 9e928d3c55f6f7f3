"""Telecom domain, tau2-bench compatible and dual control: the agent's 13 tools, the customer's 30 phone tools.

`policy.md` holds two things. Everything above its final section is the policy the model reads: it is the
same text whether or not the gate is on, so a baseline run and a LedgerAgent run get identical
instructions. The final section ("What the gate checks and what it cannot") maps policy sentences to
predicate ids, argues their severities and lists what no predicate can see; it is for the operator and
becomes `policy_notes`.

Dual control: `TOOLS` holds both sides; the phone's tools carry `Requestor.USER`, so `DOMAIN.agent_tools()`
leaves them out and `DOMAIN.user_tools()` is what a session hands the user proxy as its phone. The fixed
clock is tau2's telecom "today", 2025-02-25 12:08 (`vocabulary.REFERENCE_TIME`).
"""

from __future__ import annotations

from pathlib import Path

from core.domain import Domain, split_policy
from domains.telecom.paths import EVIDENCE_READS, PATH_MAP, identify
from domains.telecom.predicates import PREDICATES
from domains.telecom.tools import AGENT_TOOLS, TOOLS, USER_TOOLS
from domains.telecom.vocabulary import REFERENCE_TIME

_HERE = Path(__file__).parent


POLICY, POLICY_NOTES = split_policy((_HERE / "policy.md").read_text(encoding="utf-8"))

DOMAIN = Domain(
    name="telecom",
    title="Telecom (tau2-bench, dual control)",
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

__all__ = ["AGENT_TOOLS", "DOMAIN", "PATH_MAP", "POLICY", "POLICY_NOTES", "PREDICATES", "TOOLS", "USER_TOOLS",
           "identify"]
