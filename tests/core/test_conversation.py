"""What the customer said, as ledger facts (core.conversation, core.ledger.Ledger.hear): the ids they stated, their
explicit yes, their stated reason; deterministic, cited, rendered compactly, rebuilt exactly from the trace.

The customer lines below are written after the patterns real customers used in the tau2-bench and tau-Trait
recordings of the development set (a yes followed by an unrelated question, a change of detail before the yes, a
quantifier "no", an instruction instead of a yes word), not copied from them.
"""

from __future__ import annotations

import pytest

from core.conversation import (
    CONFIRMATION_PATH,
    NO_MESSAGES,
    OPENING,
    REASON_PATH,
    SAID_BY_CUSTOMER,
    confirmation_of,
    quote,
    quote_tail,
    said_id,
    sentences,
)
from core.events import EventBus, LedgerUpdated, MessageSent
from core.hearing import hear
from core.ledger import Ledger
from core.timeline import LedgerTimeline
from core.tools import ToolCall
from domains.airline import DOMAIN as AIRLINE
from domains.retail import DOMAIN as RETAIL
from domains.telecom import DOMAIN as TELECOM
from domains.telehealth import DOMAIN as TELEHEALTH

ASKED = "I'll change the address of order #W4821002 to 1 Main St, Springfield. Shall I go ahead?"

YES = [
    "Yes.",
    "yes please",
    "Sure, go ahead.",
    "Yes, that's correct. Please go ahead and make the change.",
    "That all looks good to me! Please proceed.",
    "Yeah, exactly what I want. Go ahead and do it. How soon will it arrive?",  # a yes, then another question
    "Yes, go ahead. No other changes needed.",  # "No other ...": a quantifier, no refusal
    "Yes, please proceed. I just hope the colour is right.",
    "Um, actually, make the refund go to my card instead, if that's okay... And yes, please go ahead.",
    "No, that's everything. Please proceed.",  # "No," answers "anything else?"; then the yes
    "No problem, please go ahead.",
    "Could you please go ahead with it?",  # a polite request is a yes
    "Reason is 'no longer needed.' Please cancel order #W4821002. Thanks.",  # the instruction after the details
    "Cancel FDZ0T5 and PUNERT as listed.",  # an instruction opening a sentence
    "Just upgrade it to economy, then cancel it.",
    "OK, the black one in L then.",
    "That's annoying, but fine: refund it to the gift card then.",
    "I definitely don't want to change my plan, but I'm willing to refuel. Please add 2 GB.",
    "I confirm that the details are right.",
    "Yes, confirm the booking.",
]

NOT_YES = [
    ("No.", "'no'"),
    ("No, thanks.", "'no'"),
    ("That is not correct.", "no explicit yes"),
    ("Don't proceed yet.", "no explicit yes"),
    ("Is that the total?", "a question"),
    ("Hmm, will that cost anything?", "a question"),
    ("Yes. Actually, wait.", "after the yes"),
    ("Yes, but before you do that, can you check my balance?", "'before you'"),
    ("Hold on, is that the cheapest?", "'hold on'"),
    ("Let me think about it.", "'let me think'"),
    ("I'd like to change both flights to nonstop ones.", "no explicit yes"),  # a wish, before anything was listed
    ("I paid with my Visa ending in 4421.", "no explicit yes"),
    ("Confirm that Option A is still the best choice.", "no explicit yes"),  # a check asked of the agent
    ("Verify the cancellation before proceeding.", "'before proceeding'"),
    ("Yes, go ahead. Actually, never mind.", "after the yes"),
]


@pytest.mark.parametrize("text", YES)
def test_an_explicit_yes_is_read_as_one(text: str) -> None:
    said = confirmation_of(text, ASKED)
    assert said.confirmed, said
    assert said.words and said.words.rstrip("\u2026") in " ".join(text.split())  # their words, quoted


@pytest.mark.parametrize(("text", "why"), NOT_YES)
def test_anything_else_is_no_yes_and_says_why(text: str, why: str) -> None:
    said = confirmation_of(text, ASKED)
    assert not said.confirmed
    assert why in said.why, said
    assert said.words == quote(text)


def test_the_opening_request_answering_a_greeting_is_never_a_yes() -> None:
    opening = "Hi, I need to cancel order #W4821002, it's fine, go ahead."
    assert confirmation_of(opening, "Hi! How can I help you today?", first=True).why == OPENING
    assert confirmation_of(opening, ASKED, first=True).confirmed  # an agent that asked something: a yes
    assert confirmation_of(opening, None, first=True).confirmed  # no agent message heard: the words decide
    assert confirmation_of(opening, "Hi! How can I help you today?").confirmed  # not the first message


def test_sentences_keep_their_positions_and_end_at_quotes_and_dashes() -> None:
    text = "Reason is \u201cno longer needed.\u201d Please cancel \u2014 now. Is that all?"
    found = sentences(text)
    assert [s.text for s in found] == ["Reason is \u201cno longer needed.\u201d", "Please cancel", "now.",
                                       "Is that all?"]
    assert all(text[s.start:s.end] == s.text for s in found)
    assert [s.question for s in found] == [False, False, False, True]


def test_stated_ids_take_the_domains_forms_written_as_the_records_are() -> None:
    airline = AIRLINE.path_map.conversation
    retail = RETAIL.path_map.conversation
    telecom = TELECOM.path_map.conversation
    telehealth = TELEHEALTH.path_map.conversation
    assert airline is not None and retail is not None and telecom is not None and telehealth is not None
    found = airline.stated_ids("My user ID is mia_li_3668 and the reservation is UX789J, on HAT170, card "
                               "gift_card_7359776.")
    assert {name: [i for i, _ in ids] for name, ids in found.items()} == {
        "user_ids": ["mia_li_3668"], "reservation_ids": ["UX789J"]}  # no flight number, no payment id
    assert found["user_ids"][0][1].startswith("My user ID is mia_li_3668 and the reservation is UX789J")  # quoted
    orders = retail.stated_ids("Orders W5061109 and #W4821002, and W5061109 again.")["order_ids"]
    assert [i for i, _ in orders] == ["#W5061109", "#W4821002"]
    phones = telecom.stated_ids("Call me at (555) 123-2002 or 555.123.2001; line L1002.")
    assert [i for i, _ in phones["phone_numbers"]] == ["555-123-2002", "555-123-2001"]
    assert [i for i, _ in phones["line_ids"]] == ["L1002"]
    assert [i for i, _ in telehealth.stated_ids("Yes, cancel APPT029.")["appointment_ids"]] == ["APPT029"]


def test_a_customer_message_becomes_cited_facts_and_each_message_decides_the_confirmation_anew() -> None:
    ledger = Ledger(AIRLINE.path_map)
    assert ledger.hear("assistant", "Hi! How can I help you today?", 0).touched == ()  # an agent line: no entry
    first = ledger.hear("user", "I need to cancel UX789J because my plans changed. I'm julia_reyes_4521.", 1)
    assert set(first.added) == {"conversation.stated.user_ids", "conversation.stated.reservation_ids",
                                REASON_PATH, CONFIRMATION_PATH}
    entry = ledger.entry("conversation.stated.user_ids")
    assert entry is not None and entry.value == ["julia_reyes_4521"]
    assert (entry.provenance.call_id, entry.provenance.step, entry.provenance.by) == (said_id(1), 1, SAID_BY_CUSTOMER)
    assert entry.provenance.describe() == "the customer's message at step 1: \"I'm julia_reyes_4521.\""
    assert ledger.get(REASON_PATH) == "I need to cancel UX789J because my plans changed."
    assert ledger.get(CONFIRMATION_PATH) == {"confirmed": False, "customer": quote(
        "I need to cancel UX789J because my plans changed. I'm julia_reyes_4521."),
        "answers": "Hi! How can I help you today?", "why": OPENING}
    ledger.hear("assistant", "I'll cancel UX789J for $0 refund. Shall I?", 2)
    second = ledger.hear("user", "Yes, please. My other booking is 4WQ150.", 3)
    assert set(second.changed) == {"conversation.stated.reservation_ids", CONFIRMATION_PATH}
    assert ledger.get("conversation.stated.reservation_ids") == ["UX789J", "4WQ150"]
    assert ledger.get(CONFIRMATION_PATH) == {"confirmed": True, "customer": "Yes, please.",
                                             "answers": "I'll cancel UX789J for $0 refund. Shall I?"}
    ledger.hear("user", "Wait, what about the other one?", 4)  # the customer says something else: no yes now
    assert ledger.get(CONFIRMATION_PATH)["confirmed"] is False
    assert [e.value["confirmed"] for e in ledger.history(CONFIRMATION_PATH)] == [False, True]


def test_the_prompt_block_leaves_out_what_was_said_and_the_gate_keeps_the_words() -> None:
    """The model reads the conversation itself: the block shows what tools returned, never the facts heard."""
    ledger = Ledger(RETAIL.path_map)
    ledger.hear("assistant", ASKED, 1)
    ledger.hear("user", "Yes, please go ahead. I no longer need the old address because I moved. I'm "
                        "mia_garcia_4821, order #W4821002.", 2)
    assert ledger.render() == "<ledger>\n(empty: nothing has been observed through read tools yet)\n</ledger>"
    assert ledger.get(CONFIRMATION_PATH)["customer"] == "Yes, please go ahead."
    assert ledger.get("conversation.stated.order_ids") == ["#W4821002"]
    ledger.absorb(ToolCall(id="c1", name="find_user_id_by_email", arguments={"email": "mia@example.com"}),
                  "mia_garcia_4821", step=3)
    block = ledger.render()
    assert 'auth.user_id = "mia_garcia_4821"' in block and "conversation" not in block
    assert set(ledger.paths()) >= {CONFIRMATION_PATH, "conversation.stated.reason", "auth.user_id"}


def test_nothing_is_heard_without_forms_or_text() -> None:
    from core.ledger import PathMap

    plain = Ledger(PathMap(rules=()))
    assert plain.hear("user", "Yes, my id is mia_li_3668.", 1).touched == ()
    assert len(plain) == 0
    ledger = Ledger(AIRLINE.path_map)
    assert ledger.hear("user", "   ", 1).touched == ()
    assert ledger.hear("user", None, 1).touched == ()
    assert ledger.hearing.customer_messages == 0


def test_snapshots_carry_where_the_conversation_is() -> None:
    ledger = Ledger(RETAIL.path_map)
    ledger.hear("assistant", ASKED, 1)
    ledger.hear("user", "Hmm.", 2)
    before = ledger.snapshot()
    ledger.hear("assistant", "Anything else?", 3)
    ledger.restore(before)
    ledger.hear("user", "Yes, go ahead.", 4)
    assert ledger.get(CONFIRMATION_PATH)["answers"] == quote_tail(ASKED)  # the agent line before the snapshot
    assert ledger.entry(CONFIRMATION_PATH).provenance.call_id == said_id(2)  # type: ignore[union-attr]


def test_the_recorded_facts_rebuild_exactly_from_the_events() -> None:
    """The facts a message gave are recorded as a ledger update right after it; the replay's rebuilt ledger meets
    them there (no divergence), and an agent line records nothing."""
    bus = EventBus()
    ledger = Ledger(AIRLINE.path_map)
    lines = [("assistant", "Hi!"), ("user", "I'm mia_li_3668, book me HAT170."), ("assistant", ASKED),
             ("user", "Yes.")]
    for step, (role, text) in enumerate(lines):
        bus.emit(MessageSent(step=step, role=role, text=text))  # type: ignore[arg-type]
        hear(ledger, bus, role, text, step)
    updates = [e for e in bus.history if isinstance(e, LedgerUpdated)]
    assert [(e.call_id, e.tool) for e in updates] == [(said_id(1), "customer_message"),
                                                      (said_id(2), "customer_message")]
    timeline = LedgerTimeline.build(bus.history, AIRLINE.path_map)
    assert timeline.divergences == ()
    assert timeline.final.to_dict() == ledger.to_dict()
    assert timeline.final.get(CONFIRMATION_PATH)["confirmed"] is True


def test_no_messages_leaves_the_confirmation_rule_nothing_to_object_to() -> None:
    from core.conversation_rules import explicitly_confirmed
    from core.gate import LedgerView, Pass, Violation
    from core.tools import ToolCall

    call = ToolCall("w", "cancel_pending_order", {"order_id": "#W4821002", "reason": "no longer needed"})
    ledger = Ledger(RETAIL.path_map)
    passed = explicitly_confirmed(call, LedgerView(ledger), quote_reason=True)
    assert isinstance(passed, Pass) and passed.note.startswith(NO_MESSAGES)
    ledger.hear("user", "Hmm, not sure.", 1)
    refused = explicitly_confirmed(call, LedgerView(ledger))
    assert isinstance(refused, Violation) and '"Hmm, not sure."' in refused.reason
