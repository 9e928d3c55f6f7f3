"""`ledgeragent eval`: pass^k of LedgerAgent against the function-calling baseline, on tau2-format tasks.

Offline by default: without --model every trial is played by a deterministic scripted agent built from the
task's gold actions and a scripted customer, so CI and a newcomer can run it; the table and the report say
so. With --model (and --base-url for any OpenAI-compatible server) the agent is a real model and the customer
an LLM user simulator (--user-model, default: the same model).

Wiring only: the harness is `core.evaluation`; this module picks the domains, tasks, databases and
participants, shows progress, and prints the table. `register(subparsers)` adds the subcommand to any
argparse parser, so the main CLI needs one call.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from console.model_args import add_model_arguments, model_settings
from console.storage import data_root
from core.agent import AgentConfig
from core.domain import Domain
from core.evaluation.harness import EvalOutcome, run_evaluation
from core.evaluation.judge import llm_judge
from core.evaluation.metrics import Metrics
from core.evaluation.offline import GoldPlanner, OfflinePlanner
from core.evaluation.participants import ModelParticipants, OfflineParticipants
from core.evaluation.results import ResultsError, RunHeader, TrialSummary
from core.evaluation.rewards import TrialBackend
from core.evaluation.runner import AgentVariant, DomainRun, Participants, RunSettings
from core.evaluation.tasks import TaskFileError, load_tasks, select_tasks
from core.llm.base import ChatModel
from domains.registry import DOMAINS, UnknownDomain, load_domain
from mock_backends.registry import BackendSourceError, backend_class, open_backend

HELP = "measure pass^k of LedgerAgent vs the function-calling baseline on tau2-format tasks"


# A tau2 data folder's task file: the full set, else the small split (tau2 telecom's 4 MiB tasks.json is often
# left out and tasks_small.json shipped alone, as in ../shared).
TAU2_TASK_FILES = ("tasks.json", "tasks_small.json")


class EvalInputError(Exception):
    """A problem with the command line: printed without a traceback, exit status 2."""


def register(subparsers: Any) -> None:
    """Add the `eval` subcommand (with its handler) to an argparse subparsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser("eval", help=HELP, description=__doc__,
                                                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", default="retail",
                        help=f"a domain, a comma-separated list, or 'all' ({', '.join(DOMAINS)})")
    parser.add_argument("--agent", choices=("ledger", "fc", "both"), default="both")
    parser.add_argument("--trials", type=int, default=4, help="trials per task and agent (pass^k for k ≤ this)")
    parser.add_argument("--tasks", action="append", default=[], metavar="IDS",
                        help="only these task ids (comma-separated; repeatable)")
    parser.add_argument("--concurrency", type=int, default=4, help="trials running at once")
    parser.add_argument("--out", help="run folder (default: a new folder under the user data dir)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out, skipping finished trials")
    parser.add_argument("--tau2-dir", metavar="PATH",
                        help="load tau2-bench's db.json (telecom: db.toml + user_db.toml) and tasks.json (else "
                             "tasks_small.json) from PATH (or PATH/<domain>/) instead of ours")
    model = parser.add_argument_group("models (omit --model to run offline with scripted agents)")
    model.add_argument("--model", help="agent model name on an OpenAI-compatible endpoint")
    model.add_argument("--base-url", help="OpenAI-compatible base URL (OpenAI, vLLM, Ollama, llama.cpp server)")
    model.add_argument("--user-model", help="user simulator model (default: --model)")
    model.add_argument("--user-base-url", help="base URL for the user simulator (default: --base-url)")
    model.add_argument("--judge-model", help="grade NL assertions with this model (default: leave them unscored)")
    add_model_arguments(model, timeout_aliases=("--request-timeout",))
    ablation = parser.add_argument_group("ablations and variants")
    ablation.add_argument("--no-gate", action="store_true", help="ledger agent without the gate (rendering only)")
    ablation.add_argument("--disable-predicate", action="append", default=[], metavar="ID",
                          help="switch one gate predicate off (repeatable)")
    ablation.add_argument("--compact-history", action="store_true",
                          help="ledger agent: send ledger-held read results as references to their ledger paths")
    ablation.add_argument("--error-rate", type=float, default=0.0, metavar="P",
                          help="offline only: per write, the chance the scripted agent first proposes a "
                               "policy-violating variant (a seeded simulation)")
    ablation.add_argument("--seed", type=int, default=0, help="seed of the error-prone scripted agent")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-steps", type=int, default=100)
    limits.add_argument("--max-errors", type=int, default=10, help="tool errors before a trial ends")
    limits.add_argument("--trial-timeout", type=float, default=None,
                        help="seconds per trial (default: 60 offline, 1800 with a model)")
    parser.set_defaults(handler=cmd_eval)


# -- building the run ------------------------------------------------------------------------------


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
        config = AgentConfig(ledger=True, gate=not args.no_gate,
                             disabled_predicates=frozenset(args.disable_predicate),
                             compact_history=args.compact_history)
        label = config.label + ("-compact" if args.compact_history else "")
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
    found = next((folder / name for folder in (root, root / domain.name) for name in TAU2_TASK_FILES
                  if (folder / name).is_file()), None)
    if found is None:
        raise EvalInputError(f"no {' or '.join(TAU2_TASK_FILES)} in {root} or {root / domain.name}")
    folder = found.parent
    # tau2 telecom's db.toml: the backend reads user_db.toml (the phone) from beside it.
    database = next((folder / n for n in ("db.json", "db.toml") if (folder / n).exists()), None)
    if database is None:
        raise EvalInputError(f"no db.json or db.toml beside {found}")
    return found, database


def _planner(domain: Domain) -> OfflinePlanner:
    """The domain's careful-agent planner (`domains.<d>.offline.PLANNER`), else the generic gold planner."""
    try:
        module = importlib.import_module(f"domains.{domain.name}.offline")
    except ModuleNotFoundError as exc:
        if exc.name != f"domains.{domain.name}.offline":
            raise
        return GoldPlanner()
    planner: OfflinePlanner = module.PLANNER
    return planner


def _model_factory(name: str, base_url: str | None, args: argparse.Namespace) -> Callable[[], ChatModel]:
    try:
        settings = model_settings(args)
    except ValueError as exc:
        raise EvalInputError(str(exc)) from exc

    def make() -> ChatModel:
        return settings.build(name, base_url)

    return make


def _participants(args: argparse.Namespace, domain: Domain) -> Participants:
    if args.model is None:
        return OfflineParticipants(domain, _planner(domain), error_rate=args.error_rate, seed=args.seed)
    user_model = args.user_model or args.model
    return ModelParticipants(_model_factory(args.model, args.base_url, args),
                             _model_factory(user_model, args.user_base_url or args.base_url, args))


def _opener(name: str, source: Path | None) -> Callable[[Path], Any]:
    async def open_(path: Path) -> TrialBackend:
        return await open_backend(name, path, source)

    return open_


def _creator(name: str) -> Callable[[Path, Mapping[str, Any]], Any]:
    async def create(path: Path, data: Mapping[str, Any]) -> TrialBackend:
        return await backend_class(name).create(path, data)

    return create


def build_run(args: argparse.Namespace) -> tuple[list[DomainRun], list[AgentVariant], RunSettings, RunHeader, Path]:
    if args.trials < 1 or args.concurrency < 1:
        raise EvalInputError("--trials and --concurrency must be at least 1")
    if not 0.0 <= args.error_rate <= 1.0:
        raise EvalInputError("--error-rate must be between 0 and 1")
    if args.error_rate and args.model:
        raise EvalInputError("--error-rate applies to the offline scripted agent; drop it with --model")
    if args.resume and not args.out:
        raise EvalInputError("--resume needs --out (the run folder to continue)")
    domains = _domains(args.domain)
    variants = _variants(args, domains)
    wanted = [i.strip() for chunk in args.tasks for i in chunk.split(",") if i.strip()] or None
    runs: list[DomainRun] = []
    sources: dict[str, str] = {}
    for domain in domains:
        try:
            tasks_path, database = _sources(domain, args.tau2_dir)
        except EvalInputError:
            if args.domain != "all":
                raise
            continue  # `all`: domains that ship no tasks yet are left out (the header lists what ran)
        try:
            tasks = select_tasks(load_tasks(tasks_path), wanted) if len(domains) == 1 or wanted is None \
                else [t for t in load_tasks(tasks_path) if t.id in set(wanted)]
        except TaskFileError as exc:
            raise EvalInputError(str(exc)) from exc
        sources[domain.name] = f"tasks {tasks_path}; database {database or 'shipped seed data'}"
        runs.append(DomainRun(domain, tasks, _opener(domain.name, database), _participants(args, domain),
                              create_backend=_creator(domain.name)))
    if not runs:
        raise EvalInputError("no domain has tasks to run")
    domains = [r.domain for r in runs]
    offline = args.model is None
    timeout = args.trial_timeout if args.trial_timeout is not None else (60.0 if offline else 1800.0)
    settings = RunSettings(trials=args.trials, max_steps=args.max_steps, max_errors=args.max_errors,
                           concurrency=args.concurrency, trial_timeout=timeout)
    header = RunHeader(domains=[d.name for d in domains], agents=[v.label for v in variants], trials=args.trials,
                       offline=offline, model=args.model, base_url=args.base_url,
                       user_model=None if offline else (args.user_model or args.model), judge_model=args.judge_model,
                       error_rate=args.error_rate, seed=args.seed, sources=sources,
                       task_ids={r.domain.name: [t.id for t in r.tasks] for r in runs}, max_steps=args.max_steps,
                       max_errors=args.max_errors, disabled_predicates=sorted(args.disable_predicate),
                       compact_history=args.compact_history, tokenizer="estimate" if offline else "API usage")
    if args.out:
        folder = Path(args.out)
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        folder = data_root() / "evals" / f"{stamp}-{'-'.join(header.domains)}-{args.agent}"
    return runs, variants, settings, header, folder


# -- output ----------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def results_table(header: RunHeader, metrics: Metrics) -> Table:
    """The terminal table: one row per domain × agent (plus overall when several domains ran)."""
    top = max((max(c.pass_k) for c in metrics.cells if c.pass_k), default=1)
    title = "LedgerAgent eval — " + ("SIMULATION: scripted agents and customers, no model" if header.offline
                                     else f"model {header.model}")
    if header.offline and header.error_rate:
        title += f" (error-prone p={header.error_rate:g}, seed {header.seed})"
    table = Table(title=title, title_justify="left")
    for column in ("domain", "agent", "tasks", *(f"pass^{k}" for k in range(1, top + 1)), "Avg", "write pass^1",
                   "tokens/trial", "ledger share", "vs FC", "REVISE/BLOCK", "would-refuse", "crashed", "top failure"):
        table.add_column(column, justify="left" if column in ("domain", "agent", "top failure") else "right")
    cells = [*metrics.cells, *(metrics.overall if len(header.domains) > 1 else [])]
    for cell in cells:
        overhead = metrics.token_overhead.get(cell.agent)
        failure = max(cell.failures.items(), key=lambda kv: kv[1]) if cell.failures else None
        table.add_row(
            cell.domain, cell.agent, str(cell.tasks), *(_pct(cell.pass_k.get(k)) for k in range(1, top + 1)),
            _pct(cell.table2.get("avg")), _pct(cell.write_pass_k.get(1)), f"{cell.tokens.total_per_trial:,.0f}",
            _pct(cell.tokens.ledger_share) if cell.agent != "fc" else "—",
            "—" if overhead is None else f"{overhead:+.1%}",
            f"{cell.gate_verdicts.get('REVISE', 0)}/{cell.gate_verdicts.get('BLOCK', 0)}",
            str(sum(cell.would_refuse.values())), str(cell.crashed),
            escape(f"{failure[0]} ({failure[1]})") if failure else "")
    return table


def print_outcome(outcome: EvalOutcome, console: Console) -> None:
    console.print(results_table(outcome.header, outcome.metrics))
    if outcome.header.offline:
        console.print("[yellow]Figures come from scripted agents (gold actions + careful reads), not from a model; "
                      "tokens are local estimates (~4 characters per token).[/]")
    if outcome.resumed:
        console.print(f"[dim]{outcome.resumed} trial(s) were taken from the earlier run on disk.[/]")
    console.print(f"results: {outcome.folder / 'results.json'}\nreport:  {outcome.folder / 'report.md'}")


async def cmd_eval(args: argparse.Namespace) -> int:
    err = Console(stderr=True, highlight=False)
    try:
        runs, variants, settings, header, folder = build_run(args)
    except (EvalInputError, BackendSourceError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    judge = llm_judge(_model_factory(args.judge_model, args.base_url, args)()) if args.judge_model else None
    progress = Progress(TextColumn("[bold]eval[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.description}"), console=err, transient=True)
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
            outcome = await run_evaluation(runs, variants, settings, header, folder, resume=args.resume, judge=judge,
                                           on_start=on_start, on_trial=on_trial)
    except (ResultsError, BackendSourceError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    print_outcome(outcome, console)
    return 0
