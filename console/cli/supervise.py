"""What `ledgeragent supervise` and `ledgeragent audit` do (their options: console.cli.supervise_options).

`supervise` checks everything it was given before anything starts (specs, thresholds, model settings), so a
bad input is one line and exit 2 with no folder left behind; then it builds one in-process `Desk` and runs
the `SupervisorApp` on it. `audit` prints a desk's audit log filtered, each decision with its outcome.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.cli.errors import CliError
from console.cli.model_options import model_settings
from console.runtime.desk.audit import AuditFilter, AuditRead, call_key, describe_outcome, describe_regate, read_audit
from console.runtime.desk_specs import load_specs_file, repeated, scenario_specs
from console.runtime.facts import verdict_words
from console.runtime.live import SessionSpec, SupervisionMode
from console.runtime.storage import data_root
from core.llm.settings import ModelSettings
from core.strict_json import inert, inert_json
from domains.registry import DOMAINS, tasks_file


def build_specs(args: argparse.Namespace) -> list[SessionSpec]:
    """The sessions the desk runs: a specs file, or the scenarios of --domain/--scenarios; then --repeat."""
    mode = SupervisionMode(args.mode)
    if args.specs:
        if args.domain != "all" or args.scenarios is not None or args.tasks is not None:
            raise CliError("give --specs or --domain/--scenarios/--tasks, not both")
        specs = load_specs_file(Path(args.specs), mode, args.evidence)
    else:
        if args.user_model and args.tasks is None:
            raise CliError("--user-model plays a task's customer: it needs --tasks")
        if getattr(args, "error_profile", None) and args.tasks is None:
            raise CliError("--error-profile simulates errors of a task's offline agent: it needs --tasks")
        specs = []
        if args.scenarios is not None or args.tasks is None:
            specs += scenario_specs(args.domain, args.scenarios or "all", mode, pace=args.pace,
                                    model=args.model or "scripted", base_url=args.base_url, agent=args.agent,
                                    evidence=args.evidence)
        if args.tasks is not None:
            specs += _task_specs(args, mode)
    if not specs:
        raise CliError(f"no session to run for --domain {args.domain}")
    return repeated(specs, args.repeat)


def _task_specs(args: argparse.Namespace, mode: SupervisionMode) -> list[SessionSpec]:
    """`--tasks all|id,id` of `--domain` (every domain that ships tasks for `--domain all`)."""
    from console.runtime.task_sessions import task_specs

    base = SessionSpec(scenario=None, mode=mode, agent=args.agent, pace=args.pace, model=args.model or "scripted",
                       base_url=args.base_url, user_model=args.user_model,
                       error_profile=getattr(args, "error_profile", None), evidence=args.evidence)
    text = args.tasks.strip()
    ids: list[str] | str = "all" if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise CliError("--tasks names no task (give all, or id,id)")
    if args.domain == "all":
        if ids != "all":
            raise CliError("--tasks with ids needs one --domain (ids are per domain)")
        domains = [d for d in DOMAINS if tasks_file(d) is not None]
    elif args.domain not in DOMAINS:
        raise CliError(f"unknown domain {args.domain!r}; one of all, {', '.join(DOMAINS)}")
    else:
        domains = [args.domain]
    try:
        return [spec for d in domains for spec in task_specs(d, ids, base)]
    except ValueError as exc:
        raise CliError(f"--tasks: {exc}") from None



def new_desk_dir(root: Path | None = None) -> Path:
    """A fresh folder for one desk's audit log: `mkdir` is the claim, as for session folders."""
    from core.private_files import close_to_others, make_dir, make_dirs

    home = root or data_root()
    base = home / "desks"
    make_dirs(base)  # 0700: an audit log says who decided what on whose data
    for folder in (home, base):
        close_to_others(folder)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        folder = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            make_dir(folder)
        except FileExistsError:
            continue
        return folder
    raise CliError(f"no free desk folder under {base}")


def audit_path(args: argparse.Namespace) -> Path:
    if args.audit:
        path = Path(args.audit)
        if path.is_dir():
            raise CliError(f"--audit {path} is a folder; give a file path (e.g. {path / 'audit.jsonl'})")
        return path
    return new_desk_dir() / "audit.jsonl"


def check_session_options(args: argparse.Namespace) -> tuple[list[SessionSpec], ModelSettings]:
    """The desk's sessions and model settings from `supervise`'s session options, every one checked, before
    anything starts: CliError (one line). `serve --supervise` calls this too, on the very argv it hands its
    host, so a typo fails before the server starts rather than in the host."""
    if args.amber > args.red:
        raise CliError(f"--amber ({args.amber:g} s) must not be above --red ({args.red:g} s)")
    if args.base_url and not args.model:
        raise CliError("--base-url needs --model (without it the sessions run their scripts)")
    try:
        settings: ModelSettings = model_settings(args)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    return build_specs(args), settings


def cmd_supervise(args: argparse.Namespace) -> int:
    from console.runtime.desk.desk import Desk, check_operator
    from console.runtime.desk.hosting import run_hosting
    from console.runtime.desk.view import DeskRefused

    if (args.operators is not None or args.operators_file) and not args.listen:
        raise CliError("--operators/--operators-file: only with --listen (the operators of a served desk)")
    if args.connect:  # another operator's desk: this process only decides (`--listen` runs it)
        return run_hosting(args) or 0
    try:
        operator = check_operator(args.operator)
    except DeskRefused as exc:
        raise CliError(f"--operator: {exc}") from None
    specs, settings = check_session_options(args)
    path = audit_path(args)
    try:
        desk = Desk(specs, concurrency=args.concurrency, audit_path=path, amber_s=args.amber, red_s=args.red,
                    claim_ttl=args.claim_ttl,
                    model_factory=lambda spec: settings.build(spec.model, spec.base_url))
    except OSError as exc:
        raise CliError(f"cannot open the audit log {path}: {exc.strerror or exc}") from None
    if args.listen:  # headless: no screen, so the desk screens (and Textual) are never imported
        return run_hosting(args, lambda: desk, notes=[f"desk: audit log at {path}"]) or 0
    from console.tui.desk_app import SupervisorApp

    app = SupervisorApp(desk, operator=operator, lifecycle=desk)
    app.run()
    return app.return_code or 0


def _outcome_word(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _outcome_of(read: AuditRead, record: dict[str, object]) -> str:
    """The outcome column: for an edit, what the gate said of the edited call first, then what became of it."""
    key = call_key(record)
    regate = describe_regate(read.regates.get(key)) if record.get("decision") == "edit" else ""
    outcome = describe_outcome(read.outcomes.get(key))
    return f"{regate}; {outcome}" if regate else outcome


def cmd_audit(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"no such audit log: {path}")
    try:
        read = read_audit(path, AuditFilter(operator=args.operator, verdict=args.verdict, decision=args.decision))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    if args.json:
        for record in read.decisions:
            key = call_key(record)
            line = {**record, "outcome": describe_outcome(read.outcomes.get(key))}
            regate = read.regates.get(key) if record.get("decision") == "edit" else None
            if regate is not None:
                line["regated"] = {"gate_verdict": regate.get("gate_verdict"), "failing_rules": regate.get(
                    "failing_rules", []), "arguments": regate.get("arguments"), "item": regate.get("regated_item")}
            print(inert_json(json.dumps(line, ensure_ascii=False, sort_keys=True)))  # \u escapes for what a
            # terminal would act on: the same JSON
    else:
        table = Table("when", "operator", "session", "tool", "verdict", "failing rules", "decision", "reason",
                      "waited", "outcome", title=f"{path}: {len(read.decisions)} decision(s)")
        for record in read.decisions:
            waited = record.get("waited_s")
            table.add_row(*(escape(inert(str(v))) for v in (  # an audit log's text, printed: inert
                record.get("when", ""), record.get("operator", ""), record.get("session", ""),
                record.get("tool", ""), verdict_words(record.get("gate_verdict"), record.get("gate_refusal")),
                ", ".join(record.get("failing_rules") or []),
                record.get("decision", ""), record.get("reason", ""),
                f"{waited:.1f} s" if isinstance(waited, int | float) else "",
                _outcome_word(_outcome_of(read, record)))))
        Console(highlight=False).print(table)
    if read.skipped:
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"note: {read.skipped} line(s) of {escape(str(path))} were not complete audit records (skipped)")
    return 0
