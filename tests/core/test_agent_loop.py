"""The paper's Algorithm 1 end to end on the toy domain: scripted model, scripted user, real trace file."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.agent import AgentConfig
from core.events import GateDecided, SupervisorDecided, ToolResultEvent
from core.gate import GateDecision
from core.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedStep
from core.session import Session
from core.supervisor import Decision, Resolution
from core.tools import ToolCall
from core.trace import iter_trace, load_trace
from core.users import ScriptedUser
from tests.support.toy_domain import DOMAIN, INITIAL, ToyBackend


def c(tool: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(tool, arguments)


def session(steps: Sequence[ScriptedStep], tmp_path: Path, *, config: AgentConfig | None = None,
            user: Sequence[str] = ("please move 10 from A1",), supervisor: Any = None,
            backend: ToyBackend | None = None) -> Session:
    return Session(domain=DOMAIN, backend=backend or ToyBackend(), model=ScriptedChatModel(steps),
                   user=ScriptedUser(list(user)), config=config, supervisor=supervisor,
                   trace_path=tmp_path / "trace.jsonl", clock=lambda: "2026-01-01T00:00:00+00:00")


def results(s: Session) -> list[ToolResultEvent]:
    return [e for e in s.bus.history if isinstance(e, ToolResultEvent)]


def verdicts(s: Session) -> list[str]:
    return [e.verdict for e in s.bus.history if isinstance(e, GateDecided)]


HAPPY = [
    ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),
    ScriptedStep(calls=(c("transfer", account_id="A1", amount=10),)),
    ScriptedStep(say="Done."),
]


async def test_happy_path_runs_reads_then_gated_write(tmp_path: Path) -> None:
    s = session(HAPPY, tmp_path)
    result = await s.run()
    assert result.reason == "user_stop"
    assert verdicts(s) == ["ALLOW"]
    assert s.backend.state["accounts"]["A1"]["balance"] == 90.0  # type: ignore[attr-defined]
    # observe, don't assume: the write did not update the ledger, it made the entry stale
    entry = s.ledger.entry("accounts.A1")
    assert entry.value["balance"] == 100.0 and entry.is_stale


async def test_every_event_is_on_disk_and_loads_back(tmp_path: Path) -> None:
    s = session(HAPPY, tmp_path)
    await s.run()
    events = load_trace(tmp_path / "trace.jsonl")
    assert [e.type for e in events] == [e.type for e in s.bus.history]
    assert events[0].type == "session_started" and events[-1].type == "session_ended"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_trace_is_written_as_events_happen(tmp_path: Path) -> None:
    seen_on_disk: list[int] = []
    s = session(HAPPY, tmp_path)
    path = tmp_path / "trace.jsonl"
    s.bus.subscribe(lambda e: seen_on_disk.append(len(path.read_text().splitlines())))
    await s.run()
    # the trace writer subscribed first, so each event was already in the file when the next subscriber ran
    assert seen_on_disk[:-1] == list(range(1, len(seen_on_disk)))


async def test_same_scenario_gives_byte_identical_trace(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    await session(HAPPY, a).run()
    await session(HAPPY, b).run()
    assert (a / "trace.jsonl").read_bytes() == (b / "trace.jsonl").read_bytes()


async def test_revise_then_corrected_call_and_valid_history(tmp_path: Path) -> None:
    steps = [
        ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=500),)),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=50),),
                     expect_tool_results_contain=("REVISE", "toy.balance")),
        ScriptedStep(say="Moved 50."),
    ]
    s = session(steps, tmp_path)
    result = await s.run()
    assert result.reason == "user_stop", result.detail
    assert verdicts(s) == ["REVISE", "ALLOW"]
    assert s.backend.state["accounts"]["A1"]["balance"] == 50.0  # type: ignore[attr-defined]
    assert_history_valid(s.agent.history)


def assert_history_valid(history: list[dict[str, Any]]) -> None:
    """Every assistant tool call id is answered by exactly one tool message, in order, before the next turn."""
    pending: list[str] = []
    for message in history:
        if message["role"] == "assistant":
            assert not pending, f"unanswered tool calls {pending}"
            pending = [tc["id"] for tc in message.get("tool_calls", [])]
            for tc in message.get("tool_calls", []):
                assert isinstance(tc["function"]["arguments"], str)
        elif message["role"] == "tool":
            assert message["tool_call_id"] == pending.pop(0)
        else:
            assert not pending
    assert not pending


async def test_multi_call_message_is_gated_call_by_call(tmp_path: Path) -> None:
    steps = [
        ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"),
                            c("get_account", account_id="B1"))),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=5), c("transfer", account_id="B1", amount=5),
                            c("transfer", account_id="A1", amount=7))),
        ScriptedStep(say="Two of three done."),
    ]
    s = session(steps, tmp_path)
    await s.run()
    assert verdicts(s)[:2] == ["ALLOW", "BLOCK"]
    # the first transfer made accounts.A1 stale, so the third asks for a re-read instead of trusting it
    assert verdicts(s)[2] == "REVISE"
    state = s.backend.state["accounts"]  # type: ignore[attr-defined]
    assert state["A1"]["balance"] == 95.0 and state["B1"]["balance"] == 50.0
    tool_messages = [m for m in s.agent.history if m["role"] == "tool"][-3:]
    assert "NOT executed" in tool_messages[1]["content"] and "toy.owner" in tool_messages[1]["content"]
    assert "read it again" in tool_messages[2]["content"]
    assert_history_valid(s.agent.history)


async def test_bad_input_from_the_model_is_a_clear_tool_error(tmp_path: Path) -> None:
    steps = [
        ScriptedStep(calls=(ScriptedCall("get_account", raw_arguments='{"account_id": "A1"'),
                            c("no_such_tool", x=1),
                            c("get_account", account_id=7),
                            c("get_account"),
                            c("get_account", account_id="A1", extra=True),
                            c("get_account", account_id="ZZ"))),
        ScriptedStep(say="Sorry."),
    ]
    backend = ToyBackend()
    s = session(steps, tmp_path, backend=backend)
    result = await s.run()
    assert result.reason == "user_stop"
    contents = [e.content for e in results(s)]
    assert "not valid JSON" in contents[0]
    assert contents[1] == "Error: Tool 'no_such_tool' not found."
    assert "argument 'account_id' must be string, got integer" in contents[2]
    assert "missing required argument 'account_id'" in contents[3]
    assert "unexpected argument 'extra'" in contents[4]
    assert contents[5] == "Error: Account not found"
    assert backend.calls == ["get_account"]  # only the well-formed call reached the backend
    assert backend.state == INITIAL
    assert len(s.ledger) == 0


async def test_revise_streak_escalates_so_the_model_cannot_loop(tmp_path: Path) -> None:
    loop = [ScriptedStep(calls=(c("transfer", account_id="A1", amount=1000 + i),)) for i in range(3)]
    steps = [ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))), *loop,
             ScriptedStep(say="I cannot do that.", expect_tool_results_contain=("BLOCK",))]
    s = session(steps, tmp_path)
    result = await s.run()
    assert result.reason == "user_stop", result.detail
    assert verdicts(s) == ["REVISE", "REVISE", "BLOCK"]


async def test_fc_baseline_is_same_loop_without_ledger_or_gate(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(c("login", name="ann"), c("transfer", account_id="B1", amount=10))),
             ScriptedStep(say="Done.")]
    s = session(steps, tmp_path, config=AgentConfig(ledger=False, gate=False))
    await s.run()
    assert verdicts(s) == []
    assert s.backend.state["accounts"]["B1"]["balance"] == 40.0  # type: ignore[attr-defined]
    assert "<ledger>" not in s.agent.system_prompt()
    assert len(s.ledger) == 0


async def test_ledger_rendered_into_every_prompt(tmp_path: Path) -> None:
    model = ScriptedChatModel(HAPPY)
    seen: list[str] = []
    original = model.complete

    async def spy(messages: Sequence[Any], tools: Sequence[Any]) -> Any:
        seen.append(messages[0]["content"])
        return await original(messages, tools)

    model.complete = spy  # type: ignore[method-assign]
    s = Session(domain=DOMAIN, backend=ToyBackend(), model=model, user=ScriptedUser(["hi"]))
    await s.run()
    assert "(empty" in seen[0]
    assert 'accounts.A1 = {"balance":100.0' in seen[1]


async def test_script_divergence_is_reported_clearly(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(c("login", name="ann"),)),
             ScriptedStep(say="x", expect_tool_results_contain=("REVISE",))]
    s = session(steps, tmp_path)
    result = await s.run()
    assert result.reason == "script_diverged"
    assert "expected the tool results to contain 'REVISE'" in result.detail
    assert load_trace(tmp_path / "trace.jsonl")[-2].type == "model_error"


async def test_max_steps_guard(tmp_path: Path) -> None:
    steps = [ScriptedStep(calls=(c("note", text=str(i)),)) for i in range(50)]
    s = Session(domain=DOMAIN, backend=ToyBackend(), model=ScriptedChatModel(steps), user=ScriptedUser(["hi"]),
                max_steps=5)
    result = await s.run()
    assert result.reason == "max_steps" and result.steps == 5


class Operator:
    """A scripted human: answers each review from a queue and records what it was shown."""

    def __init__(self, *answers: Resolution) -> None:
        self.answers = list(answers)
        self.shown: list[tuple[ToolCall, str | None]] = []

    async def review(self, call: ToolCall, decision: GateDecision | None) -> Resolution:
        self.shown.append((call, None if decision is None else decision.verdict.value))
        return self.answers.pop(0) if self.answers else Resolution(Decision.APPROVE)


FORCE_STEPS = [
    ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="B1"))),
    ScriptedStep(calls=(c("transfer", account_id="B1", amount=5),)),
    ScriptedStep(say="ok"),
]


async def test_force_allow_runs_and_is_recorded_with_who_when_why(tmp_path: Path) -> None:
    op = Operator(Resolution(Decision.FORCE_ALLOW, who="dana", reason="bob consented on the phone"))
    s = session(FORCE_STEPS, tmp_path, supervisor=op)
    await s.run()
    assert s.backend.state["accounts"]["B1"]["balance"] == 45.0  # type: ignore[attr-defined]
    record = next(e for e in load_trace(tmp_path / "trace.jsonl") if isinstance(e, SupervisorDecided))
    assert (record.decision, record.who, record.reason, record.gate_verdict) == (
        "force_allow", "dana", "bob consented on the phone", "BLOCK")
    assert record.when == "2026-01-01T00:00:00+00:00"


async def test_approving_a_block_does_not_run_it(tmp_path: Path) -> None:
    op = Operator(Resolution(Decision.APPROVE, who="dana"))
    s = session(FORCE_STEPS, tmp_path, supervisor=op)
    await s.run()
    assert s.backend.state["accounts"]["B1"]["balance"] == 50.0  # type: ignore[attr-defined]


async def test_veto_and_edit(tmp_path: Path) -> None:
    steps = [
        ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=30),)),
        ScriptedStep(calls=(c("get_account", account_id="A1"),)),
        ScriptedStep(calls=(c("transfer", account_id="A1", amount=30),)),
        ScriptedStep(say="ok"),
    ]
    op = Operator(Resolution(Decision.VETO, who="dana", reason="confirm with the customer first"),
                  Resolution(Decision.EDIT, who="dana", reason="typo", arguments={"account_id": "A1", "amount": 3000}),
                  Resolution(Decision.EDIT, who="dana", reason="smaller", arguments={"account_id": "A1", "amount": 3}))
    s = session(steps, tmp_path, supervisor=op)
    await s.run()
    # the first was vetoed; the second was edited twice, each edit re-gated (REVISE, then ALLOW)
    assert [v for _, v in op.shown] == ["ALLOW", "ALLOW", "REVISE", "ALLOW"]
    assert s.backend.state["accounts"]["A1"]["balance"] == 97.0  # type: ignore[attr-defined]
    tool_messages = [m["content"] for m in s.agent.history if m["role"] == "tool"]
    assert "vetoed" in tool_messages[2] and "confirm with the customer first" in tool_messages[2]
    assert '"amount": 3}' in tool_messages[-1] and "human supervisor changed the arguments" in tool_messages[-1]
    ran = [e for e in results(s) if e.call.name == "transfer" and e.executed]
    assert len(ran) == 1 and ran[0].call.arguments == {"account_id": "A1", "amount": 3}


async def test_an_operators_edits_never_count_toward_the_models_revise_streak(tmp_path: Path) -> None:
    """The gate escalates a rule's third REVISE in a row to BLOCK: the model looping on its own proposals. An
    operator who edits a REVISEd call three times (each edit re-gated, each still REVISE) is not the model
    looping: every re-gate stays a REVISE, and the model's next proposal is only its second in a row. A re-gate of
    the recorded session judges the same."""
    from core.regate import regate

    steps = [ScriptedStep(calls=(c("login", name="ann"), c("get_account", account_id="A1"))),
             ScriptedStep(calls=(c("transfer", account_id="A1", amount=1000),)),
             ScriptedStep(calls=(c("transfer", account_id="A1", amount=2000),)),
             ScriptedStep(say="I cannot do that.")]
    edits = [Resolution(Decision.EDIT, who="dana", reason="try less", arguments={"account_id": "A1", "amount": n})
             for n in (1001, 1002, 1003)]
    accept = Resolution(Decision.ACCEPT_VERDICT, who="dana")
    op = Operator(*edits, accept, accept)
    s = session(steps, tmp_path, supervisor=op)
    await s.run()
    assert verdicts(s) == ["REVISE"] * 5
    decided = [e for e in load_trace(tmp_path / "trace.jsonl") if isinstance(e, GateDecided)]
    assert not [e for e in decided if "escalated" in e.feedback or "times in a row" in e.feedback]
    assert [row.new_verdict for row in regate(load_trace(tmp_path / "trace.jsonl"), DOMAIN)] == ["REVISE"] * 5


async def test_trace_survives_a_broken_line(tmp_path: Path) -> None:
    s = session(HAPPY, tmp_path)
    await s.run()
    path = tmp_path / "trace.jsonl"
    lines = path.read_text().splitlines()
    lines.insert(2, json.dumps({"type": "nonsense"}))
    path.write_text("\n".join(lines) + "\n")
    problems = [item for item in iter_trace(path) if not hasattr(item, "type")]
    assert len(problems) == 1 and problems[0].line == 3  # type: ignore[union-attr]


async def test_a_trace_line_with_a_number_that_is_not_finite_is_a_problem_not_an_event(tmp_path: Path) -> None:
    """pydantic's JSON parser reads NaN and 1e999 as floats; a trace is strict JSON like every other input."""
    s = session(HAPPY, tmp_path)
    await s.run()
    path = tmp_path / "trace.jsonl"
    lines = path.read_text().splitlines()
    index = next(n for n, line in enumerate(lines) if '"amount":' in line)
    whole = len(load_trace(path))
    for bad in ("NaN", "1e999"):
        edited = list(lines)
        edited[index] = re.sub(r'"amount":\s*[0-9.]+', f'"amount": {bad}', edited[index], count=1)
        assert edited[index] != lines[index]
        path.write_text("\n".join(edited) + "\n")
        items = list(iter_trace(path))
        problems = [item for item in items if not hasattr(item, "type")]
        assert [p.line for p in problems] == [index + 1]  # type: ignore[union-attr]
        assert "finite" in problems[0].message or "NaN" in problems[0].message  # type: ignore[union-attr]
        assert len(items) == whole


async def test_pacer_is_awaited_before_every_model_call_and_user_turn(tmp_path: Path) -> None:
    seen: list[str] = []

    async def pacer(kind: str) -> None:
        seen.append(kind)

    s = Session(domain=DOMAIN, backend=ToyBackend(), model=ScriptedChatModel(HAPPY), user=ScriptedUser(["hi"]),
                pacer=pacer)
    await s.run()
    assert seen == ["user", "model", "model", "model", "user"]
