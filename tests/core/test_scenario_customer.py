"""The scenario's customer stays in step after an operator override (core/scenario.py, core/users.py `Variant`).

A scenario's customer lines are written for the expected path. After a veto, an edit or a force-allow the offline
agent truthfully says something else, and each line may carry variants chosen by what the agent's last message
says. These tests run every shipped scenario through core's Session on the real SQLite backend with a scripted
operator (tests/support/scenario_runs.py), and check:

- for a few (domain, scenario, override) pairs, that the customer's reply matches what the agent said;
- over all 12 scenarios x {veto, edit, force-allow, and a veto of the first ALLOWed call}, that no customer line
  after the override is a line written for another point of the conversation (defined in
  `test_no_line_written_for_another_outcome_after_an_override`);
- that the expected path (approve everything) is the transcript it was before variants existed, message for
  message (tests/core/data/scenario_expected_paths.json, recorded from the code before them);
- that a malformed variant is refused at load with one line naming the file and the customer line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from core.scenario import CUSTOMER_LEAVES, Scenario, ScenarioError, list_scenarios, load_scenario
from core.users import STOP, ScriptedAction, ScriptedTurn, ScriptedUser, Utterance, Variant
from domains.registry import load_domain
from tests.support.scenario_runs import SCENARIOS, NthWriteOverride, agent_text, run

OVERRIDES = ("veto", "edit", "force_allow", "veto_allow")  # veto_allow: the console's veto of the corrected call
EXPECTED_PATHS = Path(__file__).parent / "data" / "scenario_expected_paths.json"
NOT_UNDERSTOOD = "I did not understand"


def scenario_of(domain: str, name: str) -> Scenario:
    return load_scenario(list_scenarios(load_domain(domain).scenarios_dir)[name])


def conversation(events: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """The transcript as the customer and a stakeholder see it: (role, text), greeting included."""
    return [("user" if e["type"] == "message" and e["role"] == "user" else "assistant", e["text"])
            for e in events if e["type"] in ("message", "assistant_turn") and e.get("text")]


def replies(events: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each customer message with the agent message it answers: (agent's last message, customer's message)."""
    pairs: list[tuple[str, str]] = []
    last = ""
    for role, text in conversation(events):
        if role == "assistant":
            last = text
        else:
            pairs.append((last, text))
    return pairs


def after_override(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events from the operator's first override on."""
    first = next(i for i, e in enumerate(events) if e["type"] == "supervisor_decision")
    return list(events[first:])


@pytest.fixture(scope="module")
def approved_runs() -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The expected path (approve everything) of each scenario, run once for the module's override tests: the
    same scenario gives the same events, byte for byte, so each override compares with that one run (the
    expected-path test below runs it afresh and checks it against the recorded transcript)."""
    return {}


async def approved(runs: dict[tuple[str, str], list[dict[str, Any]]], domain: str, name: str,
                   folder: Path) -> list[dict[str, Any]]:
    if (domain, name) not in runs:
        runs[domain, name] = (await run(domain, name, folder))[1]
    return runs[domain, name]


def reply_to(events: Sequence[dict[str, Any]], agent_says: str) -> str:
    """The customer's answer to the first agent message containing `agent_says`."""
    return next(said for heard, said in replies(events) if agent_says in heard)


# -- the customer answers what the agent really said -------------------------------------------------------


async def test_after_a_force_allowed_cancel_the_customer_does_not_say_my_mistake(tmp_path: Path) -> None:
    _, events, _ = await run("retail", "other-customers-order", tmp_path, decision="force_allow")
    answer = reply_to(events, "Done: I went ahead to cancel order #W4821002")
    assert "my mistake" not in answer.lower()
    assert answer == "Oh, good, thank you. That's all. ###STOP###"


async def test_after_a_force_allowed_flight_cancel_the_customer_does_not_thank_for_an_explanation(
        tmp_path: Path) -> None:
    _, events, _ = await run("airline", "cancel-outside-window", tmp_path, decision="force_allow")
    answer = reply_to(events, "Done: I went ahead to cancel reservation UX789J")
    assert answer == "Oh, so it is cancelled after all. Thank you, that's all. ###STOP###"


async def test_after_an_edited_refuel_ran_the_customer_does_not_ask_for_it_again(tmp_path: Path) -> None:
    """The operator edits the over-cap 5 GB to 2 GB and it runs: the script's "OK, 2 GB then." (written for the
    REVISE) would have the agent propose a second 2 GB; the customer closes instead, and one refuel ran."""
    _, events, _ = await run("telecom", "refuel-over-cap", tmp_path, decision="edit")
    answer = reply_to(events, "I went ahead to add 2.0 GB of data to line L2002")
    assert answer == "Thank you, that's all. ###STOP###"
    ran = [e for e in events
           if e["type"] == "tool_result" and e["call"]["name"] == "refuel_data" and e["outcome"] == "ok"]
    assert len(ran) == 1
    assert not any("To confirm" in text for text in agent_text(after_override(events)))


async def test_after_a_veto_the_customer_does_not_answer_a_rule_never_told(tmp_path: Path) -> None:
    """Vetoed, the agent never mentioned the refund rule: the customer does not say "That's annoying, but fine",
    asks for the gift card itself, and the plan's corrected return still runs."""
    _, events, _ = await run("retail", "refund-to-original-payment", tmp_path, decision="veto")
    answer = reply_to(events, "a supervisor stopped it")
    assert answer == "Hmm. Then refund it to the gift card I paid with, please."
    returns = [(e["outcome"], e["call"]["arguments"]["payment_method_id"]) for e in events
               if e["type"] == "tool_result" and e["call"]["name"] == "return_delivered_order_items"]
    assert returns == [("vetoed", "credit_card_4821002"), ("ok", "gift_card_4821001")]


async def test_after_an_edited_supplier_update_the_agent_is_not_told_to_do_it_again(tmp_path: Path) -> None:
    _, events, _ = await run("telehealth", "unobserved-supplier-price", tmp_path, decision="edit")
    answer = reply_to(events, "I went ahead to set the supplier")
    assert answer == "Thank you, that's all. ###STOP###"
    assert not any(NOT_UNDERSTOOD in text for text in agent_text(events))


async def test_a_vetoed_phone_step_ends_the_call_instead_of_checking_a_request_never_sent(tmp_path: Path) -> None:
    """Telecom: the veto stops the payment request, so the customer does not open a payment request on the phone
    (the script's next step); the action's variant says goodbye and no phone action runs."""
    _, events, _ = await run("telecom", "overdue-bill-resume", tmp_path, decision="veto")
    answer = reply_to(events, "a supervisor stopped it")
    assert answer == "All right, I'll wait to hear from you then. That's all for now. ###STOP###"
    assert not [e for e in events if e["type"] == "tool_result" and e["call"].get("requestor") == "user"]


# -- every scenario x every override ---------------------------------------------------------------------


def has_allow(domain: str, name: str) -> bool:
    return "ALLOW" in (scenario_of(domain, name).expect.verdicts or [])


CASES = [(domain, name, decision) for domain, name in SCENARIOS for decision in OVERRIDES
         if decision != "veto_allow" or has_allow(domain, name)]  # without an ALLOW there is nothing to veto


def test_the_table_covers_every_scenario_and_the_consoles_veto_where_there_is_an_allow() -> None:
    assert len(CASES) == 12 * 3 + 8


@pytest.mark.parametrize(("domain", "name", "decision"), CASES)
async def test_no_line_written_for_another_outcome_after_an_override(
        domain: str, name: str, decision: str, tmp_path: Path,
        approved_runs: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    """Precisely: on the expected path (approve everything) each scripted line answers one agent message, its
    *context*. After the operator's first override, a customer message that is a scripted line as written must
    answer that line's context; said after any other agent message, it is a line written for another outcome.
    Also, the conversation must read as one: the agent never answers "I did not understand" and the customer
    never has to walk out with CUSTOMER_LEAVES (a variant fitted)."""
    expected = await approved(approved_runs, domain, name, tmp_path / "expected")
    _, events, _ = await run(domain, name, tmp_path / "override", decision=decision)
    assert_in_step(domain, name, expected, events)


def assert_in_step(domain: str, name: str, expected: Sequence[dict[str, Any]],
                   events: Sequence[dict[str, Any]]) -> None:
    """See `test_no_line_written_for_another_outcome_after_an_override`; `expected`: the approve run's events."""
    context = {said: heard for heard, said in replies(expected)}
    assert set(context) == set(scenario_of(domain, name).customer_lines())  # each line said once, as written
    tail = after_override(events)
    for heard, said in replies(tail):
        if said in context:
            assert heard == context[said], f"{said!r} was written for {context[said]!r}, said after {heard!r}"
        assert said != CUSTOMER_LEAVES, f"no variant fits {heard!r}"
    assert not [text for text in agent_text(tail) if NOT_UNDERSTOOD in text]
    assert [e["reason"] for e in events if e["type"] == "session_ended"] == ["user_stop"]


WRITES = [(domain, name, n) for domain, name in SCENARIOS
          for n in range(1, len(scenario_of(domain, name).expect.verdicts or []) + 1)]


@pytest.mark.parametrize("decision", ("veto", "force_allow"))
@pytest.mark.parametrize(("domain", "name", "n"), WRITES)
async def test_a_veto_or_force_allow_of_any_gated_write_keeps_the_customer_in_step(
        domain: str, name: str, n: int, decision: str, tmp_path: Path,
        approved_runs: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    """The same check when the operator overrides the n-th gated write of the expected path, not only the first
    (persistent-refund-demand has three BLOCKs; the console's operator may override any of them)."""
    expected = await approved(approved_runs, domain, name, tmp_path / "expected")
    _, events, _ = await run(domain, name, tmp_path / "override", supervisor=NthWriteOverride(decision, n))
    assert [e["decision"] for e in events if e["type"] == "supervisor_decision"] == [decision]
    assert_in_step(domain, name, expected, events)


# -- the expected path is unchanged ------------------------------------------------------------------------


@pytest.mark.parametrize(("domain", "name"), SCENARIOS)
async def test_the_expected_path_is_the_transcript_recorded_before_variants(domain: str, name: str,
                                                                            tmp_path: Path) -> None:
    """Approving everything, no variant fits: the transcript is the one recorded from the code before variants
    existed, message for message, and the customer says exactly its scripted lines."""
    recorded = json.loads(EXPECTED_PATHS.read_text(encoding="utf-8"))[f"{domain}/{name}"]
    _, events, _ = await run(domain, name, tmp_path)
    assert [{"role": role, "text": text} for role, text in conversation(events)] == recorded
    assert [said for _, said in replies(events)] == scenario_of(domain, name).customer_lines()


# -- the scripted user's choice ----------------------------------------------------------------------------


def heard(text: str) -> list[Utterance]:
    return [Utterance("assistant", text)]


async def test_the_first_fitting_variant_is_said_else_the_line() -> None:
    line = ScriptedTurn("Oh, my mistake.", variants=(Variant(("went ahead to",), "Thanks!"),
                                                     Variant(("nothing was changed", "stopped it"), "All right.")))
    assert await ScriptedUser([line]).respond(heard("Done: I WENT AHEAD TO cancel it.")) == "Thanks!"
    assert await ScriptedUser([line]).respond(heard("A supervisor stopped it.")) == "All right."
    assert await ScriptedUser([line]).respond(heard("I can't: not your order.")) == "Oh, my mistake."


async def test_a_variant_takes_its_lines_place_and_the_script_goes_on() -> None:
    user = ScriptedUser([ScriptedTurn("OK, 2 GB then.", variants=(Variant(("stopped it",), "A smaller one?"),)),
                         "Great, thanks!"])
    assert await user.respond(heard("A supervisor stopped it.")) == "A smaller one?"
    assert await user.respond(heard("Done: 2 GB added.")) == "Great, thanks!"
    assert await user.respond(heard("Anything else?")) == STOP


async def test_a_phone_actions_variant_is_the_last_thing_said() -> None:
    user = ScriptedUser([ScriptedAction("check_payment_request", variants=(Variant(("stopped it",), f"Bye. {STOP}"),)),
                         "I've paid it."])
    assert await user.respond(heard("A supervisor stopped it.")) == f"Bye. {STOP}"  # no phone needed, none used
    assert await user.respond(heard("Hello?")) == STOP


async def test_with_no_fitting_variant_the_customer_leaves_rather_than_say_a_wrong_line(tmp_path: Path) -> None:
    """The airline line "Thanks for explaining" expects the 24-hour rule explained; after a veto, with the
    scenario's variants taken away, the customer ends the conversation neutrally (CUSTOMER_LEAVES)."""
    raw = json.loads(list_scenarios(load_domain("airline").scenarios_dir)["cancel-outside-window"].read_text())
    raw["user"] = [{k: v for k, v in t.items() if k != "variants"} if isinstance(t, dict) else t for t in raw["user"]]
    bare = Scenario.model_validate(raw)
    reason, events, _ = await run("airline", "cancel-outside-window", tmp_path, decision="veto",
                                  user=bare.build_user())
    assert reason == "user_stop" and replies(events)[-1][1] == CUSTOMER_LEAVES


# -- strict loading ----------------------------------------------------------------------------------------


def scenario_file(tmp_path: Path, user: list[Any]) -> Path:
    """A scenario file laid out as the shipped ones are, one key per line (json indent), so lines can be named."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"name": "bad", "title": "Bad", "domain": "retail", "user": user,
                                "agent": [{"say": "Hello."}]}, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize(("line", "error"), [
    ({"text": "Hi.", "variants": [{"when_agent_says": "Done"}]},
     "bad.json:10: user.1.variants.0.text (user line 2, variant 1): Field required"),
    ({"text": "Hi.", "variants": [{"when_agent_says": "  ", "text": "Thanks."}]},
     "bad.json:11: user.1.variants.0.when_agent_says (user line 2, variant 1): needs a phrase"),
    ({"text": "Hi.", "variants": [{"when_agent_says": [], "text": "Thanks."}]},
     "bad.json:11: user.1.variants.0.when_agent_says (user line 2, variant 1): needs a phrase"),
    ({"text": "Hi.", "variants": [{"when_agent_says": "Done", "text": ""}]},
     "bad.json:12: user.1.variants.0.text (user line 2, variant 1): a variant needs something to say"),
    ({"text": "Hi.", "variants": [{"when": "Done", "text": "Thanks."}]},
     "bad.json:10: user.1.variants.0.when_agent_says (user line 2, variant 1): Field required"),
    ({"text": "Hi.", "variants": [{"when_agent_says": "Done", "text": "Hi."}]},
     "bad.json:7: user.1 (user line 2): variant 1 says the line's own text"),
    ({"text": "Hi.", "variants": "Thanks."},
     "bad.json:9: user.1.variants (user line 2): Input should be a valid list"),
    ({"call": {"name": "check_payment_request"}, "variants": [{"when_agent_says": "stopped", "text": "OK then."}]},
     "bad.json:7: user.1 (user line 2): variant 1 of a phone action must end the conversation"),
])
def test_a_malformed_variant_is_refused_in_one_line_naming_the_file_and_the_line(
        line: dict[str, Any], error: str, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario_file(tmp_path, ["Hello.", line]))
    message = str(caught.value)
    assert "\n" not in message
    assert error in message, message


def test_the_error_names_the_line_of_a_file_laid_out_by_hand(tmp_path: Path) -> None:
    """The layout of the shipped scenarios (several keys on a line): the line of the variant that lacks its text."""
    path = tmp_path / "hand.json"
    path.write_text("""{
  "name": "hand", "title": "Hand", "domain": "retail",
  "user": [
    "Hello.",
    {"text": "Hi.",
     "variants": [
       {"when_agent_says": "went ahead to", "text": "Thanks. ###STOP###"},
       {"when_agent_says": "Nothing was changed"}
     ]}
  ],
  "agent": [{"say": "Hello."}]
}
""", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == f"{path}:8: user.1.variants.1.text (user line 2, variant 2): Field required"


def test_well_formed_variants_load_and_build(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, ["Hello.", {"text": "Hi.", "variants": [
        {"when_agent_says": ["Done", "went ahead"], "text": "Thanks.", "note": "after a force-allow"}]}])
    scenario = load_scenario(path)
    assert scenario.customer_lines() == ["Hello.", "Hi."]
    assert scenario.customer_alternatives() == [("Hello.",), ("Hi.", "Thanks.")]
    assert scenario.build_user().turns[1] == ScriptedTurn("Hi.", variants=(Variant(("Done", "went ahead"), "Thanks."),))


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "1e999"])
def test_a_scenario_with_a_number_that_is_not_finite_is_refused(bad: str, tmp_path: Path) -> None:
    """Python's json reads NaN, Infinity and 1e999 as floats; a scenario file is strict JSON like every input."""
    path = tmp_path / "nan.json"
    path.write_text('{"name": "nan", "title": "N", "domain": "retail", "user": ["Hello."], "agent": [{"calls": '
                    '[{"name": "get_order_details", "arguments": {"amount": ' + bad + '}}]}]}', encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value).startswith(f"{path}: not strict JSON (") and "finite" in str(caught.value)
