"""`--scenario chat`: a free conversation with the offline agent in the customer seat, and a message naming the
command that works wherever a seat cannot chat offline."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input

from console.cli.main import main
from console.runtime.live import LiveSession, SessionSpec
from console.tui.app import OperatorConsole
from tests.support.cli import cli_home, one_error_line
from tests.support.pilot import wait_for

FIRST_LINES = {
    "retail": "Hi, I'm Mia Garcia, zip code 46281",
    "airline": "Hello, my user id is julia_reyes_4521",
    "telecom": "Hi, my number is 555-210-3001",
    "telehealth": "Hi, I'm Tomas Herrera, born 1979-02-03",
}


@pytest.mark.parametrize("domain", sorted(FIRST_LINES))
async def test_free_chat_in_the_customer_seat_works_offline(domain: str, tmp_path: Path) -> None:
    spec = SessionSpec(domain=domain, scenario=None, seat="customer")
    assert spec.problems() == []
    live = LiveSession(spec, root=tmp_path)
    for line in (FIRST_LINES[domain], "###STOP###"):
        live.say_as_customer(line)
    result = await live.run()
    assert result.reason == "user_stop"
    assert live.folder is not None
    events = [json.loads(line) for line in (live.folder / "trace.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "session_started" and events[0]["scenario"] is None
    reads = [e for e in events if e["type"] == "tool_result"]
    assert reads and all(e["ok"] for e in reads)  # the agent looked the customer up from what was typed
    said = [e["text"] for e in events if e["type"] == "assistant_turn" and e["text"]]
    assert said and not said[0].startswith("I'm sorry")


async def test_free_chat_returns_the_tablet_named(tmp_path: Path) -> None:
    live = LiveSession(SessionSpec(domain="retail", scenario=None, seat="customer"), root=tmp_path)
    for line in (FIRST_LINES["retail"], "return the black 64GB tablet from order #W4821001", "yes", "###STOP###"):
        live.say_as_customer(line)
    assert (await live.run()).reason == "user_stop"
    assert live.folder is not None
    events = [json.loads(line) for line in (live.folder / "trace.jsonl").read_text().splitlines()]
    ran = [e["call"]["arguments"] for e in events
           if e["type"] == "tool_result" and e["call"]["name"] == "return_delivered_order_items" and e["ok"]]
    assert [r["item_ids"] for r in ran] == [["2000000012"]]


async def test_the_free_chat_card_has_no_script_and_says_enter(console_app: Callable[..., OperatorConsole]) -> None:
    app = console_app(scenario=None, seat="customer")
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.live is not None and bool(app.transcript.items))
        card = app.transcript.items[0]
        assert card.kind == "intro"
        text = " ".join(" ".join(s.text for s in card.strips).split())
        assert "Free chat" in text
        assert "press Enter" in text and "space" not in text
        box = app.query_one("#customer-input", Input)
        assert box.display and app.focused is box
        await pilot.press(*"Hi, I'm Mia Garcia, zip code 46281")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(e.type == "assistant_turn" and e.text for e in app.live.bus.history))  # type: ignore[union-attr]


@pytest.mark.parametrize("argv, command", [
    (["--scenario", "chat"], "ledgeragent console --domain retail --scenario chat --seat customer"),
    (["--scenario", "chat", "--seat", "watch"], "ledgeragent console --domain retail --scenario chat --seat customer"),
    (["--scenario", "chat", "--seat", "agent"],
     "ledgeragent console --domain retail --seat agent --scenario NAME"),
])
def test_a_seat_that_cannot_chat_offline_names_the_command_that_can(
        argv: list[str], command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cli_home(tmp_path, monkeypatch)
    assert main(["console", "--domain", "retail", *argv]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert command in line
    assert "other seat" not in line and "you as agent" not in line


async def said_and_gated(domain: str, tmp_path: Path, *lines: str) -> tuple[list[str], list[dict[str, object]]]:
    live = LiveSession(SessionSpec(domain=domain, scenario=None, seat="customer"), root=tmp_path)
    for line in (*lines, "###STOP###"):
        live.say_as_customer(line)
    assert (await live.run()).reason == "user_stop"
    assert live.folder is not None
    events = [json.loads(line) for line in (live.folder / "trace.jsonl").read_text().splitlines()]
    said = [str(e["text"]) for e in events if e["type"] == "assistant_turn" and e["text"]]
    return said, [e for e in events if e["type"] == "gate_decision"]


async def test_a_refusal_reads_plainly_and_the_gate_keeps_the_exact_span(tmp_path: Path) -> None:
    said, gated = await said_and_gated("airline", tmp_path, FIRST_LINES["airline"], "cancel reservation UX789J",
                                       "yes")
    refusal = next(s for s in said if "can't cancel" in s)
    assert "5 days, 5 hours and 48 minutes" in refusal
    assert "reservations.UX789J" not in refusal and " h 48 min" not in refusal and "T09:12:00" not in refusal
    reason = gated[-1]["results"]
    assert any("5 days 5 h 48 min 0 s" in r["reason"] and "(reservations.UX789J.created_at)" in r["reason"]
               for r in reason)  # type: ignore[index,union-attr]


async def test_a_refund_to_a_card_the_policy_refuses_is_explained_without_list_reprs(tmp_path: Path) -> None:
    said, gated = await said_and_gated("retail", tmp_path, FIRST_LINES["retail"],
                                       "return the gold tablet from #W4821001 and refund it to my Mastercard",
                                       "yes")
    assert [g["verdict"] for g in gated] == ["REVISE"]
    refusal = next(s for s in said if "Nothing was changed" in s)
    assert "gift_card_4821001" in refusal and "['" not in refusal and "payment_history" not in refusal
    assert "your Mastercard ending 2732" in refusal
