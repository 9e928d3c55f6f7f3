"""The trial runner: every (task, agent, trial) as an isolated session, concurrently, none ever dropped.

Isolation. Each worker owns one database file ("slot"), opened once from the run's source data, with a
snapshot of that baseline. A trial starts from the baseline (plus the task's initialization actions of both
sides, each followed by the backend's sync: `rewards.prepare`) and the
slot is restored to the baseline afterwards, an undo-log restore that costs as much as the trial changed, not
as much as the database holds. A task whose initial state patches the data gets a database of its own, made
from the patched data. Nothing a trial does can leak into another: different files, different ledgers,
different event buses, different model clients.

Bounds. Max steps (the session's own guard), max tool errors (tau2's `too_many_errors`, checked before each
model call), and a wall-clock timeout per trial (a timed-out trial is a failure, tau2's `timeout`).

Infrastructure failures, as tau2-bench: a trial whose model endpoint (agent, customer simulator or judge)
kept failing after the client's own retries, or in which the harness crashed, tells nothing about the agent.
It is retried whole (`RunSettings.max_retries`, fresh state and fresh models), and if every attempt fails it
is recorded with status `infra_error` (termination `infrastructure_error`): left out of every metric, counted
and shown, and run again on --resume. A slot that cannot be restored after a crash is replaced, so one
broken trial cannot poison the next.

Resume. Finished trials are appended to `trials.jsonl` as they end; a resumed run skips the keys on disk
(except infrastructure errors).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from core.agent import AgentConfig
from core.domain import Domain
from core.evaluation.analysis import classify, gate_stats, token_stats, would_refuse
from core.evaluation.facts import TrialFacts, collect
from core.evaluation.mistakes import mistake_outcomes
from core.evaluation.pricing import PriceTable
from core.evaluation.results import ResultStore, RoleUsage, TrialResult, TrialStatus, TrialSummary
from core.evaluation.rewards import (
    GoldState,
    JudgeError,
    JudgeVerdict,
    NLJudge,
    RewardInfo,
    TrialBackend,
    evaluate,
    gold_state,
    prepare,
)
from core.evaluation.starting import patched_source, task_patch
from core.evaluation.tasks import InitializationData, Task
from core.evaluation.trajectory import tau2_messages
from core.evaluation.usage import MeteredModel, agent_usage, role_usage
from core.events import EventBus, ModelFailed, ToolResultEvent
from core.llm.base import AssistantTurn, ChatModel, Message, RetryListener
from core.private_files import make_dirs
from core.session import Session, SessionResult
from core.tools import ToolKind
from core.users import UserProxy

OpenBackend = Callable[[Path], Awaitable[TrialBackend]]
CreateBackend = Callable[[Path, Mapping[str, Any]], Awaitable[TrialBackend]]
TrialKey = tuple[str, str, str, int]  # domain, task id, agent label, trial index


@dataclass(frozen=True)
class AgentVariant:
    """One agent condition under test: a label for the tables and the loop's configuration."""

    label: str
    config: AgentConfig


class Participants(Protocol):
    """Builds the agent's model and the customer for one trial, and releases them afterwards."""

    scripted: bool  # True when the figures come from scripted stand-ins, not from a model
    needs_data: bool  # True when `agent` wants the task's starting data (offline planners do)

    def agent(self, task: Task, variant: AgentVariant, trial: int, data: Mapping[str, Any] | None) -> ChatModel: ...

    def user(self, task: Task, trial: int) -> UserProxy: ...

    async def release(self, model: ChatModel, user: UserProxy) -> None: ...


@dataclass(frozen=True)
class RunSettings:
    trials: int = 4
    max_steps: int = 100
    max_errors: int = 10
    concurrency: int = 4
    trial_timeout: float | None = 600.0
    max_retries: int = 3  # whole-trial retries after an infrastructure failure (tau2's --max-retries)
    retry_delay: float = 0.0  # seconds before a retry


@dataclass
class DomainRun:
    """One domain's share of a run: its tasks, how to open its database, and who plays the parts."""

    domain: Domain
    tasks: list[Task]
    open_backend: OpenBackend
    participants: Participants
    create_backend: CreateBackend | None = None
    _gold: dict[str, GoldState] = field(default_factory=dict, init=False, repr=False)  # per task: gold end state
    _data: dict[str, Mapping[str, Any]] = field(default_factory=dict, init=False, repr=False)  # starting data

    def has_write(self, task: Task) -> bool:
        """Whether the AGENT must write (the write-task subset, paper Fig. 3): a customer's phone action in the
        gold (dual control) changes the state too, but it is not a call the gate judges."""
        return any(self.domain.kind_of(a.name) is ToolKind.WRITE and a.side != "user" for a in task.gold_actions)


class TooManyToolErrors(Exception):
    """Raised before the next model call once the trial's tool-error budget is spent."""


class _Guard:
    """Wraps the agent's model: counts failed tool calls on the bus and stops the trial at the limit."""

    def __init__(self, inner: ChatModel, limit: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.limit = limit
        self.errors = 0

    @property
    def on_retry(self) -> RetryListener | None:
        listener: RetryListener | None = getattr(self.inner, "on_retry", None)
        return listener

    @on_retry.setter
    def on_retry(self, listener: RetryListener | None) -> None:
        if hasattr(self.inner, "on_retry"):
            self.inner.on_retry = listener

    def __call__(self, event: Any) -> None:
        # the agent's own failed calls: a read the gate made itself and that failed is not one
        if isinstance(event, ToolResultEvent) and event.outcome in ("error", "invalid") and event.by != "gate":
            self.errors += 1

    async def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        if self.errors >= self.limit:
            raise TooManyToolErrors(f"{self.errors} tool errors (limit {self.limit})")
        return await self.inner.complete(messages, tools)


@dataclass
class _Slot:
    path: Path
    backend: TrialBackend
    base: Any


def _crash_text(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


class EvalRunner:
    def __init__(self, runs: Sequence[DomainRun], variants: Sequence[AgentVariant], settings: RunSettings, *,
                 workdir: Path, store: ResultStore | None = None, judge: NLJudge | None = None,
                 on_trial: Callable[[TrialSummary], None] | None = None,
                 skip: frozenset[TrialKey] = frozenset(), prices: PriceTable | None = None) -> None:
        if settings.concurrency < 1 or settings.trials < 1 or settings.max_retries < 0:
            raise ValueError("concurrency and trials must be at least 1, max_retries at least 0")
        self.prices = prices
        self.runs = list(runs)
        self.variants = list(variants)
        self.settings = settings
        self.workdir = workdir
        self.store = store
        self.judge = judge
        self.on_trial = on_trial
        self.skip = skip
        self._paths = itertools.count(1)

    def pending(self, run: DomainRun) -> list[tuple[Task, AgentVariant, int]]:
        """Trial-major order, so an interrupted run has every task covered evenly."""
        return [(task, variant, trial) for trial in range(self.settings.trials) for task in run.tasks
                for variant in self.variants
                if (run.domain.name, task.id, variant.label, trial) not in self.skip]

    def total(self) -> int:
        return sum(len(self.pending(run)) for run in self.runs)

    async def run(self) -> list[TrialSummary]:
        make_dirs(self.workdir)
        done: list[TrialSummary] = []
        for run in self.runs:
            queue: asyncio.Queue[tuple[Task, AgentVariant, int]] = asyncio.Queue()
            for spec in self.pending(run):
                queue.put_nowait(spec)
            workers = min(self.settings.concurrency, max(queue.qsize(), 1))
            await asyncio.gather(*(self._worker(run, queue, done) for _ in range(workers)))
        return done

    # -- slots ---------------------------------------------------------------------------------------

    async def _open_slot(self, run: DomainRun) -> _Slot:
        path = self.workdir / f"{run.domain.name}-slot-{next(self._paths)}.sqlite"
        backend = await run.open_backend(path)
        return _Slot(path, backend, await backend.snapshot())

    async def _discard(self, slot: _Slot) -> None:
        with contextlib.suppress(Exception):
            await slot.backend.close()
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{slot.path}{suffix}").unlink(missing_ok=True)

    async def _worker(self, run: DomainRun, queue: asyncio.Queue[tuple[Task, AgentVariant, int]],
                      done: list[TrialSummary]) -> None:
        slot = await self._open_slot(run)
        try:
            while not queue.empty():
                task, variant, trial = queue.get_nowait()
                result = await self._trial(run, slot, task, variant, trial)
                summary = result.summary()
                if self.store is not None:
                    self.store.append(result)
                del result  # the trace is on disk; only the summary stays in memory
                done.append(summary)
                if self.on_trial is not None:
                    self.on_trial(summary)
        finally:
            await self._discard(slot)

    # -- per task caches -----------------------------------------------------------------------------

    async def _task_data(self, run: DomainRun, slot: _Slot, task: Task) -> Mapping[str, Any]:
        """The task's starting data (for offline planners), exported once per task."""
        key = task.id if task.needs_initialization else ""
        if key not in run._data:
            if key:
                await prepare(slot.backend, slot.base, task)
            run._data[key] = await slot.backend.export()
            await slot.backend.restore(slot.base)
        return run._data[key]

    async def _dedicated(self, run: DomainRun, slot: _Slot, task: Task) -> _Slot | None:
        """A database of its own for a task whose initial state patches the data (rare; tau2 airline and
        retail have none), built from the baseline with the patch deep-merged in (`_patched_source`). The
        planner's data for it (`patched:<id>`) is that database's export after the initialization actions."""
        patch = task_patch(task)
        if patch is None:
            return None
        if run.create_backend is None:
            raise RuntimeError("this task patches the initial data, and no create_backend was given")
        source_key = f"source:{task.id}"
        if source_key not in run._data:
            run._data[source_key] = await self._patched_source(run, slot, patch)
        path = self.workdir / f"{run.domain.name}-task-{next(self._paths)}.sqlite"
        backend = await run.create_backend(path, run._data[source_key])
        own = _Slot(path, backend, await backend.snapshot())
        if f"patched:{task.id}" not in run._data:
            await prepare(own.backend, own.base, task)
            run._data[f"patched:{task.id}"] = await own.backend.export()
            await own.backend.restore(own.base)
        return own

    async def _patched_source(self, run: DomainRun, slot: _Slot, patch: InitializationData) -> Mapping[str, Any]:
        """The baseline with tau2's `initialization_data` deep-merged in (`starting.patched_source`: objects key
        by key, anything else replaced; a dual-control backend patched in tau2's layout, both sides)."""
        return await patched_source(slot.backend, patch, run.domain.name, run._data.get(""))

    # -- one trial -----------------------------------------------------------------------------------

    async def _trial(self, run: DomainRun, slot: _Slot, task: Task, variant: AgentVariant,
                     trial: int) -> TrialResult:
        """One trial, retried whole (fresh database state, fresh models) after an infrastructure failure, as
        tau2's `run_with_retry`; after `max_retries` retries it is recorded as an infrastructure error. A slot
        an attempt left unusable is replaced in place."""
        attempts = self.settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            if attempt > 1 and self.settings.retry_delay > 0:
                await asyncio.sleep(self.settings.retry_delay)
            result, ok, infra = await self._attempt(run, slot, task, variant, trial)
            if not ok:  # the shared slot may be mid-transaction: the next attempt needs a clean one
                await self._discard(slot)
                fresh = await self._open_slot(run)
                slot.path, slot.backend, slot.base = fresh.path, fresh.backend, fresh.base
            result.attempts = attempt
            if infra is None:
                return result
            if attempt == attempts:
                result.status = "infra_error"
                result.termination = "infrastructure_error"
                result.detail = f"infrastructure error after {attempt} attempt(s): {infra}"
                result.reward, result.success, result.failure = 0.0, False, None
                return result
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, run: DomainRun, slot: _Slot, task: Task, variant: AgentVariant,
                       trial: int) -> tuple[TrialResult, bool, str | None]:
        """Run, grade and summarise one attempt. Returns the result, whether the slot is still usable, and
        the infrastructure failure that makes the attempt void (None: a real trial, whatever its reward)."""
        started = time.perf_counter()
        started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        domain = run.domain
        status: TrialStatus = "ok"
        detail = ""
        infra: str | None = None
        bus = EventBus()
        clock: list[float] = []
        bus.subscribe(lambda _event: clock.append(round(time.perf_counter() - started, 3)))
        model: ChatModel | None = None
        user: UserProxy | None = None
        reward: RewardInfo | None = None
        verdict: JudgeVerdict | None = None
        session_result: SessionResult | None = None
        healthy = True
        own: _Slot | None = None
        try:
            own = await self._dedicated(run, slot, task)
            where = own or slot
            data: Mapping[str, Any] | None = None
            if run.participants.needs_data:
                data = run._data[f"patched:{task.id}"] if own is not None else await self._task_data(run, slot, task)
            await prepare(where.backend, where.base, task)
            model = run.participants.agent(task, variant, trial, data)
            user = run.participants.user(task, trial)
            guard = _Guard(model, self.settings.max_errors)
            bus.subscribe(guard)
            session = Session(domain=domain, backend=where.backend, model=guard, user=user, config=variant.config,
                              bus=bus, max_steps=self.settings.max_steps, scenario=f"task {task.id}")
            try:
                async with asyncio.timeout(self.settings.trial_timeout):
                    session_result = await session.run()
            except TooManyToolErrors as exc:
                session_result = await session.finish("too_many_errors", str(exc))
            except TimeoutError:
                status, detail = "timeout", f"trial exceeded {self.settings.trial_timeout:g} s"
                session_result = await session.finish("timeout", detail)
            except Exception as exc:  # noqa: BLE001 - a crashing trial is recorded, never dropped
                status, detail = "crashed", _crash_text(exc)
                infra = detail
                session_result = await session.finish("crashed", detail)
            infra = infra or endpoint_failure(bus.history, session_result.reason)
            if infra is None:
                facts = collect(bus.history)
                key = task.id
                if key not in run._gold:
                    run._gold[key] = await gold_state(where.backend, where.base, task, domain)
                reward, verdict = await evaluate(
                    task=task, domain=domain, facts=facts, backend=where.backend, base=where.base,
                    gold=run._gold[key], live_hash=session_result.db_hash, judge=self.judge,
                    messages=tau2_messages(bus.history))
        except JudgeError as exc:
            infra = str(exc)
        except Exception as exc:  # noqa: BLE001 - harness-side failure: still one recorded trial
            if status == "ok":
                status = "crashed"
            detail = (detail + "; " if detail else "") + _crash_text(exc)
            infra = detail
            healthy = own is not None  # the shared slot may be mid-transaction: replace it
        finally:
            if own is not None:
                await self._discard(own)
            if model is not None and user is not None:
                with contextlib.suppress(Exception):
                    await run.participants.release(model, user)
        facts = collect(bus.history)
        refused = would_refuse(facts, domain)
        success = reward is not None and reward.success and status == "ok"
        result = TrialResult(
            domain=domain.name, task_id=task.id, agent=variant.label, trial=trial, status=status,
            termination=facts.termination if session_result is not None else status,
            detail=detail or (session_result.detail if session_result is not None else ""),
            reward=reward.reward if reward is not None else 0.0, success=success, has_write=run.has_write(task),
            steps=session_result.steps if session_result is not None else 0,
            duration_s=round(time.perf_counter() - started, 4),
            model=model.name if model is not None else "", user=user.name if user is not None else "",
            scripted=run.participants.scripted, slips=list(getattr(model, "slips", [])),
            mistakes=mistake_outcomes(bus.history, getattr(model, "mistake_calls", [])),
            tokens=token_stats(facts), gate=gate_stats(facts), would_refuse=refused,
            unscored=reward.unscored if reward is not None else [], reward_info=reward,
            usage=self._usage(run, facts, model, user, verdict),
            events=[event.model_dump(mode="json") for event in bus.history], started_at=started_at,
            clock=clock if len(clock) == len(bus.history) else [],
        )
        if not success and infra is None:
            result.failure = classify(status=status, facts=facts, reward=reward, task=task, refused=refused)
        return result, healthy, infra

    def _usage(self, run: DomainRun, facts: TrialFacts, model: ChatModel | None, user: UserProxy | None,
               verdict: JudgeVerdict | None) -> dict[str, RoleUsage]:
        """Tokens and cost per role. Scripted stand-ins are no model: their counts are kept, never priced."""
        priced = not run.participants.scripted
        usage = {"agent": agent_usage(facts, model.name if model is not None else "", self.prices, priced=priced)}
        meter = getattr(user, "model", None)
        if isinstance(meter, MeteredModel):
            usage["user"] = role_usage(meter.name, meter.usage, meter.calls, self.prices)
        if verdict is not None:
            usage["judge"] = role_usage(verdict.model, verdict.usage, 1, self.prices)
        return usage


# ModelError kinds that say the endpoint, not the model's behaviour, failed (after the client's own retries).
INFRA_KINDS = frozenset({"timeout", "rate_limited", "server_error", "http_error", "connection", "bad_response"})


def endpoint_failure(events: Sequence[Any], reason: str) -> str | None:
    """Why the session ended on an infrastructure failure, or None. tau2 retries any exception out of a
    simulation (its LLM calls raise after their own retries) and, when retries run out, records
    `infrastructure_error`; protocol violations of a model that did answer (an empty user message) stay
    `agent_error` / `user_error` there. Same rule here: the session ended with agent_error / user_error
    because a model endpoint failed (timeout, HTTP error, unreadable body)."""
    if reason not in ("agent_error", "user_error"):
        return None
    failed = next((e for e in reversed(events) if isinstance(e, ModelFailed)), None)
    if failed is None or failed.kind not in INFRA_KINDS or failed.message.startswith("user simulator: the user "
                                                                                      "simulator"):
        return None
    return f"{failed.kind}: {failed.message}"
