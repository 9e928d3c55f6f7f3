"""`AgentConfig(compact_history=True)`: ledger-held results go to the model as references to their ledger paths
(a read's from its absorption, a write's once a later read stored the same record); the history stays valid for
the chat API, the stored history and the agent's behaviour are unchanged, and on a session with re-reads the
prompts are smaller than the function-calling baseline's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.agent import AgentConfig
from core.evaluation.offline import AdaptiveScriptedAgent, OfflinePlan, PlannedCall, Step
from core.events import ToolResultEvent
from core.gate import GateDecision
from core.llm.base import AssistantTurn
from core.session import Session
from core.supervisor import Decision, Resolution
from core.tools import ToolCall
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


class RecordingAgent(AdaptiveScriptedAgent):
    """The scripted agent, keeping a copy of every prompt it was sent."""

    def __init__(self, plan: OfflinePlan) -> None:
        super().__init__(plan)
        self.prompts: list[list[dict[str, Any]]] = []

    async def complete(self, messages: Sequence[Mapping[str, Any]],
                       tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        self.prompts.append([dict(m) for m in messages])
        return await super().complete(messages, tools)


class RefundToGiftCard:
    """A supervisor who edits every refund to go to the customer's gift card (the order's original payment)."""

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        if call.arguments.get("payment_method_id") == "gift_card_4821001":
            return Resolution(Decision.APPROVE)
        return Resolution(Decision.EDIT, who="ops",
                          arguments={**call.arguments, "payment_method_id": "gift_card_4821001"})


async def run(tmp_path: Path, config: AgentConfig, name: str, plan: OfflinePlan = PLAN,
              supervisor: RefundToGiftCard | None = None) -> Session:
    backend = await RetailBackend.open(tmp_path / f"{name}.sqlite")
    session = Session(domain=DOMAIN, backend=backend, model=RecordingAgent(plan),
                      user=ScriptedUser(["I want to return a tablet", "yes", "yes"]), config=config,
                      supervisor=supervisor)
    await session.run()
    await backend.close()
    return session


def sent_results(prompt: list[dict[str, Any]], call_id: str) -> list[str]:
    return [str(m["content"]) for m in prompt if m.get("role") == "tool" and m.get("tool_call_id") == call_id]


def write_call_id(session: Session) -> str:
    return next(c["id"] for m in session.agent.history if m["role"] == "assistant" for c in m.get("tool_calls", [])
                if c["function"]["name"] == "return_delivered_order_items")


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
    # one reference per record: the profile's own path, not also its alias `user` (rendered as that path's alias)
    assert tool_texts[1] == "[result in the ledger at users.mia_garcia_4821]"
    assert "user = (same record as users.mia_garcia_4821)" in compact.agent.system_prompt()
    assert tool_texts[2] == "[result in the ledger at orders.#W4821001]"
    assert tool_texts[3] == "Error: Order not found"  # nothing absorbed: kept
    assert tool_texts[4] == "[result in the ledger at products.1000000001]"
    assert all('"return requested"' not in t for t in tool_texts)


async def test_a_write_result_is_referenced_only_once_a_read_stored_the_same_record(tmp_path: Path) -> None:
    compact = await run(tmp_path, AgentConfig(compact_history=True), "compact")
    prompts = compact.agent.model.prompts  # type: ignore[attr-defined]
    write_id = write_call_id(compact)
    seen = [texts[0] for prompt in prompts if (texts := sent_results(prompt, write_id))]
    # the write's result is never absorbed (observe, don't assume): until the re-read it is sent in full...
    assert '"status": "return requested"' in seen[0]
    # ...and once the re-read stored exactly that record, it is a reference to where the ledger holds it
    assert seen[-1] == "[result in the ledger at orders.#W4821001]"
    written = next(e.result for e in compact.bus.history if isinstance(e, ToolResultEvent) and e.call.id == write_id)
    assert compact.ledger.get("orders.#W4821001") == written
    # the stored history (trace, console, replay) keeps the full result
    assert '"status": "return requested"' in sent_results(compact.agent.history, write_id)[0]


async def test_a_supervisor_note_survives_compaction(tmp_path: Path) -> None:
    refund = PlannedCall("return_delivered_order_items", {"order_id": "#W4821001", "item_ids": ["2000000011"],
                                                           "payment_method_id": "credit_card_4821002"})
    plan = OfflinePlan(steps=(
        Step("call", PlannedCall("find_user_id_by_email", {"email": "mia.garcia@example.com"})),
        Step("call", PROFILE), Step("call", ORDER),
        Step("say", text="I'll return the tablet of order #W4821001 with a refund. Do you confirm?", confirm=True),
        Step("write", refund), Step("call", ORDER), Step("say", text="Done. Do you confirm?", confirm=True),
    ), final_message="Done.")
    compact = await run(tmp_path, AgentConfig(compact_history=True), "compact", plan, RefundToGiftCard())
    write_id = write_call_id(compact)
    (stored,) = sent_results(compact.agent.history, write_id)
    (sent,) = sent_results(compact.agent.messages(), write_id)
    note = 'NOTE: a human supervisor changed the arguments to {"item_ids": ["2000000011"], "order_id": "#W4821001", ' \
           '"payment_method_id": "gift_card_4821001"} before this call was handled.\n'
    assert stored.startswith(note) and '"return requested"' in stored
    assert sent == note + "[result in the ledger at orders.#W4821001]"


async def test_fewer_prompt_tokens_than_fc_on_the_same_session(tmp_path: Path) -> None:
    fc = await run(tmp_path, AgentConfig(ledger=False, gate=False), "fc")
    compact = await run(tmp_path, AgentConfig(compact_history=True), "compact")
    ledger = await run(tmp_path, AgentConfig(), "ledger")
    assert executed(fc) == executed(compact) == executed(ledger)
    tokens = {name: s.agent.usage.prompt_tokens for name, s in (("fc", fc), ("compact", compact), ("ledger", ledger))}
    assert tokens["compact"] < tokens["fc"] < tokens["ledger"], tokens
