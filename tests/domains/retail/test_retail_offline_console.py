"""The console's own session machinery (console/runtime/live.py's LiveSession, no Textual) with the offline agent: an
operator's veto, edit and force-allow, and a human in the customer seat, each run to a clean end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.runtime.live import LiveSession, PendingReview, SessionSpec, SupervisionMode
from core.supervisor import Decision, Resolution


def operator(kind: str) -> Any:
    """An operator who answers the first review with `kind` and approves the rest."""
    answered: list[str] = []

    def on_review(review: PendingReview) -> None:
        if answered:
            review.resolve(Resolution(Decision.APPROVE, who="op"))
            return
        answered.append(kind)
        if kind == "veto":
            review.resolve(Resolution(Decision.VETO, who="op", reason="wrong card"))
        elif kind == "edit":
            review.resolve(Resolution(Decision.EDIT, who="op", reason="gift card",
                                      arguments={**review.call.arguments, "payment_method_id": "gift_card_4821001"}))
        else:
            review.resolve(Resolution(Decision.FORCE_ALLOW, who="op", reason="manager said so"))

    return on_review


def events_of(live: LiveSession) -> list[dict[str, Any]]:
    assert live.folder is not None
    return [json.loads(line) for line in (live.folder / "trace.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("kind", ["veto", "edit", "force_allow"])
async def test_an_override_in_the_console_session_ends_cleanly(kind: str, tmp_path: Path) -> None:
    spec = SessionSpec(domain="retail", scenario="refund-to-original-payment", mode=SupervisionMode.APPROVE_NON_ALLOW)
    live = LiveSession(spec, on_review=operator(kind), root=tmp_path)
    result = await live.run()
    assert result.reason == "user_stop" and live.state.phase == "ended"
    events = events_of(live)
    assert [e["decision"] for e in events if e["type"] == "supervisor_decision"][0] == kind
    assert not [e for e in events if e["type"] == "model_error"]


async def test_the_customer_seat_is_heard(tmp_path: Path) -> None:
    spec = SessionSpec(domain="retail", scenario="refund-to-original-payment", seat="customer")
    live = LiveSession(spec, root=tmp_path)
    for line in ("hi, this is noah.kim@example.com", "what is in #W3107002?", "asdf qwerty", "###STOP###"):
        live.say_as_customer(line)
    result = await live.run()
    assert result.reason == "user_stop"
    events = events_of(live)
    calls = [(e["call"]["name"], e["call"]["arguments"]) for e in events if e["type"] == "tool_result"]
    assert calls == [("find_user_id_by_email", {"email": "noah.kim@example.com"}),
                     ("get_user_details", {"user_id": "noah_kim_3107"}),
                     ("get_order_details", {"order_id": "#W3107002"})]
    said = [e["text"] for e in events if e["type"] == "assistant_turn" and e["text"]]
    assert said[1] == "Order #W3107002 is pending: Tablet (black, 64GB, $549.99). What would you like me to do?"
    assert said[2].startswith("I'm sorry, I did not understand that.")


async def said_and_ran(tmp_path: Path, *lines: str) -> tuple[list[str], list[Any]]:
    """What the offline agent said and which writes ran, with a human typing `lines` in the customer seat."""
    live = LiveSession(SessionSpec(domain="retail", scenario="refund-to-original-payment", seat="customer"),
                       root=tmp_path)
    for line in lines:
        live.say_as_customer(line)
    result = await live.run()
    assert result.reason == "user_stop"
    events = events_of(live)
    said = [e["text"] for e in events if e["type"] == "assistant_turn" and e["text"]]
    writes = [e["call"]["arguments"] for e in events
              if e["type"] == "tool_result" and e["call"]["name"] == "return_delivered_order_items"]
    return said, writes


async def test_the_customer_seat_returns_only_the_tablet_named(tmp_path: Path) -> None:
    said, writes = await said_and_ran(tmp_path, "I'm Mia Garcia, zip code 46281",
                                      "return the black 64GB tablet from order #W4821001", "yes", "###STOP###")
    assert [w["item_ids"] for w in writes] == [["2000000012"]]
    assert any("return item(s)" in s or "return the Tablet (black, 64GB" in s for s in said)


async def test_the_customer_seat_is_asked_which_tablet_when_two_fit(tmp_path: Path) -> None:
    said, writes = await said_and_ran(tmp_path, "I'm Mia Garcia, zip code 46281",
                                      "return the tablet from order #W4821001", "the black one", "yes",
                                      "###STOP###")
    question = next(s for s in said if s.endswith("?") and "Which item" in s)
    assert "Tablet (gold, 128GB, $989.70)" in question and "Tablet (black, 64GB, $549.99)" in question
    assert [w["item_ids"] for w in writes] == [["2000000012"]]
