"""`AgentConfig(compact_history=True)`: ledger-held read results go to the model as references to their ledger
paths; the history stays valid for the chat API, the stored history and the agent's behaviour are unchanged,
and on a session with re-reads the prompts are smaller than the function-calling baseline's."""

from __future__ import annotations

from pathlib import Path

from core.agent import AgentConfig
from core.evaluation.offline import AdaptiveScriptedAgent, OfflinePlan, PlannedCall, Step
from core.events import ToolResultEvent
from core.session import Session
from core.users import ScriptedUser
from domains.retail import DOMAIN
from mock_backends.retail import RetailBackend

ORDER = PlannedCall("get_order_details", {"order_id": "#W4821001"})
PROFILE = PlannedCall("get_user_details", {"user_id": "mia_garcia_4821"})
PLAN = OfflinePlan(
    steps=(
        Step("call", PlannedCall("find_user_id_by_email", {"email": "mia.garcia@example.com"})),
        Step("call", PROFILE), Step("call", ORDER),
        Step("call", PlannedCall("get_order_details", {"order_id": "#W0000000"})),  # an error result stays as is
        Step("call", PlannedCall("get_product_details", {"product_id": "1000000001"})),
        Step("say", text="Let me double-check your order. Do you confirm?", confirm=True),
        Step("call", ORDER), Step("call", PROFILE), Step("call", ORDER),
        Step("write", PlannedCall("return_delivered_order_items", {"order_id": "#W4821001", "item_ids": ["2000000011"],
                                                                   "payment_method_id": "gift_card_4821001"})),
        Step("call", ORDER), Step("say", text="Anything else to check? Do you confirm?", confirm=True),
        Step("call", PROFILE), Step("call", ORDER),
    ),
    final_message="Done.",
)


async def run(tmp_path: Path, config: AgentConfig, name: str) -> Session:
    backend = await RetailBackend.open(tmp_path / f"{name}.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=AdaptiveScriptedAgent(PLAN),
                      user=ScriptedUser(["I want to return a tablet", "yes", "yes"]), config=config)
    await session.run()
    await backend.close()
    return session


def executed(session: Session) -> list[tuple[str, str, bool]]:
    return [(e.call.name, e.content, e.ok) for e in session.bus.history if isinstance(e, ToolResultEvent)]


async def test_off_by_default_and_history_untouched(tmp_path: Path) -> None:
    plain = await run(tmp_path, AgentConfig(), "plain")
    assert plain.agent.config.compact_history is False
    assert plain.agent.messages()[1:] == plain.agent.history


async def test_compacted_messages_are_valid_references(tmp_path: Path) -> None:
    plain = await run(tmp_path, AgentConfig(), "plain")
    compact = await run(tmp_path, AgentConfig(compact_history=True), "compact")
    # same calls, same results, same stored history: only what the model is sent changes
    assert executed(compact) == executed(plain)
    assert compact.agent.history == plain.agent.history
    sent = compact.agent.messages()[1:]
    assert len(sent) == len(compact.agent.history)
    call_ids = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert call_ids == answered
    tool_texts = [m["content"] for m in sent if m["role"] == "tool"]
    assert tool_texts[0] == "mia_garcia_4821"  # shorter than any reference: kept verbatim
    assert tool_texts[1] == "[result held in the ledger at users.mia_garcia_4821, user]"
    assert "orders.#W4821001" in tool_texts[2]
    assert tool_texts[3] == "Error: Order not found"  # nothing absorbed: kept
    assert "products.1000000001" in tool_texts[4]
    write_result = next(m["content"] for m, h in zip(sent, compact.agent.history, strict=True)
                        if m["role"] == "tool" and '"return requested"' in h["content"] and m is not h)
    assert write_result.startswith("[result held in the ledger")  # the re-read after the write is held...
    assert any('"status": "return requested"' in t for t in tool_texts)  # ...the write's own result is not


async def test_fewer_prompt_tokens_than_fc_on_the_same_session(tmp_path: Path) -> None:
    fc = await run(tmp_path, AgentConfig(ledger=False, gate=False), "fc")
    compact = await run(tmp_path, AgentConfig(compact_history=True), "compact")
    ledger = await run(tmp_path, AgentConfig(), "ledger")
    assert executed(fc) == executed(compact) == executed(ledger)
    tokens = {name: s.agent.usage.prompt_tokens for name, s in (("fc", fc), ("compact", compact), ("ledger", ledger))}
    assert tokens["compact"] < tokens["fc"] < tokens["ledger"], tokens
