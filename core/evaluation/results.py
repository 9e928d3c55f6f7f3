"""What a run leaves on disk, and the public loader a results viewer uses (`load_results`).

Layout of a run folder:
    run.json       the run header (configuration; checked on --resume so a resumed run stays one experiment)
    trials.jsonl   one full `TrialResult` per line, appended and flushed the moment a trial ends
    results.json   header + tasks + metrics + every trial with its full event trace, written at the end
    report.md      the human report, with pass^k plots as SVG files beside it

Why trials.jsonl first: a run of thousands of trials must not hold every trace in memory, and an interrupted
run must lose at most the trials in flight. results.json is assembled from it by streaming, in a stable
order (domain, task, agent, trial), so the same run gives the same file whatever order trials finished in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core import strict_json
from core.evaluation.mistakes import Mistake
from core.evaluation.rewards import RewardInfo
from core.evaluation.tasks import Task
from core.private_files import append_text, make_dirs, open_fd, write_text

_Line = TypeVar("_Line", bound=BaseModel)

RESULTS_VERSION = 1
# "infra_error": the trial could not be run (a model endpoint kept failing, the harness crashed) even after
# --max-retries whole-trial retries. As in tau2-bench it is no task failure: left out of every metric, counted
# and shown, and run again on --resume. "crashed" is what older runs recorded for the same thing.
TrialStatus = Literal["ok", "crashed", "timeout", "infra_error"]
EXCLUDED_STATUSES = frozenset({"crashed", "infra_error"})
ROLES = ("agent", "user", "judge")


class StepTokens(BaseModel):
    model_config = ConfigDict(frozen=True)
    step: int
    prompt: int
    completion: int
    ledger: int


class TokenStats(BaseModel):
    prompt: int = 0
    completion: int = 0
    ledger: int = 0  # estimated size of the ledger block, summed over the prompts that carried it
    model_calls: int = 0
    estimated: bool = False  # True when any count is a local estimate rather than the API's usage
    steps: list[StepTokens] = Field(default_factory=list)

    @property
    def total(self) -> int:
        return self.prompt + self.completion


class RoleUsage(BaseModel):
    """Tokens and cost of one role (agent, customer simulator or judge) in one trial.

    `cost` is None when the price of `model` is unknown (never 0: a missing price is not a free model) or
    when the role used no model (scripted stand-ins). `estimated`: some count is a local estimate."""

    model: str = ""
    prompt: int = 0
    completion: int = 0
    calls: int = 0
    cost: float | None = None
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.prompt + self.completion


class GateStats(BaseModel):
    verdicts: dict[str, int] = Field(default_factory=dict)  # ALLOW / REVISE / BLOCK
    refusals: dict[str, int] = Field(default_factory=dict)  # the REVISEs by kind: needs_read / breaks_rule
    gate_reads: int = 0  # reads the gate made itself (evidence assist)
    predicates: dict[str, dict[str, int]] = Field(default_factory=dict)  # id -> {violation, missing, error}
    escalated: int = 0
    repeated: int = 0
    overrides: dict[str, int] = Field(default_factory=dict)  # approve / veto / edit / force_allow


class Failure(BaseModel):
    category: str
    evidence: str


class TrialSummary(BaseModel):
    """Everything about a trial except its event trace: what metrics and tables need."""

    domain: str
    task_id: str
    agent: str
    trial: int
    status: TrialStatus = "ok"
    termination: str
    detail: str = ""
    reward: float = 0.0
    success: bool = False
    has_write: bool = False
    steps: int = 0
    duration_s: float = 0.0
    model: str = ""
    user: str = ""
    scripted: bool = False
    slips: list[str] = Field(default_factory=list)  # deliberate mistakes of the error-prone scripted agent
    mistakes: list[Mistake] = Field(default_factory=list)  # an error profile's mistakes and what became of them
    tokens: TokenStats = Field(default_factory=TokenStats)
    gate: GateStats = Field(default_factory=GateStats)
    would_refuse: list[str] = Field(default_factory=list)  # predicates the gate would fail on executed writes
    unscored: list[str] = Field(default_factory=list)  # reward components left unscored (NL without a judge)
    reward_info: RewardInfo | None = None
    failure: Failure | None = None
    attempts: int = 1  # whole-trial attempts made (more than 1 after infrastructure failures)
    usage: dict[str, RoleUsage] = Field(default_factory=dict)  # role -> tokens and cost (agent, user, judge)
    started_at: str = ""  # wall-clock start of the attempt (ISO 8601, UTC); "" in runs recorded before it was kept

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.domain, self.task_id, self.agent, self.trial)

    @property
    def infra(self) -> bool:
        """The trial could not be run: no evidence about the agent, so it is in no metric."""
        return self.status in EXCLUDED_STATUSES

    @property
    def scored(self) -> bool:
        """Counted in pass^k and the mean reward: it ran, and every reward component was graded."""
        return not self.infra and not self.unscored

    @property
    def cost(self) -> float | None:
        """Summed cost of every role that used a model; None when any of them has an unknown price."""
        costs = [u.cost for u in self.usage.values() if u.calls]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)

    def light(self) -> TrialSummary:
        """What a run keeps in memory per trial: no trace, no per-step tokens, no reward details (all on
        disk). Metrics need nothing more, and a run of many thousand trials stays small."""
        fields = {name: getattr(self, name) for name in TrialSummary.model_fields}
        fields.update(reward_info=None, tokens=self.tokens.model_copy(update={"steps": []}))
        return TrialSummary.model_construct(**fields)


class TrialResult(TrialSummary):
    events: list[dict[str, Any]] = Field(default_factory=list)
    # Seconds from `started_at` to each event, by position in `events`: the wall clock a trace never holds
    # (traces stay byte-identical), kept beside it so an export can give tau2 real message timestamps.
    clock: list[float] = Field(default_factory=list)

    def summary(self) -> TrialSummary:
        return self.light()


class RunHeader(BaseModel):
    version: int = RESULTS_VERSION
    created: str = ""
    domains: list[str]
    agents: list[str]
    trials: int
    offline: bool  # scripted agents and customers: figures are a simulation, not a model's
    model: str | None = None
    base_url: str | None = None
    user_model: str | None = None
    judge_model: str | None = None
    error_rate: float = 0.0
    error_profile: str = ""  # simulated errors (core.error_profile), "" for none
    seed: int = 0
    sources: dict[str, str] = Field(default_factory=dict)  # domain -> tasks file and database
    task_ids: dict[str, list[str]] = Field(default_factory=dict)
    max_steps: int = 100
    max_errors: int = 10
    disabled_predicates: list[str] = Field(default_factory=list)
    compact_history: bool = False
    tokenizer: str = "estimate"
    user_base_url: str | None = None
    judge_base_url: str | None = None
    temperature: float | None = None  # sent to every role's endpoint (None: the endpoint's default)
    model_seed: int | None = None  # `seed` sent to every role's endpoint (--seed with a model)
    agent_model_args: dict[str, Any] = Field(default_factory=dict)  # extra request fields per role
    user_model_args: dict[str, Any] = Field(default_factory=dict)
    judge_model_args: dict[str, Any] = Field(default_factory=dict)
    max_retries: int = 3  # whole-trial retries after an infrastructure failure
    policy_sources: dict[str, str] = Field(default_factory=dict)  # domain -> where the agent's policy came from
    # domain -> the policy text itself, as the agent got it (what an export writes as tau2's environment policy)
    policy_texts: dict[str, str] = Field(default_factory=dict)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)  # model -> input/output USD per 1M tokens

    def fingerprint(self) -> dict[str, Any]:
        """The fields a resumed run must share with the run on disk (retries and prices change no trial; the
        policy's source names it, so a run begun before its text was recorded still resumes)."""
        return self.model_dump(exclude={"created", "trials", "version", "max_retries", "prices", "policy_texts"})


class EvalResults(BaseModel):
    header: RunHeader
    tasks: dict[str, list[Task]] = Field(default_factory=dict)  # domain -> tasks
    metrics: dict[str, Any] = Field(default_factory=dict)
    trials: list[TrialResult] = Field(default_factory=list)


class ResultsError(ValueError):
    """A results file or folder that cannot be read; names the file and the problem."""


class ResultStore:
    """The run folder: header, the append-only trial log, and the final results.json."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.header_path = folder / "run.json"
        self.trials_path = folder / "trials.jsonl"
        self.results_path = folder / "results.json"
        self._handle: IO[str] | None = None

    def write_header(self, header: RunHeader) -> None:
        make_dirs(self.folder)
        write_text(self.header_path, header.model_dump_json(indent=2) + "\n")

    def read_header(self) -> RunHeader | None:
        if not self.header_path.is_file():
            return None
        try:
            return RunHeader.model_validate_json(self.header_path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise ResultsError(f"{self.header_path}: not a run header ({exc.errors()[0]['msg']})") from exc

    def _lines(self) -> Iterator[tuple[int, int, str]]:
        """(offset, length, text) of every complete line of trials.jsonl."""
        if not self.trials_path.is_file():
            return
        with self.trials_path.open("rb") as handle:
            offset = 0
            for raw in handle:
                if raw.endswith(b"\n"):
                    yield offset, len(raw), raw.decode("utf-8")
                offset += len(raw)

    def done(self) -> list[TrialSummary]:
        """Trials already on disk (a half-written last line from an interrupted run is ignored). A trial that
        ended as an infrastructure error is not done: --resume runs it again (the newer line wins)."""
        found: dict[tuple[str, str, str, int], TrialSummary] = {}
        for _offset, _length, line in self._lines():
            summary = read_trial_line(TrialSummary, line)
            if summary is not None:
                found[summary.key] = summary.light()
        return [s for s in found.values() if not s.infra]

    def append(self, result: TrialResult) -> None:
        if self._handle is None:
            make_dirs(self.folder)
            self._repair_tail()
            self._handle = append_text(self.trials_path)
        self._handle.write(result.model_dump_json() + "\n")
        self._handle.flush()

    def _repair_tail(self) -> None:
        """Drop a half-written last line (the process died mid-write) so appends start on a clean line."""
        if not self.trials_path.is_file():
            return
        data = self.trials_path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.trials_path.write_bytes(data[: data.rfind(b"\n") + 1])

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def write_results(self, header: RunHeader, tasks: dict[str, list[Task]], metrics: dict[str, Any]) -> Path:
        """results.json, streamed from trials.jsonl in key order (one trial in memory at a time)."""
        index: dict[tuple[str, str, str, int], tuple[int, int]] = {}
        order = {(d, t.id): n for d, ts in tasks.items() for n, t in enumerate(ts)}
        for offset, length, line in self._lines():
            summary = read_trial_line(TrialSummary, line)
            if summary is not None:
                index[summary.key] = (offset, length)
        keys = sorted(index, key=lambda k: (k[0], order.get((k[0], k[1]), 10**9), k[1], k[2], k[3]))
        tasks_json = {d: [t.model_dump(mode="json", exclude_none=True) for t in ts] for d, ts in tasks.items()}
        results = os.fdopen(open_fd(self.results_path, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8")
        with results as out, self.trials_path.open("rb") as source:
            out.write('{"header": ' + header.model_dump_json() + ',\n"tasks": ' + json.dumps(tasks_json)
                      + ',\n"metrics": ' + json.dumps(metrics) + ',\n"trials": [\n')
            for number, key in enumerate(keys):
                offset, length = index[key]
                source.seek(offset)
                out.write(("," if number else "") + source.read(length).decode("utf-8"))
            out.write("]}\n")
        return self.results_path


def summaries(trials: Iterable[TrialSummary]) -> list[TrialSummary]:
    """Light summaries (e.g. to recompute metrics from `load_results(...).trials`)."""
    return [t.light() for t in trials]


def read_trial_line(model: type[_Line], line: str) -> _Line | None:
    """One trials.jsonl line as `model`, or None when it is not one: torn, not strict JSON (pydantic's own
    parser would take NaN and 1e999 for numbers), or not that shape. Every reader of the file skips alike."""
    try:
        return model.model_validate(strict_json.loads(line))
    except (strict_json.StrictJSONError, ValidationError):
        return None
