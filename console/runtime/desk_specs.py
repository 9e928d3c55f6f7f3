"""Which sessions a desk runs: scenario specs from `--domain/--scenarios`, or a JSON-lines specs file.

Hostile input is normal here: a specs file is strict JSON one object per line, each validated by pydantic
(unknown keys, wrong types, a domain or scenario that does not exist, a line or file too large are refused
with the file's line number), so `ledgeragent supervise` answers one line and exit 2, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from console.runtime.errors import CliError
from console.runtime.live import SessionSpec, SupervisionMode
from core import strict_json
from core.scenario import list_scenarios
from domains.registry import DOMAINS, load_domain

MAX_SPECS = 1000  # sessions one desk may be asked to run
MAX_SPEC_LINE = 10_000  # bytes


class SpecLine(BaseModel):
    """One line of a `--specs` file: the fields of a `console.runtime.live.SessionSpec` a desk session may set."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    domain: str = Field(min_length=1, max_length=64)
    scenario: str | None = Field(default=None, min_length=1, max_length=200)
    task: str | None = Field(default=None, min_length=1, max_length=200)
    agent: Literal["ledger", "fc", "ledger-no-gate"] = "ledger"
    model: str = Field(default="scripted", min_length=1, max_length=200)
    base_url: str | None = Field(default=None, max_length=2000)
    user_model: str | None = Field(default=None, min_length=1, max_length=200)
    mode: Literal["autopilot", "approve writes", "approve non-ALLOW", "step"] | None = None
    max_steps: int = Field(default=100, ge=1, le=10_000)
    db: str | None = Field(default=None, min_length=1, max_length=4096)
    disabled_predicates: list[str] = Field(default_factory=list, max_length=200)
    pace: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    evidence: Literal["assist", "ask"] | None = None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown key {where!r}"
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def scenario_names(domain: str) -> list[str]:
    return sorted(list_scenarios(load_domain(domain).scenarios_dir))


def check_scenario(domain: str, scenario: str | None) -> None:
    if domain not in DOMAINS:
        raise CliError(f"unknown domain {domain!r}; one of {', '.join(DOMAINS)}")
    if scenario is not None and scenario not in scenario_names(domain):
        raise CliError(f"unknown scenario {scenario!r} for {domain}; available: {', '.join(scenario_names(domain))}")


def scenario_specs(domain: str, scenarios: str, mode: SupervisionMode, *, pace: float = 0.0,
                   model: str = "scripted", base_url: str | None = None, agent: str = "ledger",
                   evidence: str | None = None) -> list[SessionSpec]:
    """`--domain D|all --scenarios all|name,name` as specs: the command-line words read here, the specs built
    by `console.runtime.task_sessions.scenario_specs` (the one builder: domain by domain, scenarios in name order, each
    named once; with `all`, a name is `domain/name` or one only one domain has). CliError (one line) for an
    unknown domain, no name, or an unknown or ambiguous scenario."""
    from console.runtime.task_sessions import scenario_specs as build

    if domain != "all" and domain not in DOMAINS:
        raise CliError(f"unknown domain {domain!r}; one of all, {', '.join(DOMAINS)}")
    wanted = "all" if scenarios.strip() == "all" else [s.strip() for s in scenarios.split(",") if s.strip()]
    if not wanted:
        raise CliError("--scenarios names no scenario (give all, or name,name)")
    base = SessionSpec(mode=mode, pace=pace, model=model, base_url=base_url, agent=agent, evidence=evidence)
    try:
        return build(None if domain == "all" else domain, wanted, base)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def load_specs_file(path: Path, default_mode: SupervisionMode,
                    default_evidence: str | None = None) -> list[SessionSpec]:
    """Every line of `path` as a SessionSpec (blank lines skipped); the first bad line is a CliError."""
    if not path.is_file():
        raise CliError(f"no such specs file: {path}")
    specs: list[SessionSpec] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            where = f"{path} line {number}"
            if len(raw) > MAX_SPEC_LINE:
                raise CliError(f"{where}: longer than {MAX_SPEC_LINE} bytes")
            if not raw.strip():
                continue
            if len(specs) >= MAX_SPECS:
                raise CliError(f"{path}: more than {MAX_SPECS} session specs")
            try:
                value = strict_json.loads(raw)
            except strict_json.StrictJSONError as exc:
                raise CliError(f"{where}: {exc}") from None
            if not isinstance(value, dict):
                raise CliError(f"{where}: a session spec is a JSON object")
            try:
                line = SpecLine.model_validate(value)
            except ValidationError as exc:
                raise CliError(f"{where}: {_first_error(exc)}") from None
            try:
                check_scenario(line.domain, line.scenario)
            except CliError as exc:
                raise CliError(f"{where}: {exc}") from None
            spec = SessionSpec(domain=line.domain, scenario=line.scenario, task=line.task, agent=line.agent,
                               model=line.model, base_url=line.base_url, user_model=line.user_model,
                               mode=SupervisionMode(line.mode) if line.mode else default_mode,
                               max_steps=line.max_steps, db=Path(line.db) if line.db else None,
                               disabled_predicates=tuple(line.disabled_predicates), pace=line.pace,
                               evidence=line.evidence or default_evidence)
            problems = spec.problems()
            if problems:
                raise CliError(f"{where}: {'; '.join(problems)}")
            specs.append(spec)
    if not specs:
        raise CliError(f"{path}: no session spec in the file")
    return specs


def repeated(specs: Sequence[SessionSpec], times: int) -> list[SessionSpec]:
    """Each spec `times` times, one after another (for load)."""
    return [spec for spec in specs for _ in range(times)]
