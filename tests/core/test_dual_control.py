"""Dual control in the core, on the toy bank with a card app (tests/support/toy_domain.py: DUAL_DOMAIN, DualToyBackend).

The customer's own tools run for the user proxy with requestor "user": never offered to the agent, never gated,
validated and recorded like any call; a successful read lands in the ledger under `device.*`; the backend's
sync hook runs at the start and after every executed call. Scripted, LLM-simulated and human users can all act
on their phone; scenario files and `ledgeragent check` trajectories can say so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from core.agent import AgentConfig
from core.domain import Domain
from core.events import CallInfo, EnvironmentSynced, EventBus, GateDecided, LedgerStaled, ToolResultEvent
from core.executor import CallExecutor, sync_environment
from core.gate import GateContext, LedgerView, Outcome, PolicyGate, Verdict, Violation, predicate
from core.ledger import Ledger, PathMap, PathRule
from core.llm.base import AssistantTurn, Message, ModelError
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.replay import Checker, parse_trajectory
from core.scenario import Scenario, ScenarioError, load_scenario
from core.session import Session, SessionPhone
from core.timeline import LedgerTimeline
from core.tools import Requestor, ToolCall, ToolError
from core.trace import load_trace
from core.users import (
    MAX_PHONE_ROUNDS,
    HumanUser,
    LLMUserSimulator,
    Phone,
    PhoneUser,
    ScriptedAction,
    ScriptedTurn,
    ScriptedUser,
    UserProxy,
)
from tests.support.toy_domain import DOMAIN, DUAL_DOMAIN, DUAL_PATH_MAP, TOOLS, USER_TOOLS, DualToyBackend, ToyBackend

CLOCK = "2026-01-01T00:00:00+00:00"


def c(tool: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(tool, arguments)


def session(steps: Sequence[ScriptedStep], user: UserProxy, tmp_path: Path | None = None, *,
            backend: DualToyBackend | None = None, config: AgentConfig | None = None,
            domain: Domain = DUAL_DOMAIN) -> Session:
    return Session(domain=domain, backend=backend or DualToyBackend(), model=ScriptedChatModel(steps), user=user,
                   config=config, trace_path=None if tmp_path is None else tmp_path / "trace.jsonl",
                   clock=lambda: CLOCK)


def results(s: Session | EventBus) -> list[ToolResultEvent]:
    bus = s if isinstance(s, EventBus) else s.bus
    return [e for e in bus.history if isinstance(e, ToolResultEvent)]


# ---------------------------------------------------------------------------------------------------
# Domain: who is offered what.


def test_user_tools_are_split_from_agent_tools() -> None:
    assert DUAL_DOMAIN.agent_tools() == TOOLS
    assert DUAL_DOMAIN.user_tools() == USER_TOOLS
    assert all(spec.requestor is Requestor.USER for spec in DUAL_DOMAIN.user_tools())
    assert DOMAIN.user_tools() == ()  # a single-control domain: no phone


def test_the_agent_is_offered_only_its_own_tools() -> None:
    s = session([ScriptedStep(say="hi")], ScriptedUser(["hello"]))
    assert [t["function"]["name"] for t in s.agent.tools] == [t.name for t in TOOLS]
    assert s.phone is not None and [t.name for t in s.phone.tools] == ["check_card", "toggle_card_freeze"]
    assert session([ScriptedStep(say="hi")], ScriptedUser(["hello"]), domain=DOMAIN).phone is None


# ---------------------------------------------------------------------------------------------------
# Executor: requestor checks, no gate for the user, validation, events, ledger, sync.


def always_refuse_card_changes() -> Domain:
    """DUAL_DOMAIN plus a rule that would refuse the user's write if user calls were gated."""

    @predicate(id="toy.never_toggle", tools=["toggle_card_freeze"], severity=Verdict.BLOCK, policy="never")
    def never(call: ToolCall, view: LedgerView, ctx: GateContext) -> Outcome:
        return Violation("refused")

    return Domain(name="toy-dual", title="x", policy="", tools=DUAL_DOMAIN.tools, path_map=DUAL_PATH_MAP,
                  predicates=(*DUAL_DOMAIN.predicates, never), identify=DUAL_DOMAIN.identify)


def executor(domain: Domain, backend: DualToyBackend, bus: EventBus, ledger: Ledger | None) -> CallExecutor:
    gate = PolicyGate(domain.predicates, path_map=domain.path_map)
    return CallExecutor(domain, backend, bus, ledger=ledger, gate=gate, clock=lambda: CLOCK)


async def test_requestor_must_match_the_tool() -> None:
    bus, backend = EventBus(), DualToyBackend()
    run = executor(DUAL_DOMAIN, backend, bus, Ledger(DUAL_PATH_MAP))
    agent_on_phone = await run.execute(ToolCall("a1", "toggle_card_freeze", {}), 1)
    user_on_bank = await run.execute(ToolCall("u1", "get_account", {"account_id": "A1"},
                                              requestor=Requestor.USER), 1)
    for outcome in (agent_on_phone, user_on_bank):
        assert (outcome.outcome, outcome.executed, outcome.verdict) == ("invalid", False, "ERROR")
        assert outcome.content == f"Error: Tool '{outcome.call.name}' not found."
    assert backend.calls == [] and backend.state["app"]["card"] == "active"


async def test_a_user_write_is_never_gated_but_is_validated_and_recorded() -> None:
    bus, backend = EventBus(), DualToyBackend()
    domain = always_refuse_card_changes()
    run = executor(domain, backend, bus, Ledger(DUAL_PATH_MAP))
    outcome = await run.execute(ToolCall("u1", "toggle_card_freeze", {}, requestor=Requestor.USER), 3)
    assert (outcome.verdict, outcome.executed, outcome.ok, outcome.decision) == ("ALLOW", True, True, None)
    assert backend.state["app"]["card"] == "frozen"
    assert not [e for e in bus.history if isinstance(e, GateDecided)]
    bad = await run.execute(ToolCall("u2", "toggle_card_freeze", {"really": True}, requestor=Requestor.USER), 3)
    assert bad.outcome == "invalid" and "unexpected argument 'really'" in bad.content
    [first, second] = results(bus)
    assert first.call.requestor == second.call.requestor == "user"
    assert (first.step, first.kind, first.outcome) == (3, "write", "ok")
    # the agent's own write of the same tool would have been gated (and refused, as an unknown tool)
    assert (await run.execute(ToolCall("a1", "toggle_card_freeze", {}), 4)).outcome == "invalid"


async def test_a_user_read_lands_under_device_and_a_user_write_stales_it() -> None:
    bus, backend, ledger = EventBus(), DualToyBackend(), Ledger(DUAL_PATH_MAP)
    run = executor(DUAL_DOMAIN, backend, bus, ledger)
    await run.execute(ToolCall("u1", "check_card", {}, requestor=Requestor.USER), 1)
    entry = ledger.entry("device.card")
    assert entry is not None and entry.value == "Card ending 4242 is active."
    assert (entry.provenance.tool, entry.provenance.call_id) == ("check_card", "u1")
    await run.execute(ToolCall("u2", "toggle_card_freeze", {}, requestor=Requestor.USER), 2)
    assert ledger.entry("device.card") is not None and ledger.entry("device.card").is_stale  # type: ignore[union-attr]
    [staled] = [e for e in bus.history if isinstance(e, LedgerStaled)]
    assert staled.paths == ["device.card"] and staled.tool == "toggle_card_freeze"


async def test_sync_runs_after_every_executed_call_and_reports_only_changes() -> None:
    bus, backend = EventBus(), DualToyBackend()
    run = executor(DUAL_DOMAIN, backend, bus, Ledger(DUAL_PATH_MAP))
    assert await sync_environment(backend, bus, 0) == ("accounts.A1.card: None -> active",)
    await run.execute(ToolCall("u1", "check_card", {}, requestor=Requestor.USER), 1)  # nothing to mirror
    await run.execute(ToolCall("u2", "toggle_card_freeze", {}, requestor=Requestor.USER), 2)
    await run.execute(ToolCall("a1", "get_account", {"account_id": "NOPE"}), 3)  # failed: no sync
    await run.execute(ToolCall("a2", "toggle_card_freeze", {}), 3)  # refused: no sync
    assert backend.syncs == 3
    synced = [e for e in bus.history if isinstance(e, EnvironmentSynced)]
    assert [(e.step, e.changes) for e in synced] == [(0, ["accounts.A1.card: None -> active"]),
                                                     (2, ["accounts.A1.card: active -> frozen"])]
    assert backend.state["accounts"]["A1"]["card"] == "frozen"


async def test_backends_without_a_hook_are_left_alone() -> None:
    bus = EventBus()
    assert await sync_environment(ToyBackend(), bus, 1) == ()
    assert bus.history == []


# ---------------------------------------------------------------------------------------------------
# Sessions with a scripted user who acts on the phone.

AGENT = [
    ScriptedStep(calls=(c("login", name="ann"),)),
    ScriptedStep(say="Please freeze your card in the app and tell me what it says."),
    ScriptedStep(say="Thanks, your card is frozen."),
]


def card_user(*extra: ScriptedTurn | ScriptedAction | str) -> ScriptedUser:
    return ScriptedUser([
        "My card was stolen!",
        ScriptedAction("check_card", expect_agent_contains="freeze your card"),
        ScriptedAction("toggle_card_freeze", expect_result_contains=("now frozen",)),
        "Done, it says my card is now frozen.",
        *extra,
    ])


async def test_scripted_phone_actions_run_before_the_next_line(tmp_path: Path) -> None:
    s = session(AGENT, card_user(), tmp_path)
    result = await s.run()
    assert result.reason == "user_stop", result.detail
    assert s.backend.state["app"]["card"] == "frozen"  # type: ignore[attr-defined]
    user_calls = [e for e in results(s) if e.call.requestor == "user"]
    assert [(e.call.id, e.call.name, e.step, e.kind) for e in user_calls] == [
        ("user_call_1", "check_card", 4, "read"), ("user_call_2", "toggle_card_freeze", 4, "write")]
    # the agent's model saw the reading through the ledger (stale after the toggle), never as a message
    entry = s.ledger.entry("device.card")
    assert entry.value == "Card ending 4242 is active." and entry.is_stale
    assert all("Card ending 4242" not in str(m.get("content")) for m in s.agent.history)
    # order in the trace: the user's actions, then their message, then the agent's next model call
    types = [(e.type, getattr(e, "role", None)) for e in load_trace(tmp_path / "trace.jsonl")]
    second_user_message = [i for i, t in enumerate(types) if t == ("message", "user")][1]
    assert types[second_user_message - 1][0] == "environment_synced"
    assert [e.changes for e in s.bus.history if isinstance(e, EnvironmentSynced)] == [
        ["accounts.A1.card: None -> active"], ["accounts.A1.card: active -> frozen"]]


async def test_the_baseline_runs_phone_actions_but_keeps_no_ledger(tmp_path: Path) -> None:
    s = session(AGENT, card_user(), tmp_path, config=AgentConfig(ledger=False, gate=False))
    assert (await s.run()).reason == "user_stop"
    assert s.backend.state["app"]["card"] == "frozen"  # type: ignore[attr-defined]
    assert len(s.ledger) == 0


async def test_the_phone_result_the_script_expects_is_checked(tmp_path: Path) -> None:
    user = ScriptedUser(["hi", ScriptedAction("check_card", expect_result_contains=("frozen",)), "ok"])
    result = await session(AGENT, user, tmp_path).run()
    assert result.reason == "script_diverged"
    assert "(check_card) expected the phone to show 'frozen'" in result.detail


async def test_a_phone_action_without_a_phone_is_a_clear_divergence(tmp_path: Path) -> None:
    user = ScriptedUser(["hi", ScriptedAction("check_card"), "ok"])
    steps = [ScriptedStep(say="Hello."), ScriptedStep(say="Bye.")]
    result = await session(steps, user, tmp_path, domain=DOMAIN, backend=DualToyBackend()).run()
    assert result.reason == "script_diverged"
    assert "phone action (check_card), but this session gives the user no phone tools" in result.detail


async def test_a_bad_phone_action_is_reported_to_the_user_not_raised(tmp_path: Path) -> None:
    user = ScriptedUser(["hi", ScriptedAction("transfer", {"account_id": "A1", "amount": 5},
                                              expect_result_contains=("not found",)), "never mind"])
    s = session([ScriptedStep(say="Hello."), ScriptedStep(say="OK.")], user, tmp_path)
    assert (await s.run()).reason == "user_stop"
    [refused] = [e for e in results(s) if e.call.requestor == "user"]
    assert refused.outcome == "invalid" and refused.content == "Error: Tool 'transfer' not found."
    assert s.backend.state["accounts"]["A1"]["balance"] == 100.0  # type: ignore[attr-defined]


async def test_traces_with_phone_actions_are_byte_identical(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        await session(AGENT, card_user(), tmp_path / name).run()
    assert (tmp_path / "a" / "trace.jsonl").read_bytes() == (tmp_path / "b" / "trace.jsonl").read_bytes()


async def test_the_timeline_rebuilds_the_device_namespace_from_the_trace(tmp_path: Path) -> None:
    s = session(AGENT, card_user(), tmp_path)
    await s.run()
    timeline = LedgerTimeline.build(load_trace(tmp_path / "trace.jsonl"), DUAL_PATH_MAP)
    assert timeline.divergences == ()
    assert timeline.final.render() == s.ledger.render() and timeline.final.has("device.card")


async def test_a_failing_sync_ends_the_session_with_an_environment_error(tmp_path: Path) -> None:
    class Broken(DualToyBackend):
        async def sync(self) -> list[str]:
            raise ToolError("line not found for phone 555")

    result = await session(AGENT, card_user(), tmp_path, backend=Broken()).run()
    assert (result.reason, result.detail) == ("environment_error", "environment sync failed: line not found for "
                                                                   "phone 555")
    assert load_trace(tmp_path / "trace.jsonl")[-1].type == "session_ended"


# ---------------------------------------------------------------------------------------------------
# The LLM user simulator with phone tools (a fake model; the HTTP path is covered in test_session_llm.py).


class FakeUserModel:
    """Plays fixed turns and records what it was sent."""

    name = "fake-user"

    def __init__(self, turns: Sequence[AssistantTurn]) -> None:
        self.turns = list(turns)
        self.sent: list[tuple[list[Message], list[str]]] = []

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        self.sent.append((list(messages), [t["function"]["name"] for t in tools]))
        if not self.turns:
            raise ModelError("no more turns", kind="script")
        return self.turns.pop(0)


def says(text: str) -> AssistantTurn:
    return AssistantTurn(text=text)


def uses(*names: str) -> AssistantTurn:
    return AssistantTurn(text="(ignored: half duplex)", tool_calls=tuple(
        ToolCall(f"sim_{n}", name) for n, name in enumerate(names)))


async def test_llm_user_calls_phone_tools_and_hears_the_results_before_speaking(tmp_path: Path) -> None:
    model = FakeUserModel([says("My card was stolen!"), uses("check_card"), uses("toggle_card_freeze"),
                           says("It says frozen now."), says("###STOP###")])
    simulator = LLMUserSimulator(model, "You are Ann. Your card was stolen; freeze it if asked.")
    assert isinstance(simulator, PhoneUser)
    s = session(AGENT, simulator, tmp_path)
    assert (await s.run()).reason == "user_stop"
    assert s.backend.state["app"]["card"] == "frozen"  # type: ignore[attr-defined]
    first_messages, first_tools = model.sent[0]
    assert first_tools == ["check_card", "toggle_card_freeze"]
    assert "phone" in str(first_messages[0]["content"]) and "<scenario>" in str(first_messages[0]["content"])
    # the third request (after one phone round) carries the call and its result, in order
    third, _ = model.sent[2]
    assert [m["role"] for m in third[-3:]] == ["user", "assistant", "tool"]
    assert third[-1] == {"role": "tool", "tool_call_id": "sim_0", "content": "Card ending 4242 is active."}
    assert third[-2]["tool_calls"][0]["function"]["name"] == "check_card" and third[-2]["content"] == ""
    # on the next turn the simulator still sees its own earlier exchange, where it happened
    last, _ = model.sent[-1]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "tool", "assistant",
                                         "tool", "assistant", "user"]
    assert [r.call.name for r in results(s) if r.call.requestor == "user"] == ["check_card", "toggle_card_freeze"]


async def test_llm_user_without_a_phone_is_unchanged() -> None:
    model = FakeUserModel([AssistantTurn(text=None, tool_calls=(ToolCall("sim_0", "check_card"),))])
    simulator = LLMUserSimulator(model, "x")
    with pytest.raises(ModelError, match="empty message"):  # tool calls are ignored: no phone was offered
        await simulator.respond([])
    assert model.sent[0][1] == [] and "phone" not in str(model.sent[0][0][0]["content"])


async def test_llm_user_that_never_stops_acting_is_a_user_error(tmp_path: Path) -> None:
    model = FakeUserModel([says("hi")] + [uses("check_card")] * (MAX_PHONE_ROUNDS + 1))
    result = await session(AGENT, LLMUserSimulator(model, "x"), tmp_path).run()
    assert result.reason == "user_error"
    assert f"{MAX_PHONE_ROUNDS} rounds of phone actions" in result.detail


# ---------------------------------------------------------------------------------------------------
# The human at the console.


async def test_human_phone_actions_run_in_order_before_the_message(tmp_path: Path) -> None:
    human = HumanUser()
    human.act("check_card")
    human.act("toggle_card_freeze")
    human.say("Frozen.")
    s = session([ScriptedStep(say="OK.")], human, tmp_path)
    assert s.phone is not None
    s.start()
    assert await s.user_turn() is None
    assert [(r.call.id, r.ok, r.content) for r in human.phone_results] == [
        ("user_call_1", True, "Card ending 4242 is active."), ("user_call_2", True, "Your card is now frozen.")]
    assert s.conversation[-1].text == "Frozen."


async def test_human_actions_without_a_phone_are_refused_not_run() -> None:
    human = HumanUser()
    human.act("toggle_card_freeze")
    human.say("hi")
    assert await human.respond([]) == "hi"
    [refused] = human.phone_results
    assert not refused.ok and "no phone tools" in refused.content


def test_the_session_phone_satisfies_the_protocol() -> None:
    s = session([ScriptedStep(say="hi")], ScriptedUser([]))
    assert isinstance(s.phone, SessionPhone) and isinstance(s.phone, Phone)


# ---------------------------------------------------------------------------------------------------
# Scenario files.


def scenario_json(user: list[Any]) -> dict[str, Any]:
    return {"name": "card", "title": "t", "domain": "toy-dual", "user": user,
            "agent": [{"calls": [{"name": "login", "arguments": {"name": "ann"}}]},
                      {"say": "Please freeze your card in the app."}, {"say": "Thanks, your card is frozen."}],
            "expect": {"verdicts": [], "end_reason": "user_stop"}}


async def test_scenario_files_carry_phone_actions(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(json.dumps(scenario_json([
        "My card was stolen!",
        {"call": {"name": "toggle_card_freeze"}, "expect_result_contains": ["frozen"],
         "expect_agent_contains": "freeze", "note": "as the agent asked"},
        {"text": "Done.", "expect_agent_contains": "freeze"},
    ])))
    scenario = load_scenario(path)
    user = scenario.build_user()
    assert user.turns == [ScriptedTurn("My card was stolen!"),
                          ScriptedAction("toggle_card_freeze", {}, ("frozen",), "freeze"),
                          ScriptedTurn("Done.", "freeze")]
    s = session([], user, tmp_path)
    s.agent.model = scenario.build_model()
    assert (await s.run()).reason == "user_stop"
    assert s.backend.state["app"]["card"] == "frozen"  # type: ignore[attr-defined]


def test_a_malformed_phone_action_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(scenario_json(["hi", {"call": {"arguments": {}}}])))
    with pytest.raises(ScenarioError, match=r"bad.json:\d+: user.1"):
        load_scenario(path)
    assert Scenario.model_validate(scenario_json(["hi"])).build_user().turns == [ScriptedTurn("hi")]


# ---------------------------------------------------------------------------------------------------
# `ledgeragent check` trajectories.


def test_trajectory_lines_may_name_the_user_as_requestor() -> None:
    trajectory = parse_trajectory("\n".join([
        json.dumps({"name": "toggle_card_freeze", "arguments": {}, "requestor": "user", "expect": "ALLOW"}),
        json.dumps({"name": "login", "arguments": {"name": "ann"}}),
        json.dumps({"name": "check_card", "arguments": {}, "requestor": "customer"}),
    ]))
    assert [(c.name, c.requestor) for c in trajectory.calls] == [("toggle_card_freeze", "user"), ("login", "assistant")]
    [problem] = trajectory.problems
    assert problem.line == 3 and "'requestor' must be one of assistant, user, got 'customer'" in problem.message


async def test_the_checker_runs_user_lines_ungated_and_syncs() -> None:
    backend = DualToyBackend()
    domain = always_refuse_card_changes()
    lines = [
        {"name": "check_card", "arguments": {}, "requestor": "user", "expect": "ALLOW"},
        {"name": "toggle_card_freeze", "arguments": {}, "requestor": "user", "expect": "ALLOW"},
        {"name": "toggle_card_freeze", "arguments": {}, "expect": "ERROR", "note": "the agent cannot"},
        {"name": "login", "arguments": {"name": "ann"}, "requestor": "user", "expect": "ERROR"},
    ]
    trajectory = parse_trajectory("\n".join(json.dumps(line) for line in lines))
    checker = Checker(domain, backend)
    checked = await checker.run(trajectory.calls)
    assert [r.met for r in checked] == [True, True, True, True]
    assert [(r.kind, r.requestor, r.executed) for r in checked] == [
        ("read", "user", True), ("write", "user", True), ("unknown", "assistant", False), ("unknown", "user", False)]
    assert checked[1].to_json()["requestor"] == "user" and checked[1].predicates == ()
    assert checker.ledger.get("device.card") == "Card ending 4242 is active."
    assert backend.syncs == 3  # once before the first line, then after each executed call
    assert backend.state["accounts"]["A1"]["card"] == "frozen"
    assert CallInfo.of(ToolCall("x", "check_card", requestor=Requestor.USER)).to_call().requestor is Requestor.USER


def test_the_device_namespace_is_kept_apart() -> None:
    """A user-side read lands only under device.*, an agent read never does: a Domain that mixes them is refused."""
    mixed = PathMap(rules=(*DUAL_PATH_MAP.rules, PathRule("check_card", "accounts.{result}")))
    with pytest.raises(ValueError, match="user-side tool check_card must land under 'device.*'"):
        Domain(name="x", title="x", policy="", tools=DUAL_DOMAIN.tools, path_map=mixed, predicates=())
    spoofed = PathMap(rules=(*DUAL_PATH_MAP.rules, PathRule("get_account", "device.account")))
    with pytest.raises(ValueError, match="agent tool get_account must not land under 'device.*'"):
        Domain(name="x", title="x", policy="", tools=DUAL_DOMAIN.tools, path_map=spoofed, predicates=())
