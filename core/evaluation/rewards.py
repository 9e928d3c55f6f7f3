"""tau2-style reward for one trial, plus per-write action checks tau2 does not give.

DB: the state hash after replaying the agent's executed writes on a fresh database equals the hash after
running the gold actions on a fresh database (any path to the same end state passes; a task whose right
outcome is a refusal passes only with no effective write). COMMUNICATE, ENV_ASSERTION and ACTION follow
tau2's definitions; NL assertions need a judge model, and without one they are *unscored*: left out of
the product and flagged, never silently counted as passed. A trial that did not end with a stop token
(max steps, too many errors, a crash) gets 0, as in tau2.

Why replay rather than hash the live database: the reward must be recomputable from the trace alone
(re-grading saved runs), and a replay that does not reproduce what the trace recorded is itself evidence
of a nondeterministic tool, reported as a replay mismatch.

Dual control (telecom), as tau2's evaluator does it. A backend may offer three optional hooks, found by name
like the session's `sync()` (single-control backends have none, and nothing changes for them):

- `sync()`: the line <-> phone sync. The harness runs it after every initialization action, once when the
  preparation is done (the session syncs when it starts), and after every replayed or gold write, so the
  predicted and gold states are built exactly as the live trial's state was (the executor syncs after every
  executed call; a sync is idempotent, so syncing after reads too changes nothing).
- `run_env_function(env_type, func_name, arguments)`: one initialization action on its side, "user" (the
  customer's phone: a phone tool or one of tau2's hidden setup functions such as `set_user_info`,
  `break_vpn`) or "assistant" (an agent tool or a hidden setup function such as
  `suspend_line_for_overdue_bill`), followed by the sync. Without it an initialization action must be a
  tool of the backend, called as it is (then synced).
- `assert_env(env_type, func_name, arguments)`: an ENV_ASSERTION function over the state (tau2's telecom
  `assert_mobile_data_status`, `assert_internet_speed`, `assert_can_send_mms`, `assert_service_status`,
  `assert_line_status`, `assert_no_overdue_bill`, ...). Without it an assertion is called as a tool.

The DB reward then compares the whole state, which for such a backend is both sides (the telecom backend's
`state_hash()` covers the agent's DB and the phone's user DB): the replay runs the trial's executed writes of
BOTH requestors in order (the agent's and the customer's phone actions), the gold run runs the gold actions
of both requestors, each write followed by the sync. A task whose gold includes a phone toggle therefore
fails when the customer never toggles, however right the agent's own writes were.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from core.domain import Domain
from core.evaluation.facts import ExecutedCall, TrialFacts, arguments_equal
from core.evaluation.tasks import Action, EnvAssertion, EnvFunctionCall, RewardType, Task, side_of
from core.llm.base import Usage
from core.tools import ToolError, ToolKind, format_tool_result

# tau2: user_stop covers all three user stop tokens; agent_stop is the agent's own stop.
STOP_REASONS = frozenset({"user_stop", "transfer", "out_of_scope", "agent_stop"})


class TrialBackend(Protocol):
    """What the harness needs from a domain's mock backend (every `SQLiteToolBackend` has it)."""

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any: ...

    async def state_hash(self) -> str: ...

    async def snapshot(self) -> Any: ...

    async def restore(self, snapshot: Any) -> None: ...

    async def export(self) -> dict[str, dict[str, Any]]: ...

    async def close(self) -> None: ...


class DBCheck(BaseModel):
    db_match: bool
    db_reward: float
    predicted_hash: str
    gold_hash: str
    live_hash: str | None = None
    replay_mismatches: list[str] = Field(default_factory=list)


class ActionCheck(BaseModel):
    action_id: str
    name: str
    kind: str
    matched: bool
    requestor: str = "assistant"


class WriteCheck(BaseModel):
    """One gold write or one executed write, classified: matched / wrong_arguments / missing / extra."""

    status: Literal["matched", "wrong_arguments", "missing", "extra"]
    name: str
    requestor: str = "assistant"  # "user": a phone action of the customer's
    action_id: str | None = None
    expected: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None


class CheckResult(BaseModel):
    item: str
    met: bool
    justification: str = ""


class RewardInfo(BaseModel):
    reward: float
    reward_basis: list[str]
    breakdown: dict[str, float | None]  # None: unscored (NL assertions without a judge)
    premature: bool = False
    db_check: DBCheck | None = None
    env_assertions: list[CheckResult] = Field(default_factory=list)
    communicate_checks: list[CheckResult] = Field(default_factory=list)
    nl_assertions: list[CheckResult] | None = None  # None: not judged
    action_checks: list[ActionCheck] = Field(default_factory=list)
    write_checks: list[WriteCheck] = Field(default_factory=list)
    unscored: list[str] = Field(default_factory=list)

    @property
    def success(self) -> bool:
        """tau2's `is_successful` (reward within 1e-6 of 1), and never for a trial with an unscored component:
        a reward that was not graded is no evidence of success."""
        return abs(self.reward - 1.0) < 1e-6 and not self.unscored


class JudgeError(Exception):
    """The NL judge could not grade (endpoint failure, unreadable answer): an infrastructure failure."""


@dataclass(frozen=True)
class JudgeVerdict:
    checks: list[CheckResult]
    usage: Usage
    model: str = ""


class NLJudge(Protocol):
    """Grades NL assertions against a trajectory of tau2 messages (`trajectory.tau2_messages`)."""

    async def __call__(self, messages: Sequence[Mapping[str, Any]], assertions: Sequence[str]) -> JudgeVerdict: ...


# -- environment preparation -----------------------------------------------------------------------


async def sync_state(backend: TrialBackend) -> None:
    """The backend's `sync()` hook, when it has one (dual control); nothing otherwise."""
    hook: Callable[[], Awaitable[Sequence[str]]] | None = getattr(backend, "sync", None)
    if hook is not None:
        await hook()


async def run_initialization(backend: TrialBackend, action: EnvFunctionCall) -> Any:
    """One initialization action on its side, followed by the sync. Raises ToolError when it fails (a task
    whose scene cannot be set is broken, and saying so beats grading a trial on the wrong state)."""
    hook: Callable[[str, str, Mapping[str, Any]], Awaitable[Any]] | None = getattr(backend, "run_env_function",
                                                                                  None)
    if hook is not None:
        return await hook(action.side, action.func_name, action.arguments)  # the backend syncs after it
    result = await backend.call(action.func_name, action.arguments)
    await sync_state(backend)
    return result


async def prepare(backend: TrialBackend, base: Any, task: Task) -> None:
    """Back to the baseline, then the task's scene (`set_scene`): the state the session starts from, and the
    replays' starting point."""
    await backend.restore(base)
    await set_scene(backend, task)


async def set_scene(backend: TrialBackend, task: Task) -> None:
    """The task's initialization actions of both sides in order (each followed by the sync), then one more
    sync, on the database as it is: `prepare` without the restore, for a database opened just for this task
    (a console session), which needs no baseline snapshot."""
    state = task.initial_state
    for action in (state.initialization_actions or []) if state is not None else []:
        await run_initialization(backend, action)
    await sync_state(backend)


class GoldState(BaseModel):
    """The gold end state of a task: its hash, and the gold writes that failed (tau2 ignores those)."""

    hash: str
    failed: list[str] = Field(default_factory=list)  # action ids


async def gold_state(backend: TrialBackend, base: Any, task: Task, domain: Domain) -> GoldState:
    """Hash after the gold writes of both requestors on a fresh database, each followed by the sync. Gold errors
    are ignored, as tau2 logs and ignores them."""
    await prepare(backend, base, task)
    failed: list[str] = []
    for action in task.gold_actions:
        if domain.kind_of(action.name) is ToolKind.WRITE:
            try:
                await backend.call(action.name, action.arguments)
            except ToolError:
                failed.append(action.action_id)
                continue
            await sync_state(backend)
    digest = await backend.state_hash()
    await backend.restore(base)
    return GoldState(hash=digest, failed=failed)


async def _replay(backend: TrialBackend, writes: Sequence[ExecutedCall]) -> list[str]:
    mismatches: list[str] = []
    for call in writes:
        try:
            content = format_tool_result(await backend.call(call.name, call.arguments))
        except ToolError as exc:
            content = f"Error: {exc.message}"
        else:
            await sync_state(backend)
        if content != call.content:
            side = " on the phone" if call.requestor == "user" else ""
            mismatches.append(f"{call.name}{side} ({call.call_id}) returned something else on replay")
    return mismatches


async def assertion_value(backend: TrialBackend, assertion: EnvAssertion) -> Any:
    """An env assertion's value: the backend's `assert_env` hook on the assertion's side, else a tool call."""
    hook: Callable[[str, str, Mapping[str, Any]], Awaitable[bool]] | None = getattr(backend, "assert_env", None)
    if hook is not None:
        return await hook(assertion.side, assertion.func_name, assertion.arguments)
    return await backend.call(assertion.func_name, assertion.arguments)


async def _env_assertions(backend: TrialBackend, task: Task) -> list[CheckResult]:
    results: list[CheckResult] = []
    for assertion in task.criteria.env_assertions or []:
        label = assertion.message or f"{assertion.func_name}({assertion.arguments})"
        try:
            value = await assertion_value(backend, assertion)
        except ToolError as exc:
            results.append(CheckResult(item=label, met=False, justification=f"Error: {exc.message}"))
            continue
        met = (value if isinstance(value, bool) else str(value).strip().lower() == "true") == assertion.assert_value
        results.append(CheckResult(item=label, met=met, justification=f"returned {format_tool_result(value)[:80]}"))
    return results


# -- conversation checks ---------------------------------------------------------------------------


def communicate_checks(task: Task, facts: TrialFacts) -> list[CheckResult]:
    """Each string must appear (case-insensitive) in some agent message with its commas removed."""
    texts = [t.lower().replace(",", "") for t in facts.assistant_texts]
    return [CheckResult(item=info, met=any(info.lower() in t for t in texts))
            for info in task.criteria.communicate_info or []]


def action_checks(task: Task, facts: TrialFacts, domain: Domain) -> list[ActionCheck]:
    checks: list[ActionCheck] = []
    for action in task.gold_actions:
        kind = domain.kind_of(action.name)
        # tau2's ActionEvaluator: any tool call of the trajectory (either requestor, succeeded or failed)
        # that `compare_with_tool_call` accepts; calls the gate stopped never ran and are not in it, and the
        # gate's own reads are no call of the trajectory (the tau2 export leaves them out of its messages).
        matched = any(c.agents and c.name == action.name
                      and arguments_equal(action.arguments, c.arguments, action.compare_args)
                      for c in facts.executed)
        checks.append(ActionCheck(action_id=action.action_id, name=action.name,
                                  kind=kind.value if kind is not None else "unknown", matched=matched,
                                  requestor=action.side))
    return checks


def write_checks(task: Task, facts: TrialFacts, domain: Domain, failed: Sequence[str] = ()) -> list[WriteCheck]:
    """Pair gold writes with executed writes: exact matches first, then same-tool pairs as wrong arguments.
    Gold writes that fail on a fresh database (`failed`) are not required: the gold state does not hold them.
    Dual control: the customer's phone actions are writes too, paired only with gold actions of requestor
    "user" (tool names of the two sides never overlap, so pairing by name already keeps the sides apart)."""
    gold: list[Action] = [a for a in task.gold_actions
                          if domain.kind_of(a.name) is ToolKind.WRITE and a.action_id not in failed]
    done = list(facts.writes)
    used: set[int] = set()
    pairs: dict[int, tuple[str, int | None]] = {}
    for g_index, action in enumerate(gold):
        for e_index, call in enumerate(done):
            if e_index not in used and call.name == action.name and \
                    arguments_equal(action.arguments, call.arguments, action.compare_args):
                used.add(e_index)
                pairs[g_index] = ("matched", e_index)
                break
    for g_index, action in enumerate(gold):
        if g_index in pairs:
            continue
        same = next((i for i, c in enumerate(done) if i not in used and c.name == action.name), None)
        if same is not None:
            used.add(same)
        pairs[g_index] = ("wrong_arguments" if same is not None else "missing", same)
    checks = [WriteCheck(status=status, name=gold[g].name, action_id=gold[g].action_id,  # type: ignore[arg-type]
                         requestor=gold[g].side, expected=dict(gold[g].arguments),
                         actual=None if e is None else dict(done[e].arguments))
              for g, (status, e) in sorted(pairs.items())]
    checks += [WriteCheck(status="extra", name=c.name, requestor=side_of(c.requestor), actual=dict(c.arguments))
               for i, c in enumerate(done) if i not in used]
    return checks


# -- the reward ------------------------------------------------------------------------------------


async def evaluate(*, task: Task, domain: Domain, facts: TrialFacts, backend: TrialBackend, base: Any,
                   gold: GoldState, live_hash: str | None, judge: NLJudge | None = None,
                   messages: Sequence[Mapping[str, Any]] = ()) -> tuple[RewardInfo, JudgeVerdict | None]:
    """Grade one finished trial, as tau2's `evaluate_simulation` (evaluation type ALL). Leaves `backend`
    restored to `base`. Returns the reward and the judge's verdict (None when no judge was asked).

    tau2's order of edge cases: a trial that did not end with a stop token scores 0; a task without evaluation
    criteria scores 1; a task whose criteria have neither `actions` nor `env_assertions` (both absent, not
    merely empty) passes the DB check. The judge is asked only when NL_ASSERTION is in the reward basis and the
    task has assertions; it gets `messages` (the tau2 trajectory). Raises JudgeError when the judge fails.
    """
    premature = facts.termination not in STOP_REASONS
    criteria = task.evaluation_criteria
    basis = [RewardType(b) for b in criteria.reward_basis] if criteria is not None else []
    await prepare(backend, base, task)
    mismatches = await _replay(backend, facts.writes)
    predicted = await backend.state_hash()
    if live_hash is not None and live_hash != predicted:
        mismatches.append("the trial's own database differs from the replay of its executed writes")
    env = await _env_assertions(backend, task)
    await backend.restore(base)
    no_state_criteria = criteria is not None and criteria.actions is None and criteria.env_assertions is None
    match = predicted == gold.hash or no_state_criteria
    db = DBCheck(db_match=match, db_reward=float(match), predicted_hash=predicted, gold_hash=gold.hash,
                 live_hash=live_hash, replay_mismatches=mismatches)
    communicate = communicate_checks(task, facts)
    actions = action_checks(task, facts, domain)
    checks = write_checks(task, facts, domain, gold.failed)
    if premature or criteria is None:
        reward = 0.0 if premature else 1.0
        return RewardInfo(reward=reward, reward_basis=[b.value for b in basis], breakdown={}, premature=premature,
                          db_check=db, env_assertions=env, communicate_checks=communicate, action_checks=actions,
                          write_checks=checks), None
    verdict: JudgeVerdict | None = None
    assertions = criteria.nl_assertions or []
    if assertions and judge is not None and RewardType.NL_ASSERTION in basis:
        verdict = await judge(messages, assertions)
    nl = verdict.checks if verdict is not None else None
    breakdown: dict[str, float | None] = {
        RewardType.DB.value: db.db_reward,
        RewardType.COMMUNICATE.value: float(all(c.met for c in communicate)),
        RewardType.ENV_ASSERTION.value: float(all(c.met for c in env)),
        RewardType.ACTION.value: float(all(a.matched for a in actions)),
        RewardType.NL_ASSERTION.value: (1.0 if not assertions else None if nl is None
                                        else float(all(c.met for c in nl))),
    }
    breakdown = {b.value: breakdown[b.value] for b in basis}  # tau2 reports only the components it multiplies
    unscored = [b.value for b in basis if breakdown[b.value] is None]
    reward = 1.0
    for kind in basis:
        value = breakdown[kind.value]
        if value is not None:
            reward *= value
    return RewardInfo(reward=reward, reward_basis=[b.value for b in basis], breakdown=breakdown,
                      premature=False, db_check=db, env_assertions=env, communicate_checks=communicate,
                      nl_assertions=nl, action_checks=actions, write_checks=checks, unscored=unscored), verdict
