"""The offline default agent (core.llm.offline_agent): every shipped scenario, under every kind of operator
decision, reaches a clean end; the default run is the scripted demo, byte for byte; same input, same trace.

Runs through core's Session with the scenario's customer and the domain's reader, exactly as the console
(`console/runtime/live.py`) and `ledgeragent run` build them; the supervisor is a script that overrides the first gated
write. On the previous agent (`ScriptedChatModel`) every veto, edit and force-allow ended in "scenario diverged"
(see `test_the_strict_script_still_diverges`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.agent import AgentConfig
from core.evidence import EvidenceMode
from core.llm.base import ChatModel
from core.llm.offline_agent import OfflineAgent, find_dates, find_emails, find_names, plain
from core.llm.scripted import ScriptedStep
from core.scenario import list_scenarios, load_scenario
from core.users import HumanUser, ScriptedUser, UserProxy
from domains.registry import load_domain, load_offline_reader
from tests.support.scenario_runs import DECISIONS, SCENARIOS, agent_text, run


def test_twelve_scenarios_three_per_domain() -> None:
    assert len(SCENARIOS) == 12
    assert {domain for domain, _ in SCENARIOS} == {"airline", "retail", "telecom", "telehealth"}


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize(("domain", "name"), SCENARIOS)
async def test_every_scenario_under_every_decision_ends_cleanly(domain: str, name: str, decision: str,
                                                                 tmp_path: Path) -> None:
    reason, events, _ = await run(domain, name, tmp_path, decision=decision)
    assert reason == "user_stop", events[-1]
    assert not [e for e in events if e["type"] == "model_error"]
    last_customer = [e["text"] for e in events if e["type"] == "message" and e["role"] == "user"][-1]
    assert "###STOP###" in last_customer  # the customer ended it
    overrides = [e for e in events if e["type"] == "supervisor_decision"]
    if decision == "approve":
        scenario = load_scenario(list_scenarios(load_domain(domain).scenarios_dir)[name])
        assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == scenario.expect.verdicts
        assert overrides == []
    else:
        assert [e["decision"] for e in overrides] == [decision]


@pytest.mark.parametrize(("domain", "name"), SCENARIOS)
async def test_the_default_run_is_the_scripted_demo_byte_for_byte(domain: str, name: str, tmp_path: Path) -> None:
    """Approving everything, the adaptive agent makes exactly the scripted demo's turns: same trace bytes."""
    scenario = load_scenario(list_scenarios(load_domain(domain).scenarios_dir)[name])
    _, _, adaptive = await run(domain, name, tmp_path / "adaptive")
    _, _, scripted = await run(domain, name, tmp_path / "scripted", model=scenario.build_script())
    assert adaptive == scripted


@pytest.mark.parametrize("decision", ("veto", "edit", "force_allow"))
async def test_same_input_same_trace(decision: str, tmp_path: Path) -> None:
    _, _, first = await run("retail", "exchange-unavailable-variant", tmp_path / "a", decision=decision)
    _, _, second = await run("retail", "exchange-unavailable-variant", tmp_path / "b", decision=decision)
    assert first == second


async def test_the_strict_script_still_diverges(tmp_path: Path) -> None:
    """What the console used before: the scenario's steps played strictly stop at the first veto."""
    scenario = load_scenario(list_scenarios(load_domain("retail").scenarios_dir)["refund-to-original-payment"])
    reason, events, _ = await run("retail", "refund-to-original-payment", tmp_path, decision="veto",
                                  model=scenario.build_script())
    assert reason == "script_diverged"
    assert "scenario diverged before agent step 6" in events[-1]["detail"]


async def test_a_veto_is_told_to_the_customer_and_the_plan_goes_on(tmp_path: Path) -> None:
    reason, events, _ = await run("retail", "refund-to-original-payment", tmp_path, decision="veto")
    said = agent_text(events)
    assert ("I have not gone ahead to return the Tablet (gold, 128GB, $989.70) from order #W4821001 with the refund "
            "to your Mastercard ending 2732: a supervisor stopped it (hold on, not this one). Nothing was changed. "
            "How would you like to go on?") in said
    # the customer then accepts the gift card (the scenario's next line): the plan's corrected return runs
    results = [e for e in events if e["type"] == "tool_result" and e["call"]["name"] == "return_delivered_order_items"]
    assert [(r["outcome"], r["call"]["arguments"]["payment_method_id"]) for r in results] == [
        ("vetoed", "credit_card_4821002"), ("ok", "gift_card_4821001")]
    assert reason == "user_stop"


async def test_a_force_allow_is_reported_from_the_real_result(tmp_path: Path) -> None:
    """Force-allowing the BLOCKed cancel of another customer's order: the agent does not tell the plan's story
    ("I can't cancel it"); it reads the order back and says what the tools show."""
    _, events, _ = await run("retail", "other-customers-order", tmp_path, decision="force_allow")
    said = agent_text(events)
    assert ("Done: I went ahead to cancel order #W4821002 (reason: no longer needed). Order #W4821002 is "
            "cancelled: T-Shirt (blue, M, $49.99). Is there anything else I can help with?") in said
    assert not any("I can't cancel" in text for text in said)
    reads = [e["call"] for e in events if e["type"] == "tool_result"][-1]
    assert reads == {**reads, "name": "get_order_details", "arguments": {"order_id": "#W4821002"}}


async def test_an_edit_continues_from_the_result_that_came_back(tmp_path: Path) -> None:
    """The operator edits the over-cap refuel to 2 GB: it runs, and the agent says so, naming the edit."""
    _, events, _ = await run("telecom", "refuel-over-cap", tmp_path, decision="edit")
    said = agent_text(events)
    assert any(text.startswith("Done: a supervisor changed my request, and I went ahead to add 2.0 GB of data to "
                               "line L2002.") for text in said)


async def test_an_edited_call_the_gate_revises_is_retried_after_the_reads_it_names(tmp_path: Path) -> None:
    """Gate feedback: REVISE naming reads (the provider's schedule, the patient's calendar) gets those reads
    and the same (edited) call again, which the gate then ALLOWs."""
    _, events, _ = await run("telehealth", "schedule-after-checking", tmp_path, decision="edit")
    calls = [(e["call"]["name"], e["outcome"]) for e in events if e["type"] == "tool_result"]
    assert calls[2:6] == [("schedule_appointment", "rejected"), ("get_provider_details", "ok"),
                          ("list_patient_appointments", "ok"), ("schedule_appointment", "ok")]
    assert any("Done: a supervisor changed my request, and I went ahead to book a follow up with "
               "dr_lindqvist_primary on 2025-05-29 at 11:00." in text for text in agent_text(events))


async def test_without_a_gate_the_agent_relays_the_tools_own_answer(tmp_path: Path) -> None:
    reason, events, _ = await run("telehealth", "cancel-completed-appointment", tmp_path,
                                  config=AgentConfig(ledger=False, gate=False))
    assert reason == "user_stop"
    assert any("Appointment APPT003 is completed and cannot be cancelled" in text for text in agent_text(events))


# -- the customer seat: what a human types ----------------------------------------------------------------


def typed(*lines: str) -> HumanUser:
    """The console's customer seat, with the operator's messages already typed."""
    human = HumanUser()
    for line in lines:
        human.say(line)
    return human


async def converse(domain: str, scenario: str, tmp_path: Path, *lines: str, decision: str = "approve",
                   model: ChatModel | None = None) -> list[dict[str, Any]]:
    reason, events, _ = await run(domain, scenario, tmp_path, user=typed(*lines, "###STOP###"), decision=decision,
                                  model=model)
    assert reason == "user_stop"
    return events


def reads(events: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(e["call"]["name"], e["call"]["arguments"]) for e in events if e["type"] == "tool_result"]


async def test_typed_name_and_zip_then_an_order_to_cancel(tmp_path: Path) -> None:
    events = await converse("retail", "refund-to-original-payment", tmp_path,
                            "Hello, I'm Mia Garcia, zip 46281", "Please cancel order #W4821002", "yes")
    assert reads(events)[:3] == [
        ("find_user_id_by_name_zip", {"first_name": "Mia", "last_name": "Garcia", "zip": "46281"}),
        ("get_user_details", {"user_id": "mia_garcia_4821"}),
        ("get_order_details", {"order_id": "#W4821002"})]
    said = agent_text(events)
    assert said[0] == ("I found your account, Mia Garcia (mia_garcia_4821); your orders: #W4821001, #W4821002. "
                       "What would you like me to do?")
    assert said[1] == ("Order #W4821002 is pending: T-Shirt (blue, M, $49.99). To confirm: shall I cancel order "
                       "#W4821002 (reason: no longer needed)?")
    assert said[2].startswith("Done: I went ahead to cancel order #W4821002")
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == ["ALLOW"]


async def test_typed_email_is_used_not_the_scripts(tmp_path: Path) -> None:
    """The scenario's script identifies Mia by name and zip; the operator types Noah's email: the agent looks up
    Noah, never Mia."""
    events = await converse("retail", "refund-to-original-payment", tmp_path, "hi, noah.kim@example.com here")
    assert reads(events) == [("find_user_id_by_email", {"email": "noah.kim@example.com"}),
                             ("get_user_details", {"user_id": "noah_kim_3107"})]


async def test_text_it_cannot_use_gets_a_plain_answer(tmp_path: Path) -> None:
    events = await converse("retail", "refund-to-original-payment", tmp_path, "purple monkey dishwasher")
    assert reads(events) == []
    assert agent_text(events)[0].startswith("I'm sorry, I did not understand that. I can find your account from "
                                            "your email")


async def test_a_typed_request_the_gate_blocks_is_explained(tmp_path: Path) -> None:
    events = await converse("airline", "unobserved-flight", tmp_path, "my user id is julia_reyes_4521",
                            "I want to cancel UX789J", "yes please")
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == ["BLOCK"]
    assert agent_text(events)[-1].startswith("I'm sorry, I can't cancel reservation UX789J: our policy does not "
                                             "allow it. Reservation UX789J (economy) was booked on")


async def test_a_typed_request_can_be_vetoed_too(tmp_path: Path) -> None:
    events = await converse("telecom", "refuel-over-cap", tmp_path, "Hi, this is 555-210-3001",
                            "please turn on roaming", "yes", decision="veto")
    said = agent_text(events)
    assert said[1] == "To confirm: shall I turn on roaming on line L2001?"
    assert said[2] == ("I have not gone ahead to turn on roaming on line L2001: a supervisor stopped it (hold on, "
                       "not this one). Nothing was changed. How would you like to go on?")


async def test_typed_name_and_date_of_birth(tmp_path: Path) -> None:
    events = await converse("telehealth", "schedule-after-checking", tmp_path,
                            "Tomas Herrera, born February 3, 1979", "what about APPT003?")
    assert reads(events) == [
        ("find_patient_by_name_dob", {"first_name": "Tomas", "last_name": "Herrera", "date_of_birth": "1979-02-03"}),
        ("get_patient_details", {"patient_id": "tomas_herrera_3391"}),
        ("get_appointment_details", {"appointment_id": "APPT003"})]
    assert "Appointment APPT003: a consultation with Claire Moreau, MD on 2025-05-13 at 11:00, completed." in \
        agent_text(events)[1]


async def test_typing_the_scripts_yes_keeps_the_plan(tmp_path: Path) -> None:
    """A human typing the script's first line and then a plain "yes" gets the demo (same gate verdicts)."""
    scenario = load_scenario(list_scenarios(load_domain("retail").scenarios_dir)["other-customers-order"])
    events = await converse("retail", "other-customers-order", tmp_path, scenario.customer_lines()[0], "yes")
    assert [e["verdict"] for e in events if e["type"] == "gate_decision"] == ["BLOCK"]


# -- the pieces -------------------------------------------------------------------------------------------


def test_text_patterns() -> None:
    text = "Hi! I'm Mia Garcia, zip code 46281, MIA.garcia@Example.com; born 3 February 1979 (or 1979-02-04?)"
    assert find_names(text)[0] == ("Mia", "Garcia")
    assert find_emails(text) == ["mia.garcia@example.com"]
    assert find_dates(text) == ["1979-02-03", "1979-02-04"]
    assert find_names("hello there") == []


async def test_without_a_reader_typed_text_is_not_understood_and_says_so() -> None:
    agent = OfflineAgent([ScriptedStep(say="Hello.")], script=["hi"])
    turn = await agent.complete([{"role": "user", "content": "something else"}], [])
    assert turn.text == "I'm sorry, I did not understand that: offline, I can only follow this demo's script."


async def test_a_scripted_user_still_gets_the_plan_without_a_script_to_compare(tmp_path: Path) -> None:
    """`script=None` (tests, or a plan without customer lines): the plan is followed whatever the customer says."""
    agent = OfflineAgent([ScriptedStep(say="Hello."), ScriptedStep(say="Bye.")])
    first = await agent.complete([{"role": "user", "content": "anything"}], [])
    second = await agent.complete([{"role": "user", "content": "anything"}, {"role": "assistant", "content": "Hello."},
                                   {"role": "user", "content": "more"}], [])
    assert (first.text, second.text) == ("Hello.", "Bye.")
    assert isinstance(ScriptedUser(["x"]), UserProxy)


async def test_without_a_plan_the_agent_works_from_typed_text_alone(tmp_path: Path) -> None:
    """Free chat offline: no scenario plan at all, only the domain's reader."""
    agent = OfflineAgent([], reader=load_offline_reader("telehealth"))
    events = await converse("telehealth", "schedule-after-checking", tmp_path, "I'm marcus.feld@example.org",
                            "show me REC003", model=agent)
    assert reads(events) == [("find_patient_by_email", {"email": "marcus.feld@example.org"}),
                             ("get_patient_details", {"patient_id": "marcus_feld_7702"}),
                             ("get_medical_record", {"record_id": "REC003"})]
    assert agent_text(events)[1] == ("Record REC003 (2025-04-22, Samir Haddad, MD) prescribes: Atorvastatin, "
                                     "Warfarin. What would you like me to do?")


async def test_a_typed_conversation_is_deterministic(tmp_path: Path) -> None:
    lines = ("Hi, this is 555-210-3001", "add 2 GB to 555-210-3002", "yes", "hmm")
    first = await run("telecom", "refuel-over-cap", tmp_path / "a", user=typed(*lines, "###STOP###"))
    second = await run("telecom", "refuel-over-cap", tmp_path / "b", user=typed(*lines, "###STOP###"))
    assert first[2] == second[2]
    # a typed request gets gate feedback like any call: REVISE names the plan read, the agent reads and retries
    assert [e["verdict"] for e in first[1] if e["type"] == "gate_decision"] == ["REVISE", "ALLOW"]
    assert reads(first[1])[4:7] == [
        ("refuel_data", {"customer_id": "C2001", "gb_amount": 2.0, "line_id": "L2002"}),
        ("get_details_by_id", {"id": "P2001"}),
        ("refuel_data", {"customer_id": "C2001", "gb_amount": 2.0, "line_id": "L2002"})]


# -- what the customer reads: plain language, while the gate pane keeps the exact reason -------------------

AIRLINE_CANCEL = ("reservation UX789J (economy) was booked at 2024-05-10T09:12:00, 5 days 5 h 48 min 0 s before now "
                  "(2024-05-15T15:00:00), past the 24-hour window (reservations.UX789J.created_at), has no travel "
                  "insurance and is not business, and the airline cancelled none of its flights (HAT142 2024-05-17: "
                  "available (flights.HAT142.2024-05-17.status)); it cannot be cancelled outside the 24-hour window")
RETAIL_REFUND = ("refunds must go to the original payment (['gift_card_4821001']) or an existing gift card "
                 "(['gift_card_4821001', 'gift_card_7']); you chose 'credit_card_4821002' "
                 "(orders.#W4821001.payment_history[0].payment_method_id, gift cards in user.payment_methods)")


@pytest.mark.parametrize(("reason", "said"), [
    (AIRLINE_CANCEL, "reservation UX789J (economy) was booked on 2024-05-10 at 09:12, 5 days, 5 hours and 48 minutes "
                     "before now (2024-05-15 at 15:00), past the 24-hour window, has no travel insurance and is not "
                     "business, and the airline cancelled none of its flights (HAT142 2024-05-17: available); it "
                     "cannot be cancelled outside the 24-hour window"),
    (RETAIL_REFUND, "refunds must go to the original payment (gift_card_4821001) or an existing gift card "
                    "(gift_card_4821001 or gift_card_7); you chose credit_card_4821002"),
    ("order #W4821001 has status 'delivered' (orders.#W4821001.status); only 'pending' orders can be cancelled",
     'order #W4821001 has status "delivered"; only "pending" orders can be cancelled'),
    ("variant '2000000013' of Tablet {'color': 'silver', 'storage': '256GB'} is not available "
     "(products.1000000001.variants.2000000013.available is False)",
     "variant 2000000013 of Tablet (color: silver, storage: 256GB) is not available"),
    ("payment methods ['a_1', 'b_2'] are not in the profile", "payment methods a_1 and b_2 are not in the profile"),
    ("booked 24 h 0 min 1 s before now", "booked 24 hours and 1 second before now"),
    ("your link is https://telehealth.healthcenter.com/room/APPT031 (mia.garcia@example.com)",
     "your link is https://telehealth.healthcenter.com/room/APPT031 (mia.garcia@example.com)"),
])
def test_a_gate_reason_in_plain_words(reason: str, said: str) -> None:
    assert plain(reason) == said


MACHINE_TEXT = re.compile(r"\['|\{'|\d+ h \d+ min|(?<![\w/.@])[a-z_]+\.(?:#?\w+\.)+[a-z_]+\b(?![@.\w])|\[\d+\]\.")


@pytest.mark.parametrize("decision", (*DECISIONS, "veto_allow"))
@pytest.mark.parametrize(("domain", "name"), SCENARIOS)
async def test_what_the_customer_reads_carries_no_machine_text(domain: str, name: str, decision: str,
                                                               tmp_path: Path) -> None:
    _, events, _ = await run(domain, name, tmp_path, decision=decision)
    for text in agent_text(events):
        assert not MACHINE_TEXT.search(text), text


CUSTOMER_MUST_NOT_READ = re.compile(r"NOTE:|gate read|orders\.#W|users\.|reservations\.|\['|\[\"")


@pytest.mark.parametrize("decision", (*DECISIONS, "veto_allow"))
@pytest.mark.parametrize(("domain", "name"), SCENARIOS)
async def test_with_evidence_assist_the_customer_reads_no_gate_note(domain: str, name: str, decision: str,
                                                                    tmp_path: Path) -> None:
    """The executor tells the model which reads the gate made itself ("NOTE: before judging this call the gate
    read …"): that line is for the agent, never the customer's. In assist mode (`ledgeragent run --evidence
    assist`) every scenario, under every operator decision, speaks to the customer in plain words only, and a
    refusal that follows a gate read is still told as a refusal."""
    config = AgentConfig(evidence=EvidenceMode.ASSIST)
    _, events, _ = await run(domain, name, tmp_path, decision=decision, config=config)
    assert [e for e in events if e["type"] == "tool_result" and e.get("by") == "gate"] or decision != "approve" \
        or name not in GATE_READS, "the scenario has a read the gate makes itself"
    for text in agent_text(events):
        assert not CUSTOMER_MUST_NOT_READ.search(text), text
        assert not MACHINE_TEXT.search(text), text
    noted = {e["call"]["id"]: e for e in events if e["type"] == "tool_result" and e["content"].startswith("NOTE:")}
    for turn in (e for e in events if e["type"] == "assistant_turn" and e["text"]):
        if any(c in noted and not noted[c]["ok"] for c in previous_calls(events, turn)):
            assert not turn["text"].startswith("Done"), turn["text"]  # a failed or refused write is never done


GATE_READS = {"unobserved-flight", "overdue-bill-resume", "roaming-abroad"}  # the gate reads for their writes


def previous_calls(events: Sequence[dict[str, Any]], turn: dict[str, Any]) -> list[str]:
    """The ids of the calls of the assistant turn before `turn`."""
    turns = [e for e in events if e["type"] == "assistant_turn"]
    index = turns.index(turn)
    return [c["id"] for c in turns[index - 1]["tool_calls"]] if index else []


def test_ledgeragent_run_with_evidence_assist_tells_the_customer_no_gate_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The same through the command line, as an operator runs it: `ledgeragent run --evidence assist --json`."""
    import json

    from console.cli.main import main

    monkeypatch.setenv("LEDGERAGENT_HOME", str(tmp_path / "home"))
    for domain, name in SCENARIOS:
        capsys.readouterr()
        assert main(["run", "--domain", domain, "--scenario", name, "--evidence", "assist", "--json",
                     "--out", str(tmp_path / name)]) == 0
        events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        said = agent_text(events)
        assert said and events[0]["evidence"] == "assist"
        for text in said:
            assert not CUSTOMER_MUST_NOT_READ.search(text) and not MACHINE_TEXT.search(text), (name, text)
