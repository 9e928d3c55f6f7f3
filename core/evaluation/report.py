"""report.md and its pass^k plots, as plain text: Markdown tables and hand-written SVG (no plotting library).

SVG rather than PNG so the plots are small, diffable, readable in any browser or Git forge, and need no
dependency. One plot per domain, one line per agent condition, pass^k on k = 1..K.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from core.evaluation.metrics import AgentMetrics, Metrics
from core.evaluation.results import RunHeader, TrialSummary
from core.private_files import write_text

COLORS = {"ledger": "#1f77b4", "fc": "#d62728", "ledger-no-gate": "#2ca02c", "ledger-compact": "#9467bd"}
_EXTRA = ["#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf"]
MAX_LISTED_FAILURES = 200


def _color(agent: str, index: int) -> str:
    return COLORS.get(agent, _EXTRA[index % len(_EXTRA)])


def pass_k_svg(title: str, series: dict[str, dict[int, float]], *, width: int = 520, height: int = 320) -> str:
    """A line chart of pass^k (percent) against k, one line per agent, with axes, grid and legend."""
    left, right, top, bottom = 56, 130, 36, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    ks = sorted({k for values in series.values() for k in values}) or [1]
    k_max = max(ks)

    def x(k: int) -> float:
        return left + (plot_w / 2 if k_max == 1 else (k - 1) * plot_w / (k_max - 1))

    def y(value: float) -> float:
        return top + plot_h * (1 - value)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    for tick in range(0, 101, 20):
        ty = y(tick / 100)
        parts.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end">{tick}%</text>')
    for k in ks:
        parts.append(f'<text x="{x(k):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{k}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">k (trials that must '
                 f'all pass)</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">pass^k</text>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>')
    for index, (agent, values) in enumerate(sorted(series.items())):
        color = _color(agent, index)
        points = [(x(k), y(values[k])) for k in sorted(values)]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for (px, py), k in zip(points, sorted(values), strict=True):
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{color}">'
                         f'<title>{escape(agent)} pass^{k} = {values[k]:.1%}</title></circle>')
        ly = top + 14 + index * 20
        parts.append(f'<line x1="{left + plot_w + 14}" y1="{ly - 4}" x2="{left + plot_w + 34}" y2="{ly - 4}" '
                     f'stroke="{color}" stroke-width="3"/>')
        parts.append(f'<text x="{left + plot_w + 40}" y="{ly}">{escape(agent)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _opt(value: object) -> str:
    return "endpoint default" if value is None else str(value)


def money(value: float | None) -> str:
    """A cost for a table: "unknown price" when any price was unknown, never 0 for a missing price."""
    return "unknown price" if value is None else f"${value:,.4f}"


def unscored_warning(metrics: Metrics) -> list[str]:
    """The loud line a run without a judge gets when tasks have NL assertions."""
    pool = metrics.cells
    trials = sum(c.unscored for c in pool)
    if not trials:
        return []
    tasks = sum(c.unscored_tasks for c in pool)
    return [f"> **WARNING: {trials} trial(s) of {tasks} task(s) are UNSCORED**: their tasks have NL assertions and "
            "no judge model graded them (pass --judge-model). They are not counted as passed: they are left out "
            "of pass^k and the average reward.", ""]


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines + [""]


def _banner(header: RunHeader) -> list[str]:
    if not header.offline:
        customer = f"LLM user simulator `{header.user_model}`" if header.user_model else "scripted customer"
        where = f" at `{header.base_url}`" if header.base_url else ""
        return [f"Agent model `{header.model}`{where}; customer: {customer}.", ""]
    lines = ["> **SIMULATION — scripted agents, no language model.** Every figure below comes from deterministic",
             "> scripted agents (each task's gold actions plus the reads a careful agent makes) and scripted",
             "> customers. It shows that the harness, tasks and gate work; it says nothing about any model."]
    if header.error_rate > 0:
        lines += [f"> The agents are *error-prone* (seed {header.seed}): before each write, with probability "
                  f"{header.error_rate:g}, they first propose a policy-violating variant of the right call. The "
                  "difference between ledger and FC is therefore a simulation of what the gate prevents."]
    if header.error_profile:
        lines += [f"> **Simulated errors** ({header.error_profile} profile, seed {header.seed}): the agents make the "
                  "mistakes real models are documented making on these domains, each kind with its own weight "
                  "(docs/evaluation.md), the same ones for ledger and FC; see *Simulated errors per failure kind*."]
    return lines + [""]


def render_markdown(header: RunHeader, metrics: Metrics, trials: Sequence[TrialSummary], plots: dict[str, str]) -> str:
    """The report. `plots` maps a domain to the SVG file name written beside report.md."""
    agents = header.agents
    lines = ["# LedgerAgent evaluation report", ""]
    lines += _banner(header)
    lines += _table(["setting", "value"], [
        ["domains", ", ".join(header.domains)], ["agents", ", ".join(agents)], ["trials per task", str(header.trials)],
        ["tasks", "; ".join(f"{d}: {len(ids)}" for d, ids in header.task_ids.items())],
        ["sources", "; ".join(f"{d}: {s}" for d, s in header.sources.items())],
        ["max steps / max tool errors", f"{header.max_steps} / {header.max_errors}"],
        ["disabled predicates", ", ".join(header.disabled_predicates) or "none"],
        ["compact history (ledger)", "on" if header.compact_history else "off"],
        ["NL judge", (f"{header.judge_model}" + (f" at {header.judge_base_url}" if header.judge_base_url else ""))
         if header.judge_model else "none (trials of tasks with NL assertions are unscored)"],
        ["policy", "; ".join(f"{d}: {s}" for d, s in header.policy_sources.items()) or "ours"],
        ["temperature / seed sent", f"{_opt(header.temperature)} / {_opt(header.model_seed)}"],
        ["extra model arguments", "; ".join(f"{role}: {args}" for role, args in (
            ("agent", header.agent_model_args), ("user", header.user_model_args),
            ("judge", header.judge_model_args)) if args) or "none"],
        ["whole-trial retries (infrastructure errors)", str(header.max_retries)],
        ["token counts", "local estimate (~4 characters per token)" if header.tokenizer == "estimate"
         else "as the endpoint reported them" if header.tokenizer == "API usage"
         else f"local counts with the {header.tokenizer} tokenizer (tiktoken, offline data)"],
    ])
    lines += unscored_warning(metrics)
    lines += ["## pass^k (Table 2)", "",
              "pass^k: the chance that k independent trials of a task all succeed (unbiased estimator "
              "C(c, k) / C(n, k), averaged over tasks). Avg = tau2-bench's average reward over the trials that "
              "count. Trials that could not be run (infrastructure errors) and unscored trials are left out of "
              "both, and counted in their own columns.", ""]
    rows = []
    cells = [*metrics.cells, *(metrics.overall if len(header.domains) > 1 else [])]
    top = max((max(c.pass_k) for c in cells if c.pass_k), default=1)
    for cell in cells:
        ks = cell.pass_k
        rows.append([cell.domain, cell.agent, str(cell.tasks), str(cell.trials),
                     *(_pct(ks.get(k)) for k in range(1, top + 1)), f"{cell.mean_reward:.3f}",
                     str(cell.infra_errors), str(cell.unscored), str(cell.timeouts), money(cell.cost)])
    lines += _table(["domain", "agent", "tasks", "trials", *(f"pass^{k}" for k in range(1, top + 1)), "Avg",
                     "infra errors", "unscored", "timeouts", "cost"], rows)
    for domain in header.domains:
        cells = [c for c in metrics.cells if c.domain == domain]
        if not cells:
            continue
        lines += [f"### {domain}", ""]
        if domain in plots:
            lines += [f"![pass^k for {domain}]({plots[domain]})", ""]
        top = max((max(c.pass_k) for c in cells if c.pass_k), default=0)
        lines += _table(["agent", *(f"pass^{k}" for k in range(1, top + 1))],
                        [[c.agent, *(_pct(c.pass_k.get(k)) for k in range(1, top + 1))] for c in cells])
        lines += [f"Write-task subset (tasks with at least one gold write; paper Fig. 3): "
                  f"{cells[0].write_tasks} tasks.", ""]
        lines += _table(["agent", *(f"pass^{k}" for k in range(1, top + 1))],
                        [[c.agent, *(_pct(c.write_pass_k.get(k)) for k in range(1, top + 1))] for c in cells])
    lines += _mistakes_section(header, metrics)
    lines += _tokens_section(header, metrics)
    lines += _gate_section(metrics)
    lines += _failure_section(metrics, trials)
    return "\n".join(lines) + "\n"


def _mistakes_section(header: RunHeader, metrics: Metrics) -> list[str]:
    """Per failure kind of the error profile: committed, where it ended, what the gate's stops cost."""
    if not header.error_profile:
        return []
    rows = [[c.domain, c.agent, kind, str(t.committed), str(t.reached_db), str(t.tool_refused),
             f"{t.gate_refused} ({t.blocked} / {t.needs_read} / {t.breaks_rule})",
             f"+{t.recovery_calls} calls, +{t.recovery_tokens:,} tokens" if t.gate_refused else "—"]
            for c in metrics.cells for kind, t in c.mistakes.items()]
    return ["## Simulated errors per failure kind (SIMULATION)", "",
            *_table(["domain", "agent", "failure kind", "committed", "reached the database", "tool refused",
                     "gate stopped (BLOCK / needs a read / breaks a rule)", "stop cost"],
                    rows or [["", "", "no mistake was drawn in this run", "", "", "", "", ""]])]


def _tokens_section(header: RunHeader, metrics: Metrics) -> list[str]:
    pool = metrics.overall if len(header.domains) > 1 else metrics.cells
    estimated = any(c.tokens.estimated for c in pool)
    lines = ["## Tokens (Table 3)", "",
             "Per trial, summed over the agent's model calls. Ledger share: the rendered ledger block's part of "
             "the prompt tokens (always a local estimate). Overhead: total tokens against FC on the same tasks."
             + ((" Counts are local estimates (about 4 characters per token), not a model's tokenizer."
                 if header.tokenizer == "estimate" else f" Local counts use the {header.tokenizer} tokenizer.")
                if estimated else ""), ""]
    rows = []
    for cell in pool:
        t = cell.tokens
        overhead = metrics.token_overhead.get(cell.agent)
        prompt_overhead = metrics.prompt_overhead.get(cell.agent)
        rows.append([cell.domain, cell.agent, f"{t.prompt_per_trial:,.0f}", f"{t.completion_per_trial:,.0f}",
                     f"{t.model_calls_per_trial:.1f}", f"{t.prompt_per_call:,.0f}", _pct(t.ledger_share),
                     "baseline" if cell.agent == "fc" else (f"{overhead:+.1%}" if overhead is not None else "—"),
                     "baseline" if cell.agent == "fc" else
                     (f"{prompt_overhead:+.1%}" if prompt_overhead is not None else "—")])
    lines += _table(["domain", "agent", "prompt/trial", "completion/trial", "model calls/trial",
                     "prompt/call", "ledger share", "overhead vs FC", "prompt vs FC"], rows)
    lines += ["### Tokens and cost per role", "",
              "Every model each trial used: the agent, the customer simulator and the judge; prompt and "
              "completion tokens summed over the cell's trials, cost from the run's price table (USD per million "
              "tokens; \"unknown price\" when a model is not in it). Scripted stand-ins use no model and cost "
              "nothing.", ""]
    role_rows = [[c.domain, c.agent, role, ", ".join(r.models), f"{r.prompt:,}", f"{r.completion:,}", str(r.calls),
                  money(r.cost) if not header.offline else "— (scripted)"]
                 for c in pool for role, r in c.roles.items()]
    role_rows += [[c.domain, c.agent, "all roles", "", "", "", "", money(c.cost) if not header.offline else "—"]
                  for c in pool]
    return lines + _table(["domain", "agent", "role", "model", "prompt tokens", "completion tokens", "calls",
                           "cost"], role_rows)


def _gate_section(metrics: Metrics) -> list[str]:
    lines = ["## Gate", "",
             "Verdicts on proposed writes (a REVISE either needs a read or breaks a rule; gate reads: the records "
             "the gate read itself, `--evidence assist`), per predicate the times it failed (violation / missing "
             "evidence / error), and executed writes a gate re-run over the trial's own reads would have refused "
             "(for FC and no-gate runs: policy violations that reached the database).", ""]
    rows = [[c.domain, c.agent, str(c.gate_verdicts.get("ALLOW", 0)), str(c.gate_verdicts.get("REVISE", 0)),
             str(c.gate_refusals.get("needs_read", 0)), str(c.gate_refusals.get("breaks_rule", 0)),
             str(c.gate_reads), str(c.gate_verdicts.get("BLOCK", 0)), str(c.gate_escalated),
             ", ".join(f"{k} {v}" for k, v in c.overrides.items()) or "0",
             ", ".join(f"{k} {v}" for k, v in c.would_refuse.items()) or "0", str(c.slips)] for c in metrics.cells]
    lines += _table(["domain", "agent", "ALLOW", "REVISE", "needs a read", "breaks a rule", "gate reads", "BLOCK",
                     "escalated", "overrides",
                     "executed writes the gate would refuse", "scripted slips"], rows)
    predicate_rows = [[c.domain, c.agent, pid, str(counts.get("violation", 0)), str(counts.get("missing", 0)),
                       str(counts.get("error", 0))]
                      for c in metrics.cells for pid, counts in c.gate_predicates.items()]
    if predicate_rows:
        lines += _table(["domain", "agent", "predicate", "violation", "missing evidence", "error"], predicate_rows)
    return lines


def _failure_section(metrics: Metrics, trials: Sequence[TrialSummary]) -> list[str]:
    categories = sorted({k for c in metrics.cells for k in c.failures})
    lines = ["## Failures (paper §6 taxonomy)", "",
             "Each failed trial gets one category by deterministic rules (see core/evaluation/analysis.py).", ""]
    if not categories:
        return lines + ["No failed trials.", ""]
    lines += _table(["domain", "agent", *categories],
                    [[c.domain, c.agent, *(str(c.failures.get(k, 0)) for k in categories)] for c in metrics.cells])
    failed = [t for t in trials if not t.success]
    rows = [[t.domain, t.task_id, t.agent, str(t.trial), t.termination, t.failure.category if t.failure else "",
             (t.failure.evidence if t.failure else t.detail)[:160]] for t in failed[:MAX_LISTED_FAILURES]]
    lines += _table(["domain", "task", "agent", "trial", "ended", "category", "evidence"], rows)
    if len(failed) > MAX_LISTED_FAILURES:
        lines += [f"... and {len(failed) - MAX_LISTED_FAILURES} more in results.json.", ""]
    return lines


def write_report(folder: Path, header: RunHeader, metrics: Metrics, trials: Sequence[TrialSummary]) -> Path:
    """report.md plus one pass^k SVG per domain, in `folder`."""
    plots: dict[str, str] = {}
    for domain in header.domains:
        cells: list[AgentMetrics] = [c for c in metrics.cells if c.domain == domain and c.pass_k]
        if not cells:
            continue
        name = f"pass_k_{domain}.svg"
        kind = "scripted simulation" if header.offline else (header.model or "model")
        write_text(folder / name, pass_k_svg(f"pass^k — {domain} ({kind})", {c.agent: c.pass_k for c in cells}))
        plots[domain] = name
    ordered = sorted(trials, key=lambda t: t.key)
    path = folder / "report.md"
    write_text(path, render_markdown(header, metrics, ordered, plots))
    return path
