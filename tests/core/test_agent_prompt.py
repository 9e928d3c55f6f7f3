"""What the ledger agent's system prompt says about the ledger: the paper's block plus a short instruction that is
true for the condition it is sent in (the gate is not announced, so a ledger-only ablation is not told of one)."""

from __future__ import annotations

from pathlib import Path

from core.agent import INSTRUCTIONS, Agent, AgentConfig
from core.events import EventBus
from core.llm.scripted import ScriptedChatModel
from core.tools import ToolCall
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend

PROFILE = {"user_id": "mia_garcia_4821", "name": {"first_name": "Mia"}, "orders": ["#W4821001"], "email": "m@x"}


async def agent(tmp_path: Path, config: AgentConfig) -> Agent:
    backend = await RetailBackend.open(tmp_path / f"{config.label}.sqlite")
    await backend.close()
    return Agent(DOMAIN, ScriptedChatModel([]), backend, EventBus(), config)


async def test_each_condition_is_told_only_what_is_true_for_it(tmp_path: Path) -> None:
    ledger = await agent(tmp_path, AgentConfig())
    no_gate = await agent(tmp_path, AgentConfig(gate=False))
    fc = await agent(tmp_path, AgentConfig(ledger=False, gate=False))
    for with_ledger in (ledger, no_gate):
        prompt = with_ledger.system_prompt()
        assert "<ledger>" in prompt and "STALE" in prompt and "look values up" in prompt.lower()
        assert "checked against the policy" not in prompt  # true with a gate, false for the ledger-only ablation
    assert no_gate.system_prompt() == ledger.system_prompt()
    assert fc.system_prompt().startswith(f"<instructions>\n{INSTRUCTIONS}\n</instructions>\n\n<policy>")
    assert "ledger" not in fc.system_prompt().lower().replace(DOMAIN.policy.lower(), "")


async def test_a_stale_record_names_the_write_that_may_have_changed_it(tmp_path: Path) -> None:
    a = await agent(tmp_path, AgentConfig())
    a.ledger.absorb(ToolCall("c1", "get_user_details", {"user_id": "mia_garcia_4821"}), PROFILE, 1)
    a.ledger.mark_stale(ToolCall("c2", "modify_user_address", {"user_id": "mia_garcia_4821"}), 2)
    line = next(x for x in a.system_prompt().splitlines() if x.startswith("users.mia_garcia_4821 = "))
    assert line.endswith('"user_id":"mia_garcia_4821"}  # STALE since modify_user_address (step 2) in address')
