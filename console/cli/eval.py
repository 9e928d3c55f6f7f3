"""`ledgeragent eval`: pass^k of LedgerAgent against the function-calling baseline, on tau2-format tasks.

Offline by default: without --model every trial is played by a deterministic scripted agent built from the
task's gold actions and a scripted customer, so CI and a newcomer can run it; the table and the report say
so. With --model (and --base-url for any OpenAI-compatible server) the agent is a real model and the customer
an LLM user simulator (--user-model, default: the same model).

Besides running, `eval` works on saved results (ours or tau2-bench's):
    ledgeragent eval regrade RESULTS [--tau2-dir D] [--judge-model M] [--out FOLDER]
    ledgeragent eval compare A B
    ledgeragent eval export RUN --out FOLDER      (tau2-bench results files, one per domain and agent)

Wiring only: the harness is `core.evaluation`; this module picks the domains, tasks, databases and
participants, shows progress, and prints the table. The command line is declared in `console.cli.eval_options`,
so that declaring it costs other commands nothing; its handler imports this module when `eval` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from console.cli.model_options import model_settings
from console.runtime.storage import data_root
from core.agent import AgentConfig
from core.domain import Domain
from core.error_profile import LABELS, ErrorProfile, FailureKind, load_profile
from core.evaluation.compare import compare
from core.evaluation.harness import EvalOutcome, run_evaluation
from core.evaluation.judge import close_judge, llm_judge
from core.evaluation.loading import load_results
from core.evaluation.metrics import BASELINE, Metrics, compute_metrics, metrics_json
from core.evaluation.offline import OfflinePlanner
from core.evaluation.participants import ModelParticipants, OfflineParticipants
from core.evaluation.pricing import PriceTable, PriceTableError
from core.evaluation.regrade import RegradeDomain, regrade
from core.evaluation.report import money, unscored_warning, write_report
from core.evaluation.results import (
    EXCLUDED_STATUSES,
    EvalResults,
    ResultsError,
    ResultStore,
    RunHeader,
    TrialSummary,
)
from core.evaluation.rewards import NLJudge, TrialBackend
from core.evaluation.runner import AgentVariant, DomainRun, Participants, RunSettings
from core.evaluation.tasks import Task, TaskFileError, read_task_ids, read_tasks, select_tasks
from core.evaluation.tau2_format import write_tau2
from core.evidence import EvidenceMode
from core.folder_lock import FolderLock
from core.llm.base import ChatModel
from core.llm.tokenizer import tokenizer_name
from domains.registry import DOMAINS, UnknownDomain, load_domain, load_offline_planner
from mock_backends.registry import BackendSourceError, backend_class, open_backend

# A tau2 data folder's task file: the full set, else the small split (tau2 telecom's 4 MiB tasks.json is often
# left out and tasks_small.json shipped alone, as in the copy this project is tested with).
TAU2_TASK_FILES = ("tasks.json", "tasks_small.json")


class EvalInputError(Exception):
    """A problem with the command line: printed without a traceback, exit status 2."""




# -- building the run ------------------------------------------------------------------------------

MAX_ARGS_JSON = 65536


def _json_object(text: str | None, flag: str) -> dict[str, Any]:
    """A per-role model-arguments JSON object: strict JSON (no NaN/Infinity), bounded, an object."""
    if text is None:
        return {}
    if len(text) > MAX_ARGS_JSON:
        raise EvalInputError(f"{flag}: longer than {MAX_ARGS_JSON} characters")

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        value = json.loads(text, parse_constant=reject)
    except (json.JSONDecodeError, ValueError) as exc:
        raise EvalInputError(f"{flag}: not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise EvalInputError(f"{flag}: expected a JSON object, got {type(value).__name__}")
    return value


def _tau2_folder(root: Path, name: str) -> Path | None:
    for folder in (root / name, root):
        if any((folder / f).is_file() for f in TAU2_TASK_FILES):
            return folder
    return None


def infer_domains(tau2_dir: str) -> str:
    """The domain(s) a tau2 data folder holds: its name, its domain-named subfolders with tasks, else the
    `domain` its tasks' instructions name."""
    root = Path(tau2_dir)
    if not root.is_dir():
        raise EvalInputError(f"no such tau2 data folder: {root} (it should hold tasks.json and db.json, or "
                             "<domain>/ folders with them)")
    if root.name in DOMAINS and _tau2_folder(root, root.name):
        return root.name
    found = [name for name in DOMAINS if any((root / name / f).is_file() for f in TAU2_TASK_FILES)]
    if found:
        return ",".join(found)
    for name in TAU2_TASK_FILES:
        if (root / name).is_file():
            try:
                tasks, _problems = read_tasks(root / name)
            except TaskFileError:
                break
            named = {t.user_scenario.instructions.domain or "" for t in tasks
                     if not isinstance(t.user_scenario.instructions, str)} & set(DOMAINS)
            if len(named) == 1:
                return named.pop()
            break
    raise EvalInputError(f"cannot tell which domain {root} holds (no {'/'.join(DOMAINS)} folder, and its tasks "
                         "name no single domain): pass --domain")


def _domains(spec: str) -> list[Domain]:
    names = list(DOMAINS) if spec == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    try:
        return [load_domain(name) for name in dict.fromkeys(names)]
    except UnknownDomain as exc:
        raise EvalInputError(str(exc.args[0])) from exc


def _variants(args: argparse.Namespace, domains: list[Domain]) -> list[AgentVariant]:
    known = {p.id for d in domains for p in d.predicates}
    unknown = sorted(set(args.disable_predicate) - known)
    if unknown:
        raise EvalInputError(f"unknown predicate(s): {', '.join(unknown)}")
    variants: list[AgentVariant] = []
    if args.agent in ("ledger", "both"):
        modes = (EvidenceMode.ASK, EvidenceMode.ASSIST) if args.evidence == "both" else (EvidenceMode(args.evidence),)
        for evidence in modes:
            config = AgentConfig(ledger=True, gate=not args.no_gate,
                                 disabled_predicates=frozenset(args.disable_predicate),
                                 compact_history=args.compact_history, evidence=evidence)
            # the paper's gate keeps its label; evidence assist is a configuration of its own in every table
            assisted = "-assist" if evidence is EvidenceMode.ASSIST and config.gate else ""
            label = config.label + assisted + ("-compact" if args.compact_history else "")
            variants.append(AgentVariant(label, config))
    if args.agent in ("fc", "both"):
        variants.append(AgentVariant("fc", AgentConfig(ledger=False, gate=False)))
    return variants


def _sources(domain: Domain, tau2_dir: str | None) -> tuple[Path, Path | None]:
    """The tasks file and database source for a domain (None: the shipped seed data)."""
    if tau2_dir is None:
        package = importlib.import_module(f"domains.{domain.name}")
        tasks = Path(str(package.__file__)).parent / "tasks" / "tasks.json"
        if not tasks.is_file():
            raise EvalInputError(f"domain {domain.name!r} ships no tasks yet ({tasks}); use --tau2-dir")
        return tasks, None
    root = Path(tau2_dir)
    found = next((folder / name for folder in (root / domain.name, root) for name in TAU2_TASK_FILES
                  if (folder / name).is_file()), None)
    if found is None:
        raise EvalInputError(f"no {' or '.join(TAU2_TASK_FILES)} in {root} or {root / domain.name}")
    folder = found.parent
    # tau2 telecom's db.toml: the backend reads user_db.toml (the phone) from beside it.
    database = next((folder / n for n in ("db.json", "db.toml") if (folder / n).exists()), None)
    if database is None:
        raise EvalInputError(f"no db.json or db.toml beside {found}")
    return found, database


def manual_policy(main: str, manual: str) -> str:
    """tau2 telecom's policy: the main policy and the tech-support manual, wrapped as tau2 wraps them."""
    return f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n</tech_support_policy>"


def with_policy(domain: Domain, tasks_path: Path, tau2_dir: str | None, choice: str | None) -> tuple[Domain, str]:
    """The domain with the policy text the agent gets, and where it came from (for the results header)."""
    folder = tasks_path.parent
    policy = folder / "policy.md"
    # tau2 telecom (manual policy): main_policy.md and tech_support_manual.md, wrapped as tau2 wraps them
    main, manual = folder / "main_policy.md", folder / "tech_support_manual.md"
    if tau2_dir is None or choice == "ours":
        if choice == "tau2":
            raise EvalInputError("--policy tau2 needs --tau2-dir")
        return domain, "ours (our own words)"
    try:
        if policy.is_file():
            return dataclasses.replace(domain, policy=policy.read_text(encoding="utf-8")), f"tau2 {policy}"
        if main.is_file() and manual.is_file():
            text = manual_policy(main.read_text(encoding="utf-8"), manual.read_text(encoding="utf-8"))
            return dataclasses.replace(domain, policy=text), f"tau2 {main} + {manual.name}"
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"cannot read the tau2 policy in {folder}: {exc}") from exc
    if choice == "tau2":
        raise EvalInputError(f"--policy tau2: no policy.md (telecom: main_policy.md + tech_support_manual.md) "
                             f"beside {tasks_path}")
    return domain, "ours (no policy.md in the tau2 folder)"


def _check_task_domain(tasks: list[Task], domain: Domain, path: Path) -> None:
    named = {t.user_scenario.instructions.domain or "" for t in tasks
             if not isinstance(t.user_scenario.instructions, str)} - {""}
    if named and domain.name not in named and named <= set(DOMAINS):
        raise EvalInputError(f"{path} holds {', '.join(sorted(named))} tasks, not {domain.name}: "
                             f"pass --domain {', '.join(sorted(named))} (or leave --domain out)")


def _planner(domain: Domain) -> OfflinePlanner:
    """The domain's careful-agent planner (`domains.<d>.offline.PLANNER`), else the generic gold planner."""
    return load_offline_planner(domain.name)


def _model_factory(name: str, base_url: str | None, args: argparse.Namespace,
                   extra: Mapping[str, Any]) -> Callable[[], ChatModel]:
    """One role's model: the shared live-model settings (tool choice, max tokens, timeout, retries,
    --model-args), the run's temperature and seed, then the role's extra arguments on top."""
    try:
        settings = model_settings(args)
    except ValueError as exc:
        raise EvalInputError(str(exc)) from exc
    body = dict(settings.extra_body) | dict(extra)
    temperature = float(body.pop("temperature", args.temperature))
    if args.seed is not None:
        body.setdefault("seed", args.seed)
    settings = dataclasses.replace(settings, temperature=temperature, extra_body=body)

    def make() -> ChatModel:
        return settings.build(name, base_url)

    return make


def _profile(args: argparse.Namespace) -> ErrorProfile | None:
    name = getattr(args, "error_profile", None)
    if name is None:
        return None
    try:
        return load_profile(name)
    except ValueError as exc:
        raise EvalInputError(f"--error-profile: {exc}") from exc


def _participants(args: argparse.Namespace, domain: Domain, roles: Mapping[str, dict[str, Any]]) -> Participants:
    if args.model is None:
        return OfflineParticipants(domain, _planner(domain), error_rate=args.error_rate, seed=args.seed or 0,
                                   profile=_profile(args))
    user_model = args.user_model or args.model
    return ModelParticipants(_model_factory(args.model, args.base_url, args, roles["agent"]),
                             _model_factory(user_model, args.user_base_url or args.base_url, args, roles["user"]))


def _opener(name: str, source: Path | None) -> Callable[[Path], Any]:
    async def open_(path: Path) -> TrialBackend:
        return await open_backend(name, path, source)

    return open_


def _creator(name: str) -> Callable[[Path, Mapping[str, Any]], Any]:
    async def create(path: Path, data: Mapping[str, Any]) -> TrialBackend:
        return await backend_class(name).create(path, data)

    return create


def _wanted(args: argparse.Namespace, problems: list[str]) -> tuple[list[str] | None, list[Task] | None]:
    """--tasks: ids (inline or from files), or the tasks of a tasks file."""
    ids: list[str] = []
    given: list[Task] | None = None
    for chunk in args.tasks:
        path = Path(chunk)
        if path.is_file():
            try:
                listed = read_task_ids(path)
                if listed is None:
                    tasks, broken = read_tasks(path)
                    problems.extend(broken)
                    given = (given or []) + tasks
                else:
                    ids += listed
            except TaskFileError as exc:
                raise EvalInputError(str(exc)) from exc
            continue
        ids += [i.strip() for i in chunk.split(",") if i.strip()]
    return (ids or None), given


def _prices(args: argparse.Namespace) -> PriceTable:
    try:
        return PriceTable.load(Path(args.price_table) if args.price_table else None)
    except PriceTableError as exc:
        raise EvalInputError(str(exc)) from exc


def build_run(args: argparse.Namespace, problems: list[str] | None = None
              ) -> tuple[list[DomainRun], list[AgentVariant], RunSettings, RunHeader, Path]:
    """Everything a run needs. Broken tasks in a tasks file are left out and described in `problems`."""
    problems = problems if problems is not None else []
    if args.trials < 1 or args.concurrency < 1:
        raise EvalInputError("--trials and --concurrency must be at least 1")
    if args.max_retries < 0:
        raise EvalInputError("--max-retries must be at least 0")
    if not 0.0 <= args.error_rate <= 1.0:
        raise EvalInputError("--error-rate must be between 0 and 1")
    if args.error_rate and args.model:
        raise EvalInputError("--error-rate applies to the offline scripted agent; drop it with --model")
    if args.error_profile is not None:
        if args.model:
            raise EvalInputError("--error-profile simulates errors of the offline scripted agent; drop it with --model")
        if args.error_rate:
            raise EvalInputError("--error-profile replaces --error-rate: give one or the other")
        _profile(args)
    if args.resume and not args.out:
        raise EvalInputError("--resume needs --out (the run folder to continue)")
    roles = {role: _json_object(getattr(args, f"{role}_model_args"), f"--{role}-model-args")
             for role in ("agent", "user", "judge")}
    spec = args.domain or (infer_domains(args.tau2_dir) if args.tau2_dir else "retail")
    domains = _domains(spec)
    variants = _variants(args, domains)
    wanted, given = _wanted(args, problems)
    runs: list[DomainRun] = []
    sources: dict[str, str] = {}
    policies: dict[str, str] = {}
    texts: dict[str, str] = {}
    for domain in domains:
        try:
            tasks_path, database = _sources(domain, args.tau2_dir)
        except EvalInputError:
            if spec != "all":
                raise
            continue  # `all`: domains that ship no tasks yet are left out (the header lists what ran)
        try:
            if given is not None:
                pool = given
            else:
                pool, broken = read_tasks(tasks_path)
                problems.extend(broken)
            if args.tau2_dir:
                _check_task_domain(pool, domain, tasks_path)
            tasks = select_tasks(pool, wanted) if len(domains) == 1 or wanted is None \
                else [t for t in pool if t.id in set(wanted)]
        except TaskFileError as exc:
            raise EvalInputError(str(exc)) from exc
        domain, policies[domain.name] = with_policy(domain, tasks_path, args.tau2_dir, args.policy)
        texts[domain.name] = domain.policy
        sources[domain.name] = f"tasks {tasks_path}; database {database or 'shipped seed data'}"
        runs.append(DomainRun(domain, tasks, _opener(domain.name, database), _participants(args, domain, roles),
                              create_backend=_creator(domain.name)))
    if not runs:
        raise EvalInputError("no domain has tasks to run")
    domains = [r.domain for r in runs]
    offline = args.model is None
    timeout = args.trial_timeout if args.trial_timeout is not None else (60.0 if offline else 1800.0)
    settings = RunSettings(trials=args.trials, max_steps=args.max_steps, max_errors=args.max_errors,
                           concurrency=args.concurrency, trial_timeout=timeout, max_retries=args.max_retries,
                           retry_delay=0.0 if offline else max(args.retry_delay, 0.0))
    user_model = None if offline else (args.user_model or args.model)
    models = [m for m in (args.model, user_model, args.judge_model) if m]
    header = RunHeader(domains=[d.name for d in domains], agents=[v.label for v in variants], trials=args.trials,
                       offline=offline, model=args.model, base_url=args.base_url,
                       user_model=user_model, judge_model=args.judge_model,
                       error_rate=args.error_rate, error_profile=args.error_profile or "",
                       seed=args.seed or 0 if offline else 0, sources=sources,
                       task_ids={r.domain.name: [t.id for t in r.tasks] for r in runs}, max_steps=args.max_steps,
                       max_errors=args.max_errors, disabled_predicates=sorted(args.disable_predicate),
                       compact_history=args.compact_history,
                       tokenizer=tokenizer_name() if offline else "API usage",
                       user_base_url=None if offline else (args.user_base_url or args.base_url),
                       judge_base_url=(args.judge_base_url or args.base_url) if args.judge_model else None,
                       temperature=None if offline else args.temperature,
                       model_seed=None if offline else args.seed, agent_model_args=roles["agent"],
                       user_model_args=roles["user"] if user_model else {},
                       judge_model_args=roles["judge"] if args.judge_model else {},
                       max_retries=args.max_retries, policy_sources=policies, policy_texts=texts,
                       prices=_prices(args).used(models))
    if args.out:
        folder = Path(args.out)
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = data_root() / "evals" / f"{stamp}-{'-'.join(header.domains)}-{args.agent}"
    return runs, variants, settings, header, folder


def _judge(args: argparse.Namespace) -> NLJudge | None:
    if not args.judge_model:
        return None
    extra = _json_object(args.judge_model_args, "--judge-model-args")
    return llm_judge(_model_factory(args.judge_model, args.judge_base_url or args.base_url, args, extra)())


# -- output ----------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _k(tokens: int) -> str:
    return f"{tokens / 1000:,.1f}k" if tokens >= 1000 else str(tokens)


def results_table(header: RunHeader, metrics: Metrics) -> Table:
    """The terminal table: one row per domain × agent (plus overall when several domains ran). pass^1..K as
    separate columns; Avg is tau2's average reward over the trials that count."""
    top = max((max(c.pass_k) for c in metrics.cells if c.pass_k), default=1)
    title = "LedgerAgent eval — " + ("SIMULATION: scripted agents and customers, no model" if header.offline
                                     else f"model {header.model}")
    if header.offline and header.error_rate:
        title += f" (error-prone p={header.error_rate:g}, seed {header.seed})"
    if header.offline and header.error_profile:
        title += f" (simulated errors: {header.error_profile} profile, seed {header.seed})"
    table = Table(title=title, title_justify="left")
    for column in ("domain", "agent", "tasks", *(f"pass^{k}" for k in range(1, top + 1)), "Avg", "write pass^1",
                   "tokens/trial", "ledger share", "vs FC", "REVISE/BLOCK", "would-refuse", "infra errors",
                   "unscored", "tokens a/u/j", "cost", "top failure"):
        table.add_column(column, justify="left" if column in ("domain", "agent", "top failure") else "right")
    cells = [*metrics.cells, *(metrics.overall if len(header.domains) > 1 else [])]
    for cell in cells:
        overhead = metrics.token_overhead.get(cell.agent)
        failure = max(cell.failures.items(), key=lambda kv: kv[1]) if cell.failures else None
        table.add_row(
            cell.domain, cell.agent, str(cell.tasks), *(_pct(cell.pass_k.get(k)) for k in range(1, top + 1)),
            f"{cell.mean_reward:.3f}", _pct(cell.write_pass_k.get(1)), f"{cell.tokens.total_per_trial:,.0f}",
            _pct(cell.tokens.ledger_share) if cell.agent != "fc" else "—",
            "—" if overhead is None else f"{overhead:+.1%}",
            f"{cell.gate_verdicts.get('REVISE', 0)}/{cell.gate_verdicts.get('BLOCK', 0)}",
            str(sum(cell.would_refuse.values())), str(cell.infra_errors), str(cell.unscored),
            "/".join(_k(cell.roles[r].prompt + cell.roles[r].completion) if r in cell.roles else "—"
                     for r in ("agent", "user", "judge")),
            "—" if header.offline else money(cell.cost),
            escape(f"{failure[0]} ({failure[1]})") if failure else "")
    return table


def attempts_made(header: RunHeader, trials: Sequence[TrialSummary]) -> str:
    """How often the trials left out as infrastructure errors were tried, as the trials recorded it (an
    imported tau2 file records its own `failed_after_attempts`, whatever our --max-retries default is)."""
    counts = sorted({t.attempts for t in trials if t.infra})
    if not trials:
        counts = [header.max_retries + 1]
    if counts == [0]:
        return "after an unrecorded number of attempts"
    known = [c for c in counts if c > 0]
    spelled = " or ".join(str(c) for c in known)
    return f"after {spelled} attempt{'s' if known[-1] != 1 else ''}" + (
        ", some unrecorded" if 0 in counts else "")


def mistakes_table(header: RunHeader, metrics: Metrics) -> Table | None:
    """Per failure kind of the error profile, side by side per domain: how often the baseline committed it and
    how often that reached the database, how often LedgerAgent's gate stopped it (BLOCK, or REVISE that needs a
    read / breaks a rule), and what the stops cost in model calls and tokens. None without a profile."""
    if not header.error_profile:
        return None
    table = Table(title=f"SIMULATION — simulated errors ({header.error_profile} profile, seed {header.seed}): "
                        "the same mistakes for both agents, per failure kind", title_justify="left")
    for column in ("domain", "failure kind", "baseline committed", "reached the database", "tool refused",
                   "ledger committed", "gate stopped", "BLOCK / needs a read / breaks a rule", "stop cost: calls",
                   "stop cost: tokens"):
        table.add_column(column, justify="left" if column in ("domain", "failure kind") else "right")
    rows = 0
    for domain in header.domains:
        fc = metrics.cell(domain, BASELINE)
        ledgers = [c for c in metrics.cells if c.domain == domain and c.agent != BASELINE]
        ledger = ledgers[0] if ledgers else None
        kinds = sorted({*(fc.mistakes if fc else {}), *(ledger.mistakes if ledger else {})})
        for kind in kinds:
            base = fc.mistakes.get(kind) if fc else None
            mine = ledger.mistakes.get(kind) if ledger else None
            label = LABELS.get(FailureKind(kind), kind) if kind in FailureKind.__members__.values() else kind
            stops = mine.gate_refused if mine else 0
            table.add_row(domain, escape(f"{label} ({kind})"),
                          str(base.committed) if base else "—", str(base.reached_db) if base else "—",
                          str(base.tool_refused) if base else "—", str(mine.committed) if mine else "—",
                          str(stops) if mine else "—",
                          f"{mine.blocked} / {mine.needs_read} / {mine.breaks_rule}" if mine else "—",
                          f"+{mine.recovery_calls} ({mine.recovery_calls / stops:.1f} per stop)" if mine and stops
                          else "—",
                          f"+{mine.recovery_tokens:,}" if mine and stops else "—")
            rows += 1
    if not rows:
        table.add_row("", "no mistake was drawn in this run (the profile offered none on these tasks)", *[""] * 8)
    return table


def print_outcome(header: RunHeader, metrics: Metrics, folder: Path, console: Console, resumed: int = 0,
                  trials: Sequence[TrialSummary] = ()) -> None:
    console.print(results_table(header, metrics))
    kinds = mistakes_table(header, metrics)
    if kinds is not None:
        console.print(kinds)
    if header.offline:
        counted = "local estimates (~4 characters per token)" if header.tokenizer == "estimate" else \
            f"local counts with the {header.tokenizer} tokenizer"
        console.print("[yellow]Figures come from scripted agents (gold actions + careful reads), not from a model; "
                      f"tokens are {counted}.[/]")
    warning = unscored_warning(metrics)
    if warning:
        console.print("[bold red]" + escape(warning[0].removeprefix("> ").replace("**", "")) + "[/]")
    infra = sum(c.infra_errors for c in metrics.cells)
    if infra:
        console.print(f"[bold yellow]{infra} trial(s) could not be run (infrastructure errors "
                      f"{attempts_made(header, trials)}): left out of the metrics; --resume runs them again.[/]")
    if resumed:
        console.print(f"[dim]{resumed} trial(s) were taken from the earlier run on disk.[/]")
    console.print(f"results: {folder / 'results.json'}\nreport:  {folder / 'report.md'}")


NOT_RUN_SHOWN = 20  # trials named one per line; a run whose endpoint is down names the first ones and counts the rest


def print_not_run(trials: list[TrialSummary], err: Console) -> None:
    """One line per trial left out of the metrics (infrastructure error, crash), naming the task and why: an
    endpoint that answers garbage is found by its task, not only by a count in the table."""
    excluded = [t for t in trials if t.status in EXCLUDED_STATUSES]
    for trial in excluded[:NOT_RUN_SHOWN]:
        err.print(f"[bold yellow]not run ({trial.status}):[/] {escape(trial.domain)} {escape(trial.task_id)} "
                  f"{escape(trial.agent)} #{trial.trial}: {escape(trial.detail[:300])}")
    if len(excluded) > NOT_RUN_SHOWN:
        err.print(f"[bold yellow]... and {len(excluded) - NOT_RUN_SHOWN} more trial(s) not run[/] (see results.json)")


def _consoles() -> tuple[Console, Console]:
    err = Console(stderr=True, highlight=False, soft_wrap=True)  # one line per message, never wrapped
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    return console, err


async def cmd_eval(args: argparse.Namespace) -> int:
    handlers = {"regrade": cmd_regrade, "compare": cmd_compare, "export": cmd_export}
    if args.action in handlers:
        return await handlers[args.action](args)
    console, err = _consoles()
    if args.paths:
        err.print(f"[bold red]error:[/] unexpected argument(s) {escape(' '.join(args.paths))} (did you mean "
                  "`eval regrade`, `eval compare` or `eval export`?)")
        return 2
    problems: list[str] = []
    try:
        runs, variants, settings, header, folder = build_run(args, problems)
        prices = _prices(args)
        judge = _judge(args)  # last: the judge holds an HTTP client, closed when the run ends
    except (EvalInputError, BackendSourceError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    for problem in problems:
        err.print(f"[bold yellow]skipped:[/] {escape(problem)}")
    progress = Progress(TextColumn("[bold]eval[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.description}"), console=err, transient=True,
                        disable=not err.is_terminal)  # a pipe gets the result lines, not a bar's newline
    bar = progress.add_task("", total=None)
    passed = 0
    seen = 0

    def on_start(total: int, done: int) -> None:
        progress.update(bar, total=total)

    def on_trial(summary: TrialSummary) -> None:
        nonlocal passed, seen
        seen += 1
        passed += summary.success
        progress.update(bar, advance=1, description=f"{passed}/{seen} passed · last: {summary.domain} "
                                                    f"{summary.task_id} {summary.agent} #{summary.trial}")

    try:
        with progress:
            outcome: EvalOutcome = await run_evaluation(runs, variants, settings, header, folder,
                                                        resume=args.resume, judge=judge, prices=prices,
                                                        on_start=on_start, on_trial=on_trial)
    except (ResultsError, BackendSourceError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    finally:
        await close_judge(judge)
    print_outcome(outcome.header, outcome.metrics, outcome.folder, console, outcome.resumed, outcome.trials)
    print_not_run(outcome.trials, err)
    return 0


# -- saved results: regrade, compare, export -------------------------------------------------------


def _tool_kinds() -> Callable[[str], str]:
    """Tool name -> kind over every domain (tau2 tool names do not collide across domains)."""
    kinds = {spec.name: spec.kind.value for name in DOMAINS for spec in load_domain(name).tools}
    return lambda name: kinds.get(name, "unknown")


def _load(path: str) -> EvalResults:
    return load_results(Path(path), kind_of=_tool_kinds())


def _paths(args: argparse.Namespace, count: int, usage: str) -> list[str]:
    if len(args.paths) != count:
        raise EvalInputError(f"usage: ledgeragent eval {usage}")
    return list(args.paths)


async def cmd_regrade(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as held:  # the output folder's lock, once it is known (one writer per run folder)
        return await _regrade(args, held)


async def _regrade(args: argparse.Namespace, held: contextlib.ExitStack) -> int:
    console, err = _consoles()
    try:
        (path,) = _paths(args, 1, "regrade RESULTS [--tau2-dir D] [--judge-model M] [--out FOLDER]")
        results = _load(path)
        prices = _prices(args)
        sources: list[RegradeDomain] = []
        for domain in _domains(",".join(results.header.domains)):
            tasks_path, database = _sources(domain, args.tau2_dir)
            tasks, broken = read_tasks(tasks_path)
            for problem in broken:
                err.print(f"[bold yellow]skipped:[/] {escape(problem)}")
            domain, _policy = with_policy(domain, tasks_path, args.tau2_dir, args.policy)
            sources.append(RegradeDomain(domain, tasks, _opener(domain.name, database)))
        source = Path(path)
        folder = Path(args.out) if args.out else (source if source.is_dir() else source.parent) / "regraded"
        folder.mkdir(parents=True, exist_ok=True)
        held.enter_context(FolderLock.acquire(folder))
        if (folder / "trials.jsonl").exists():
            raise EvalInputError(f"{folder} already holds a run; choose another --out folder")
        judge = _judge(args)  # last: the judge holds an HTTP client, closed once the trials are graded
        try:
            outcome = await regrade(results, sources, folder / "work", judge=judge, prices=prices)
        finally:
            await close_judge(judge)
    except (EvalInputError, ResultsError, TaskFileError, BackendSourceError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    store = ResultStore(folder)
    header = outcome.results.header
    store.write_header(header)
    for trial in outcome.results.trials:
        store.append(trial)
    store.close()
    metrics = compute_metrics([t.light() for t in outcome.results.trials])
    store.write_results(header, outcome.results.tasks, metrics_json(metrics))
    write_report(folder, header, metrics, [t.light() for t in outcome.results.trials])
    for name in ("work",):
        work = folder / name
        for leftover in work.glob("*") if work.is_dir() else []:
            leftover.unlink()
        if work.is_dir():
            work.rmdir()
    print_outcome(header, metrics, folder, console, trials=outcome.results.trials)
    console.print(f"re-graded {len(outcome.results.trials)} trial(s) from {path}: {len(outcome.changed)} changed")
    for change in outcome.changed[:50]:
        console.print(f"  {escape(change.domain)} {escape(change.task_id)} {escape(change.agent)} #{change.trial}: "
                      f"{escape(change.describe())}")
    for missing in sorted(set(outcome.missing_tasks)):
        err.print(f"[yellow]kept as recorded (task no longer in the tasks file):[/] {escape(missing)}")
    for failure in outcome.judge_failures:
        err.print(f"[yellow]kept as recorded (judge failed):[/] {escape(failure)}")
    return 0


async def cmd_compare(args: argparse.Namespace) -> int:
    console, err = _consoles()
    try:
        first, second = _paths(args, 2, "compare A B")
        a, b = _load(first), _load(second)
    except (EvalInputError, ResultsError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    cells = compare(a, b)
    if not cells:
        err.print("[bold red]error:[/] the two runs share no domain "
                  f"(A: {escape(', '.join(a.header.domains))}; B: {escape(', '.join(b.header.domains))})")
        return 2
    if not any(cell.tasks for cell in cells):
        err.print("[bold red]error:[/] the two runs share no task that both scored")
        return 2
    for cell in cells:
        if cell.across_agents:
            console.print(f"[bold]{escape(cell.domain)}[/]: A ran [bold]{escape(_ran(a, cell.agent))}[/], "
                          f"B ran [bold]{escape(_ran(b, cell.agent_b))}[/] (different agents on the same tasks)")
        table = Table(title=f"{cell.label}: B - A over {cell.tasks} common task(s)", title_justify="left")
        for column in ("k", f"A pass^k ({cell.agent})", f"B pass^k ({cell.agent_b or cell.agent})", "B - A",
                       "95% CI (bootstrap over tasks)"):
            table.add_column(escape(column), justify="right")
        for k in cell.ks:
            table.add_row(str(k.k), _pct(k.a), _pct(k.b), f"{k.delta * 100:+.1f} pt",
                          f"[{k.low * 100:+.1f}, {k.high * 100:+.1f}] pt")
        console.print(table)
        for diff in cell.differences[:100]:
            console.print(f"  task {escape(diff.task_id)}: {diff.a[0]}/{diff.a[1]} -> {diff.b[0]}/{diff.b[1]} passed")
        if cell.only_a or cell.only_b:
            console.print(f"  [dim]only in A: {len(cell.only_a)} task(s); only in B: {len(cell.only_b)}[/]")
    return 0


def _ran(results: EvalResults, agent: str) -> str:
    """An agent as a comparison names it: its label and the model that played it (or "scripted")."""
    header = results.header
    model = header.model or next((t.model for t in results.trials if t.agent == agent and t.model), "")
    return f"{agent} ({'scripted, simulation' if header.offline else model or 'model unknown'})"


def _exported_policy(header: RunHeader, domain: Domain, args: argparse.Namespace) -> str:
    """The policy text the run's agent got on `domain`, for tau2's `environment_info.policy`: as the run
    recorded it; for a run that recorded only where it came from, that tau2 file read again (or the one
    --tau2-dir names); our own words only when the agent had them. Never our paraphrase for a run that gave
    the agent tau2's policy."""
    recorded = header.policy_texts.get(domain.name)
    if recorded is not None:
        return recorded
    if args.tau2_dir:
        tasks_path, _database = _sources(domain, args.tau2_dir)
        return with_policy(domain, tasks_path, args.tau2_dir, args.policy)[0].policy
    source = header.policy_sources.get(domain.name, "ours")
    if not source.startswith("tau2 "):
        return domain.policy
    files = source.removeprefix("tau2 ").split(" + ")
    first = Path(files[0])
    named = [first, *(first.parent / extra for extra in files[1:])]
    try:
        texts = [path.read_text(encoding="utf-8") for path in named]
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"the run gave the {domain.name} agent tau2's policy ({source}), which cannot be "
                             f"read now ({exc.__class__.__name__}): pass --tau2-dir with the same data folder") from exc
    return manual_policy(*texts) if len(texts) == 2 else texts[0]


async def cmd_export(args: argparse.Namespace) -> int:
    console, err = _consoles()
    try:
        (path,) = _paths(args, 1, "export RUN --out FOLDER")
        if not args.out:
            raise EvalInputError("export needs --out FOLDER (one tau2 results file per domain and agent)")
        results = _load(path)
        prices = _prices(args)
        policies = {domain.name: _exported_policy(results.header, domain, args)
                    for domain in _domains(",".join(results.header.domains))}
    except (EvalInputError, ResultsError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    for written in write_tau2(results, Path(args.out), policies, prices.cost):
        console.print(f"wrote {written}")
    return 0
