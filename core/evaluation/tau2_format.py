"""tau2-bench's results format (`tau2.data_model.simulation.Results`), both ways.

Export (`to_tau2`): one tau2 `Results` per (domain, agent) of a run, since a tau2 file describes one agent on
one domain: `info` (git_commit, num_trials, max_steps, max_errors, user_info, agent_info, environment_info with
the policy the agent got, seed), `tasks` (tau2 tasks: our `ledgeragent` extension left out) and
`simulations`, each with its messages (`trajectory.tau2_messages`), termination reason, costs and reward info
in tau2's shapes (db_check, env_assertions, action_checks, communicate_checks, nl_assertions, reward_basis,
reward_breakdown). So tau2's viewer and its metrics read the file.

Two mappings need a word:
- Termination: our `transfer` / `out_of_scope` are tau2's `user_stop` (tau2 maps all three user stop tokens to
  it); a trial that could not be run is `infrastructure_error`; a script divergence is `agent_error`.
- Unscored trials (NL assertions, no judge): tau2 has no such state, and any reward we wrote would be counted
  by tau2's metrics as graded. They are exported as `infrastructure_error` (tau2 leaves those out of its
  metrics, exactly as we leave unscored trials out), with the real termination kept under `info`.

Every simulation also carries our full trial record under `info["ledgeragent"]` (tau2's free-form
`SimulationRun.info`), so `from_tau2` gives back exactly what was exported (export -> import round-trips).

Import (`from_tau2`): a file tau2 wrote itself becomes an `EvalResults` the console's results viewer opens and
`eval regrade` re-grades: each simulation's messages become events (`trajectory.events_from_messages`), its
reward and termination are taken as tau2 recorded them, an `infrastructure_error` is an excluded trial.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core import strict_json
from core.evaluation.analysis import token_stats
from core.evaluation.facts import collect
from core.evaluation.results import EvalResults, ResultsError, RoleUsage, RunHeader, TrialResult, TrialStatus
from core.evaluation.rewards import CheckResult, DBCheck, RewardInfo
from core.evaluation.tasks import Task
from core.evaluation.trajectory import Stamp, events_from_messages, tau2_messages, token_count
from core.events import EVENT_ADAPTER
from core.private_files import make_dirs, write_text

TAU2_TERMINATIONS = frozenset({"user_stop", "agent_stop", "max_steps", "timeout", "too_many_errors", "agent_error",
                               "user_error", "infrastructure_error", "context_window_exceeded",
                               "unexpected_error"})
_TERMINATION = {"transfer": "user_stop", "out_of_scope": "user_stop", "script_diverged": "agent_error",
                "crashed": "infrastructure_error", "environment_error": "infrastructure_error",
                "unknown": "infrastructure_error"}


# -- the subset of tau2's models we read (validation of an imported file) -----------------------------


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Tau2AgentInfo(_Open):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None


class Tau2EnvironmentInfo(_Open):
    domain_name: str
    policy: str
    tool_defs: dict[str, Any] | None = None


class Tau2Info(_Open):
    git_commit: str
    num_trials: int
    max_steps: int
    max_errors: int
    user_info: Tau2AgentInfo
    agent_info: Tau2AgentInfo
    environment_info: Tau2EnvironmentInfo
    seed: int | None = None


class Tau2RewardInfo(_Open):
    reward: float
    db_check: dict[str, Any] | None = None
    env_assertions: list[dict[str, Any]] | None = None
    action_checks: list[dict[str, Any]] | None = None
    nl_assertions: list[dict[str, Any]] | None = None
    communicate_checks: list[dict[str, Any]] | None = None
    reward_basis: list[str] | None = None
    reward_breakdown: dict[str, float] | None = None
    info: dict[str, Any] | None = None


class Tau2Simulation(_Open):
    id: str
    task_id: str
    start_time: str
    end_time: str
    duration: float
    termination_reason: str
    agent_cost: float | None = None
    user_cost: float | None = None
    reward_info: Tau2RewardInfo | None = None
    messages: list[dict[str, Any]] | None = None
    trial: int | None = None
    seed: int | None = None
    info: dict[str, Any] | None = None


class Tau2Results(_Open):
    timestamp: str | None = None
    info: Tau2Info
    tasks: list[dict[str, Any]]
    simulations: list[Tau2Simulation] = Field(default_factory=list)


def is_tau2(raw: Any) -> bool:
    return isinstance(raw, dict) and "info" in raw and "simulations" in raw and "tasks" in raw


# -- export -------------------------------------------------------------------------------------------


def _termination(trial: TrialResult) -> str:
    if trial.infra or not trial.scored:
        return "infrastructure_error"
    mapped = _TERMINATION.get(trial.termination, trial.termination)
    return mapped if mapped in TAU2_TERMINATIONS else "infrastructure_error"


def _reward_info(trial: TrialResult, task: Task | None) -> dict[str, Any] | None:
    info = trial.reward_info
    if info is None:
        return None
    if info.premature:
        return {"reward": 0.0, "reward_basis": None,
                "info": {"note": f"Simulation terminated prematurely. Termination reason: {trial.termination}"}}
    actions = {a.action_id: a for a in (task.gold_actions if task is not None else [])}
    assertions = list(task.criteria.env_assertions or []) if task is not None else []
    env = [{"env_assertion": a.model_dump(mode="json", exclude_none=True) if a is not None else {"message": c.item},
            "met": c.met, "reward": float(c.met)}
           for c, a in zip(info.env_assertions, [*assertions, *([None] * len(info.env_assertions))], strict=False)]
    return {
        "reward": 0.0 if trial.unscored else info.reward,
        "db_check": {"db_match": info.db_check.db_match, "db_reward": info.db_check.db_reward}
        if info.db_check is not None else None,
        "env_assertions": env,
        "action_checks": [{"action": actions[c.action_id].model_dump(mode="json", exclude_none=True)
                           if c.action_id in actions else {"action_id": c.action_id, "name": c.name, "arguments": {}},
                           "action_match": c.matched, "action_reward": float(c.matched),
                           "tool_type": c.kind if c.kind in ("read", "write", "generic", "think") else None}
                          for c in info.action_checks],
        "nl_assertions": [{"nl_assertion": c.item, "met": c.met, "justification": c.justification}
                          for c in info.nl_assertions] if info.nl_assertions is not None else None,
        "communicate_checks": [{"info": c.item, "met": c.met, "justification": c.justification}
                               for c in info.communicate_checks],
        "reward_basis": info.reward_basis,
        "reward_breakdown": {k: v for k, v in info.breakdown.items() if v is not None},
        "info": {"unscored": trial.unscored} if trial.unscored else None,
    }


def _tau2_task(task: Task) -> dict[str, Any]:
    return task.model_dump(mode="json", exclude_none=True, exclude={"ledgeragent"})


def to_tau2(results: EvalResults, domain: str, agent: str, *, policy: str = "",
            cost: Callable[[str, int, int], float | None] | None = None) -> dict[str, Any]:
    """One tau2 `Results` document for the trials of `agent` on `domain`. `cost(model, prompt, completion)`
    prices a model call for tau2's per-message `cost` (None: unknown)."""
    header = results.header
    trials = [t for t in results.trials if t.domain == domain and t.agent == agent]
    tasks = {t.id: t for t in results.tasks.get(domain, [])}
    model = header.model or (trials[0].model if trials else "")
    user_llm = header.user_model if not header.offline else None
    when = header.created or ""
    simulations = []
    for trial in trials:
        events = [EVENT_ADAPTER.validate_python(e) for e in trial.events]
        priced = None if cost is None or trial.scripted else (
            lambda p, c, name=trial.model: cost(name, p, c))
        agent_usage, user_usage = trial.usage.get("agent"), trial.usage.get("user")
        start, end, stamp = _times(trial, when)
        simulations.append({
            "id": f"{domain}-{trial.task_id}-{agent}-{trial.trial}",
            "task_id": trial.task_id,
            "timestamp": start, "start_time": start, "end_time": end,
            "duration": trial.duration_s,
            "termination_reason": _termination(trial),
            "agent_cost": agent_usage.cost if agent_usage is not None else None,
            "user_cost": user_usage.cost if user_usage is not None else None,
            "reward_info": _reward_info(trial, tasks.get(trial.task_id)),
            "messages": tau2_messages(events, priced, stamp),
            "trial": trial.trial,
            "seed": header.model_seed if header.model_seed is not None else header.seed,
            "mode": "half_duplex",
            "info": {"ledgeragent": trial.model_dump(mode="json")},
        })
    return {
        "timestamp": when,
        "info": {
            "git_commit": "",
            "num_trials": header.trials,
            "max_steps": header.max_steps,
            "max_errors": header.max_errors,
            "user_info": {"implementation": "user_simulator" if user_llm else "ledgeragent-scripted-customer",
                          "llm": user_llm, "llm_args": {**_sampling(header), **header.user_model_args} or None},
            "agent_info": {"implementation": f"ledgeragent-{agent}", "llm": model,
                           "llm_args": {**_sampling(header), **header.agent_model_args} or None},
            "environment_info": {"domain_name": domain, "policy": policy, "tool_defs": None},
            "seed": header.model_seed if header.model_seed is not None else header.seed,
            "ledgeragent": {"header": header.model_dump(mode="json")},
        },
        "tasks": [_tau2_task(t) for t in results.tasks.get(domain, [])],
        "simulations": simulations,
    }


def _times(trial: TrialResult, fallback: str) -> tuple[str, str, Stamp | None]:
    """tau2's start_time, end_time and per-message timestamps from the wall clock the run kept beside the
    trace (`started_at`, `clock`). A trial recorded before that clock was kept has only the run's start:
    both times are it, and messages carry no timestamp rather than an invented one."""
    try:
        start = datetime.fromisoformat(trial.started_at) if trial.started_at else None
    except ValueError:
        start = None
    if start is None:
        return fallback, fallback, None
    end = start + timedelta(seconds=trial.duration_s)
    clock = trial.clock

    def stamp(event: Any) -> str | None:
        index = getattr(event, "seq", 0) - 1
        if not 0 <= index < len(clock):
            return None
        return (start + timedelta(seconds=clock[index])).isoformat(timespec="milliseconds")

    return (start.isoformat(timespec="milliseconds"), end.isoformat(timespec="milliseconds"),
            stamp if clock else None)


def _sampling(header: RunHeader) -> dict[str, Any]:
    if header.offline:
        return {}
    args: dict[str, Any] = {}
    if header.temperature is not None:
        args["temperature"] = header.temperature
    if header.model_seed is not None:
        args["seed"] = header.model_seed
    return args


def write_tau2(results: EvalResults, folder: Path, policies: Mapping[str, str] | None = None,
               cost: Callable[[str, int, int], float | None] | None = None) -> list[Path]:
    """One `<domain>-<agent>.json` per cell of the run in `folder`."""
    make_dirs(folder)
    written: list[Path] = []
    for domain in results.header.domains:
        for agent in results.header.agents:
            if not any(t.domain == domain and t.agent == agent for t in results.trials):
                continue
            document = to_tau2(results, domain, agent, policy=(policies or {}).get(domain, ""), cost=cost)
            path = folder / f"{domain}-{agent}.json"
            write_text(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
            written.append(path)
    return written


# -- import -------------------------------------------------------------------------------------------


def _reward(raw: Tau2RewardInfo | None) -> RewardInfo | None:
    if raw is None:
        return None
    db = raw.db_check or None
    return RewardInfo(
        reward=raw.reward, reward_basis=list(raw.reward_basis or []),
        breakdown={str(k): v for k, v in (raw.reward_breakdown or {}).items()},
        db_check=DBCheck(db_match=bool(db.get("db_match")), db_reward=float(db.get("db_reward") or 0.0),
                         predicted_hash="", gold_hash="") if db else None,
        env_assertions=[CheckResult(item=str((c.get("env_assertion") or {}).get("func_name", "")),
                                    met=bool(c.get("met"))) for c in raw.env_assertions or []],
        communicate_checks=[CheckResult(item=str(c.get("info", "")), met=bool(c.get("met")),
                                        justification=str(c.get("justification", ""))) for c in
                            raw.communicate_checks or []],
        nl_assertions=[CheckResult(item=str(c.get("nl_assertion", "")), met=bool(c.get("met")),
                                   justification=str(c.get("justification", ""))) for c in raw.nl_assertions]
        if raw.nl_assertions is not None else None,
    )


def from_tau2(raw: Mapping[str, Any], source: Path, kind_of: Callable[[str], str] | None = None) -> EvalResults:
    """An `EvalResults` from a tau2 results document (see the module docstring). Raises ResultsError naming
    `source` and the first problem."""
    try:
        document = Tau2Results.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ResultsError(f"{source}: not a tau2 results file: {'.'.join(str(p) for p in first['loc'])}: "
                           f"{first['msg']}") from exc
    ours = document.info.model_extra.get("ledgeragent") if document.info.model_extra else None
    domain = document.info.environment_info.domain_name
    tasks: list[Task] = []
    for index, item in enumerate(document.tasks):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ResultsError(f"{source}: tasks[{index}] (id {item.get('id')!r}): "
                               f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc
    agent_info = document.info.agent_info
    label = agent_info.implementation.removeprefix("ledgeragent-")
    if isinstance(ours, dict) and isinstance(ours.get("header"), dict):
        header = RunHeader.model_validate(ours["header"])
        header = header.model_copy(update={"domains": [domain], "agents": [label]})
    else:
        header = RunHeader(domains=[domain], agents=[label], trials=document.info.num_trials, offline=False,
                           model=agent_info.llm, user_model=document.info.user_info.llm,
                           max_steps=document.info.max_steps, max_errors=document.info.max_errors,
                           seed=document.info.seed or 0,
                           sources={domain: f"tau2 results {source}"}, task_ids={domain: [t.id for t in tasks]})
    trials: list[TrialResult] = []
    for number, sim in enumerate(document.simulations):
        mine = (sim.info or {}).get("ledgeragent")
        if isinstance(mine, dict):
            try:
                trials.append(TrialResult.model_validate(mine))
                continue
            except ValidationError as exc:
                raise ResultsError(f"{source}: simulations[{number}]: info.ledgeragent is not a trial record "
                                   f"({exc.errors()[0]['msg']})") from exc
        trials.append(_foreign_trial(sim, domain, label, agent_info.llm or "", document.info.user_info.llm or "",
                                     kind_of, number))
    recorded = [t.attempts for t in trials if t.infra and t.attempts > 0]
    if recorded and not isinstance(ours, dict):
        header = header.model_copy(update={"max_retries": max(recorded) - 1})
    return EvalResults(header=header, tasks={domain: tasks}, trials=trials)


def _message_usage(messages: Sequence[Mapping[str, Any]], role: str) -> tuple[int, int, int, float | None]:
    """(prompt, completion, calls, summed cost) of one role's messages as tau2 recorded them: `usage` holds
    `prompt_tokens` / `completion_tokens` (tau2's `get_response_usage`), `cost` the call's price; a message
    without usage was no model call (the fixed greeting). The cost is None when some call has none."""
    prompt = completion = calls = 0
    costs: list[float | None] = []
    for message in messages:
        usage = message.get("usage")
        if message.get("role") != role or not isinstance(usage, Mapping):
            continue
        calls += 1
        prompt += token_count(usage.get("prompt_tokens"))
        completion += token_count(usage.get("completion_tokens"))
        cost = message.get("cost")
        costs.append(float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None)
    total = None if not costs or any(c is None for c in costs) else sum(c for c in costs if c is not None)
    return prompt, completion, calls, total


def _foreign_usage(sim: Tau2Simulation, model: str, user: str) -> dict[str, RoleUsage]:
    """Each role's tokens and cost from a tau2 simulation: tokens summed over its messages' `usage`, the cost
    tau2 recorded for the simulation (`agent_cost`, `user_cost`), else the sum of its messages' costs."""
    messages = sim.messages or []
    usage: dict[str, RoleUsage] = {}
    for role, name, recorded, who in (("agent", model, sim.agent_cost, "assistant"),
                                      ("user", user, sim.user_cost, "user")):
        prompt, completion, calls, summed = _message_usage(messages, who)
        if calls or recorded is not None:
            usage[role] = RoleUsage(model=name, prompt=prompt, completion=completion, calls=max(calls, 1),
                                    cost=recorded if recorded is not None else summed)
    return usage


def _attempts(sim: Tau2Simulation) -> int:
    """Whole-simulation attempts tau2 made (`run_with_retry` records `failed_after_attempts` on the placeholder
    of an infrastructure error); 0 when a failed simulation does not say, 1 for a simulation that ran."""
    recorded = (sim.info or {}).get("failed_after_attempts")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        return recorded
    return 0 if sim.termination_reason == "infrastructure_error" else 1


def _foreign_trial(sim: Tau2Simulation, domain: str, agent: str, model: str, user: str,
                   kind_of: Callable[[str], str] | None, number: int) -> TrialResult:
    termination = sim.termination_reason
    reward = _reward(sim.reward_info)
    status: TrialStatus = "infra_error" if termination == "infrastructure_error" else \
        "timeout" if termination == "timeout" else "ok"
    value = reward.reward if reward is not None else 0.0
    events = events_from_messages(sim.messages or [], domain=domain, agent=agent, model=model, user=user,
                                  termination=termination, kind_of=kind_of)
    error = (sim.info or {}).get("error")
    return TrialResult(domain=domain, task_id=sim.task_id, agent=agent,
                       trial=sim.trial if sim.trial is not None else number, status=status, termination=termination,
                       reward=value, success=status == "ok" and abs(value - 1.0) <= 1e-6,
                       detail=str(error)[:2000] if error is not None else "",
                       duration_s=sim.duration, model=model, user=user, reward_info=reward,
                       tokens=token_stats(collect(events)), usage=_foreign_usage(sim, model, user),
                       attempts=_attempts(sim), events=[e.model_dump(mode="json") for e in events])


def load_tau2(path: Path, raw: Any | None = None, kind_of: Callable[[str], str] | None = None) -> EvalResults:
    if raw is None:
        try:
            raw = strict_json.loads(path.read_bytes())
        except FileNotFoundError as exc:
            raise ResultsError(f"no such results file: {path}") from exc
        except strict_json.StrictJSONError as exc:
            raise ResultsError(f"{path}: {exc.message}") from exc
    if not is_tau2(raw):
        raise ResultsError(f"{path}: not a tau2 results file (expected \"info\", \"tasks\" and \"simulations\")")
    return from_tau2(raw, path, kind_of)


def merge(parts: Sequence[EvalResults]) -> EvalResults:
    """Several imported tau2 files (one per domain x agent) as one run."""
    if not parts:
        raise ResultsError("no results to merge")
    first = parts[0].header
    domains = list(dict.fromkeys(d for p in parts for d in p.header.domains))
    agents = list(dict.fromkeys(a for p in parts for a in p.header.agents))
    tasks: dict[str, list[Task]] = {}
    for part in parts:
        for domain, items in part.tasks.items():
            tasks.setdefault(domain, items)
    header = first.model_copy(update={"domains": domains, "agents": agents})
    return EvalResults(header=header, tasks=tasks, trials=[t for p in parts for t in p.trials])
