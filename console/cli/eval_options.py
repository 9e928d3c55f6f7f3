"""`ledgeragent eval`: pass^k of LedgerAgent against the function-calling baseline, on tau2-format tasks.

Offline by default: without --model every trial is played by a deterministic scripted agent built from the
task's gold actions and a scripted customer, so CI and a newcomer can run it; the table and the report say
so. With --model (and --base-url for any OpenAI-compatible server) the agent is a real model and the customer
an LLM user simulator (--user-model, default: the same model).

Besides running, `eval` works on saved results (ours or tau2-bench's):
    ledgeragent eval regrade RESULTS [--tau2-dir D] [--judge-model M] [--out FOLDER]
    ledgeragent eval compare A B
    ledgeragent eval export RUN --out FOLDER      (tau2-bench results files, one per domain and agent)

This module only declares the command line (`register(subparsers)` adds the subcommand to any argparse
parser, so the main CLI needs one call); `console.cli.eval` does the work and is imported when `eval` runs,
so no other command (the console's cold start above all) pays for importing the evaluation harness.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.model_options import add_model_arguments
from domains.registry import DOMAINS

HELP = "measure pass^k of LedgerAgent vs the function-calling baseline on tau2-format tasks"


def register(subparsers: Any) -> None:
    """Add the `eval` subcommand (with its handler) to an argparse subparsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser("eval", help=HELP, description=__doc__,
                                                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", choices=("run", "regrade", "compare", "export"), default="run",
                        help="run (default) an evaluation; regrade RESULTS; compare A B; export RUN --out FOLDER")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="the results file(s) or run folder(s) to work on")
    parser.add_argument("--domain", default=None,
                        help=f"a domain, a comma-separated list, or 'all' ({', '.join(DOMAINS)}); default retail, "
                             "or the domain of --tau2-dir")
    parser.add_argument("--agent", choices=("ledger", "fc", "both"), default="both")
    parser.add_argument("--trials", type=int, default=4, help="trials per task and agent (pass^k for k ≤ this)")
    parser.add_argument("--tasks", action="append", default=[], metavar="IDS|FILE",
                        help="only these task ids (comma-separated; repeatable), or a file: task ids (JSON list or "
                             "one per line) or a tau2 tasks file whose tasks to run")
    parser.add_argument("--concurrency", type=int, default=4, help="trials running at once")
    parser.add_argument("--out", help="run folder (default: a new folder under the user data dir)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out, skipping finished trials")
    parser.add_argument("--tau2-dir", metavar="PATH",
                        help="load tau2-bench's db.json (telecom: db.toml + user_db.toml) and tasks.json (else "
                             "tasks_small.json) from PATH (or PATH/<domain>/) instead of ours; the domain is "
                             "inferred when --domain is not given")
    parser.add_argument("--policy", choices=("tau2", "ours"), default=None,
                        help="with --tau2-dir: the agent gets tau2's own policy.md (default when present, so "
                             "scores compare with tau2's) or our paraphrase")
    parser.add_argument("--price-table", metavar="FILE",
                        help="JSON {model: {\"input\": USD, \"output\": USD}} per million tokens, over the default "
                             "table (a model in neither has an unknown price)")
    model = parser.add_argument_group("models (omit --model to run offline with scripted agents)")
    model.add_argument("--model", help="agent model name on an OpenAI-compatible endpoint")
    model.add_argument("--base-url", help="OpenAI-compatible base URL (OpenAI, vLLM, Ollama, llama.cpp server)")
    model.add_argument("--user-model", help="user simulator model (default: --model)")
    model.add_argument("--user-base-url", help="base URL for the user simulator (default: --base-url)")
    model.add_argument("--judge-model", help="grade NL assertions with this model (default: leave them unscored, "
                                             "and such trials count as neither passed nor failed)")
    model.add_argument("--judge-base-url", help="base URL for the judge (default: --base-url)")
    add_model_arguments(model, timeout_aliases=("--request-timeout",))
    model.add_argument("--max-retries", type=int, default=3,
                       help="whole-trial retries after an infrastructure failure (as tau2); then the trial is an "
                            "infrastructure error, left out of the metrics and re-run on --resume")
    model.add_argument("--retry-delay", type=float, default=1.0, help="seconds before a whole-trial retry")
    model.add_argument("--temperature", type=float, default=0.0, help="sampling temperature sent to every role")
    for role in ("agent", "user", "judge"):
        model.add_argument(f"--{role}-model-args", metavar="JSON", default=None,
                           help=f"extra request fields for the {role} model, a JSON object (e.g. "
                                '\'{"top_p": 0.9}\'); recorded in the results header')
    ablation = parser.add_argument_group("ablations and variants")
    ablation.add_argument("--no-gate", action="store_true", help="ledger agent without the gate (rendering only)")
    ablation.add_argument("--disable-predicate", action="append", default=[], metavar="ID",
                          help="switch one gate predicate off (repeatable)")
    ablation.add_argument("--evidence", choices=("ask", "assist", "both"), default="ask",
                          help="who makes the reads a write lacks: ask (default, the paper: the model is told to "
                               "read), assist (the gate reads them itself: its own agent label, ledger-assist), or "
                               "both")
    ablation.add_argument("--compact-history", action="store_true",
                          help="ledger agent: send ledger-held read results as references to their ledger paths")
    ablation.add_argument("--error-rate", type=float, default=0.0, metavar="P",
                          help="offline only: per write, the chance the scripted agent first proposes a "
                               "policy-violating variant (a seeded simulation)")
    ablation.add_argument("--error-profile", default=None, metavar="NAME",
                          help="offline only: simulated errors, the mistakes real models make on these domains, each "
                               "with its documented weight (`realistic`; seeded, the same for every agent; see "
                               "docs/evaluation.md)")
    ablation.add_argument("--seed", type=int, default=None,
                          help="offline: seed of the error-prone scripted agent (default 0); with --model: the "
                               "`seed` sent to every role's endpoint")
    limits = parser.add_argument_group("limits")
    limits.add_argument("--max-steps", type=int, default=100)
    limits.add_argument("--max-errors", type=int, default=10, help="tool errors before a trial ends")
    limits.add_argument("--trial-timeout", type=float, default=None,
                        help="seconds per trial (default: 60 offline, 1800 with a model)")
    parser.set_defaults(handler=_cmd_eval)


async def _cmd_eval(args: argparse.Namespace) -> int:
    from console.cli.eval import cmd_eval  # the harness and its dependencies: only when `eval` runs

    return await cmd_eval(args)
