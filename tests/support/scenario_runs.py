"""Scenario runs as the console and `ledgeragent run` build them: core's Session, the scenario's customer, the
domain's offline reader, a real SQLite backend, and a scripted operator who overrides the first gated write.
Shared by the offline-agent tests and the scenario-customer tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.agent import AgentConfig
from core.gate import GateDecision, Verdict
from core.llm.base import ChatModel
from core.scenario import Scenario, list_scenarios, load_scenario
from core.session import Session
from core.supervisor import Decision, Resolution, Supervisor
from core.tools import ToolCall
from core.users import UserProxy
from domains.registry import DOMAINS, load_domain, load_offline_reader
from mock_backends.registry import open_backend

SCENARIOS = [(domain, name) for domain in DOMAINS for name in list_scenarios(load_domain(domain).scenarios_dir)]
DECISIONS = ("approve", "veto", "edit", "force_allow")


class FirstWriteOverride:
    """A scripted operator: approves everything except the first gated write it can override.

    veto / edit: the first gated write. force_allow: the first write the gate did not ALLOW. veto_allow: the first
    write the gate ALLOWed (as the console's tmux test vetoes: usually the plan's corrected call). The edit
    replaces the arguments with those of the plan's later call of the same tool (the corrected call, when the
    scenario has one), else submits them unchanged.
    """

    def __init__(self, kind: str, scenario: Scenario) -> None:
        self.kind = kind
        self.scenario = scenario
        self.used = False

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        if self.used or decision is None or self.kind == "approve":
            return Resolution(Decision.APPROVE)
        allowed = decision.verdict is Verdict.ALLOW
        if (self.kind == "force_allow" and allowed) or (self.kind == "veto_allow" and not allowed):
            return Resolution(Decision.APPROVE)
        self.used = True
        if self.kind in ("veto", "veto_allow"):
            return Resolution(Decision.VETO, who="tester", reason="hold on, not this one")
        if self.kind == "force_allow":
            return Resolution(Decision.FORCE_ALLOW, who="tester", reason="the customer is right")
        later = [dict(c.arguments) for step in self.scenario.agent for c in step.calls
                 if c.name == call.name and dict(c.arguments) != dict(call.arguments)]
        return Resolution(Decision.EDIT, who="tester", reason="corrected",
                          arguments=later[0] if later else dict(call.arguments))


class NthWriteOverride:
    """A scripted operator who approves every gated write but the `n`-th (1-based), which it vetoes or
    force-allows: an override at any point of the conversation, not only the first."""

    def __init__(self, kind: str, n: int) -> None:
        self.kind = kind
        self.n = n
        self.seen = 0

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        if decision is None:
            return Resolution(Decision.APPROVE)
        self.seen += 1
        if self.seen != self.n:
            return Resolution(Decision.APPROVE)
        if self.kind == "veto":
            return Resolution(Decision.VETO, who="tester", reason="not now")
        return Resolution(Decision.FORCE_ALLOW, who="tester", reason="the customer is right")


async def run(domain_name: str, scenario_name: str, folder: Path, *, decision: str = "approve",
              model: ChatModel | None = None, user: UserProxy | None = None,
              config: AgentConfig | None = None,
              supervisor: Supervisor | None = None) -> tuple[str, list[dict[str, Any]], bytes]:
    domain = load_domain(domain_name)
    scenario = load_scenario(list_scenarios(domain.scenarios_dir)[scenario_name])
    folder.mkdir(parents=True, exist_ok=True)
    backend = await open_backend(domain_name, folder / "db.sqlite")
    try:
        session = Session(domain=domain, backend=backend,
                          model=model or scenario.build_model(load_offline_reader(domain_name)),
                          user=user or scenario.build_user(), config=config,
                          supervisor=supervisor or FirstWriteOverride(decision, scenario),
                          trace_path=folder / "trace.jsonl", scenario=scenario.name, max_steps=scenario.max_steps,
                          clock=lambda: "2026-01-01T00:00:00")
        result = await session.run()
    finally:
        await backend.close()
    raw = (folder / "trace.jsonl").read_bytes()
    return result.reason, [json.loads(line) for line in raw.splitlines()], raw


def agent_text(events: Sequence[dict[str, Any]]) -> list[str]:
    """What the agent said after its greeting, turn by turn."""
    return [e["text"] for e in events if e["type"] == "assistant_turn" and e["text"]]
